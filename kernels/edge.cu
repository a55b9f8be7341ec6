// CUDA implementation of the `edge` kernel (see edge.h).
//
// A block computes a 128x8 tile, 4 pixels per thread along x: it loads the
// luma of the tile and a 1-sample halo (clamped at the edges) into shared
// memory once, in words of 4 pixels, then every thread applies both Sobel
// kernels from there, so each input byte is read from device memory about
// once and every access moves a 4- or 16-byte word where alignment allows.
// Chroma planes are filled with 128 by cudaMemset2DAsync on the same stream.
#include <cuda_runtime.h>

#include <cstdint>

#include "balance.h"
#include "cuda_check.h"
#include "edge.h"
#include "error.h"

namespace cudaoverlap {
namespace {

constexpr int kThreadsX = 32;
constexpr int kTileY = 8;
// Output pixels a thread computes, side by side along x: a 4-byte word of
// luma output, or a 16-byte word of packed RGB.
constexpr int kPerThread = 4;
constexpr int kTileX = kThreadsX * kPerThread;
// Shared luma columns: the tile, one halo column each side, padded to whole
// words on both sides so the halo loads and the reads stay word-aligned.
// Column c holds x = x0 - 4 + c.
constexpr int kTileWords = kTileX / 4 + 2;

struct EdgeLayout {
  int width, height;
  bool rgb;
  int r, g, b;                    // byte offsets in packed RGB
  bool src_aligned, dst_aligned;  // 4-byte (luma) or 16-byte (RGB) pointer and stride
};

__device__ __forceinline__ int grey_of(const uint8_t* p, const EdgeLayout& l) {
  return (77 * p[l.r] + 150 * p[l.g] + 29 * p[l.b] + 128) >> 8;
}

__device__ __forceinline__ int grey_of_word(uint32_t w, const EdgeLayout& l) {
  const int r = (w >> (8 * l.r)) & 0xFF, g = (w >> (8 * l.g)) & 0xFF, b = (w >> (8 * l.b)) & 0xFF;
  return (77 * r + 150 * g + 29 * b + 128) >> 8;
}

// floor(sqrt(n)) clamped to 255, as the reference computes it. The loops
// make the result exact whatever the first estimate, so single precision
// (n < 2^21 converts exactly) gives the same bytes as the reference's double.
__device__ __forceinline__ uint8_t magnitude(int gx, int gy) {
  const int n = gx * gx + gy * gy;
  int s = static_cast<int>(sqrtf(static_cast<float>(n)));
  while (s * s > n) --s;
  while ((s + 1) * (s + 1) <= n) ++s;
  return static_cast<uint8_t>(s < 255 ? s : 255);
}

// Luma of 4 pixels starting at x (a multiple of 4), clamped at the edges,
// as the bytes of a word.
__device__ __forceinline__ uint32_t luma_word(const uint8_t* row, const EdgeLayout& l, int x) {
  if (!l.rgb) {
    if (l.src_aligned && x >= 0 && x + 4 <= l.width)
      return *reinterpret_cast<const uint32_t*>(row + x);
    uint32_t w = 0;
    for (int k = 0; k < 4; ++k) {
      const int c = min(max(x + k, 0), l.width - 1);
      w |= static_cast<uint32_t>(row[c]) << (8 * k);
    }
    return w;
  }
  if (l.src_aligned && x >= 0 && x + 4 <= l.width) {
    const uint4 v = *reinterpret_cast<const uint4*>(row + static_cast<size_t>(x) * 4);
    return static_cast<uint32_t>(grey_of_word(v.x, l)) |
           static_cast<uint32_t>(grey_of_word(v.y, l)) << 8 |
           static_cast<uint32_t>(grey_of_word(v.z, l)) << 16 |
           static_cast<uint32_t>(grey_of_word(v.w, l)) << 24;
  }
  uint32_t w = 0;
  for (int k = 0; k < 4; ++k) {
    const int c = min(max(x + k, 0), l.width - 1);
    w |= static_cast<uint32_t>(grey_of(row + static_cast<size_t>(c) * 4, l)) << (8 * k);
  }
  return w;
}

// Byte i of the 12 bytes w[0..2] (little-endian words side by side).
__device__ __forceinline__ int byte_at(const uint32_t* w, int i) {
  return (w[i / 4] >> (8 * (i % 4))) & 0xFF;
}

// A block computes a 128x8 tile, 4 pixels per thread along x. The luma of
// the tile and a 1-sample halo (clamped at the edges) is staged in shared
// memory as bytes, loaded a word (4 pixels) at a time; each thread then reads
// 3 consecutive words per row, which neighbouring threads take from
// neighbouring banks.
__global__ void sobel_kernel(const uint8_t* __restrict__ src, size_t src_stride,
                             uint8_t* __restrict__ dst, size_t dst_stride, EdgeLayout l) {
  __shared__ uint32_t tile[kTileY + 2][kTileWords];
  const int x0 = blockIdx.x * kTileX, y0 = blockIdx.y * kTileY;
  const int tid = threadIdx.y * kThreadsX + threadIdx.x;
  for (int i = tid; i < (kTileY + 2) * kTileWords; i += kThreadsX * kTileY) {
    const int tw = i % kTileWords, ty = i / kTileWords;
    const int y = min(max(y0 + ty - 1, 0), l.height - 1);
    tile[ty][tw] = luma_word(src + static_cast<size_t>(y) * src_stride, l, x0 - 4 + 4 * tw);
  }
  __syncthreads();
  const int x = x0 + kPerThread * threadIdx.x, y = y0 + threadIdx.y;
  if (x >= l.width || y >= l.height) return;
  uint32_t up[3], mid[3], down[3];
  for (int k = 0; k < 3; ++k) {
    up[k] = tile[threadIdx.y][threadIdx.x + k];
    mid[k] = tile[threadIdx.y + 1][threadIdx.x + k];
    down[k] = tile[threadIdx.y + 2][threadIdx.x + k];
  }
  uint32_t m = 0;  // the 4 magnitudes as bytes
  for (int i = 0; i < kPerThread; ++i) {
    const int c = 4 + i;  // this pixel's byte in up/mid/down
    const int gx = (byte_at(up, c + 1) + 2 * byte_at(mid, c + 1) + byte_at(down, c + 1)) -
                   (byte_at(up, c - 1) + 2 * byte_at(mid, c - 1) + byte_at(down, c - 1));
    const int gy = (byte_at(down, c - 1) + 2 * byte_at(down, c) + byte_at(down, c + 1)) -
                   (byte_at(up, c - 1) + 2 * byte_at(up, c) + byte_at(up, c + 1));
    m |= static_cast<uint32_t>(magnitude(gx, gy)) << (8 * i);
  }
  const int n = min(kPerThread, l.width - x);
  uint8_t* row = dst + static_cast<size_t>(y) * dst_stride;
  if (!l.rgb) {
    if (l.dst_aligned && n == kPerThread) {
      *reinterpret_cast<uint32_t*>(row + x) = m;
    } else {
      for (int i = 0; i < n; ++i) row[x + i] = static_cast<uint8_t>(m >> (8 * i));
    }
    return;
  }
  // Alpha or padding from the input, the magnitude over R, G and B.
  const uint8_t* s = src + static_cast<size_t>(y) * src_stride + static_cast<size_t>(x) * 4;
  uint8_t* d = row + static_cast<size_t>(x) * 4;
  const uint32_t colour = (0xFFu << (8 * l.r)) | (0xFFu << (8 * l.g)) | (0xFFu << (8 * l.b));
  if (l.src_aligned && l.dst_aligned && n == kPerThread) {
    uint4 v = *reinterpret_cast<const uint4*>(s);
    v.x = (v.x & ~colour) | ((m & 0xFFu) * 0x01010101u & colour);
    v.y = (v.y & ~colour) | (((m >> 8) & 0xFFu) * 0x01010101u & colour);
    v.z = (v.z & ~colour) | (((m >> 16) & 0xFFu) * 0x01010101u & colour);
    v.w = (v.w & ~colour) | ((m >> 24) * 0x01010101u & colour);
    *reinterpret_cast<uint4*>(d) = v;
    return;
  }
  for (int i = 0; i < n; ++i) {
    uint8_t p[4] = {s[4 * i], s[4 * i + 1], s[4 * i + 2], s[4 * i + 3]};
    const uint8_t mi = static_cast<uint8_t>(m >> (8 * i));
    p[l.r] = p[l.g] = p[l.b] = mi;
    for (int c = 0; c < 4; ++c) d[4 * i + c] = p[c];
  }
}

bool aligned_to(const PlaneRef& p, size_t n) {
  return reinterpret_cast<uintptr_t>(p.data) % n == 0 && p.stride % n == 0;
}

}  // namespace

void edge_cuda(const ImageRef& in, const ImageRef& out, bool inject_launch_failure,
               CUstream_st* stream) {
  const FormatInfo& info = format_info(in.format);
  EdgeLayout l{};
  l.width = in.width;
  l.height = in.height;
  l.rgb = !info.is_yuv && in.format != PixelFormat::kGRAY8;
  if (l.rgb) rgb_byte_offsets(in.format, &l.r, &l.g, &l.b);
  const size_t word = l.rgb ? 16 : 4;
  l.src_aligned = aligned_to(in.planes[0], word);
  l.dst_aligned = aligned_to(out.planes[0], word);
  dim3 grid((in.width + kTileX - 1) / kTileX, (in.height + kTileY - 1) / kTileY);
  if (grid.y > 65535) throw Error("edge: the image is too tall (more than 524,280 rows)");
  // An empty grid is an invalid configuration: CUDA reports it at launch.
  if (inject_launch_failure) grid.x = 0;
  sobel_kernel<<<grid, dim3(kThreadsX, kTileY), 0, stream>>>(
      in.planes[0].data, in.planes[0].stride, out.planes[0].data, out.planes[0].stride, l);
  CO_CUDA_CHECK_LAUNCH("the edge kernel");
  for (int p = 1; p < info.n_planes; ++p)
    CO_CUDA_CHECK(cudaMemset2DAsync(out.planes[p].data, out.planes[p].stride, 128,
                                    plane_row_bytes(in.format, p, in.width),
                                    plane_rows(in.format, p, in.height), stream));
}

}  // namespace cudaoverlap
