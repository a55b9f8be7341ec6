// 10-bit 4:2:0 input (P010_10LE, I420_10LE) to 8-bit packed RGB or to
// 8-bit 4:2:2 or 4:4:4 YUV: one thread per 4x2 block of pixels, on the
// reference's 16-bit samples (convert_math::unpack16, the 3:1 chroma
// interpolation across and then down, to_output<true>'s matrix, samples
// taken to 8 bits by >> 8), luma read as one 8-byte word per row where the
// plane allows, each chroma row's four columns (the block's two and their
// neighbours) read once and interpolated for the block's 4 pixels.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "kernels/convert/convert_access.cuh"
#include "kernels/cuda_check.h"

namespace cudaoverlap {
namespace convert_detail {
namespace {

// A 10-bit sample's little-endian word w on the 16-bit scale, as
// convert_math::unpack16 takes it: P010's bits from bit 6 (msb), I420_10LE's
// from bit 0, the top bits repeated below.
__device__ __forceinline__ int deep_sample(uint32_t w, bool msb) {
  const int v = msb ? static_cast<int>(w) : static_cast<int>((w << 6) & 0xFFFFu);
  return v | v >> 10;
}

__device__ __forceinline__ uint32_t load16(const uint8_t* p, bool a2) {
  if (a2) return *reinterpret_cast<const uint16_t*>(p);
  return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8;
}

// A 10-bit block row's 4 pixels (samples on the 16-bit scale) as packed
// RGB words: to_output<true>'s matrix, then the high bytes of R, G, B and
// 255 (the canonical pixel word) through the output's permute.
__device__ __forceinline__ void deep_rgb_words(const ConvertLayout& L, const int luma[4],
                                               const int u[4], const int v[4], uint32_t w[4]) {
  using convert_math::clamp16;
  const ConvertCoefficients& k = L.k;
  CO_UNROLL
  for (int i = 0; i < 4; ++i) {
    const int yy = luma[i] - k.to_rgb_y_offset16, cu = u[i] - 32768, cv = v[i] - 32768;
    const int r = clamp16((k.to_rgb[0] * yy + k.to_rgb[1] * cv) >> 8);
    const int b = clamp16((k.to_rgb[0] * yy + k.to_rgb[2] * cu) >> 8);
    const int g = clamp16((k.to_rgb[0] * yy + k.to_rgb[3] * cu + k.to_rgb[4] * cv) >> 8);
    w[i] = __byte_perm(static_cast<uint32_t>(r) | static_cast<uint32_t>(b) << 16,
                       static_cast<uint32_t>(g) | 0xFF000000u, 0x7351);
    w[i] = __byte_perm(w[i], 0, L.out_perm);
  }
}

// The same pixels as 8-bit YUV (>> 8): luma in the bytes of *y4, each
// pixel's chroma U | V << 16 in c[i], and the two pairs' chroma averaged on
// 16 bits first in *a0 and *a1 (store_yuv_row's arguments).
__device__ __forceinline__ void deep_yuv_words(const int luma[4], const int u[4], const int v[4],
                                               uint32_t* y4, uint32_t c[4], uint32_t* a0,
                                               uint32_t* a1) {
  using convert_math::average;
  auto lanes = [](int a, int b) {
    return static_cast<uint32_t>(a >> 8) | static_cast<uint32_t>(b >> 8) << 16;
  };
  *y4 = __byte_perm(lanes(luma[0], luma[1]), lanes(luma[2], luma[3]), 0x6420);
  CO_UNROLL
  for (int i = 0; i < 4; ++i) c[i] = lanes(u[i], v[i]);
  *a0 = lanes(average(u[0], u[1]), average(v[0], v[1]));
  *a1 = lanes(average(u[2], u[3]), average(v[2], v[3]));
}

// U and V of chroma row r at columns c0 - 1 .. c0 + 2, clamped to the plane.
__device__ __forceinline__ void deep_chroma_row(const ConvertLayout& L, const ImageRef& in, int c0,
                                                int r, int cw, int u[4], int v[4]) {
  const ConvertSide& is = L.k.in_side;
  const bool msb = is.shift == 6;
  CO_UNROLL
  for (int j = 0; j < 4; ++j) {
    const int c = clamp_index(c0 - 1 + j, cw);
    if (L.in_semi) {
      const uint8_t* p = in.planes[1].data + static_cast<size_t>(r) * in.planes[1].stride + 4 * c;
      if (L.in_a4[1]) {
        const uint32_t w = *reinterpret_cast<const uint32_t*>(p);
        u[j] = deep_sample(w & 0xFFFFu, msb);
        v[j] = deep_sample(w >> 16, msb);
      } else {
        u[j] = deep_sample(load16(p, L.in_a2[1]), msb);
        v[j] = deep_sample(load16(p + 2, L.in_a2[1]), msb);
      }
    } else {
      u[j] = deep_sample(
          load16(in.planes[1].data + static_cast<size_t>(r) * in.planes[1].stride + 2 * c,
                 L.in_a2[1]),
          msb);
      v[j] = deep_sample(
          load16(in.planes[2].data + static_cast<size_t>(r) * in.planes[2].stride + 2 * c,
                 L.in_a2[2]),
          msb);
    }
  }
}

// The same row by the warp (planes aligned for it: P010_10LE's chroma to
// 8 bytes, I420_10LE's to 4): each thread loads its own columns c0 and
// c0 + 1 (c0 + 1 clamped) as U | V << 16 words, one 8-byte load of P010's
// pairs or a word of each I420_10LE plane, and takes column c0 - 1 from
// the lane on its left and c0 + 2 from the one on its right; the warp's
// end lanes load those themselves. Every lane of the warp takes part
// (lanes past the picture with c0 clamped to the plane). The per-column
// loads above, with their clamping and alignment cases, had been the
// larger part of the kernel's instructions.
template <bool kP010>
__device__ __forceinline__ uint32_t deep_uv_word(const ImageRef& in, int r, int c) {
  if constexpr (kP010) {
    return *reinterpret_cast<const uint32_t*>(in.planes[1].data +
                                              static_cast<size_t>(r) * in.planes[1].stride + 4 * c);
  } else {
    const uint16_t u = *reinterpret_cast<const uint16_t*>(
        in.planes[1].data + static_cast<size_t>(r) * in.planes[1].stride + 2 * c);
    const uint16_t v = *reinterpret_cast<const uint16_t*>(
        in.planes[2].data + static_cast<size_t>(r) * in.planes[2].stride + 2 * c);
    return u | static_cast<uint32_t>(v) << 16;
  }
}

template <bool kP010>
__device__ __forceinline__ void deep_chroma_row_warp(const ImageRef& in, int c0, int r, int cw,
                                                     int u[4], int v[4]) {
  uint32_t a, b;  // columns c0, c0 + 1
  const bool both = c0 + 1 < cw;
  if constexpr (kP010) {
    const uint8_t* p = in.planes[1].data + static_cast<size_t>(r) * in.planes[1].stride + 4 * c0;
    if (both) {
      const uint2 w = *reinterpret_cast<const uint2*>(p);
      a = w.x, b = w.y;
    } else {
      a = b = *reinterpret_cast<const uint32_t*>(p);
    }
  } else if (both) {
    const uint32_t wu = *reinterpret_cast<const uint32_t*>(
        in.planes[1].data + static_cast<size_t>(r) * in.planes[1].stride + 2 * c0);
    const uint32_t wv = *reinterpret_cast<const uint32_t*>(
        in.planes[2].data + static_cast<size_t>(r) * in.planes[2].stride + 2 * c0);
    a = __byte_perm(wu, wv, 0x5410);
    b = __byte_perm(wu, wv, 0x7632);
  } else {
    a = b = deep_uv_word<kP010>(in, r, c0);
  }
  const int lane = static_cast<int>(threadIdx.x);
  uint32_t left = __shfl_up_sync(0xFFFFFFFFu, b, 1);
  uint32_t right = __shfl_down_sync(0xFFFFFFFFu, a, 1);
  if (lane == 0) left = c0 > 0 ? deep_uv_word<kP010>(in, r, c0 - 1) : a;
  if (c0 + 2 >= cw)
    right = b;  // clamped: column cw - 1
  else if (lane == 31)
    right = deep_uv_word<kP010>(in, r, c0 + 2);
  const uint32_t w[4] = {left, a, b, right};
  CO_UNROLL
  for (int j = 0; j < 4; ++j) {
    u[j] = deep_sample(w[j] & 0xFFFFu, kP010);
    v[j] = deep_sample(w[j] >> 16, kP010);
  }
}

// deep420_kernel where the picture's width is a multiple of 4 and every
// plane is aligned for its word accesses (deep_fast): as the general loop,
// with each plane's row a pointer stepped a stride at a time, the chroma
// neighbours at fixed offsets or from the lanes beside (as
// deep_chroma_row_warp), and a block row's loads issued a block row ahead
// of its arithmetic. Lanes past the picture (`active` false) take part in
// the chroma rows only.
template <int kOut, bool kP010>
__device__ __forceinline__ void deep420_fast(const ConvertLayout& L, const ImageRef& in,
                                             const ImageRef& out, int x0, bool active, int first,
                                             int last) {
  using convert_math::mix31;
  const int height = in.height;
  const int cw = (in.width + 1) >> 1, ch = (height + 1) >> 1;
  const int c0 = min(x0 >> 1, cw - 1);  // lanes past the picture: clamped
  const bool both = c0 + 1 < cw;
  const int lane = static_cast<int>(threadIdx.x);
  const uint32_t ys = static_cast<uint32_t>(in.planes[0].stride);
  const uint32_t us = static_cast<uint32_t>(in.planes[1].stride);
  const uint32_t vs = kP010 ? 0u : static_cast<uint32_t>(in.planes[2].stride);
  // Byte offsets of columns c0 - 1 and c0 + 2 from c0 (read by the warp's
  // end lanes; clamped columns come from the lane's own words instead).
  constexpr int kCol = kP010 ? 4 : 2;
  auto u_row = [&](int r) {
    return in.planes[1].data + static_cast<size_t>(clamp_index(r, ch)) * us + kCol * c0;
  };
  auto v_row = [&](int r) {
    return kP010 ? nullptr
                 : in.planes[2].data + static_cast<size_t>(clamp_index(r, ch)) * vs + kCol * c0;
  };
  // One chroma row's words: columns c0 and c0 + 1 (U | V << 16) and the
  // column an end lane reads for its neighbour.
  struct Raw {
    uint32_t a, b, edge;
  };
  const bool left_lane = lane == 0 && c0 > 0;
  const bool right_lane = lane == 31 && c0 + 2 < cw;
  const int edge_off = left_lane ? -kCol : 2 * kCol;
  auto word_at = [&](const uint8_t* u, const uint8_t* v, int off) {
    if constexpr (kP010) {
      return *reinterpret_cast<const uint32_t*>(u + off);
    } else {
      return static_cast<uint32_t>(*reinterpret_cast<const uint16_t*>(u + off)) |
             static_cast<uint32_t>(*reinterpret_cast<const uint16_t*>(v + off)) << 16;
    }
  };
  auto raw_row = [&](const uint8_t* u, const uint8_t* v) {
    Raw w;
    if (both) {
      if constexpr (kP010) {
        const uint2 p = *reinterpret_cast<const uint2*>(u);
        w.a = p.x, w.b = p.y;
      } else {
        const uint32_t wu = *reinterpret_cast<const uint32_t*>(u);
        const uint32_t wv = *reinterpret_cast<const uint32_t*>(v);
        w.a = __byte_perm(wu, wv, 0x5410);
        w.b = __byte_perm(wu, wv, 0x7632);
      }
    } else {
      w.a = w.b = word_at(u, v, 0);
    }
    w.edge = left_lane || right_lane ? word_at(u, v, edge_off) : 0u;
    return w;
  };
  // Chroma across for the block's 4 pixels (deep_chroma_row_warp's words,
  // then deep_across).
  auto across = [&](const Raw& w, int(&hu)[4], int(&hv)[4]) {
    uint32_t left = __shfl_up_sync(0xFFFFFFFFu, w.b, 1);
    uint32_t right = __shfl_down_sync(0xFFFFFFFFu, w.a, 1);
    if (lane == 0) left = left_lane ? w.edge : w.a;
    if (c0 + 2 >= cw)
      right = w.b;  // clamped: column cw - 1
    else if (lane == 31)
      right = w.edge;
    const uint32_t words[4] = {left, w.a, w.b, right};
    int u[4], v[4];
    CO_UNROLL
    for (int j = 0; j < 4; ++j) {
      u[j] = deep_sample(words[j] & 0xFFFFu, kP010);
      v[j] = deep_sample(words[j] >> 16, kP010);
    }
    deep_across(u, hu);
    deep_across(v, hv);
  };
  // The output's chroma planes: U and V, or one of pairs (NV16).
  constexpr bool kPlane1 = kOut != kToRgb && kOut != kToPacked422;
  constexpr bool kPlane2 = kOut == kToPlanar422 || kOut == kToPlanar444;
  const uint32_t os0 = static_cast<uint32_t>(out.planes[0].stride);
  const uint32_t os1 = kPlane1 ? static_cast<uint32_t>(out.planes[1].stride) : 0u;
  const uint32_t os2 = kPlane2 ? static_cast<uint32_t>(out.planes[2].stride) : 0u;
  const size_t y_first = static_cast<size_t>(2 * first);
  const int bpp = kOut == kToPacked422 ? 2 : kOut == kToRgb ? (L.out_rgb24 ? 3 : 4) : 1;
  const int out_c = kOut == kToPlanar444 ? x0 : kOut == kToSemi422 ? x0 : x0 >> 1;
  uint8_t* o0 = out.planes[0].data + y_first * os0 + x0 * bpp;
  uint8_t* o1 = kPlane1 ? out.planes[1].data + y_first * os1 + out_c : nullptr;
  uint8_t* o2 = kPlane2 ? out.planes[2].data + y_first * os2 + out_c : nullptr;
  const uint8_t* lp = in.planes[0].data + y_first * ys + 2 * x0;

  // Chroma across for the rows above, at and below the block row.
  int hu[3][4], hv[3][4];
  across(raw_row(u_row(first - 1), v_row(first - 1)), hu[0], hv[0]);
  across(raw_row(u_row(first), v_row(first)), hu[1], hv[1]);
  const int cr = min(first + 1, ch - 1);
  ChromaCursor cc{u_row(cr), v_row(cr), us, vs, cr, ch};
  uint2 l0 = make_uint2(0, 0), l1 = make_uint2(0, 0);
  Raw raw{0, 0, 0};
  auto fetch = [&](int by) {
    if (active)
      load_row_pair(lp, ys, 2 * by + 1 < height, l0, l1);
    else
      lp += 2 * ys;
    raw = raw_row(cc.u, cc.v);
    cc.step();
  };
  fetch(first);
  for (int by = first; by < last; ++by) {
    const uint2 luma_words[2] = {l0, l1};
    const Raw cur = raw;
    if (by + 1 < last) fetch(by + 1);
    across(cur, hu[2], hv[2]);
    CO_UNROLL
    for (int dy = 0; dy < 2; ++dy) {
      // A clamped row is read, not written; lanes past the picture only
      // read chroma for their neighbours.
      if ((dy == 1 && 2 * by + 1 >= height) || !active) continue;
      const uint2 lw = luma_words[dy];
      const int luma[4] = {deep_sample(lw.x & 0xFFFFu, kP010), deep_sample(lw.x >> 16, kP010),
                           deep_sample(lw.y & 0xFFFFu, kP010), deep_sample(lw.y >> 16, kP010)};
      // Down: even rows with the row above, odd rows with the row below.
      int u[4], v[4];
      CO_UNROLL
      for (int i = 0; i < 4; ++i) {
        u[i] = mix31(hu[1][i], hu[2 * dy][i]);
        v[i] = mix31(hv[1][i], hv[2 * dy][i]);
      }
      if constexpr (kOut == kToRgb) {
        uint32_t w[4];
        deep_rgb_words(L, luma, u, v, w);
        if (L.out_rgb24)
          store_rgb24_words(reinterpret_cast<uint32_t*>(o0), w);
        else
          *reinterpret_cast<uint4*>(o0) = make_uint4(w[0], w[1], w[2], w[3]);
      } else {
        uint32_t y4, c[4], a0, a1;
        deep_yuv_words(luma, u, v, &y4, c, &a0, &a1);
        store_yuv_words<kOut, true>(L, o0, o1, o2, y4, c, a0, a1);
      }
      o0 += os0;
      if (kPlane1) o1 += os1;
      if (kPlane2) o2 += os2;
    }
    CO_UNROLL
    for (int i = 0; i < 4; ++i) {
      hu[0][i] = hu[1][i], hu[1][i] = hu[2][i];
      hv[0][i] = hv[1][i], hv[1][i] = hv[2][i];
    }
  }
}

// Five blocks per multiprocessor, as yuv_to_packed_kernel (see there): the
// faster setting for these kernels too.
// kFast: deep420_fast for every thread, at four blocks per multiprocessor
// (its pointers, and the raw words a block row ahead, spilled at five).
template <int kOut, bool kP010, bool kFast>
__global__ void __launch_bounds__(kThreads, kFast ? 4 : 5)
    deep420_kernel(const __grid_constant__ ConvertLayout L, const __grid_constant__ ImageRef in,
                   const __grid_constant__ ImageRef out, int blocks_x, int blocks_y, int rows) {
  using convert_math::mix31;
  const int bx4 = blockIdx.x * blockDim.x + threadIdx.x;
  if constexpr (kFast) {
    const int step = gridDim.y * blockDim.y * rows;
    for (int first = (blockIdx.y * blockDim.y + threadIdx.y) * rows; first < blocks_y;
         first += step)
      deep420_fast<kOut, kP010>(L, in, out, 4 * bx4, bx4 < blocks_x, first,
                                min(first + rows, blocks_y));
    return;
  }
  // The chroma rows go by warp where the planes allow, with every lane.
  const bool by_warp = kP010 ? L.in_a8[1] : L.in_a4[1] && L.in_a4[2];
  const bool active = bx4 < blocks_x;
  if (!active && !by_warp) return;
  constexpr bool msb = kP010;
  const int width = in.width, x0 = 4 * bx4;
  const bool full = x0 + 4 <= width;
  const int cw = (width + 1) >> 1, ch = (in.height + 1) >> 1, c0 = x0 >> 1;
  // A column of `rows` block rows per thread, top to bottom, as in
  // yuv_to_packed_kernel: each chroma row is read and brought across once
  // for the three block rows that take it.
  auto across_row = [&](int r, int(&hu)[4], int(&hv)[4]) {
    int u[4], v[4];
    if (by_warp)
      deep_chroma_row_warp<kP010>(in, min(c0, cw - 1), clamp_index(r, ch), cw, u, v);
    else
      deep_chroma_row(L, in, c0, clamp_index(r, ch), cw, u, v);
    deep_across(u, hu);
    deep_across(v, hv);
  };
  const int stride_rows = gridDim.y * blockDim.y * rows;
  for (int first = (blockIdx.y * blockDim.y + threadIdx.y) * rows; first < blocks_y;
       first += stride_rows) {
    // Chroma across for the rows above, at and below the block row.
    int hu[3][4], hv[3][4];
    across_row(first - 1, hu[0], hv[0]);
    across_row(first, hu[1], hv[1]);
    const int last = min(first + rows, blocks_y);
    for (int by = first; by < last; ++by) {
      across_row(by + 1, hu[2], hv[2]);
      CO_UNROLL
      for (int dy = 0; dy < 2; ++dy) {
        const int y = 2 * by + dy;
        // A clamped row is read, not written; lanes past the picture only
        // read chroma for their neighbours.
        if (y >= in.height || !active) continue;
        int luma[4];
        const uint8_t* lrow = in.planes[0].data + static_cast<size_t>(y) * in.planes[0].stride;
        if (full && L.in_a16) {
          const uint2 w = *reinterpret_cast<const uint2*>(lrow + 2 * x0);
          luma[0] = deep_sample(w.x & 0xFFFFu, msb), luma[1] = deep_sample(w.x >> 16, msb);
          luma[2] = deep_sample(w.y & 0xFFFFu, msb), luma[3] = deep_sample(w.y >> 16, msb);
        } else {
          CO_UNROLL
          for (int i = 0; i < 4; ++i)
            luma[i] = deep_sample(load16(lrow + 2 * min(x0 + i, width - 1), L.in_a2[0]), msb);
        }
        // Down: even rows with the row above, odd rows with the row below.
        int u[4], v[4];
        CO_UNROLL
        for (int i = 0; i < 4; ++i) {
          u[i] = mix31(hu[1][i], hu[2 * dy][i]);
          v[i] = mix31(hv[1][i], hv[2 * dy][i]);
        }
        // A pixel past an odd width is the last one clamped (see
        // yuv_to_packed_kernel).
        if (x0 + 1 >= width) u[1] = u[0], v[1] = v[0];
        if (x0 + 3 >= width) u[3] = u[2], v[3] = v[2];
        if constexpr (kOut == kToRgb) {
          uint32_t w[4];
          deep_rgb_words(L, luma, u, v, w);
          uint8_t* row = out.planes[0].data + static_cast<size_t>(y) * out.planes[0].stride;
          if (L.out_rgb24)
            store_rgb24(row, x0, width, full, L.out_a4[0], w);
          else
            store_packed(row, x0, width, full, L.out_a16, L.out_a4[0], w);
        } else {
          uint32_t y4, c[4], a0, a1;
          deep_yuv_words(luma, u, v, &y4, c, &a0, &a1);
          store_yuv_row<kOut>(L, out, y, x0, width, full, y4, c, a0, a1);
        }
      }
      CO_UNROLL
      for (int i = 0; i < 4; ++i) {
        hu[0][i] = hu[1][i], hu[1][i] = hu[2][i];
        hv[0][i] = hv[1][i], hv[1][i] = hv[2][i];
      }
    }
  }
}

// Whether deep420_fast may run: the width a multiple of 4, luma aligned
// for its 8-byte words, chroma as deep_chroma_row_warp needs it, and the
// output as yuv_to_packed_fast needs it (its luma plane too: there the
// chroma threads write luma).
bool deep_fast(const ConvertLayout& L, int width, bool p010) {
  const bool in = width % 4 == 0 && L.in_a16 && (p010 ? L.in_a8[1] : L.in_a4[1] && L.in_a4[2]);
  const bool luma = L.yuv_out == kToRgb || L.yuv_out == kToPacked422 || L.out_a4[0];
  return in && luma && yuv_fast_out(L);
}

}  // namespace

bool deep420_takes(PixelFormat in, PixelFormat out, const ConvertCoefficients& k, int* yuv_out) {
  using F = PixelFormat;
  if ((in != F::kP010_10LE && in != F::kI420_10LE) || k.chroma_x != kUpLinear ||
      k.chroma_y != kUpLinear || k.scale_planes)
    return false;
  *yuv_out = yuv_out_to(out);
  return k.out_family == convert_math::kPacked || *yuv_out != kToRgb;
}

void deep420_cuda(const ImageRef& in, const ImageRef& out, const ConvertCoefficients& k,
                  int yuv_out, cudaStream_t stream) {
  const bool rgb24 = out.format == PixelFormat::kRGB || out.format == PixelFormat::kBGR;
  const ConvertLayout L = layout_of(in, out, k, rgb24, yuv_out);
  const int bw = (in.width + 3) / 4, bh = (in.height + 1) / 2;
  if (bw == 0 || bh == 0) return;
  const int rows = rows_per_thread(bw, bh);
  const dim3 grid((bw + kBlockX - 1) / kBlockX,
                  static_cast<unsigned>(
                      std::min<int>((bh + kBlockY * rows - 1) / (kBlockY * rows), kMaxGridY)));
  const dim3 block(kBlockX, kBlockY);
  const bool p010 = in.format == PixelFormat::kP010_10LE;
  const bool fast = deep_fast(L, in.width, p010);
  with_yuv_out(yuv_out, [&](auto kind) {
    constexpr int kOut = decltype(kind)::value;
    if (p010 && fast)
      deep420_kernel<kOut, true, true><<<grid, block, 0, stream>>>(L, in, out, bw, bh, rows);
    else if (p010)
      deep420_kernel<kOut, true, false><<<grid, block, 0, stream>>>(L, in, out, bw, bh, rows);
    else if (fast)
      deep420_kernel<kOut, false, true><<<grid, block, 0, stream>>>(L, in, out, bw, bh, rows);
    else
      deep420_kernel<kOut, false, false><<<grid, block, 0, stream>>>(L, in, out, bw, bh, rows);
  });
  CO_CUDA_CHECK_LAUNCH("the convert kernel (10-bit 4:2:0)");
}

}  // namespace convert_detail
}  // namespace cudaoverlap
