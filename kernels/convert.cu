// CUDA implementation of the `convert` kernel (see convert.h): one thread
// per 2x2 block of the picture (a chroma sample of 4:2:0 formats), running
// the arithmetic of convert_math.h that the CPU reference also runs.
//
// convert_block reads and writes packed pixels a byte at a time and decides
// the formats per pixel; that left the kernel bound on load/store
// instructions. convert_fast_kernel is the same block loop with the two
// format families fixed at compile time and each row's pair of packed
// pixels moved as one 8-byte word where aligned; the arithmetic is still
// convert_math.h's (load, yuv_to_rgb, rgb_to), in the same order.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "convert.h"
#include "convert_math.h"
#include "cuda_check.h"

namespace cudaoverlap {
namespace {

constexpr int kBlockX = 32;
constexpr int kBlockY = 8;
constexpr unsigned kMaxGridY = 65535;

__global__ void convert_kernel(ConvertCoefficients k, ImageRef in, ImageRef out, int blocks_x,
                               int blocks_y) {
  const int bx = blockIdx.x * blockDim.x + threadIdx.x;
  if (bx >= blocks_x) return;
  for (int by = blockIdx.y * blockDim.y + threadIdx.y; by < blocks_y; by += gridDim.y * blockDim.y)
    convert_math::convert_block(k, in, out, bx, by);
}

using convert_math::clamp_index;

// Byte c of a packed pixel held in a little-endian word.
__device__ __forceinline__ int byte_of(uint32_t w, int c) { return (w >> (8 * c)) & 0xFF; }

// convert_math::chroma_at for the 4 pixels of block (bx, by), from the 3x3
// chroma samples around (bx, by): every pixel's nearest sample is (bx, by)
// (also for a clamped last column or row of an odd size), and its second
// sample column and row are the clamped neighbours on the side its own
// (clamped) parity picks, so the same clamping of the 3x3 gives the same
// samples and the same 3:1 arithmetic gives the same bytes.
__device__ __forceinline__ void block_chroma(const ConvertCoefficients& k, const ImageRef& in,
                                             int bx, int by, int chroma[2][2][2]) {
  const int cw = (in.width + 1) >> 1, ch = (in.height + 1) >> 1;
  const bool nv12 = in.format == PixelFormat::kNV12;
  // Selected by value: a run-time index into the parameter's plane array
  // would make the compiler copy the whole ImageRef to local memory.
  const uint8_t* u_data = in.planes[1].data;
  const size_t u_stride = in.planes[1].stride;
  const uint8_t* v_data = nv12 ? in.planes[1].data + 1 : in.planes[2].data;
  const size_t v_stride = nv12 ? in.planes[1].stride : in.planes[2].stride;
  const int step = nv12 ? 2 : 1;
  if (!k.linear_chroma) {
    const int u = u_data[static_cast<size_t>(by) * u_stride + bx * step];
    const int v = v_data[static_cast<size_t>(by) * v_stride + bx * step];
    for (int dy = 0; dy < 2; ++dy)
      for (int dx = 0; dx < 2; ++dx) {
        chroma[dy][dx][0] = u;
        chroma[dy][dx][1] = v;
      }
    return;
  }
  int su[3][3], sv[3][3];  // [row by-1..by+1][column bx-1..bx+1], clamped
  for (int j = 0; j < 3; ++j) {
    const size_t cy = static_cast<size_t>(convert_math::clamp_index(by - 1 + j, ch));
    const uint8_t* ru = u_data + cy * u_stride;
    const uint8_t* rv = v_data + cy * v_stride;
    for (int i = 0; i < 3; ++i) {
      const int cx = convert_math::clamp_index(bx - 1 + i, cw) * step;
      su[j][i] = ru[cx];
      sv[j][i] = rv[cx];
    }
  }
  for (int dy = 0; dy < 2; ++dy)
    for (int dx = 0; dx < 2; ++dx) {
      const int x = convert_math::clamp_index(2 * bx + dx, in.width);
      const int y = convert_math::clamp_index(2 * by + dy, in.height);
      const bool right = x & 1, below = y & 1;
      // Selects rather than run-time indices, which would put su and sv in
      // local memory.
      auto mix = [&](const int(&s)[3][3]) {
        const int side = right ? s[1][2] : s[1][0];
        const int other_row = below ? s[2][1] : s[0][1];
        const int corner = below ? (right ? s[2][2] : s[2][0]) : (right ? s[0][2] : s[0][0]);
        const int row1 = (3 * s[1][1] + side + 2) >> 2;
        const int row2 = (3 * other_row + corner + 2) >> 2;
        return (3 * row1 + row2 + 2) >> 2;
      };
      chroma[dy][dx][0] = mix(su);
      chroma[dy][dx][1] = mix(sv);
    }
}

// convert_math::convert_block for the families kIn -> kOut, with packed rows
// moved in 8-byte words when `vector_ok` (packed planes 8-byte aligned).
template <int kIn, int kOut>
__device__ __forceinline__ void convert_block_fast(const ConvertCoefficients& k, const ImageRef& in,
                                                   const ImageRef& out, int bx, int by,
                                                   bool vector_ok) {
  using namespace convert_math;
  // 4:2:0 input: the chroma of the block's 4 pixels, [dy][dx][U/V], read
  // once per block instead of once per pixel and component.
  // Only RGB output uses it (4:2:0 output copies the samples).
  int chroma[2][2][2] = {};
  if (kIn == kYuv420 && kOut == kPacked) block_chroma(k, in, bx, by, chroma);
  int u_sum[2] = {0, 0}, v_sum[2] = {0, 0};
  for (int dy = 0; dy < 2; ++dy) {
    const int y = clamp_index(2 * by + dy, in.height);
    const bool row_inside = 2 * by + dy < in.height;
    // Both pixels of the block's row inside the picture and word-aligned.
    const bool pair = vector_ok && 2 * bx + 1 < in.width;
    Pixel px[2];
    if (kIn == kPacked && pair) {
      const uint2 w = *reinterpret_cast<const uint2*>(in.planes[0].data +
                                                      static_cast<size_t>(y) * in.planes[0].stride +
                                                      static_cast<size_t>(bx) * 8);
      const uint32_t words[2] = {w.x, w.y};
      for (int dx = 0; dx < 2; ++dx) {
        for (int c = 0; c < 3; ++c) px[dx].c[c] = byte_of(words[dx], k.in_offsets[c]);
        px[dx].a = byte_of(words[dx], k.in_offsets[3]);
      }
    } else if (kIn == kYuv420) {
      const uint8_t* luma = in.planes[0].data + static_cast<size_t>(y) * in.planes[0].stride;
      for (int dx = 0; dx < 2; ++dx) {
        px[dx].c[0] = luma[clamp_index(2 * bx + dx, in.width)];
        px[dx].c[1] = chroma[dy][dx][0];
        px[dx].c[2] = chroma[dy][dx][1];
        px[dx].a = 255;
      }
    } else {
      for (int dx = 0; dx < 2; ++dx) px[dx] = load(k, in, clamp_index(2 * bx + dx, in.width), y);
    }
    if (kOut == kPacked) {
      uint32_t words[2];
      for (int dx = 0; dx < 2; ++dx) {
        const Pixel& p = px[dx];
        int r = p.c[0], g = p.c[1], b = p.c[2];
        if (kIn == kYuv420) yuv_to_rgb(k, p.c[0], p.c[1], p.c[2], &r, &g, &b);
        if (kIn == kGrey) g = b = r;
        // The reference writes R, G, B, then alpha: later bytes win.
        uint32_t w = 0;
        const int vals[4] = {r, g, b, p.a};
        for (int c = 0; c < 4; ++c)
          w = (w & ~(0xFFu << (8 * k.out_offsets[c]))) |
              (static_cast<uint32_t>(vals[c] & 0xFF) << (8 * k.out_offsets[c]));
        words[dx] = w;
      }
      if (!row_inside) continue;
      uint8_t* row = out.planes[0].data + static_cast<size_t>(y) * out.planes[0].stride;
      if (pair) {
        *reinterpret_cast<uint2*>(row + static_cast<size_t>(bx) * 8) =
            make_uint2(words[0], words[1]);
      } else {
        for (int dx = 0; dx < 2 && 2 * bx + dx < in.width; ++dx) {
          uint8_t* d = row + static_cast<size_t>(2 * bx + dx) * 4;
          for (int c = 0; c < 4; ++c) d[c] = static_cast<uint8_t>(words[dx] >> (8 * c));
        }
      }
      continue;
    }
    int row_u[2] = {0, 0}, row_v[2] = {0, 0};
    uint8_t* row = out.planes[0].data + static_cast<size_t>(y) * out.planes[0].stride;
    for (int dx = 0; dx < 2; ++dx) {
      const Pixel& p = px[dx];
      int luma = p.c[0];
      int u = 128, v = 128;
      if (kIn == kPacked) {
        luma = rgb_to(k.to_yuv[0], p.c[0], p.c[1], p.c[2]);
        u = rgb_to(k.to_yuv[1], p.c[0], p.c[1], p.c[2]);
        v = rgb_to(k.to_yuv[2], p.c[0], p.c[1], p.c[2]);
      }
      if (row_inside && 2 * bx + dx < in.width) row[2 * bx + dx] = static_cast<uint8_t>(luma);
      row_u[dx] = u;
      row_v[dx] = v;
    }
    u_sum[dy] = (row_u[0] + row_u[1] + 1) >> 1;
    v_sum[dy] = (row_v[0] + row_v[1] + 1) >> 1;
  }
  if (kOut != kYuv420) return;
  int u = 128, v = 128;
  if (kIn == kPacked) {
    u = (u_sum[0] + u_sum[1] + 1) >> 1;
    v = (v_sum[0] + v_sum[1] + 1) >> 1;
  }
  if (kIn == kYuv420) {
    const bool nv12 = in.format == PixelFormat::kNV12;
    const uint8_t* su = in.planes[1].data + static_cast<size_t>(by) * in.planes[1].stride;
    const uint8_t* sv =
        nv12 ? su : in.planes[2].data + static_cast<size_t>(by) * in.planes[2].stride;
    u = nv12 ? su[bx * 2] : su[bx];
    v = nv12 ? sv[bx * 2 + 1] : sv[bx];
  }
  if (out.format == PixelFormat::kNV12) {
    uint8_t* d = out.planes[1].data + static_cast<size_t>(by) * out.planes[1].stride + bx * 2;
    d[0] = static_cast<uint8_t>(u);
    d[1] = static_cast<uint8_t>(v);
  } else {
    out.planes[1].data[static_cast<size_t>(by) * out.planes[1].stride + bx] =
        static_cast<uint8_t>(u);
    out.planes[2].data[static_cast<size_t>(by) * out.planes[2].stride + bx] =
        static_cast<uint8_t>(v);
  }
}

template <int kIn, int kOut>
__global__ void convert_fast_kernel(ConvertCoefficients k, ImageRef in, ImageRef out, int blocks_x,
                                    int blocks_y, bool vector_ok) {
  // The families are template arguments; the copy in k must agree, since
  // convert_math::load still reads k.in_family.
  k.in_family = kIn;
  k.out_family = kOut;
  const int bx = blockIdx.x * blockDim.x + threadIdx.x;
  if (bx >= blocks_x) return;
  for (int by = blockIdx.y * blockDim.y + threadIdx.y; by < blocks_y; by += gridDim.y * blockDim.y)
    convert_block_fast<kIn, kOut>(k, in, out, bx, by, vector_ok);
}

bool aligned8(const PlaneRef& p) {
  return reinterpret_cast<uintptr_t>(p.data) % 8 == 0 && p.stride % 8 == 0;
}

template <int kIn>
void launch_fast(int out_family, dim3 grid, dim3 block, cudaStream_t stream,
                 const ConvertCoefficients& k, const ImageRef& in, const ImageRef& out, int bw,
                 int bh, bool vector_ok) {
  using namespace convert_math;
  switch (out_family) {
    case kPacked:
      convert_fast_kernel<kIn, kPacked><<<grid, block, 0, stream>>>(k, in, out, bw, bh, vector_ok);
      break;
    case kGrey:
      convert_fast_kernel<kIn, kGrey><<<grid, block, 0, stream>>>(k, in, out, bw, bh, vector_ok);
      break;
    default:
      convert_fast_kernel<kIn, kYuv420><<<grid, block, 0, stream>>>(k, in, out, bw, bh, vector_ok);
      break;
  }
  CO_CUDA_CHECK_LAUNCH("the convert kernel");
}

}  // namespace

void convert_cuda(const ImageRef& in, const ImageRef& out, const ConvertParams& params,
                  bool inject_launch_failure, CUstream_st* stream) {
  const ConvertCoefficients k = convert_coefficients(in.format, out.format, params);
  const int bw = (in.width + 1) / 2, bh = (in.height + 1) / 2;
  if (bw == 0 || bh == 0) return;
  dim3 grid((bw + kBlockX - 1) / kBlockX,
            static_cast<unsigned>(std::min<int>((bh + kBlockY - 1) / kBlockY, kMaxGridY)));
  // An empty grid is an invalid configuration: CUDA reports it at launch.
  if (inject_launch_failure) grid.x = 0;
  const dim3 block(kBlockX, kBlockY);
  // Packed sides move 8-byte words; the packed family is known from k.
  bool vector_ok = true;
  if (k.in_family == convert_math::kPacked) vector_ok = vector_ok && aligned8(in.planes[0]);
  if (k.out_family == convert_math::kPacked) vector_ok = vector_ok && aligned8(out.planes[0]);
  switch (k.in_family) {
    case convert_math::kPacked:
      launch_fast<convert_math::kPacked>(k.out_family, grid, block, stream, k, in, out, bw, bh,
                                         vector_ok);
      return;
    case convert_math::kGrey:
      launch_fast<convert_math::kGrey>(k.out_family, grid, block, stream, k, in, out, bw, bh,
                                       vector_ok);
      return;
    case convert_math::kYuv420:
      launch_fast<convert_math::kYuv420>(k.out_family, grid, block, stream, k, in, out, bw, bh,
                                         vector_ok);
      return;
    default:
      break;
  }
  convert_kernel<<<grid, block, 0, stream>>>(k, in, out, bw, bh);
  CO_CUDA_CHECK_LAUNCH("the convert kernel");
}

}  // namespace cudaoverlap
