// CUDA implementation of the `edge` kernel (see edge.h).
//
// One launch does the whole image. The blocks of its first grid rows each
// compute a 128x16 tile of luma output: they stage the tile's luma and a
// 1-sample halo (clamped at the edges) in shared memory, loaded a 4-pixel
// word at a time, and every thread then computes a 4x2 patch, 4 pixels wide
// so its output row leaves as one word (16 bytes for packed RGB). The
// remaining grid rows fill the chroma planes of YUV with 128 in 16-byte
// stores; two cudaMemset2DAsync calls cost more in launch gaps than that
// data.
//
// The Sobel sums run on two 16-bit lanes per register (columns 0 and 2,
// columns 1 and 3 of a patch row), biased so that no lane goes negative:
// with 8-bit samples every lane stays within 0..2044, so the lanes never
// carry into each other and the results are exactly the reference's
// integers. Per-pixel integer work bounded the previous version, not
// memory: 1-byte luma ran at 4-6 times the memory time, packed RGB, with 4
// times the bytes for the same work, at 2.
#include <cuda_runtime.h>

#include <cstdint>

#include "balance.h"
#include "cuda_check.h"
#include "edge.h"
#include "error.h"

namespace cudaoverlap {
namespace {

constexpr int kThreadsX = 32;
constexpr int kThreadsY = 8;
constexpr int kThreads = kThreadsX * kThreadsY;
// Output pixels a thread computes: 4 side by side (a word of luma output,
// or 16 bytes of packed RGB), on 2 rows that share 2 of their 4 input rows.
constexpr int kPerThread = 4;
constexpr int kRowsPerThread = 2;
constexpr int kTileX = kThreadsX * kPerThread;
constexpr int kTileY = kThreadsY * kRowsPerThread;
// Shared luma columns: the tile, one halo column each side, padded to whole
// words on both sides so the halo loads and the reads stay word-aligned.
// Column word c holds x = x0 - 4 + 4c .. x0 - 1 + 4c.
constexpr int kTileWords = kTileX / 4 + 2;
constexpr int kTileRows = kTileY + 2;
constexpr int kLoadsPerThread = (kTileRows * kTileWords + kThreads - 1) / kThreads;

struct EdgeLayout {
  int width, height;
  bool rgb;
  int r, g, b;                    // byte offsets in packed RGB
  bool src_aligned, dst_aligned;  // 4-byte (luma) or 16-byte (RGB) pointer and stride
  int tiles_y;                    // grid rows of Sobel tiles; the rest fill chroma
  // Chroma planes to fill with 128 (NV12: 1, I420: 2, else 0).
  int n_chroma;
  uint8_t* chroma[2];
  size_t chroma_stride[2];
  int chroma_bytes, chroma_rows;  // per plane
  bool chroma_aligned;            // 16-byte pointers and strides
};

__device__ __forceinline__ int grey_of(const uint8_t* p, const EdgeLayout& l) {
  return (77 * p[l.r] + 150 * p[l.g] + 29 * p[l.b] + 128) >> 8;
}

__device__ __forceinline__ int grey_of_word(uint32_t w, const EdgeLayout& l) {
  const int r = (w >> (8 * l.r)) & 0xFF, g = (w >> (8 * l.g)) & 0xFF, b = (w >> (8 * l.b)) & 0xFF;
  return (77 * r + 150 * g + 29 * b + 128) >> 8;
}

// min(floor(sqrt(n)), 255) for n >= 0, as floor(sqrt(n + 1/4)) with n
// clamped to 255^2 first. For integers, n + 1/4 has the same integer root
// (k^2 <= n + 1/4 < (k + 1)^2), and keeps zero, which sends the square root
// down a slow path, out. Single precision is exact here: n + 1/4 is
// representable, its correctly rounded root is at least sqrt(k^2 + 1/4) > k
// and at most sqrt(k^2 + 2k + 1/4) < k + 1 - 1/700, far more than half a
// unit in the last place (2^-17 below 256) from k + 1, so truncating it
// gives the reference's integer. __fsqrt_rn stays correctly rounded whatever
// the fast-math flags. The conversions go through floats whose units are
// 1/4 (at 2^21) and 1 (at 2^23): adds on the FP32 pipe instead of
// conversions on the slower pipe that the square root already uses.
__device__ __forceinline__ uint32_t magnitude(int gx, int gy) {
  const uint32_t n = static_cast<uint32_t>(min(gx * gx + gy * gy, 255 * 255));
  constexpr float kTwo21 = 2097152.0f;  // bits 0x4A000000, units of 1/4
  const float f = __uint_as_float(0x4A000000u | (4 * n + 1)) - kTwo21;  // exactly n + 1/4
  const float s = __fsqrt_rn(f);
  constexpr float kTwo23 = 8388608.0f;                         // bits 0x4B000000, units of 1
  return __float_as_uint(__fadd_rz(s, kTwo23)) - 0x4B000000u;  // floor(s)
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

// One patch row's luma as 16-bit lanes: even = columns (0, 2), odd =
// columns (1, 3), left = column -1, right = column 4 (in lane 0).
struct SplitRow {
  uint32_t even, odd, left, right;
};

__device__ __forceinline__ SplitRow split_row(uint32_t l, uint32_t c, uint32_t r) {
  return {__byte_perm(c, 0, 0x4240), __byte_perm(c, 0, 0x4341), __byte_perm(l, 0, 0x4443),
          __byte_perm(r, 0, 0x4440)};
}

// Lane-wise up + 2 * mid + down (the Sobel column weights), at most 1020.
__device__ __forceinline__ uint32_t column_sum(uint32_t up, uint32_t mid, uint32_t down) {
  return up + 2 * mid + down;
}

// Lane-wise down - up + 256, in 1..511.
__device__ __forceinline__ uint32_t column_diff(uint32_t up, uint32_t down) {
  return down + 0x01000100u - up;
}

// The 4 magnitudes of one patch row, from its rows above, at and below, as
// the bytes of a word.
__device__ __forceinline__ uint32_t sobel_row(const SplitRow& up, const SplitRow& mid,
                                              const SplitRow& down) {
  const uint32_t ve = column_sum(up.even, mid.even, down.even);
  const uint32_t vo = column_sum(up.odd, mid.odd, down.odd);
  const uint32_t vl = column_sum(up.left, mid.left, down.left);
  const uint32_t vr = column_sum(up.right, mid.right, down.right);
  const uint32_t de = column_diff(up.even, down.even);
  const uint32_t dd = column_diff(up.odd, down.odd);
  const uint32_t dl = column_diff(up.left, down.left);
  const uint32_t dr = column_diff(up.right, down.right);
  // Columns (-1, 1) and (2, 4), from lanes of the above.
  const uint32_t vm = __byte_perm(vl, vo, 0x5410), vp = __byte_perm(ve, vr, 0x5432);
  const uint32_t dm = __byte_perm(dl, dd, 0x5410), dp = __byte_perm(de, dr, 0x5432);
  // gx = V(c + 1) - V(c - 1), gy = D(c - 1) + 2 D(c) + D(c + 1); each lane
  // biased by 1024, so 4..2044.
  const uint32_t gx_even = vo + 0x04000400u - vm;
  const uint32_t gx_odd = vp + 0x04000400u - ve;
  const uint32_t gy_even = dm + 2 * de + dd;
  const uint32_t gy_odd = de + 2 * dd + dp;
  auto lo = [](uint32_t v) { return static_cast<int>(v & 0xFFFF) - 1024; };
  auto hi = [](uint32_t v) { return static_cast<int>(v >> 16) - 1024; };
  return magnitude(lo(gx_even), lo(gy_even)) | magnitude(lo(gx_odd), lo(gy_odd)) << 8 |
         magnitude(hi(gx_even), hi(gy_even)) << 16 | magnitude(hi(gx_odd), hi(gy_odd)) << 24;
}

// Writes the 4 magnitudes in `m` for pixels x..x+3 of row y.
__device__ __forceinline__ void store_row(const uint8_t* src, size_t src_stride, uint8_t* dst,
                                          size_t dst_stride, const EdgeLayout& l, int x, int y,
                                          uint32_t m) {
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

__device__ __forceinline__ void sobel_tile(const uint8_t* __restrict__ src, size_t src_stride,
                                           uint8_t* __restrict__ dst, size_t dst_stride,
                                           const EdgeLayout& l) {
  __shared__ uint32_t tile[kTileRows][kTileWords];
  const int x0 = blockIdx.x * kTileX, y0 = blockIdx.y * kTileY;
  const int tid = threadIdx.y * kThreadsX + threadIdx.x;
  // All loads first, so each thread has its words in flight together.
  uint32_t v[kLoadsPerThread];
#pragma unroll
  for (int k = 0; k < kLoadsPerThread; ++k) {
    const int i = tid + k * kThreads;
    v[k] = 0;
    if (i >= kTileRows * kTileWords) continue;
    const int tw = i % kTileWords, ty = i / kTileWords;
    const int y = min(max(y0 + ty - 1, 0), l.height - 1);
    v[k] = luma_word(src + static_cast<size_t>(y) * src_stride, l, x0 - 4 + 4 * tw);
  }
#pragma unroll
  for (int k = 0; k < kLoadsPerThread; ++k) {
    const int i = tid + k * kThreads;
    if (i < kTileRows * kTileWords) tile[i / kTileWords][i % kTileWords] = v[k];
  }
  __syncthreads();
  const int x = x0 + kPerThread * threadIdx.x, y = y0 + kRowsPerThread * threadIdx.y;
  if (x >= l.width || y >= l.height) return;
  // Tile row r + 1 holds image row y0 + r; this patch needs rows y - 1 .. y + 2.
  SplitRow rows[kRowsPerThread + 2];
#pragma unroll
  for (int k = 0; k < kRowsPerThread + 2; ++k) {
    const uint32_t* t = tile[kRowsPerThread * threadIdx.y + k];
    rows[k] = split_row(t[threadIdx.x], t[threadIdx.x + 1], t[threadIdx.x + 2]);
  }
#pragma unroll
  for (int k = 0; k < kRowsPerThread; ++k) {
    if (y + k >= l.height) break;
    store_row(src, src_stride, dst, dst_stride, l, x, y + k,
              sobel_row(rows[k], rows[k + 1], rows[k + 2]));
  }
}

// Fills the chroma planes with 128: the blocks past the Sobel tiles, each
// thread 16 bytes of a row at a time.
__device__ __forceinline__ void fill_chroma(const EdgeLayout& l) {
  // 32-bit indices (the host checks that they fit): 64-bit division is a
  // long software routine.
  const int chunks = (l.chroma_bytes + 15) / 16;
  const int items = chunks * l.chroma_rows;
  const int threads = (static_cast<int>(gridDim.y) - l.tiles_y) * gridDim.x * kThreads;
  const int first =
      ((static_cast<int>(blockIdx.y) - l.tiles_y) * gridDim.x + blockIdx.x) * kThreads +
      threadIdx.y * kThreadsX + threadIdx.x;
  for (int p = 0; p < l.n_chroma; ++p) {
    uint8_t* plane = p == 0 ? l.chroma[0] : l.chroma[1];
    const size_t stride = p == 0 ? l.chroma_stride[0] : l.chroma_stride[1];
    for (int i = first; i < items; i += threads) {
      const int x = static_cast<int>(i % chunks) * 16;
      uint8_t* row = plane + static_cast<size_t>(i / chunks) * stride;
      if (l.chroma_aligned && x + 16 <= l.chroma_bytes) {
        *reinterpret_cast<uint4*>(row + x) =
            make_uint4(0x80808080u, 0x80808080u, 0x80808080u, 0x80808080u);
      } else {
        for (int k = x; k < x + 16 && k < l.chroma_bytes; ++k) row[k] = 128;
      }
    }
  }
}

__global__ void __launch_bounds__(kThreads)
    edge_kernel(const uint8_t* __restrict__ src, size_t src_stride, uint8_t* __restrict__ dst,
                size_t dst_stride, EdgeLayout l) {
  // Uniform per block, so the tile's __syncthreads is reached by all or none.
  if (static_cast<int>(blockIdx.y) < l.tiles_y)
    sobel_tile(src, src_stride, dst, dst_stride, l);
  else
    fill_chroma(l);
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
  const unsigned tiles_x = (in.width + kTileX - 1) / kTileX;
  const unsigned tiles_y = (in.height + kTileY - 1) / kTileY;
  l.tiles_y = static_cast<int>(tiles_y);
  unsigned fill_rows = 0;
  if (info.n_planes > 1) {
    l.n_chroma = info.n_planes - 1;
    l.chroma_aligned = true;
    for (int p = 1; p < info.n_planes; ++p) {
      l.chroma[p - 1] = out.planes[p].data;
      l.chroma_stride[p - 1] = out.planes[p].stride;
      l.chroma_aligned = l.chroma_aligned && aligned_to(out.planes[p], 16);
    }
    l.chroma_bytes = static_cast<int>(plane_row_bytes(in.format, 1, in.width));
    l.chroma_rows = static_cast<int>(plane_rows(in.format, 1, in.height));
    // About one 16-byte chunk per thread and plane.
    const size_t items = (static_cast<size_t>(l.chroma_bytes) + 15) / 16 * l.chroma_rows;
    const size_t per_row = static_cast<size_t>(tiles_x) * kThreads;
    fill_rows = static_cast<unsigned>((items + per_row - 1) / per_row);
    if (items > 0x7FFFFFFF || (tiles_y + fill_rows) * per_row > 0x7FFFFFFF)
      throw Error("edge: the image is too large");
  }
  dim3 grid(tiles_x, tiles_y + fill_rows);
  if (grid.y > 65535) throw Error("edge: the image is too tall (more than about a million rows)");
  // An empty grid is an invalid configuration: CUDA reports it at launch.
  if (inject_launch_failure) grid.x = 0;
  edge_kernel<<<grid, dim3(kThreadsX, kThreadsY), 0, stream>>>(
      in.planes[0].data, in.planes[0].stride, out.planes[0].data, out.planes[0].stride, l);
  CO_CUDA_CHECK_LAUNCH("the edge kernel");
}

}  // namespace cudaoverlap
