// The first nine formats (4-byte RGB, NV12, I420, GRAY8) and NV21 among
// themselves, and 8-bit 4:2:0 YUV to 3-byte RGB, 4:2:2 and 4:4:4 YUV: one
// thread per 4x2 block (convert_kernel), or down a column of them
// (yuv_to_packed_kernel, for 4:2:0 input to packed or 4:2:2/4:4:4 output).
//
// The reference's unit is the 2x2 block; a 4x2 block lets every plane move
// in words: a row of 4 packed pixels is 16 bytes, of 4 luma samples 4 bytes,
// of NV12's two (U, V) pairs 4 bytes. Packed pixels are taken apart and put
// together with byte permutes whose selectors the host derives from the
// formats' byte offsets, instead of per-byte shifts by run-time amounts.
// YUV -> RGB splits videoconvert's formula into a chroma part and a luma
// part; the sums are the same integers in the same groupings, and the
// chroma part is computed once per sample where 4 pixels share one (I420's
// nearest sample). Each splat-and-multiply is one byte permute and one
// high-word multiply, and the sums are clamped two channels at a time in
// 16-bit lanes (see yuv_pixel). NV12's 3:1 interpolation runs on U and V
// together in two 16-bit lanes; a thread converts a column of several
// blocks, so each chroma row's horizontal step serves the three block rows
// that read it.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "kernels/convert/convert_rgb_words.cuh"
#include "kernels/cuda_check.h"

namespace cudaoverlap {
namespace convert_detail {
namespace {

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
__device__ __forceinline__ void uv_pair_as_stored(const ConvertLayout& L, const ImageRef& in,
                                                  bool nv12, int c, int r, int cw, uint32_t* s0,
                                                  uint32_t* s1) {
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

// The same with NV21's (V, U) pairs swapped to U low, V high.
__device__ __forceinline__ void uv_pair(const ConvertLayout& L, const ImageRef& in, bool nv12,
                                        int c, int r, int cw, uint32_t* s0, uint32_t* s1) {
  uv_pair_as_stored(L, in, nv12, c, r, cw, s0, s1);
  if (nv12 && L.in_swap) {
    *s0 = __byte_perm(*s0, 0, 0x1032);
    *s1 = __byte_perm(*s1, 0, 0x1032);
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
    // 4:2:0 input has its own kernel (yuv_to_packed_kernel).
    for (int dy = 0; dy < 2; ++dy) {
      if (!row_inside[dy]) continue;
      uint32_t w[4];
      if (kIn == kPacked) {
        // RGB to RGB moves bytes, alpha or padding with the pixel.
        for (int i = 0; i < 4; ++i) w[i] = __byte_perm(px[dy][i], 0, L.repack_perm);
      } else {
        for (int i = 0; i < 4; ++i)
          w[i] =
              __byte_perm(((luma[dy] >> (8 * i)) & 0xFFu) * 0x010101u | 0xFF000000u, 0, L.out_perm);
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
        if (kOut == kYuv) {
          u[dy][i] = rgb_to(k.to_yuv[1], r, g, b);
          v[dy][i] = rgb_to(k.to_yuv[2], r, g, b);
        }
      }
    }
    if (!row_inside[dy]) continue;
    uint8_t* row = out.planes[0].data + static_cast<size_t>(ys[dy]) * out.planes[0].stride;
    store_luma(row, x0, width, full, L.out_a4[0], y4);
  }
  if (kOut != kYuv) return;

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
  if (kIn == kYuv) {
    // Same subsampling on both sides: the input's samples, unfiltered.
    uint32_t s[2];
    uv_pair(L, in, L.in_semi, c0, by, cw, &s[0], &s[1]);
    for (int j = 0; j < 2; ++j) {
      cu[j] = s[j] & 0xFF;
      cv[j] = s[j] >> 16;
    }
  }
  if (L.out_semi) {
    if (L.out_swap) {
      for (int j = 0; j < 2; ++j) {
        const int t = cu[j];
        cu[j] = cv[j];
        cv[j] = t;
      }
    }
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

// --- 4:2:0 input to packed output: a thread converts a column of `rows`
// consecutive 4x2 blocks, top to bottom, so that each chroma row's loads and
// horizontal interpolation serve the three block rows that read it, and
// issues the loads of the next block before converting the current one.

// The inputs of one block row: its two luma rows (4 samples each) and the
// chroma row it fetches (the one below for interpolated chroma, its own
// otherwise).
struct BlockInput {
  uint32_t luma[2];
  ChromaRow chroma;
};

template <bool kLinear, bool kLuma = true>
__device__ __forceinline__ BlockInput fetch_block(const ConvertLayout& L, const ImageRef& in,
                                                  bool nv12, int x0, bool full, int by, int cw,
                                                  int ch) {
  BlockInput b{};
  for (int dy = 0; dy < 2 && kLuma; ++dy) {
    const int y = clamp_index(2 * by + dy, in.height);
    b.luma[dy] = load_luma(in.planes[0].data + static_cast<size_t>(y) * in.planes[0].stride, x0,
                           in.width, full, L.in_a4[0]);
  }
  b.chroma =
      fetch_chroma_row<kLinear>(L, in, nv12, x0 >> 1, kLinear ? min(by + 1, ch - 1) : by, cw);
  return b;
}

// The vertical step of 4:2:0 chroma interpolation (yuv_to_packed_kernel):
// the splats of each pixel's U and V for the block's two rows, from the
// horizontal steps of the chroma rows above, at and below the block row.
__device__ __forceinline__ void vertical_step(const uint32_t h_up[4], const uint32_t h_mid[4],
                                              const uint32_t h_down[4], uint32_t uv[2][4]) {
  // mix31 of lanes below 256, with 512 more per lane: (3 a + b + 2 + 512)
  // >> 2 == mix31(a, b) + 128, whose low byte is mix31(a, b) ^ 0x80; no
  // lane exceeds 11 bits, so none carries into the other and bytes 0 and 2
  // after the shift are the two lanes' results (the bits above them in each
  // lane are unused).
  CO_UNROLL
  for (int i = 0; i < 4; ++i) {
    const uint32_t a = 3 * h_mid[i] + 0x02020202u;
    uv[0][i] = (a + h_up[i]) >> 2;    // even rows look up
    uv[1][i] = (a + h_down[i]) >> 2;  // odd rows down
  }
}

// Nearest 4:2:0 chroma: pixels 0, 1 take column c0, pixels 2, 3 column
// c0 + 1, of both rows (splats, as vertical_step gives them).
__device__ __forceinline__ void nearest_step(uint32_t mid, uint32_t uv[2][4]) {
  const uint32_t m = mid ^ 0x80808080u;
  const uint32_t left = __byte_perm(m, 0, 0x4140), right = __byte_perm(m, 0, 0x4342);
  CO_UNROLL
  for (int dy = 0; dy < 2; ++dy) {
    uv[dy][0] = uv[dy][1] = left;
    uv[dy][2] = uv[dy][3] = right;
  }
}

// yuv_to_packed_kernel's threads on a picture whose width is a multiple of
// 4, where every plane they touch is aligned for word loads and stores
// (yuv_fast): block rows first .. last - 1. The same arithmetic as the
// kernel's general loop, with the clamps and alignments settled once per
// thread: each plane's row is a pointer stepped a stride at a time, the
// chroma neighbours left and right are fixed offsets from it (clamped at
// the picture's edges), and every access is one load or store. The
// general loop's per-row clamps, 64-bit row products and byte-wise
// fallbacks were most of its instructions (NV12 -> YUY2: 32 a pixel).
template <bool kLinear, int kOut, bool kSemi>
__device__ __forceinline__ void yuv_to_packed_fast(const ConvertLayout& L, const ImageRef& in,
                                                   const ImageRef& out, int x0, int first,
                                                   int last) {
  constexpr bool kLumaApart = kOut != kToRgb && kOut != kToPacked422;
  constexpr bool kTwoOut = kLumaApart && kOut != kToSemi422;  // U and V planes
  const int height = in.height;
  const int c0 = x0 >> 1, cw = (in.width + 1) >> 1, ch = (height + 1) >> 1;
  // Strides in 32 bits: pointers step by them, and they take one register.
  const uint32_t ys = static_cast<uint32_t>(in.planes[0].stride);
  const uint32_t us = static_cast<uint32_t>(in.planes[1].stride);
  const uint32_t vs = kSemi ? 0u : static_cast<uint32_t>(in.planes[2].stride);
  // Chroma neighbours' byte offsets from column c0: c0 - 1 and c0 + 2,
  // clamped to the plane (c0 + 1 is inside it: the thread's 4 columns are).
  constexpr int kStep = kSemi ? 2 : 1;
  const int left = c0 >= 1 ? -kStep : 0, right = c0 + 2 < cw ? 2 * kStep : kStep;
  auto u_row = [&](int r) { return in.planes[1].data + static_cast<size_t>(r) * us + kStep * c0; };
  auto v_row = [&](int r) {
    return kSemi ? nullptr : in.planes[2].data + static_cast<size_t>(r) * vs + c0;
  };
  auto chroma = [&](const uint8_t* u, const uint8_t* v) {
    ChromaRow row{0, 0, 0};
    if constexpr (kSemi) {
      row.mid = *reinterpret_cast<const uint32_t*>(u);
      if (kLinear) {
        row.left = *reinterpret_cast<const uint16_t*>(u + left);
        row.right = *reinterpret_cast<const uint16_t*>(u + right);
      }
      if (L.in_swap) {  // NV21: (V, U) pairs to (U, V)
        row.mid = __byte_perm(row.mid, 0, 0x2301);
        row.left = __byte_perm(row.left, 0, 0x4401);
        row.right = __byte_perm(row.right, 0, 0x4401);
      }
    } else {
      row.mid = __byte_perm(*reinterpret_cast<const uint16_t*>(u),
                            *reinterpret_cast<const uint16_t*>(v), 0x5140);
      if (kLinear) {
        row.left = static_cast<uint32_t>(u[left]) | static_cast<uint32_t>(v[left]) << 8;
        row.right = static_cast<uint32_t>(u[right]) | static_cast<uint32_t>(v[right]) << 8;
      }
    }
    return row;
  };
  // Output rows: plane 0 at this thread's first byte (packed output), or
  // the chroma planes (4:2:2 and 4:4:4: a row per luma row; luma is
  // copied by blocks of its own).
  const uint32_t os0 = static_cast<uint32_t>(out.planes[0].stride);
  const uint32_t os1 = kLumaApart ? static_cast<uint32_t>(out.planes[1].stride) : 0u;
  const uint32_t os2 = kTwoOut ? static_cast<uint32_t>(out.planes[2].stride) : 0u;
  const int out_c = kOut == kToPlanar444 ? x0 : kOut == kToSemi422 ? 2 * c0 : c0;
  const size_t y_first = static_cast<size_t>(2 * first);
  const int bpp = kOut == kToPacked422 ? 2 : L.out_rgb24 ? 3 : 4;
  uint8_t* o0 = kLumaApart ? nullptr : out.planes[0].data + y_first * os0 + x0 * bpp;
  uint8_t* o1 = kLumaApart ? out.planes[1].data + y_first * os1 + out_c : nullptr;
  uint8_t* o2 = kTwoOut ? out.planes[2].data + y_first * os2 + out_c : nullptr;
  const uint8_t* yp = kLumaApart ? nullptr : in.planes[0].data + y_first * ys + x0;

  uint32_t h_up[4] = {}, h_mid[4] = {};
  if (kLinear) {
    const int above = max(first - 1, 0);
    horizontal_step(chroma(u_row(above), v_row(above)), h_up);
    horizontal_step(chroma(u_row(first), v_row(first)), h_mid);
  }
  // The chroma row each block row fetches: the one below (clamped) for
  // interpolated chroma, its own otherwise.
  const int cr = kLinear ? min(first + 1, ch - 1) : first;
  ChromaCursor cc{u_row(cr), v_row(cr), us, vs, cr, ch};
  // A block row's loads, issued a block row ahead of its arithmetic (as in
  // the kernel's general loop).
  uint32_t l0 = 0, l1 = 0;
  ChromaRow row{0, 0, 0};
  auto fetch = [&](int by) {
    if (!kLumaApart) load_row_pair(yp, ys, 2 * by + 1 < height, l0, l1);
    row = chroma(cc.u, cc.v);
    cc.step();
  };
  fetch(first);
  for (int by = first; by < last; ++by) {
    const uint32_t luma0 = l0, luma1 = l1;
    const ChromaRow cur = row;
    if (by + 1 < last) fetch(by + 1);
    // The splats of each pixel's U and V (see the general loop), per row.
    uint32_t uv[2][4];
    if (kLinear) {
      uint32_t h_down[4];
      horizontal_step(cur, h_down);
      vertical_step(h_up, h_mid, h_down, uv);
      CO_UNROLL
      for (int i = 0; i < 4; ++i) {
        h_up[i] = h_mid[i];
        h_mid[i] = h_down[i];
      }
    } else {
      nearest_step(cur.mid, uv);
    }
    CO_UNROLL
    for (int dy = 0; dy < 2; ++dy) {
      // A clamped row (an odd height's last) is read, not written.
      if (dy == 1 && 2 * by + 1 >= height) continue;
      const uint32_t luma = dy == 0 ? luma0 : luma1;
      if constexpr (kOut == kToRgb) {
        uint32_t w[4];
        rgb_words(L, luma, uv[dy], w);
        if (L.out_rgb24)
          store_rgb24_words(reinterpret_cast<uint32_t*>(o0), w);
        else
          *reinterpret_cast<uint4*>(o0) = make_uint4(w[0], w[1], w[2], w[3]);
      } else {
        // Each pixel's chroma U | V << 16.
        uint32_t c[4];
        CO_UNROLL
        for (int i = 0; i < 4; ++i) c[i] = (uv[dy][i] ^ 0x00800080u) & 0x00FF00FFu;
        store_yuv_words<kOut, false>(L, o0, o1, o2, luma, c, pair_average(c[0], c[1]),
                                     pair_average(c[2], c[3]));
      }
      if (!kLumaApart) o0 += os0;
      if (kLumaApart) o1 += os1;
      if (kTwoOut) o2 += os2;
    }
  }
}

// Five blocks per multiprocessor (at most 48 registers, a few bytes
// spilled for some outputs): with four (64 registers) too few warps are
// ready to issue; six (40 registers) spill more for no gain.
//
// kFast: every thread runs yuv_to_packed_fast (the picture's width a
// multiple of 4 and the planes aligned, yuv_fast); a kernel of its own, as
// the general loop's registers in the same kernel made the fast one spill.
template <bool kLinear, int kOut, bool kFast>
__global__ void __launch_bounds__(kThreads, 5)
    yuv_to_packed_kernel(ConvertLayout L, ImageRef in, ImageRef out, int blocks_x, int blocks_y,
                         int rows, LumaCopy luma) {
  // YUV output: luma is a copy, made by blocks of its own after the chroma
  // blocks across (copy_luma), so the chroma threads neither load nor store
  // it.
  constexpr bool kLumaApart = kOut != kToRgb && kOut != kToPacked422;
  if constexpr (kLumaApart) {
    const int chroma_x = (blocks_x + kBlockX - 1) / kBlockX;
    if (static_cast<int>(blockIdx.x) >= chroma_x) {
      copy_luma(luma, static_cast<int>(blockIdx.x) - chroma_x);
      return;
    }
  }
  const int bx4 = blockIdx.x * blockDim.x + threadIdx.x;
  if (bx4 >= blocks_x) return;
  const bool nv12 = L.in_semi;
  const int width = in.width;
  const int cw = (width + 1) >> 1, ch = (in.height + 1) >> 1;
  const int x0 = 4 * bx4;
  const bool full = x0 + 4 <= width;
  const int stride_rows = gridDim.y * blockDim.y * rows;
  for (int first = (blockIdx.y * blockDim.y + threadIdx.y) * rows; first < blocks_y;
       first += stride_rows) {
    const int last = min(first + rows, blocks_y);
    if constexpr (kFast) {
      if (nv12)
        yuv_to_packed_fast<kLinear, kOut, true>(L, in, out, x0, first, last);
      else
        yuv_to_packed_fast<kLinear, kOut, false>(L, in, out, x0, first, last);
      continue;
    }
    // Horizontal steps of the chroma rows above (clamped) and at the block
    // row; the loop fetches the one below.
    uint32_t h_up[4] = {}, h_mid[4] = {};
    if (kLinear) {
      horizontal_step(fetch_chroma_row<true>(L, in, nv12, x0 >> 1, max(first - 1, 0), cw), h_up);
      horizontal_step(fetch_chroma_row<true>(L, in, nv12, x0 >> 1, first, cw), h_mid);
    }
    BlockInput cur = fetch_block<kLinear, !kLumaApart>(L, in, nv12, x0, full, first, cw, ch);
    for (int by = first; by < last; ++by) {
      BlockInput next = cur;
      if (by + 1 < last)
        next = fetch_block<kLinear, !kLumaApart>(L, in, nv12, x0, full, by + 1, cw, ch);
      // The splats (times 65536) of each pixel's U and V, per row: bytes 0
      // and 2 of uv[dy][i] are U ^ 0x80 and V ^ 0x80.
      uint32_t uv[2][4];
      if (kLinear) {
        uint32_t h_down[4];
        horizontal_step(cur.chroma, h_down);
        vertical_step(h_up, h_mid, h_down, uv);
        for (int i = 0; i < 4; ++i) {
          h_up[i] = h_mid[i];
          h_mid[i] = h_down[i];
        }
      } else {
        nearest_step(cur.chroma.mid, uv);
      }
      for (int dy = 0; dy < 2; ++dy) {
        const int y = 2 * by + dy;
        if (y >= in.height) continue;  // a clamped row is read, not written
        if constexpr (kOut != kToRgb) {
          // Each pixel's chroma, U | V << 16 (uv holds them ^ 0x80 in bytes
          // 0 and 2). A pixel past an odd width is the last one clamped, as
          // in the reference: its chroma is the last pixel's, not the next
          // column's interpolation.
          uint32_t c[4];
          for (int i = 0; i < 4; ++i) c[i] = (uv[dy][i] ^ 0x00800080u) & 0x00FF00FFu;
          if (x0 + 1 >= width) c[1] = c[0];
          if (x0 + 3 >= width) c[3] = c[2];
          store_yuv_row<kOut, !kLumaApart>(L, out, y, x0, width, full, cur.luma[dy], c,
                                           pair_average(c[0], c[1]), pair_average(c[2], c[3]));
          continue;
        }
        // Nearest chroma: pixels 1 and 3 share pixels 0 and 2's terms,
        // which the compiler computes once.
        store_rgb_row(L, out, y, x0, width, full, cur.luma[dy], uv[dy]);
      }
      cur = next;
    }
  }
}

bool yuv_fast(const ConvertLayout& L, int width) {
  return width % 4 == 0 && L.in_a4[0] && (L.in_semi ? L.in_a4[1] : L.in_a2[1] && L.in_a2[2]) &&
         yuv_fast_out(L);
}

template <int kIn>
void launch(int out_family, dim3 grid, dim3 block, cudaStream_t stream, const ConvertLayout& L,
            const ImageRef& in, const ImageRef& out, int bw, int bh) {
  using namespace convert_math;
  if constexpr (kIn == kYuv) {
    // 4:2:0 input to packed RGB, 4:2:2 or 4:4:4: yuv_to_packed_kernel.
    if (out_family == kPacked || L.yuv_out != kToRgb) {
      // At most 2 block rows a thread: 8-bit 4:2:0 to 4:2:2 is faster at 2
      // than at 4, and no output gains from 4. The 10-bit kernel keeps 4,
      // where it is the faster.
      const int rows = std::min(2, rows_per_thread(bw, bh));
      if (grid.x != 0)
        grid.y = static_cast<unsigned>(
            std::min<int>((bh + kBlockY * rows - 1) / (kBlockY * rows), kMaxGridY));
      const bool linear = L.k.chroma_x == kUpLinear;
      // YUV output: blocks for luma after the chroma blocks across, a band
      // of them per band of block rows.
      const LumaCopy luma =
          luma_copy(in.planes[0], out.planes[0], in.width, in.height, 2 * kBlockY * rows);
      if (L.yuv_out != kToRgb && L.yuv_out != kToPacked422)
        grid.x += static_cast<unsigned>(luma_blocks(luma));
      const bool fast = yuv_fast(L, in.width);
      with_yuv_out(L.yuv_out, [&](auto kind) {
        constexpr int kOut = decltype(kind)::value;
        if (linear && fast)
          yuv_to_packed_kernel<true, kOut, true>
              <<<grid, block, 0, stream>>>(L, in, out, bw, bh, rows, luma);
        else if (linear)
          yuv_to_packed_kernel<true, kOut, false>
              <<<grid, block, 0, stream>>>(L, in, out, bw, bh, rows, luma);
        else if (fast)
          yuv_to_packed_kernel<false, kOut, true>
              <<<grid, block, 0, stream>>>(L, in, out, bw, bh, rows, luma);
        else
          yuv_to_packed_kernel<false, kOut, false>
              <<<grid, block, 0, stream>>>(L, in, out, bw, bh, rows, luma);
      });
      CO_CUDA_CHECK_LAUNCH("the convert kernel");
      return;
    }
  }
  switch (out_family) {
    case kPacked:
      if constexpr (kIn != kYuv)  // 4:2:0 input: above
        convert_kernel<kIn, kPacked><<<grid, block, 0, stream>>>(L, in, out, bw, bh);
      break;
    case kGrey:
      convert_kernel<kIn, kGrey><<<grid, block, 0, stream>>>(L, in, out, bw, bh);
      break;
    default:
      convert_kernel<kIn, kYuv><<<grid, block, 0, stream>>>(L, in, out, bw, bh);
      break;
  }
  CO_CUDA_CHECK_LAUNCH("the convert kernel");
}

}  // namespace

// Whether yuv_to_packed_fast may run (yuv_fast): the width a multiple of 4
// and every plane it reads and writes aligned for its word accesses (luma and NV12's chroma words,
// I420's 2-byte chroma pairs; the output's 16-byte packed pixels, 12-byte
// 3-byte pixels, 8-byte packed 4:2:2 pairs, or chroma words and pairs).
// yuv_fast_out is the output's part, which deep_fast shares.
bool yuv_fast_out(const ConvertLayout& L) {
  switch (L.yuv_out) {
    case kToRgb:
      return L.out_rgb24 ? L.out_a4[0] : L.out_a16;
    case kToPacked422:
      return L.out_a16;
    case kToSemi422:
      return L.out_a4[1];
    case kToPlanar422:
      return L.out_a2[1] && L.out_a2[2];
    default:
      return L.out_a4[1] && L.out_a4[2];
  }
}

int yuv_out_of(PixelFormat in, PixelFormat out, const ConvertCoefficients& k) {
  using F = PixelFormat;
  if ((in != F::kNV12 && in != F::kNV21 && in != F::kI420) || k.scale_planes) return kToRgb;
  return yuv_out_to(out);
}

void rgb_yuv_cuda(const ImageRef& in, const ImageRef& out, const ConvertCoefficients& coefficients,
                  bool rgb24, int yuv_out, cudaStream_t stream) {
  const ConvertLayout L = layout_of(in, out, coefficients, rgb24, yuv_out);
  const ConvertCoefficients& k = L.k;
  const int bw = (in.width + 3) / 4, bh = (in.height + 1) / 2;
  if (bw == 0 || bh == 0) return;
  dim3 grid((bw + kBlockX - 1) / kBlockX,
            static_cast<unsigned>(std::min<int>((bh + kBlockY - 1) / kBlockY, kMaxGridY)));
  const dim3 block(kBlockX, kBlockY);
  switch (k.in_family) {
    case convert_math::kPacked:
      launch<convert_math::kPacked>(k.out_family, grid, block, stream, L, in, out, bw, bh);
      return;
    case convert_math::kGrey:
      launch<convert_math::kGrey>(k.out_family, grid, block, stream, L, in, out, bw, bh);
      return;
    default:
      launch<convert_math::kYuv>(k.out_family, grid, block, stream, L, in, out, bw, bh);
      return;
  }
}

}  // namespace convert_detail
}  // namespace cudaoverlap
