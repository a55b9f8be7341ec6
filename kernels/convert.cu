// CUDA implementation of the `convert` kernel (see convert.h): one thread
// per 4x2 block of the picture (two chroma samples of 4:2:0 formats),
// running the arithmetic of convert_math.h that the CPU reference also runs.
//
// The reference's unit is the 2x2 block; a 4x2 block lets every plane move
// in words: a row of 4 packed pixels is 16 bytes, of 4 luma samples 4 bytes,
// of NV12's two (U, V) pairs 4 bytes. Packed pixels are taken apart and put
// together with byte permutes whose selectors the host derives from the
// formats' byte offsets, instead of per-byte shifts by run-time amounts.
// YUV -> RGB splits videoconvert's formula into a chroma part and a luma
// part; the sums are the same integers in the same groupings, and the
// chroma part is computed once per sample where 4 pixels share one (I420's
// nearest sample). NV12's 3:1 interpolation runs on U and V together in two
// 16-bit lanes, and its horizontal step is shared by the block's two rows.
// The per-pixel instruction count, more than memory traffic, bounded the
// 2x2 byte-wise version (YUV input, with the fewest bytes per pixel, was
// the furthest from the memory bound).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "convert.h"
#include "convert_math.h"
#include "cuda_check.h"

namespace cudaoverlap {
namespace {

using convert_math::clamp255;
using convert_math::clamp_index;
using convert_math::mix31_lanes;
using convert_math::mulhsw;
using convert_math::splat;

constexpr int kBlockX = 32;
constexpr int kBlockY = 8;
constexpr int kThreads = kBlockX * kBlockY;
constexpr unsigned kMaxGridY = 65535;

// Everything per launch beyond the coefficients, derived on the host.
struct ConvertLayout {
  ConvertCoefficients k;
  // __byte_perm selectors: byte c (R, G, B) of a packed input pixel into
  // the low byte of a word.
  uint32_t in_sel[3];
  // Canonical pixel word (R, G, B, alpha in bytes 0..3) -> packed output.
  uint32_t out_perm;
  // Packed input pixel -> packed output pixel.
  uint32_t repack_perm;
  // Pointer and stride of each plane a multiple of 4 (a4), 16 (a16; packed
  // planes only) or 2 (a2; for 2-byte chroma loads and stores).
  bool in_a4[3], in_a2[3], in_a16;
  bool out_a4[3], out_a2[3], out_a16;
};

// The chroma part of videoconvert's YUV -> RGB (convert_math::yuv_to_rgb),
// with its + 128 folded in: R = clamp255(wy + r), and so on.
struct ChromaTerms {
  int r, g, b;
};

__device__ __forceinline__ ChromaTerms chroma_terms(const ConvertCoefficients& k, int u, int v) {
  const int wu = splat(u - 128);
  const int wv = splat(v - 128);
  return {mulhsw(wv, k.to_rgb[1]) + 128, mulhsw(wu, k.to_rgb[3]) + mulhsw(wv, k.to_rgb[4]) + 128,
          mulhsw(wu, k.to_rgb[2]) + 128};
}

// yuv_to_rgb's R, G, B for luma y and chroma terms t, as a canonical pixel
// word (alpha 255): sat8(wy + c) + 128 == clamp255(wy + (c + 128)).
__device__ __forceinline__ uint32_t rgb_word(const ConvertCoefficients& k, int y,
                                             const ChromaTerms& t) {
  const int wy = mulhsw(splat(y - 128), k.to_rgb[0]);
  return static_cast<uint32_t>(clamp255(wy + t.r)) |
         static_cast<uint32_t>(clamp255(wy + t.g)) << 8 |
         static_cast<uint32_t>(clamp255(wy + t.b)) << 16 | 0xFF000000u;
}

__device__ __forceinline__ int byte_of(uint32_t w, uint32_t sel) {
  return static_cast<int>(__byte_perm(w, 0, sel));
}

// --- Loads and stores of one row of the block, clamped or clipped at the
// right edge (x0 = 4 * block column; `full` when all 4 pixels are inside).

// Four packed pixels; pixels past the edge repeat the last one, as the
// reference's clamped coordinates do.
__device__ __forceinline__ void load_packed(const uint8_t* row, int x0, int width, bool full,
                                            bool a16, bool a4, uint32_t px[4]) {
  if (a16 && full) {
    const uint4 v = *reinterpret_cast<const uint4*>(row + static_cast<size_t>(x0) * 4);
    px[0] = v.x, px[1] = v.y, px[2] = v.z, px[3] = v.w;
    return;
  }
  for (int i = 0; i < 4; ++i) {
    const uint8_t* p = row + static_cast<size_t>(min(x0 + i, width - 1)) * 4;
    if (a4) {
      px[i] = *reinterpret_cast<const uint32_t*>(p);
    } else {
      px[i] = static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
              static_cast<uint32_t>(p[2]) << 16 | static_cast<uint32_t>(p[3]) << 24;
    }
  }
}

__device__ __forceinline__ void store_packed(uint8_t* row, int x0, int width, bool full, bool a16,
                                             bool a4, const uint32_t px[4]) {
  if (a16 && full) {
    *reinterpret_cast<uint4*>(row + static_cast<size_t>(x0) * 4) =
        make_uint4(px[0], px[1], px[2], px[3]);
    return;
  }
  for (int i = 0; i < 4 && x0 + i < width; ++i) {
    uint8_t* p = row + static_cast<size_t>(x0 + i) * 4;
    if (a4) {
      *reinterpret_cast<uint32_t*>(p) = px[i];
    } else {
      for (int c = 0; c < 4; ++c) p[c] = static_cast<uint8_t>(px[i] >> (8 * c));
    }
  }
}

// Four luma (or grey) samples as the bytes of a word, clamped at the edge.
__device__ __forceinline__ uint32_t load_luma(const uint8_t* row, int x0, int width, bool full,
                                              bool a4) {
  if (a4 && full) return *reinterpret_cast<const uint32_t*>(row + x0);
  uint32_t w = 0;
  for (int i = 0; i < 4; ++i) w |= static_cast<uint32_t>(row[min(x0 + i, width - 1)]) << (8 * i);
  return w;
}

__device__ __forceinline__ void store_luma(uint8_t* row, int x0, int width, bool full, bool a4,
                                           uint32_t w) {
  if (a4 && full) {
    *reinterpret_cast<uint32_t*>(row + x0) = w;
    return;
  }
  for (int i = 0; i < 4 && x0 + i < width; ++i) row[x0 + i] = static_cast<uint8_t>(w >> (8 * i));
}

// Chroma sample (U low lane, V high lane) at column c, row r of a 4:2:0
// input, both inside the chroma plane.
__device__ __forceinline__ uint32_t uv_at(const ConvertLayout& L, const ImageRef& in, bool nv12,
                                          int c, int r) {
  if (nv12) {
    const uint8_t* p = in.planes[1].data + static_cast<size_t>(r) * in.planes[1].stride + 2 * c;
    if (L.in_a2[1]) return __byte_perm(*reinterpret_cast<const uint16_t*>(p), 0, 0x4140);
    return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 16;
  }
  return static_cast<uint32_t>(
             in.planes[1].data[static_cast<size_t>(r) * in.planes[1].stride + c]) |
         static_cast<uint32_t>(in.planes[2].data[static_cast<size_t>(r) * in.planes[2].stride + c])
             << 16;
}

// Chroma columns c and c + 1 of row r (c + 1 clamped to the plane), in
// lanes; word loads (one for NV12, one per plane for I420) when both lie
// inside.
__device__ __forceinline__ void uv_pair(const ConvertLayout& L, const ImageRef& in, bool nv12,
                                        int c, int r, int cw, uint32_t* s0, uint32_t* s1) {
  if (nv12 && L.in_a4[1] && c + 1 < cw) {
    const uint32_t w = *reinterpret_cast<const uint32_t*>(
        in.planes[1].data + static_cast<size_t>(r) * in.planes[1].stride + 2 * c);
    *s0 = __byte_perm(w, 0, 0x4140);
    *s1 = __byte_perm(w, 0, 0x4342);
    return;
  }
  if (!nv12 && L.in_a2[1] && L.in_a2[2] && c + 1 < cw) {
    const uint32_t u2 = *reinterpret_cast<const uint16_t*>(
        in.planes[1].data + static_cast<size_t>(r) * in.planes[1].stride + c);
    const uint32_t v2 = *reinterpret_cast<const uint16_t*>(
        in.planes[2].data + static_cast<size_t>(r) * in.planes[2].stride + c);
    *s0 = (u2 & 0xFF) | (v2 & 0xFF) << 16;
    *s1 = (u2 >> 8) | (v2 >> 8) << 16;
    return;
  }
  *s0 = uv_at(L, in, nv12, c, r);
  *s1 = uv_at(L, in, nv12, min(c + 1, cw - 1), r);
}

// The chroma (lanes) of the block's 8 pixels, [dy][i], as
// convert_math::chroma_at computes them. The block's chroma columns are
// c0 = 2 * bx4 and c0 + 1, its chroma row by. Pixels past the right edge get
// clamped columns; their outputs are not written.
__device__ __forceinline__ void block_uv(const ConvertLayout& L, const ImageRef& in, int bx4,
                                         int by, uint32_t uv[2][4]) {
  const bool nv12 = in.format == PixelFormat::kNV12;
  const int cw = (in.width + 1) >> 1, ch = (in.height + 1) >> 1;
  const int c0 = 2 * bx4;  // inside: its pixel 4 * bx4 is
  uint32_t s0, s1;
  if (!L.k.linear_chroma) {
    // Nearest sample: pixels 0, 1 take column c0, pixels 2, 3 column c0 + 1.
    uv_pair(L, in, nv12, c0, by, cw, &s0, &s1);
    for (int dy = 0; dy < 2; ++dy) {
      uv[dy][0] = uv[dy][1] = s0;
      uv[dy][2] = uv[dy][3] = s1;
    }
    return;
  }
  // Pixel i's own column is c0 + i / 2 and its second one c0 - 1 + {0, 2,
  // 1, 3}[i] (the left neighbour for even x, the right one for odd x), all
  // clamped: columns c0 - 1 .. c0 + 2 of rows by - 1, by, by + 1.
  const int rows[3] = {clamp_index(by - 1, ch), by, clamp_index(by + 1, ch)};
  uint32_t h[3][4];  // the horizontal step, per chroma row and pixel
  for (int j = 0; j < 3; ++j) {
    uv_pair(L, in, nv12, c0, rows[j], cw, &s0, &s1);
    const uint32_t left = uv_at(L, in, nv12, clamp_index(c0 - 1, cw), rows[j]);
    const uint32_t right = uv_at(L, in, nv12, clamp_index(c0 + 2, cw), rows[j]);
    h[j][0] = mix31_lanes(s0, left);
    h[j][1] = mix31_lanes(s0, s1);
    h[j][2] = mix31_lanes(s1, s0);
    h[j][3] = mix31_lanes(s1, right);
  }
  // The vertical step: even rows (dy 0) look up, odd rows (dy 1) down.
  for (int i = 0; i < 4; ++i) {
    uv[0][i] = mix31_lanes(h[1][i], h[0][i]);
    uv[1][i] = mix31_lanes(h[1][i], h[2][i]);
  }
}

// The 4x2 block of pixels (4 * bx4 .. + 3, 2 * by .. + 1) for the families
// kIn -> kOut.
template <int kIn, int kOut>
__device__ __forceinline__ void convert_quad(const ConvertLayout& L, const ImageRef& in,
                                             const ImageRef& out, int bx4, int by) {
  using namespace convert_math;
  const ConvertCoefficients& k = L.k;
  const int width = in.width;
  const int x0 = 4 * bx4;
  const bool full = x0 + 4 <= width;
  // Rows of the block, clamped as the reference clamps them; a clamped row
  // is read but not written.
  const int ys[2] = {2 * by, clamp_index(2 * by + 1, in.height)};
  const bool row_inside[2] = {true, 2 * by + 1 < in.height};

  // The input: packed pixel words, or luma bytes in a word, per row.
  uint32_t px[2][4] = {};
  uint32_t luma[2] = {};
  for (int dy = 0; dy < 2; ++dy) {
    const uint8_t* row = in.planes[0].data + static_cast<size_t>(ys[dy]) * in.planes[0].stride;
    if (kIn == kPacked)
      load_packed(row, x0, width, full, L.in_a16, L.in_a4[0], px[dy]);
    else
      luma[dy] = load_luma(row, x0, width, full, L.in_a4[0]);
  }

  if (kOut == kPacked) {
    ChromaTerms t[2][4] = {};
    if (kIn == kYuv420) {
      uint32_t uv[2][4];
      block_uv(L, in, bx4, by, uv);
      if (!k.linear_chroma) {
        // Nearest sample: two samples serve all 8 pixels.
        const ChromaTerms left = chroma_terms(k, uv[0][0] & 0xFFFF, uv[0][0] >> 16);
        const ChromaTerms right = chroma_terms(k, uv[0][2] & 0xFFFF, uv[0][2] >> 16);
        for (int dy = 0; dy < 2; ++dy) {
          t[dy][0] = t[dy][1] = left;
          t[dy][2] = t[dy][3] = right;
        }
      } else {
        for (int dy = 0; dy < 2; ++dy)
          for (int i = 0; i < 4; ++i)
            t[dy][i] = chroma_terms(k, uv[dy][i] & 0xFFFF, uv[dy][i] >> 16);
      }
    }
    for (int dy = 0; dy < 2; ++dy) {
      if (!row_inside[dy]) continue;
      uint32_t w[4];
      if (kIn == kPacked) {
        // RGB to RGB moves bytes, alpha or padding with the pixel.
        for (int i = 0; i < 4; ++i) w[i] = __byte_perm(px[dy][i], 0, L.repack_perm);
      } else if (kIn == kGrey) {
        for (int i = 0; i < 4; ++i)
          w[i] =
              __byte_perm(((luma[dy] >> (8 * i)) & 0xFFu) * 0x010101u | 0xFF000000u, 0, L.out_perm);
      } else {
        for (int i = 0; i < 4; ++i)
          w[i] = __byte_perm(rgb_word(k, (luma[dy] >> (8 * i)) & 0xFF, t[dy][i]), 0, L.out_perm);
      }
      uint8_t* row = out.planes[0].data + static_cast<size_t>(ys[dy]) * out.planes[0].stride;
      store_packed(row, x0, width, full, L.out_a16, L.out_a4[0], w);
    }
    return;
  }

  // Grey or 4:2:0 output: luma, and for packed input each pixel's U and V.
  int u[2][4] = {}, v[2][4] = {};
  for (int dy = 0; dy < 2; ++dy) {
    uint32_t y4 = luma[dy];
    if (kIn == kPacked) {
      y4 = 0;
      for (int i = 0; i < 4; ++i) {
        const int r = byte_of(px[dy][i], L.in_sel[0]);
        const int g = byte_of(px[dy][i], L.in_sel[1]);
        const int b = byte_of(px[dy][i], L.in_sel[2]);
        y4 |= static_cast<uint32_t>(rgb_to(k.to_yuv[0], r, g, b)) << (8 * i);
        if (kOut == kYuv420) {
          u[dy][i] = rgb_to(k.to_yuv[1], r, g, b);
          v[dy][i] = rgb_to(k.to_yuv[2], r, g, b);
        }
      }
    }
    if (!row_inside[dy]) continue;
    uint8_t* row = out.planes[0].data + static_cast<size_t>(ys[dy]) * out.planes[0].stride;
    store_luma(row, x0, width, full, L.out_a4[0], y4);
  }
  if (kOut != kYuv420) return;

  // Chroma columns c0 and c0 + 1 (when inside) of chroma row by.
  const int cw = (width + 1) >> 1;
  const int c0 = 2 * bx4;
  const int n = min(2, cw - c0);
  int cu[2] = {128, 128}, cv[2] = {128, 128};  // grey input: neutral chroma
  if (kIn == kPacked) {
    // videoconvert's downsampling: pairs averaged rounding up, horizontally
    // then vertically.
    for (int j = 0; j < 2; ++j) {
      const int u0 = (u[0][2 * j] + u[0][2 * j + 1] + 1) >> 1;
      const int u1 = (u[1][2 * j] + u[1][2 * j + 1] + 1) >> 1;
      const int v0 = (v[0][2 * j] + v[0][2 * j + 1] + 1) >> 1;
      const int v1 = (v[1][2 * j] + v[1][2 * j + 1] + 1) >> 1;
      cu[j] = (u0 + u1 + 1) >> 1;
      cv[j] = (v0 + v1 + 1) >> 1;
    }
  }
  if (kIn == kYuv420) {
    // Same subsampling on both sides: the input's samples, unfiltered.
    uint32_t s[2];
    uv_pair(L, in, in.format == PixelFormat::kNV12, c0, by, cw, &s[0], &s[1]);
    for (int j = 0; j < 2; ++j) {
      cu[j] = s[j] & 0xFF;
      cv[j] = s[j] >> 16;
    }
  }
  if (out.format == PixelFormat::kNV12) {
    uint8_t* d = out.planes[1].data + static_cast<size_t>(by) * out.planes[1].stride + 2 * c0;
    if (n == 2 && L.out_a4[1]) {
      *reinterpret_cast<uint32_t*>(d) =
          static_cast<uint32_t>(cu[0]) | static_cast<uint32_t>(cv[0]) << 8 |
          static_cast<uint32_t>(cu[1]) << 16 | static_cast<uint32_t>(cv[1]) << 24;
    } else {
      for (int j = 0; j < n; ++j) {
        d[2 * j] = static_cast<uint8_t>(cu[j]);
        d[2 * j + 1] = static_cast<uint8_t>(cv[j]);
      }
    }
    return;
  }
  uint8_t* du = out.planes[1].data + static_cast<size_t>(by) * out.planes[1].stride + c0;
  uint8_t* dv = out.planes[2].data + static_cast<size_t>(by) * out.planes[2].stride + c0;
  if (n == 2 && L.out_a2[1] && L.out_a2[2]) {
    *reinterpret_cast<uint16_t*>(du) = static_cast<uint16_t>(cu[0] | cu[1] << 8);
    *reinterpret_cast<uint16_t*>(dv) = static_cast<uint16_t>(cv[0] | cv[1] << 8);
  } else {
    for (int j = 0; j < n; ++j) {
      du[j] = static_cast<uint8_t>(cu[j]);
      dv[j] = static_cast<uint8_t>(cv[j]);
    }
  }
}

template <int kIn, int kOut>
__global__ void __launch_bounds__(kThreads)
    convert_kernel(ConvertLayout L, ImageRef in, ImageRef out, int blocks_x, int blocks_y) {
  const int bx = blockIdx.x * blockDim.x + threadIdx.x;
  if (bx >= blocks_x) return;
  for (int by = blockIdx.y * blockDim.y + threadIdx.y; by < blocks_y; by += gridDim.y * blockDim.y)
    convert_quad<kIn, kOut>(L, in, out, bx, by);
}

bool aligned_to(const PlaneRef& p, size_t n) {
  return reinterpret_cast<uintptr_t>(p.data) % n == 0 && p.stride % n == 0;
}

template <int kIn>
void launch(int out_family, dim3 grid, dim3 block, cudaStream_t stream, const ConvertLayout& L,
            const ImageRef& in, const ImageRef& out, int bw, int bh) {
  using namespace convert_math;
  switch (out_family) {
    case kPacked:
      convert_kernel<kIn, kPacked><<<grid, block, 0, stream>>>(L, in, out, bw, bh);
      break;
    case kGrey:
      convert_kernel<kIn, kGrey><<<grid, block, 0, stream>>>(L, in, out, bw, bh);
      break;
    default:
      convert_kernel<kIn, kYuv420><<<grid, block, 0, stream>>>(L, in, out, bw, bh);
      break;
  }
  CO_CUDA_CHECK_LAUNCH("the convert kernel");
}

}  // namespace

void convert_cuda(const ImageRef& in, const ImageRef& out, const ConvertParams& params,
                  bool inject_launch_failure, CUstream_st* stream) {
  ConvertLayout L{};
  L.k = convert_coefficients(in.format, out.format, params);
  const ConvertCoefficients& k = L.k;
  for (int c = 0; c < 3; ++c) L.in_sel[c] = 0x4440u | static_cast<uint32_t>(k.in_offsets[c]);
  for (int c = 0; c < 4; ++c) {
    L.out_perm |= static_cast<uint32_t>(c) << (4 * k.out_offsets[c]);
    L.repack_perm |= static_cast<uint32_t>(k.in_offsets[c]) << (4 * k.out_offsets[c]);
  }
  const int in_planes = format_info(in.format).n_planes;
  const int out_planes = format_info(out.format).n_planes;
  for (int p = 0; p < 3; ++p) {
    L.in_a4[p] = p < in_planes && aligned_to(in.planes[p], 4);
    L.in_a2[p] = p < in_planes && aligned_to(in.planes[p], 2);
    L.out_a4[p] = p < out_planes && aligned_to(out.planes[p], 4);
    L.out_a2[p] = p < out_planes && aligned_to(out.planes[p], 2);
  }
  L.in_a16 = aligned_to(in.planes[0], 16);
  L.out_a16 = aligned_to(out.planes[0], 16);

  const int bw = (in.width + 3) / 4, bh = (in.height + 1) / 2;
  if (bw == 0 || bh == 0) return;
  dim3 grid((bw + kBlockX - 1) / kBlockX,
            static_cast<unsigned>(std::min<int>((bh + kBlockY - 1) / kBlockY, kMaxGridY)));
  // An empty grid is an invalid configuration: CUDA reports it at launch.
  if (inject_launch_failure) grid.x = 0;
  const dim3 block(kBlockX, kBlockY);
  switch (k.in_family) {
    case convert_math::kPacked:
      launch<convert_math::kPacked>(k.out_family, grid, block, stream, L, in, out, bw, bh);
      return;
    case convert_math::kGrey:
      launch<convert_math::kGrey>(k.out_family, grid, block, stream, L, in, out, bw, bh);
      return;
    default:
      launch<convert_math::kYuv420>(k.out_family, grid, block, stream, L, in, out, bw, bh);
      return;
  }
}

}  // namespace cudaoverlap
