// CUDA implementation of the `convert` kernel (see convert.h). Between the
// first nine formats (4-byte RGB, NV12, I420, GRAY8) and NV21 (NV12 with
// its chroma pairs swapped as they are read and written), and from 8-bit
// 4:2:0 YUV to 3-byte RGB and to 4:2:2 and 4:4:4 YUV: one thread per 4x2
// block of the picture (two chroma samples of 4:2:0 formats), running the
// arithmetic of convert_math.h that the CPU reference also runs. 10-bit
// 4:2:0 to 8-bit RGB, 4:2:2 and 4:4:4 (deep420_kernel) and Bayer input
// have kernels of their own; so have inputs whose chroma rows are their
// luma rows or which have no chroma (8-bit 4:2:2 and 4:4:4 YUV, 8-bit
// packed RGB) to the outputs rows_kernel makes (rows_takes), YUV to YUV
// through videoconvert's plane scaler (luma copied and each chroma plane
// scaled in one launch: scale_window_kernel, else scale_planes_kernel),
// 8-bit YUV to YUV of one subsampling between planar and semi-planar
// layouts (bytes moved: move_chroma_kernel) and YUV to YUV of one
// subsampling with a deeper side (each sample repacked:
// repack_samples_kernel), and grey to packed RGB
// through a table (grey_packed_kernel); a format to itself, where the
// reference is a copy, is the copy kernel. Every other pair: one thread
// per 2x2 block reading it with the reference's own load_* functions, then
// writing through a shared-memory tile in words (8-bit sides to packed
// output: convert_tile_kernel) or as the reference writes it
// (convert_block_kernel).
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
// that read it. The per-pixel instruction count, more than memory traffic,
// bounded the earlier versions (YUV input, with the fewest bytes per pixel,
// was the furthest from the memory bound).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "convert.h"
#include "convert_math.h"
#include "copy.h"
#include "cuda_check.h"
#include "debayer_math.h"
#include "operation.h"
#include "rgb24_words.cuh"

namespace cudaoverlap {
namespace {

using convert_math::clamp_index;
using convert_math::mix31_lanes;

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
  // yuv_pixel's lanes (R, B, G, alpha at bytes 0, 2, 4, 6) -> packed output.
  uint32_t yuv_perm;
  // Pointer and stride of each plane a multiple of 4 (a4), 16 (a16; plane
  // 0 only: packed pixels, or luma copied 16 bytes a thread) or 2 (a2; for
  // 2-byte chroma loads and stores).
  bool in_a4[3], in_a2[3], in_a16;
  // 4:2:0 chroma in one plane of (U, V) pairs (NV12), or (V, U) pairs
  // (NV21: swapped as it is read and written), rather than in two (I420).
  bool in_semi, in_swap, out_semi, out_swap;
  bool out_a4[3], out_a2[3], out_a16;
  // 3-byte RGB output (4:2:0 YUV input only): the perms above place R, G, B
  // in bytes 0..2 of each pixel word, and store_rgb24 packs 4 pixels into
  // 3 words.
  bool out_rgb24;
  // 4:2:0 input to 4:2:2 or 4:4:4 YUV (YuvOut, below; kToRgb otherwise),
  // and for packed 4:2:2 the byte permute from a pair word laid out
  // Y0 U Y1 V to the output's order.
  int yuv_out;
  uint32_t pair_perm;
  // Packed 4:2:2 input (rows_kernel): byte permutes from two consecutive
  // pair words to their 4 luma samples (pair_luma_sel) and to U0 V0 U1 V1
  // (pair_uv_sel), and from one pair word to its U, V in bytes 0 and 1
  // (pair_one_uv_sel).
  uint32_t pair_luma_sel, pair_uv_sel, pair_one_uv_sel;
  // Pointer and stride of each input plane a multiple of 8 (16-bit
  // samples' 8-byte loads: deep420_kernel's chroma words,
  // grey_packed_kernel's GRAY16 rows).
  bool in_a8[3];
};

// What yuv_to_packed_kernel writes: packed RGB, or YUV of 4:2:2 (packed,
// semi-planar, planar) or 4:4:4 from 4:2:0 input, chroma brought to each
// pixel as for RGB and averaged across in pairs where the output
// subsamples (convert_math::block_chroma), luma copied.
enum YuvOut : int { kToRgb, kToPacked422, kToSemi422, kToPlanar422, kToPlanar444 };
// 4:2:0 output, from rows_kernel only: chroma pairs
// averaged across, then down; 8-bit, or 10-bit from the 16-bit arithmetic
// (P010_10LE, I420_10LE).
enum : int { kToSemi420 = kToPlanar444 + 1, kToPlanar420, kToP010, kToI420_10 };
// Grey output, from rows_kernel's RGB sources only: luma alone, 8-bit or
// on the 16-bit scale (GRAY16_LE stores all 16 bits).
enum : int { kToGrey8 = kToI420_10 + 1, kToGrey16 };

// videoconvert's YUV -> RGB (convert_math::yuv_to_rgb) in as few
// instructions as the same integers allow. splat(s) of a sample s - 128 is
// its byte s ^ 0x80 duplicated into a signed 16-bit value, so the byte
// placed in bytes 2 and 3 of a word (one byte permute) reads, as a signed
// 32-bit value, splat(s) * 65536 exactly; the high word of its product with
// a coefficient is then floor(splat(s) * c / 65536) == mulhsw(splat(s), c),
// one multiply. The three channels are summed and clamped in two signed
// 16-bit lanes (R and B in one word, G and a lane that always saturates to
// 255 for alpha in the other), each sum far inside 16 bits, and a byte
// permute puts the four bytes where the output format wants them.
//
// Selector of the byte permute that puts the byte at index `i` of a word
// into its bytes 2 and 3 (zeros below).
__device__ __forceinline__ uint32_t splat_sel(int i) {
  return static_cast<uint32_t>(i * 0x1100 + 0x44);
}

// The chroma terms of one (U, V) pair: R in the low lane and B in the high
// lane of `rb`; G in the low lane of `ga` and 511 or 512 in its high lane,
// which saturates with any luma term. xu and xv are the samples' splats
// times 65536 (see above).
struct ChromaTerms {
  uint32_t rb, ga;
};

__device__ __forceinline__ ChromaTerms chroma_terms(const ConvertCoefficients& k, int xu, int xv) {
  const int r = __mulhi(xv, k.to_rgb[1]);
  const int b = __mulhi(xu, k.to_rgb[2]);
  const int g = __mulhi(xu, k.to_rgb[3]) + __mulhi(xv, k.to_rgb[4]);
  // |g| < 65536, so adding 512 << 16 leaves the low lane g's low 16 bits
  // and the high one 512 (g >= 0) or 511 (g < 0).
  return {__byte_perm(static_cast<uint32_t>(r), static_cast<uint32_t>(b), 0x5410),
          static_cast<uint32_t>(g + 0x02000000)};
}

// The pixel of luma splat xy (times 65536) and chroma terms t, through the
// permute `sel` (R, B, G, alpha at bytes 0, 2, 4, 6 of the lanes) into the
// output format: clamp255(wy + term + 128) == sat8(wy + term) + 128 for
// every channel, in lanes, with the + 128 in the luma term. The lanes'
// sums lie within +-1024 (|wy| < 150, |term| < 300, G's alpha lane below
// 800), far from 16-bit wrap-around. Each add-and-clamp of two lanes is one
// instruction from sm_90 on.
__device__ __forceinline__ uint32_t yuv_pixel(const ConvertCoefficients& k, int xy,
                                              const ChromaTerms& t, uint32_t sel) {
  const uint32_t wy = static_cast<uint32_t>(__mulhi(xy, k.to_rgb[0]) + 128);
  const uint32_t wy2 = __byte_perm(wy, 0, 0x1010);  // in both lanes
  const uint32_t rb = __viaddmin_s16x2_relu(wy2, t.rb, 0x00FF00FFu);
  const uint32_t ga = __viaddmin_s16x2_relu(wy2, t.ga, 0x00FF00FFu);
  return __byte_perm(rb, ga, sel);
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

// Four 3-byte pixels, bytes 0..2 of px[i], as the three words they fill.
__device__ __forceinline__ void store_rgb24_words(uint32_t* d, const uint32_t px[4]) {
  uint32_t q[3];
  rgb24::pack(px, q);
  d[0] = q[0], d[1] = q[1], d[2] = q[2];
}

// Four 3-byte pixels: three words where the row is 4-byte aligned (4
// pixels are 12 bytes) and all 4 are inside.
__device__ __forceinline__ void store_rgb24(uint8_t* row, int x0, int width, bool full, bool a4,
                                            const uint32_t px[4]) {
  uint8_t* p = row + static_cast<size_t>(x0) * 3;
  if (a4 && full) {
    store_rgb24_words(reinterpret_cast<uint32_t*>(p), px);
    return;
  }
  for (int i = 0; i < 4 && x0 + i < width; ++i)
    for (int c = 0; c < 3; ++c) p[3 * i + c] = static_cast<uint8_t>(px[i] >> (8 * c));
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

// What a block takes from chroma row r of a 4:2:0 input around its columns
// c0 and c0 + 1 (c0 + 1 clamped to the plane): `mid` holds U(c0), V(c0),
// U(c0 + 1), V(c0 + 1) in bytes 0..3; for interpolated chroma, `left` and
// `right` hold U and V of columns c0 - 1 and c0 + 2, clamped, in bytes 0
// and 1. Loaded as words when the plane's alignment and the columns allow.
struct ChromaRow {
  uint32_t mid, left, right;
};

// U | V << 8 of column c, row r (inside the plane).
__device__ __forceinline__ uint32_t uv_bytes(const ImageRef& in, bool nv12, int c, int r) {
  if (nv12) {
    const uint8_t* p = in.planes[1].data + static_cast<size_t>(r) * in.planes[1].stride + 2 * c;
    return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8;
  }
  return static_cast<uint32_t>(
             in.planes[1].data[static_cast<size_t>(r) * in.planes[1].stride + c]) |
         static_cast<uint32_t>(in.planes[2].data[static_cast<size_t>(r) * in.planes[2].stride + c])
             << 8;
}

template <bool kLinear>
__device__ __forceinline__ ChromaRow fetch_chroma_row(const ConvertLayout& L, const ImageRef& in,
                                                      bool nv12, int c0, int r, int cw) {
  ChromaRow row{0, 0, 0};
  const bool pair = c0 + 1 < cw;
  if (nv12) {
    const uint8_t* p = in.planes[1].data + static_cast<size_t>(r) * in.planes[1].stride + 2 * c0;
    row.mid = L.in_a4[1] && pair ? *reinterpret_cast<const uint32_t*>(p)
                                 : __byte_perm(uv_bytes(in, true, c0, r),
                                               uv_bytes(in, true, min(c0 + 1, cw - 1), r), 0x5410);
    if (kLinear) {
      if (L.in_a2[1] && c0 >= 1 && c0 + 2 < cw) {
        row.left = *reinterpret_cast<const uint16_t*>(p - 2);
        row.right = *reinterpret_cast<const uint16_t*>(p + 4);
      } else {
        row.left = uv_bytes(in, true, clamp_index(c0 - 1, cw), r);
        row.right = uv_bytes(in, true, clamp_index(c0 + 2, cw), r);
      }
    }
    if (L.in_swap) {  // NV21: (V, U) pairs to (U, V)
      row.mid = __byte_perm(row.mid, 0, 0x2301);
      row.left = __byte_perm(row.left, 0, 0x4401);
      row.right = __byte_perm(row.right, 0, 0x4401);
    }
    return row;
  }
  if (L.in_a2[1] && L.in_a2[2] && pair) {
    const uint32_t u2 = *reinterpret_cast<const uint16_t*>(
        in.planes[1].data + static_cast<size_t>(r) * in.planes[1].stride + c0);
    const uint32_t v2 = *reinterpret_cast<const uint16_t*>(
        in.planes[2].data + static_cast<size_t>(r) * in.planes[2].stride + c0);
    row.mid = __byte_perm(u2, v2, 0x5140);
  } else {
    row.mid = __byte_perm(uv_bytes(in, false, c0, r), uv_bytes(in, false, min(c0 + 1, cw - 1), r),
                          0x5410);
  }
  if (kLinear) {
    row.left = uv_bytes(in, false, clamp_index(c0 - 1, cw), r);
    row.right = uv_bytes(in, false, clamp_index(c0 + 2, cw), r);
  }
  return row;
}

// The horizontal step of convert_math::chroma_at for the block's 4 pixels,
// U and V in lanes: pixel i's own column is c0 + i / 2 and its second one
// c0 - 1 + {0, 2, 1, 3}[i] (the left neighbour for even x, the right one
// for odd x).
__device__ __forceinline__ void horizontal_step(const ChromaRow& row, uint32_t h[4]) {
  const uint32_t s0 = __byte_perm(row.mid, 0, 0x4140);
  const uint32_t s1 = __byte_perm(row.mid, 0, 0x4342);
  h[0] = mix31_lanes(s0, __byte_perm(row.left, 0, 0x4140));
  h[1] = mix31_lanes(s0, s1);
  h[2] = mix31_lanes(s1, s0);
  h[3] = mix31_lanes(s1, __byte_perm(row.right, 0, 0x4140));
}

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

// Two pixels' chroma (U | V << 16, 8 bits each) averaged, rounding up, in
// lanes (sums below 512), as convert_math::block_chroma averages a pair.
__device__ __forceinline__ uint32_t pair_average(uint32_t a, uint32_t b) {
  return ((a + b + 0x00010001u) >> 1) & 0x00FF00FFu;
}

// Chroma samples c0 and c0 + 1 (U | V << 16 in a0 and a1; the first n of
// them inside the plane) of one chroma row of a subsampled output, whose
// rows in planes 1 and 2 start at r1 and r2: a semi-planar plane of pairs
// (kSemi; pair_sel the byte permute that orders them: 0x6420 for (U, V),
// 0x4602 for NV21's (V, U)) or planes U and V.
template <bool kSemi>
__device__ __forceinline__ void store_chroma_pairs(const ConvertLayout& L, uint8_t* r1, uint8_t* r2,
                                                   uint32_t pair_sel, int c0, int n, uint32_t a0,
                                                   uint32_t a1) {
  if constexpr (kSemi) {
    const uint32_t w = __byte_perm(a0, a1, pair_sel);
    uint8_t* d = r1 + 2 * c0;
    if (n == 2 && L.out_a4[1]) {
      *reinterpret_cast<uint32_t*>(d) = w;
    } else {
      for (int b = 0; b < 2 * n; ++b) d[b] = static_cast<uint8_t>(w >> (8 * b));
    }
  } else {
    const uint32_t u = __byte_perm(a0, a1, 0x0040), v = __byte_perm(a0, a1, 0x0062);
    uint8_t* du = r1 + c0;
    uint8_t* dv = r2 + c0;
    if (n == 2 && L.out_a2[1] && L.out_a2[2]) {
      *reinterpret_cast<uint16_t*>(du) = static_cast<uint16_t>(u);
      *reinterpret_cast<uint16_t*>(dv) = static_cast<uint16_t>(v);
    } else {
      for (int j = 0; j < n; ++j) {
        du[j] = static_cast<uint8_t>(u >> (8 * j));
        dv[j] = static_cast<uint8_t>(v >> (8 * j));
      }
    }
  }
}

// Row y's 4 pixels from x0 of 4:2:2 or 4:4:4 YUV output (kOut): luma the
// 4 bytes of `luma`; each pixel's chroma U | V << 16 in c[i] (4:4:4), or
// each pair's average in a0 and a1 (4:2:2); pixels past the picture's
// width carry the last pixel's chroma.
template <int kOut, bool kLuma = true>
__device__ __forceinline__ void store_yuv_row(const ConvertLayout& L, const ImageRef& out, int y,
                                              int x0, int width, bool full, uint32_t luma,
                                              const uint32_t c[4], uint32_t a0, uint32_t a1) {
  auto row = [&](int p) {
    return out.planes[p].data + static_cast<size_t>(y) * out.planes[p].stride;
  };
  if constexpr (kOut == kToPlanar444) {
    if (kLuma) store_luma(row(0), x0, width, full, L.out_a4[0], luma);
    const uint32_t u =
        __byte_perm(__byte_perm(c[0], c[1], 0x0040), __byte_perm(c[2], c[3], 0x0040), 0x5410);
    const uint32_t v =
        __byte_perm(__byte_perm(c[0], c[1], 0x0062), __byte_perm(c[2], c[3], 0x0062), 0x5410);
    store_luma(row(1), x0, width, full, L.out_a4[1], u);
    store_luma(row(2), x0, width, full, L.out_a4[2], v);
    return;
  }
  const int c0 = x0 >> 1;
  const int n = min(2, ((width + 1) >> 1) - c0);  // pairs inside the picture
  if constexpr (kOut == kToPacked422) {
    uint32_t w[2] = {__byte_perm(__byte_perm(luma, a0, 0x6140), 0, L.pair_perm),
                     __byte_perm(__byte_perm(luma, a1, 0x6342), 0, L.pair_perm)};
    uint8_t* d = row(0) + 4 * c0;
    if (n == 2 && L.out_a16) {
      *reinterpret_cast<uint2*>(d) = make_uint2(w[0], w[1]);
    } else if (L.out_a4[0]) {
      reinterpret_cast<uint32_t*>(d)[0] = w[0];
      if (n == 2) reinterpret_cast<uint32_t*>(d)[1] = w[1];
    } else {
      for (int b = 0; b < 4 * n; ++b)
        d[b] = static_cast<uint8_t>((b < 4 ? w[0] : w[1]) >> (8 * (b & 3)));
    }
    return;
  }
  if (kLuma) store_luma(row(0), x0, width, full, L.out_a4[0], luma);
  store_chroma_pairs<kOut == kToSemi422>(L, row(1), row(2), 0x6420, c0, n, a0, a1);
}

// store_yuv_row for the fast instances: all 4 pixels inside the picture and
// the planes aligned for these stores (yuv_fast_out), rows given as
// pointers at the thread's first byte (o0: luma or packed pairs; o1, o2:
// the chroma planes, o1 alone for NV16's pairs). kLuma: luma is stored
// here (for packed 4:2:2 it always is, inside the pair words).
template <int kOut, bool kLuma>
__device__ __forceinline__ void store_yuv_words(const ConvertLayout& L, uint8_t* o0, uint8_t* o1,
                                                uint8_t* o2, uint32_t luma, const uint32_t c[4],
                                                uint32_t a0, uint32_t a1) {
  if constexpr (kOut == kToPacked422) {
    const uint32_t w0 = __byte_perm(__byte_perm(luma, a0, 0x6140), 0, L.pair_perm);
    const uint32_t w1 = __byte_perm(__byte_perm(luma, a1, 0x6342), 0, L.pair_perm);
    *reinterpret_cast<uint2*>(o0) = make_uint2(w0, w1);
    return;
  }
  if (kLuma) *reinterpret_cast<uint32_t*>(o0) = luma;
  if constexpr (kOut == kToSemi422) {
    *reinterpret_cast<uint32_t*>(o1) = __byte_perm(a0, a1, 0x6420);
  } else if constexpr (kOut == kToPlanar422) {
    *reinterpret_cast<uint16_t*>(o1) = static_cast<uint16_t>(__byte_perm(a0, a1, 0x0040));
    *reinterpret_cast<uint16_t*>(o2) = static_cast<uint16_t>(__byte_perm(a0, a1, 0x0062));
  } else {
    *reinterpret_cast<uint32_t*>(o1) =
        __byte_perm(__byte_perm(c[0], c[1], 0x0040), __byte_perm(c[2], c[3], 0x0040), 0x5410);
    *reinterpret_cast<uint32_t*>(o2) =
        __byte_perm(__byte_perm(c[0], c[1], 0x0062), __byte_perm(c[2], c[3], 0x0062), 0x5410);
  }
}

// Luma copied where a kernel's output luma is its input's: by blocks of
// its own in the launch, 16 bytes a thread (both planes aligned to 16
// bytes; else a byte at a time), `band` rows per blockIdx.y, kBlockY rows
// apart within a band, and by a grid-stride loop past gridDim.y bands.
struct LumaCopy {
  const uint8_t* in;
  uint8_t* out;
  size_t in_stride, out_stride;
  int bytes, rows, band;
  bool vec;
};

// Blocks across per band of a LumaCopy.
__host__ __device__ __forceinline__ int luma_blocks(const LumaCopy& c) {
  return (c.bytes + 16 * kBlockX - 1) / (16 * kBlockX);
}

// The part of a LumaCopy that block `bx` (across) makes.
__device__ __forceinline__ void copy_luma(const LumaCopy& c, int bx) {
  const int x = (bx * kBlockX + threadIdx.x) * 16;
  if (x >= c.bytes) return;
  const bool vec = c.vec && x + 16 <= c.bytes;
  for (int y0 = blockIdx.y * c.band; y0 < c.rows; y0 += gridDim.y * c.band) {
    const int end = min(y0 + c.band, c.rows);
#pragma unroll 4
    for (int y = y0 + threadIdx.y; y < end; y += kBlockY) {
      const uint8_t* from = c.in + static_cast<size_t>(y) * c.in_stride + x;
      uint8_t* to = c.out + static_cast<size_t>(y) * c.out_stride + x;
      if (vec) {
        *reinterpret_cast<uint4*>(to) = *reinterpret_cast<const uint4*>(from);
      } else {
        for (int i = 0; i < min(16, c.bytes - x); ++i) to[i] = from[i];
      }
    }
  }
}

// The 4 packed RGB pixel words (the output's byte order) of luma samples
// (bytes of `luma`) and each pixel's chroma splats (U ^ 0x80 and V ^ 0x80
// in bytes 0 and 2 of uv[i]).
__device__ __forceinline__ void rgb_words(const ConvertLayout& L, uint32_t luma,
                                          const uint32_t uv[4], uint32_t w[4]) {
  const ConvertCoefficients& k = L.k;
  const uint32_t ly = luma ^ 0x80808080u;
  CO_UNROLL
  for (int i = 0; i < 4; ++i) {
    const ChromaTerms t = chroma_terms(k, static_cast<int>(__byte_perm(uv[i], 0, splat_sel(0))),
                                       static_cast<int>(__byte_perm(uv[i], 0, splat_sel(2))));
    w[i] = yuv_pixel(k, static_cast<int>(__byte_perm(ly, 0, splat_sel(i))), t, L.yuv_perm);
  }
}

// Row y's 4 pixels from x0 of packed RGB output (3- or 4-byte), from the
// luma samples and each pixel's chroma splats (rgb_words).
__device__ __forceinline__ void store_rgb_row(const ConvertLayout& L, const ImageRef& out, int y,
                                              int x0, int width, bool full, uint32_t luma,
                                              const uint32_t uv[4]) {
  uint32_t w[4];
  rgb_words(L, luma, uv, w);
  uint8_t* row = out.planes[0].data + static_cast<size_t>(y) * out.planes[0].stride;
  if (L.out_rgb24)
    store_rgb24(row, x0, width, full, L.out_a4[0], w);
  else
    store_packed(row, x0, width, full, L.out_a16, L.out_a4[0], w);
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

// The fast instances' row stepping (yuv_to_packed_fast, deep420_fast).
// A block row's two input rows from *p as T words (an odd height's last
// block row has one row, read twice), and p moved on to the next block row.
template <typename T>
__device__ __forceinline__ void load_row_pair(const uint8_t*& p, uint32_t stride, bool second, T& a,
                                              T& b) {
  a = *reinterpret_cast<const T*>(p);
  b = *reinterpret_cast<const T*>(p + (second ? stride : 0u));
  p += 2 * stride;
}

// A 4:2:0 chroma row (U and, for two planes, V at the thread's column)
// stepped down one row at a time and held at the plane's last row.
struct ChromaCursor {
  const uint8_t *u, *v;  // v is unused (and stays put) for one plane of pairs
  uint32_t u_stride, v_stride;
  int row, rows;
  __device__ __forceinline__ void step() {
    if (row + 1 < rows) {
      ++row;
      u += u_stride;
      v += v_stride;
    }
  }
};

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
// spilled for some outputs): with four (64 registers) too few warps were
// ready to issue; 4K, H200: NV12 -> RGB 3.4x -> 3.0x of the memory bound,
// NV12 -> YUY2 3.1x -> 2.9x. Six (40 registers) spilled more and gained
// nothing.
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

bool aligned_to(const PlaneRef& p, size_t n) {
  return reinterpret_cast<uintptr_t>(p.data) % n == 0 && p.stride % n == 0;
}

LumaCopy luma_copy(const PlaneRef& in, const PlaneRef& out, int bytes, int rows, int band) {
  return {in.data, out.data, in.stride, out.stride,
          bytes,   rows,     band,      aligned_to(in, 16) && aligned_to(out, 16)};
}

// --- Every other pair with 8-bit sides and packed output (4- and 3-byte
// RGB, YUY2, UYVY), by tiles of 64x16 pixels (32x8 blocks of 2x2, one
// thread each; 256 threads). Two stages with a shared-memory tile between:
// each thread reads its block as the reference does (convert_math's load_*
// for the input's kind: chroma brought to each pixel, the four pixels'
// shared samples read once) and takes each pixel to the output's space
// (to_output); then the threads write the tile's output row by row,
// consecutive threads on consecutive words (4 pixels, or a packed 4:2:2
// pair with its chroma averaged from the tile as convert_math::block_chroma
// averages it). A thread per block writing its own pixels byte by byte left
// each warp's stores scattered and the index arithmetic per byte the larger
// cost. For planar, semi-planar and grey output, with a side deeper than
// 8 bits, and where chroma is interpolated, the tile measured slower than a
// thread per block (below).
//
// A tile pixel is one word: c0, c1, c2 and alpha in bytes 0..3. Every
// block of the picture writes all four of its pixels, clamped ones
// included (they repeat the last row or column, as in the reference), so
// an odd width's last pair reads what the reference reads.
constexpr int kTileBlocksX = kBlockX, kTileBlocksY = kBlockY;
constexpr int kTileW = 2 * kTileBlocksX, kTileH = 2 * kTileBlocksY;

// Per launch, derived on the host from the coefficients.
struct TileOut {
  bool pairs;  // packed 4:2:2 (else packed RGB)
  // Packed RGB: byte permute from a tile pixel to the output pixel's bytes
  // (bytes past a 3-byte pixel unused).
  uint32_t rgb_perm;
  int pair_y, pair_u, pair_v;  // packed 4:2:2: byte of the first luma, U, V
};

__device__ __forceinline__ int tile_at(uint32_t w, int c) {
  return static_cast<int>((w >> (8 * c)) & 0xFF);
}

__device__ __forceinline__ bool aligned_ptr(const void* p, unsigned n) {
  return (reinterpret_cast<uintptr_t>(p) & (n - 1)) == 0;
}

// The tile's output: picture pixels x0 .. x0 + w - 1 of rows y0 .. y0 + h - 1.
__device__ __forceinline__ void store_tile(const ConvertCoefficients& k, const TileOut& o,
                                           const ImageRef& in, const ImageRef& out,
                                           const uint32_t (&tile)[kTileH][kTileW], int x0, int y0) {
  const int w = min(kTileW, in.width - x0), h = min(kTileH, in.height - y0);
  const int t = threadIdx.y * blockDim.x + threadIdx.x;
  if (!o.pairs) {
    // 4 pixels per thread: 16 rows of 16 groups.
    const int r = t / 16, g = t % 16;
    if (r >= h || 4 * g >= w) return;
    const int n = min(4, w - 4 * g);
    uint32_t px[4];
    CO_UNROLL
    for (int i = 0; i < 4; ++i) px[i] = __byte_perm(tile[r][4 * g + i], 0, o.rgb_perm);
    const int bpp = k.out_side.pixel_stride;
    uint8_t* d = out.planes[0].data + static_cast<size_t>(y0 + r) * out.planes[0].stride +
                 static_cast<size_t>(x0 + 4 * g) * bpp;
    if (bpp == 4 && n == 4 && aligned_ptr(d, 16)) {
      *reinterpret_cast<uint4*>(d) = make_uint4(px[0], px[1], px[2], px[3]);
    } else if (bpp == 4 && aligned_ptr(d, 4)) {
      for (int i = 0; i < n; ++i) reinterpret_cast<uint32_t*>(d)[i] = px[i];
    } else if (bpp == 3 && n == 4 && aligned_ptr(d, 4)) {
      store_rgb24_words(reinterpret_cast<uint32_t*>(d), px);
    } else {
      for (int i = 0; i < n; ++i)
        for (int b = 0; b < bpp; ++b) d[i * bpp + b] = static_cast<uint8_t>(px[i] >> (8 * b));
    }
    return;
  }
  // Packed 4:2:2: a word per pair of pixels, chroma averaged across; an odd
  // width's last pair takes its second luma from the clamped pixel.
  const int pairs = (w + 1) / 2;
  for (int i = t; i < kTileH * (kTileW / 2); i += kThreads) {
    const int r = i / (kTileW / 2), j = i % (kTileW / 2);
    if (r >= h || j >= pairs) continue;
    const uint32_t a = tile[r][2 * j], b = tile[r][2 * j + 1];
    const uint32_t word = static_cast<uint32_t>(tile_at(a, 0)) << (8 * o.pair_y) |
                          static_cast<uint32_t>(tile_at(b, 0)) << (8 * o.pair_y + 16) |
                          static_cast<uint32_t>(convert_math::average(tile_at(a, 1), tile_at(b, 1)))
                              << (8 * o.pair_u) |
                          static_cast<uint32_t>(convert_math::average(tile_at(a, 2), tile_at(b, 2)))
                              << (8 * o.pair_v);
    uint8_t* d = out.planes[0].data + static_cast<size_t>(y0 + r) * out.planes[0].stride +
                 static_cast<size_t>(x0 / 2 + j) * 4;
    if (aligned_ptr(d, 4))
      *reinterpret_cast<uint32_t*>(d) = word;
    else
      for (int b = 0; b < 4; ++b) d[b] = static_cast<uint8_t>(word >> (8 * b));
  }
}

__global__ void __launch_bounds__(kThreads)
    convert_tile_kernel(ConvertCoefficients k, TileOut o, ImageRef in, ImageRef out, int blocks_x,
                        int blocks_y) {
  namespace cm = convert_math;
  __shared__ __align__(16) uint32_t tile[kTileH][kTileW];
  const int bx = blockIdx.x * kTileBlocksX + threadIdx.x;
  for (int ty = blockIdx.y * kTileBlocksY; ty < blocks_y; ty += gridDim.y * kTileBlocksY) {
    const int by = ty + threadIdx.y;
    if (bx < blocks_x && by < blocks_y) {
      cm::Block b;
      cm::load_block<false>(k, cm::ImageAccess{in}, bx, by, &b);
      CO_UNROLL
      for (int dy = 0; dy < 2; ++dy) {
        uint32_t w[2];
        CO_UNROLL
        for (int dx = 0; dx < 2; ++dx) {
          cm::Pixel& p = b.px[dy][dx];
          cm::to_output<false>(k, &p);
          w[dx] = static_cast<uint32_t>(p.c[0]) | static_cast<uint32_t>(p.c[1]) << 8 |
                  static_cast<uint32_t>(p.c[2]) << 16 | static_cast<uint32_t>(p.a) << 24;
        }
        // Both pixels in one store: a warp's threads write consecutive
        // pairs, without bank conflicts.
        *reinterpret_cast<uint2*>(&tile[2 * threadIdx.y + dy][2 * threadIdx.x]) =
            make_uint2(w[0], w[1]);
      }
    }
    __syncthreads();
    store_tile(k, o, in, out, tile, blockIdx.x * kTileW, 2 * ty);
    __syncthreads();
  }
}

// The other pairs: one thread per 2x2 block running the reference's own
// block function (convert_math::convert_block). kDeep: a side deeper than
// 8 bits (16-bit arithmetic); a kernel each, so neither carries the other's
// registers.
template <bool kDeep>
__global__ void __launch_bounds__(kThreads)
    convert_block_kernel(const __grid_constant__ ConvertCoefficients k,
                         const __grid_constant__ ImageRef in, const __grid_constant__ ImageRef out,
                         int blocks_x, int blocks_y) {
  const int bx = blockIdx.x * blockDim.x + threadIdx.x;
  if (bx >= blocks_x) return;
  for (int by = blockIdx.y * blockDim.y + threadIdx.y; by < blocks_y; by += gridDim.y * blockDim.y)
    convert_math::convert_block<kDeep>(k, convert_math::ImageAccess{in},
                                       convert_math::ImageAccess{out}, bx, by);
}

// Whether the tile kernel takes `k`'s pair, and its TileOut.
bool tile_out(const ConvertCoefficients& k, TileOut* o) {
  const ConvertSide& os = k.out_side;
  const int kind = convert_math::side_kind(k.out_family, os);
  o->pairs = kind == convert_math::kSideYuv422 && os.plane[0] == os.plane[1];
  // Where a subsampled input's chroma is interpolated, a thread per block
  // measured faster (NV12 -> YUY2 8.4x against 9.1x, NV16 -> RGBA 4.2x
  // against 4.6x of the memory bound).
  const bool interpolates =
      k.in_family == convert_math::kYuv && k.in_side.x_sub == 1 && k.chroma_x == kUpLinear;
  if (k.deep || interpolates || (kind != convert_math::kSidePacked && !o->pairs)) return false;
  o->rgb_perm = 0;
  for (int c = 0; c < 4; ++c)
    if (k.out_offsets[c] >= 0) o->rgb_perm |= static_cast<uint32_t>(c) << (4 * k.out_offsets[c]);
  o->pair_y = os.offset[0], o->pair_u = os.offset[1], o->pair_v = os.offset[2];
  return true;
}

// Bayer mosaic -> 4- or 3-byte RGB (debayer_math.h): one thread per 4
// pixels of 4 rows, so the six source rows around them are read once.
//
// A row's 4 samples are one word, and the rules of debayer_math.h are
// byte-wise averages on words (__vavgu4 rounds up, as avg does): the
// colour a column lacks is the average of its left and right neighbours'
// words, the colour it has is the word itself, and a byte mask picks each
// column's. At the picture's left and right edges, where the rules are
// one-sided, the neighbours are chosen so the same average gives the rule's
// value (both neighbours the one sample the rule takes). Each pixel comes
// out as a word of the even columns' colour, green, the odd columns'
// colour and 255 in bytes 0..3, which a byte permute puts in the output
// format's order (red and blue placed by the mosaic). Which rows hold the
// even columns' colour is a template parameter, so each row's arithmetic
// is fixed at compile time.
struct DebayerArgs {
  uint32_t out_perm;      // word above -> 4-byte pixel, or 3-byte in bytes 0..2
  bool first_even;        // 3-byte: byte 0 of a pixel is the even columns' colour
  bool in_a4, out_words;  // word loads; whole-quad stores (16 or 3x4 bytes)
  int quads;              // groups of 4 columns
};

// The colours of a row's 4 columns from x0, each brought to every column:
// the even columns' colour (d0) and the odd columns' (d1).
struct RowColours {
  uint32_t d0, d1;
};

// The colours from a row's 4 samples (own) and those shifted a column
// right (left: columns x0 - 1 .. x0 + 2) and left (right: x0 + 1 .. x0 + 4).
__device__ __forceinline__ RowColours colours_of(uint32_t own, uint32_t left, uint32_t right) {
  const uint32_t between = __vavgu4(left, right);
  return {(own & 0x00FF00FFu) | (between & 0xFF00FF00u),
          (between & 0x00FF00FFu) | (own & 0xFF00FF00u)};
}

// The general load, for a thread at the picture's edges or on a mosaic
// not word-aligned (the kernel loads inside, aligned rows itself).
__device__ __forceinline__ RowColours row_colours(const uint8_t* s, int x0, int w, bool inside) {
  uint32_t own, left, right;
  if (inside) {
    // Columns x0 - 1 .. x0 + 4 exist and none of x0 .. x0 + 3 is one of the
    // last two.
    own = static_cast<uint32_t>(__ldg(s + x0)) | static_cast<uint32_t>(__ldg(s + x0 + 1)) << 8 |
          static_cast<uint32_t>(__ldg(s + x0 + 2)) << 16 |
          static_cast<uint32_t>(__ldg(s + x0 + 3)) << 24;
    left = __byte_perm(own, __ldg(s + x0 - 1), 0x2104);   // s[x0 - 1 .. x0 + 2]
    right = __byte_perm(own, __ldg(s + x0 + 4), 0x4321);  // s[x0 + 1 .. x0 + 4]
  } else {
    uint32_t v[6];  // columns x0 - 1 .. x0 + 4, clamped to the row
    CO_UNROLL
    for (int j = 0; j < 6; ++j) v[j] = __ldg(s + clamp_index(x0 - 1 + j, w));
    own = left = right = 0;
    CO_UNROLL
    for (int i = 0; i < 4; ++i) {
      const int x = x0 + i;
      uint32_t l = v[i], r = v[i + 2];
      if (x == 0) {
        l = r = w > 1 ? v[i + 2] : v[i + 1];  // column 1 (0 when there is none)
      } else if (x >= w - 2) {
        r = v[i];  // column x - 1
      }
      own |= v[i + 1] << (8 * i);
      left |= l << (8 * i);
      right |= r << (8 * i);
    }
  }
  return colours_of(own, left, right);
}

// The 4 pixels of a row from x0, a colour to a word: the even columns'
// colour, green and the odd columns' colour, byte i for pixel i.
struct Colours {
  uint32_t even, green, odd;
};

__device__ __forceinline__ Colours debayer_colours(const RowColours& a, const RowColours& h,
                                                   const RowColours& b, bool even_colour_row) {
  if (even_colour_row) {
    const uint32_t g = __vavgu4(__vavgu4(a.d0, b.d0), h.d1);
    return {h.d0, (g & 0x00FF00FFu) | (h.d1 & 0xFF00FF00u), __vavgu4(a.d1, b.d1)};
  }
  const uint32_t g = __vavgu4(__vavgu4(a.d1, b.d1), h.d0);
  return {__vavgu4(a.d0, b.d0), (h.d0 & 0x00FF00FFu) | (g & 0xFF00FF00u), h.d1};
}

// The 4 pixels' 3-byte form straight from their colours, as the 12 bytes
// of three words: f, green, l for each pixel, where f is the colour of the
// output's byte 0 (first_even: the even columns' colour) and l the other.
// Six byte permutes, where pixel words and then packing them take fifteen.
__device__ __forceinline__ void debayer_rgb24(const Colours& c, bool first_even, uint32_t q[3]) {
  const uint32_t f = first_even ? c.even : c.odd, l = first_even ? c.odd : c.even;
  q[0] = __byte_perm(__byte_perm(f, c.green, 0x0140), l, 0x2410);  // f0 g0 l0 f1
  q[1] = __byte_perm(__byte_perm(c.green, f, 0x2601), l, 0x3250);  // g1 l1 f2 g2
  q[2] = __byte_perm(__byte_perm(f, c.green, 0x0730), l, 0x7216);  // l2 f3 g3 l3
}

// The words of the 4 pixels of a row from x0.
__device__ __forceinline__ void debayer_words(const RowColours& a, const RowColours& h,
                                              const RowColours& b, bool even_colour_row,
                                              uint32_t* p) {
  const Colours c = debayer_colours(a, h, b, even_colour_row);
  const uint32_t even = c.even, green = c.green, odd = c.odd;
  const uint32_t rg01 = __byte_perm(even, green, 0x5140), rg23 = __byte_perm(even, green, 0x7362);
  const uint32_t ba01 = __byte_perm(odd, 0xFFFFFFFFu, 0x5140);
  const uint32_t ba23 = __byte_perm(odd, 0xFFFFFFFFu, 0x7362);
  p[0] = __byte_perm(rg01, ba01, 0x5410);
  p[1] = __byte_perm(rg01, ba01, 0x7632);
  p[2] = __byte_perm(rg23, ba23, 0x5410);
  p[3] = __byte_perm(rg23, ba23, 0x7632);
}

template <int kPixelBytes>
__device__ __forceinline__ void store_quad(const DebayerArgs& A, uint8_t* d, int n,
                                           const uint32_t* p) {
  uint32_t q[4];
  CO_UNROLL
  for (int i = 0; i < 4; ++i) q[i] = __byte_perm(p[i], 0, A.out_perm);
  // Whole 3-byte quads never come here (debayer_rgb24).
  if (kPixelBytes == 4 && n == 4 && A.out_words) {
    *reinterpret_cast<uint4*>(d) = make_uint4(q[0], q[1], q[2], q[3]);
    return;
  }
  for (int i = 0; i < n; ++i)
    for (int c = 0; c < kPixelBytes; ++c)
      d[kPixelBytes * i + c] = static_cast<uint8_t>(q[i] >> (8 * c));
}

// Five blocks per multiprocessor (at most 48 registers, none spilled): the
// loads of the six rows need threads in flight more than registers.
template <int kPixelBytes, int kRows, int kEvenColourRowParity>
__global__ void __launch_bounds__(kThreads, 5)
    debayer_kernel(const ImageRef in, const ImageRef out, const DebayerArgs A) {
  const int q = blockIdx.x * blockDim.x + threadIdx.x;
  if (q >= A.quads) return;
  const int w = in.width, h = in.height;
  const int x0 = 4 * q;
  const int n = min(4, w - x0);
  const bool inside = x0 > 0 && x0 + 6 <= w;
  for (int t = blockIdx.y * blockDim.y + threadIdx.y; kRows * t < h; t += gridDim.y * blockDim.y) {
    const int y = kRows * t;  // even, so row y + r has the parity of r
    RowColours c[kRows + 2];
    // Rows y - 1 .. y + kRows, mirrored at the top and bottom (those past
    // row h are never used).
    auto row = [&](int r) {
      const int i = y - 1 + r;
      const int src =
          i < 0 ? debayer_math::row_above(0, h) : (i >= h ? debayer_math::row_below(h - 1, h) : i);
      return in.planes[0].data + static_cast<size_t>(src) * in.planes[0].stride;
    };
    if (inside && A.in_a4) {
      // Every row's loads before any of them is used: row_colours' branches
      // kept each row's loads behind the previous row's arithmetic, six
      // round trips to memory in a row.
      uint32_t own[kRows + 2], left[kRows + 2], right[kRows + 2];
      CO_UNROLL
      for (int r = 0; r < kRows + 2; ++r) {
        const uint8_t* s = row(r) + x0;
        own[r] = __ldg(reinterpret_cast<const uint32_t*>(s));
        left[r] = __ldg(s - 1);
        right[r] = __ldg(s + 4);
      }
      CO_UNROLL
      for (int r = 0; r < kRows + 2; ++r)
        c[r] = colours_of(own[r], __byte_perm(own[r], left[r], 0x2104),
                          __byte_perm(own[r], right[r], 0x4321));
    } else {
      CO_UNROLL
      for (int r = 0; r < kRows + 2; ++r) c[r] = row_colours(row(r), x0, w, inside);
    }
    CO_UNROLL
    for (int r = 0; r < kRows; ++r) {
      if (y + r >= h) break;
      const bool even_row = ((r ^ kEvenColourRowParity) & 1) == 0;
      uint8_t* d = out.planes[0].data + static_cast<size_t>(y + r) * out.planes[0].stride +
                   static_cast<size_t>(x0) * kPixelBytes;
      if (kPixelBytes == 3 && n == 4 && A.out_words) {
        uint32_t q[3];
        debayer_rgb24(debayer_colours(c[r], c[r + 1], c[r + 2], even_row), A.first_even, q);
        uint32_t* w = reinterpret_cast<uint32_t*>(d);
        w[0] = q[0], w[1] = q[1], w[2] = q[2];
        continue;
      }
      uint32_t p[4];
      debayer_words(c[r], c[r + 1], c[r + 2], even_row, p);
      store_quad<kPixelBytes>(A, d, n, p);
    }
  }
}

void debayer_cuda(const ImageRef& in, const ImageRef& out, cudaStream_t stream) {
  const FormatInfo& o = format_info(out.format);
  DebayerArgs A{};
  const int red = format_info(in.format).bayer_red;
  const int red_x = red & 1;
  // debayer_math::pixel: rows where (y ^ red_x ^ red_y) is even hold the
  // even columns' colour.
  const int parity = (red & 1) ^ (red >> 1);
  const int pixel_bytes = o.comp[0].pixel_stride;
  // Red is the odd columns' colour (byte 2) where it sits in odd columns.
  const uint32_t from[3] = {red_x ? 2u : 0u, 1u, red_x ? 0u : 2u};
  for (int c = 0; c < 3; ++c) {
    A.out_perm |= from[c] << (4 * o.comp[c].offset);
    if (o.comp[c].offset == 0) A.first_even = from[c] == 0;
  }
  if (pixel_bytes == 4) A.out_perm |= 3u << (4 * o.alpha_byte);
  A.in_a4 = aligned_to(in.planes[0], 4);
  A.out_words = aligned_to(out.planes[0], pixel_bytes == 4 ? 16 : 4);
  A.quads = (in.width + 3) / 4;
  if (A.quads == 0 || in.height == 0) return;
  constexpr int kRows = 4;
  const int threads_y = (in.height + kRows - 1) / kRows;
  const dim3 grid(
      (A.quads + kBlockX - 1) / kBlockX,
      static_cast<unsigned>(std::min<int>((threads_y + kBlockY - 1) / kBlockY, kMaxGridY)));
  const dim3 block(kBlockX, kBlockY);
  if (pixel_bytes == 4 && parity == 0)
    debayer_kernel<4, kRows, 0><<<grid, block, 0, stream>>>(in, out, A);
  else if (pixel_bytes == 4)
    debayer_kernel<4, kRows, 1><<<grid, block, 0, stream>>>(in, out, A);
  else if (parity == 0)
    debayer_kernel<3, kRows, 0><<<grid, block, 0, stream>>>(in, out, A);
  else
    debayer_kernel<3, kRows, 1><<<grid, block, 0, stream>>>(in, out, A);
  CO_CUDA_CHECK_LAUNCH("the convert kernel (Bayer to RGB)");
}

// YUV to YUV of the same subsampling, or grey to grey, where the chroma
// needs no resampling and the samples no matrix: each output sample is the
// input's sample at the same place, taken to 16 bits and back
// (convert_math::unpack16, packed16), which is what the reference's blocks
// compute there (nearest chroma, averages of equal samples). One launch
// for every output plane, each block on one plane (a launch per plane had
// made I420 <-> I420_10LE 2.3x the memory bound: three kernels' ramps and
// tails for one frame); each thread makes 4 samples of each of the plane's
// components (one, or the two of a semi-planar pair) in each of
// kRepackRows rows, stored as a word, two or four where the plane is
// aligned for them. Packed 4:2:2
// output, whose one plane holds components of different steps, is not made
// here.
struct SamplePlane {
  int comp[2];        // output components of the plane, by their offset
  int comps;          // how many (1 or 2)
  int in_step;        // input samples per component sample: 1, or 2 (semi-planar)
  int samples, rows;  // of each component, on both sides
  bool aligned;       // for the thread's whole store
  // The input: each component's plane and its offset within a pixel group
  // (bytes), and whether every plane it reads is aligned for the thread's
  // vector load (4 samples of a component, with the other component's
  // between them where the input is semi-planar).
  int in_plane[2], in_offset[2];
  bool in_aligned;
  // convert_math::unpack16 as (w << in_shl) & 0xFFFF, then | >> in_rep, and
  // packed16 as (v >> out_shr) & out_mask, for these sides.
  int in_shl, in_rep, out_shr, out_mask;
};

// 4 samples of an input component from sx0 of row y, on the 16-bit scale:
// one vector load of the 4 (kInStep 1) or of the 4 pixel groups holding
// them (kInStep 2, semi-planar), where the plane is aligned for it and all
// 4 lie inside; else one sample at a time, as the reference reads them.
template <int kInBytes, int kInStep>
__device__ __forceinline__ void repack_fetch(const ConvertCoefficients& k, const ImageRef& in,
                                             const SamplePlane& p, int c, int sx0, int y, bool fast,
                                             uint32_t v[4]) {
  if (fast) {
    const PlaneRef& plane = in.planes[p.in_plane[c]];
    const uint8_t* row = plane.data + static_cast<size_t>(y) * plane.stride;
    const uint8_t* at = row + static_cast<size_t>(sx0) * kInStep * kInBytes;
    const int off = p.in_offset[c];  // 0, or the first component's bytes
    uint32_t w[4];
    if constexpr (kInBytes == 1 && kInStep == 1) {
      const uint32_t q = *reinterpret_cast<const uint32_t*>(at);
      for (int j = 0; j < 4; ++j) w[j] = (q >> (8 * j)) & 0xFFu;
    } else if constexpr (kInBytes == 1) {
      const uint2 q = *reinterpret_cast<const uint2*>(at);
      const uint32_t b = __byte_perm(q.x, q.y, off == 0 ? 0x6420u : 0x7531u);
      for (int j = 0; j < 4; ++j) w[j] = (b >> (8 * j)) & 0xFFu;
    } else if constexpr (kInStep == 1) {
      const uint2 q = *reinterpret_cast<const uint2*>(at);
      w[0] = q.x & 0xFFFFu, w[1] = q.x >> 16, w[2] = q.y & 0xFFFFu, w[3] = q.y >> 16;
    } else {
      const uint4 q = *reinterpret_cast<const uint4*>(at);
      const int sh = 8 * off;  // 0 or 16
      w[0] = (q.x >> sh) & 0xFFFFu, w[1] = (q.y >> sh) & 0xFFFFu;
      w[2] = (q.z >> sh) & 0xFFFFu, w[3] = (q.w >> sh) & 0xFFFFu;
    }
    CO_UNROLL
    for (int j = 0; j < 4; ++j) {
      const uint32_t s = (w[j] << p.in_shl) & 0xFFFFu;
      v[j] = s | s >> p.in_rep;
    }
    return;
  }
  for (int j = 0; j < 4; ++j) {
    const int sx = min(sx0 + j, p.samples - 1);  // the last thread reads no further
    v[j] = static_cast<uint32_t>(convert_math::unpack16(
        k.in_side, convert_math::sample_ptr(k.in_side, in, p.comp[c], sx, y)));
  }
}

// Rows per thread: the block's plane, place and layout worked out once for
// several rows' samples.
constexpr int kRepackRows = 4;

// The output planes of one launch: row blocks from first[i] up to
// first[i + 1] are on plane i, each kBlockY * kRepackRows of its rows
// (first[3]: all of them, which blockIdx.y walks with a grid-stride loop;
// blocks across past a plane skip it).
struct SamplePlanes {
  SamplePlane plane[3];
  int first[4];
};

// Row y's 4 samples from sx0 of plane p.
template <int kComps, int kBytes, int kInBytes, int kInStep>
__device__ __forceinline__ void repack_samples(const ConvertCoefficients& k, const ImageRef& in,
                                               const ImageRef& out, const SamplePlane& p, int sx0,
                                               int y) {
  const int n = min(4, p.samples - sx0);
  const bool fast = n == 4 && p.in_aligned;
  constexpr int kGroup = kComps * kBytes;  // bytes per sample position
  uint32_t v[kComps][4];
  CO_UNROLL
  for (int c = 0; c < kComps; ++c) {
    repack_fetch<kInBytes, kInStep>(k, in, p, c, sx0, y, fast, v[c]);
    CO_UNROLL
    for (int j = 0; j < 4; ++j)
      v[c][j] = (v[c][j] >> p.out_shr) & static_cast<uint32_t>(p.out_mask);
  }
  uint32_t w[4];  // the thread's 4 * kGroup bytes, little-endian
  if constexpr (kComps == 1 && kBytes == 1) {
    w[0] = v[0][0] | v[0][1] << 8 | v[0][2] << 16 | v[0][3] << 24;
  } else if constexpr (kComps == 2 && kBytes == 1) {
    w[0] = v[0][0] | v[1][0] << 8 | v[0][1] << 16 | v[1][1] << 24;
    w[1] = v[0][2] | v[1][2] << 8 | v[0][3] << 16 | v[1][3] << 24;
  } else if constexpr (kComps == 1) {
    w[0] = v[0][0] | v[0][1] << 16;
    w[1] = v[0][2] | v[0][3] << 16;
  } else {
    for (int j = 0; j < 4; ++j) w[j] = v[0][j] | v[1][j] << 16;
  }
  uint8_t* d = convert_math::sample_ptr(k.out_side, out, p.comp[0], sx0, y);
  if (n == 4 && p.aligned) {
    if constexpr (kGroup == 1)
      *reinterpret_cast<uint32_t*>(d) = w[0];
    else if constexpr (kGroup == 2)
      *reinterpret_cast<uint2*>(d) = make_uint2(w[0], w[1]);
    else
      *reinterpret_cast<uint4*>(d) = make_uint4(w[0], w[1], w[2], w[3]);
  } else {
#pragma unroll
    for (int b = 0; b < 4 * kGroup; ++b)
      if (b < n * kGroup) d[b] = static_cast<uint8_t>(w[b >> 2] >> (8 * (b & 3)));
  }
}

template <int kBytes, int kInBytes>
__global__ void __launch_bounds__(kThreads)
    repack_samples_kernel(const __grid_constant__ ConvertCoefficients k,
                          const __grid_constant__ ImageRef in, const __grid_constant__ ImageRef out,
                          const __grid_constant__ SamplePlanes planes) {
  const int sx0 = (blockIdx.x * kBlockX + threadIdx.x) * 4;
  for (int b = blockIdx.y; b < planes.first[3]; b += gridDim.y) {
    const int i = b >= planes.first[2] ? 2 : b >= planes.first[1] ? 1 : 0;
    const SamplePlane& p = planes.plane[i];
    const int y0 = ((b - planes.first[i]) * kBlockY + threadIdx.y) * kRepackRows;
    if (sx0 >= p.samples || y0 >= p.rows) continue;
    const int rows = min(kRepackRows, p.rows - y0);
    auto run = [&](auto comps, auto step) {
      CO_UNROLL
      for (int j = 0; j < kRepackRows; ++j)
        if (j < rows)
          repack_samples<decltype(comps)::value, kBytes, kInBytes, decltype(step)::value>(
              k, in, out, p, sx0, y0 + j);
    };
    using One = std::integral_constant<int, 1>;
    using Two = std::integral_constant<int, 2>;
    if (p.comps == 2) {
      if (p.in_step == 2)
        run(Two{}, Two{});
      else
        run(Two{}, One{});
    } else {
      if (p.in_step == 2)
        run(One{}, Two{});
      else
        run(One{}, One{});
    }
  }
}

// Whether repack_samples_cuda makes this pair (see there).
bool repacks_samples(const ImageRef& out, const ConvertCoefficients& k) {
  using namespace convert_math;
  if (k.in_family == kGrey && k.out_family == kGrey) return true;
  if (k.in_family != kYuv || k.out_family != kYuv) return false;
  const bool packed422_out = k.out_side.plane[0] == k.out_side.plane[1];
  // 8-bit pairs to a plane per component (Y42B, Y444) measured slower here
  // than on the block kernel (4K, H100: Y444 -> Y444 5.4x against 3.8x of
  // the memory bound; three launches of 4-byte stores).
  const bool planar_out = k.out_side.plane[1] != k.out_side.plane[2];
  if (!k.deep && planar_out) return false;
  return !packed422_out && k.in_side.x_sub == k.out_side.x_sub &&
         k.in_side.y_sub == k.out_side.y_sub && out.width > 0 && out.height > 0;
}

void repack_samples_cuda(const ImageRef& in, const ImageRef& out, const ConvertCoefficients& k,
                         cudaStream_t stream) {
  const FormatInfo& info = format_info(out.format);
  const int components = info.is_yuv ? 3 : 1;
  SamplePlanes planes{};
  int blocks_y = 0, blocks_x = 0;
  for (int plane = 0; plane < info.n_planes; ++plane) {
    SamplePlane& p = planes.plane[plane];
    int n = 0;
    for (int c = 0; c < components; ++c)
      if (info.comp[c].plane == plane) p.comp[n++] = c;
    if (n == 2 && info.comp[p.comp[1]].offset < info.comp[p.comp[0]].offset) {
      const int t = p.comp[0];
      p.comp[0] = p.comp[1];
      p.comp[1] = t;
    }
    p.comps = n;
    const Component& c0 = info.comp[p.comp[0]];
    p.samples = (out.width + (1 << c0.x_sub) - 1) >> c0.x_sub;
    p.rows = (out.height + (1 << c0.y_sub) - 1) >> c0.y_sub;
    const int group = n * info.sample_bytes;
    p.aligned = aligned_to(out.planes[plane], static_cast<size_t>(4 * group)) && c0.offset == 0;
    // The input's components (the same ones, at the same subsampling).
    const ConvertSide& is = k.in_side;
    const int in_bytes = is.sample_bytes;
    p.in_step = is.step[p.comp[0]] / in_bytes;  // 1, or 2 (semi-planar)
    // Any other layout (packed 4:2:2 input, which no pair brings here)
    // reads a sample at a time.
    p.in_aligned =
        (p.in_step == 1 || p.in_step == 2) && is.step[p.comp[n - 1]] == is.step[p.comp[0]];
    if (!p.in_aligned) p.in_step = 1;
    for (int c = 0; c < n; ++c) {
      p.in_plane[c] = is.plane[p.comp[c]];
      p.in_offset[c] = is.offset[p.comp[c]];
      p.in_aligned = p.in_aligned && aligned_to(in.planes[p.in_plane[c]],
                                                static_cast<size_t>(4 * p.in_step * in_bytes));
    }
    p.in_shl = in_bytes == 1 ? 8 : (is.depth == 16 || is.shift == 6 ? 0 : 6);
    p.in_rep = in_bytes == 1 ? 8 : (is.depth == 16 ? 16 : 10);
    const ConvertSide& os = k.out_side;
    p.out_shr = os.sample_bytes == 1 ? 8 : (os.depth == 16 || os.shift == 6 ? 0 : 6);
    p.out_mask =
        os.sample_bytes == 1 ? 0xFF : (os.depth == 16 ? 0xFFFF : (os.shift == 6 ? 0xFFC0 : 0x3FF));
    blocks_x = std::max(blocks_x, (p.samples + 4 * kBlockX - 1) / (4 * kBlockX));
    planes.first[plane] = blocks_y;
    constexpr int kBlockRows = kBlockY * kRepackRows;
    blocks_y += (p.rows + kBlockRows - 1) / kBlockRows;
  }
  for (int plane = info.n_planes; plane < 4; ++plane) planes.first[plane] = blocks_y;
  if (blocks_x == 0 || blocks_y == 0) return;
  const dim3 block(kBlockX, kBlockY);
  const dim3 grid(static_cast<unsigned>(blocks_x),
                  std::min(static_cast<unsigned>(blocks_y), kMaxGridY));
  const bool wide = info.sample_bytes == 2, wide_in = k.in_side.sample_bytes == 2;
  if (wide && wide_in)
    repack_samples_kernel<2, 2><<<grid, block, 0, stream>>>(k, in, out, planes);
  else if (wide)
    repack_samples_kernel<2, 1><<<grid, block, 0, stream>>>(k, in, out, planes);
  else if (wide_in)
    repack_samples_kernel<1, 2><<<grid, block, 0, stream>>>(k, in, out, planes);
  else
    repack_samples_kernel<1, 1><<<grid, block, 0, stream>>>(k, in, out, planes);
  CO_CUDA_CHECK_LAUNCH("the convert kernel (samples repacked)");
}

// 8-bit YUV to YUV of the same subsampling where each side's chroma is
// planar or semi-planar (I420, NV12, NV21; Y42B, NV16): every output sample
// is the input's at the same place, so the pair only moves bytes. One
// launch: its first luma_blocks blocks across copy luma 16 bytes a thread,
// the rest move 8 chroma samples of each of U and V a thread (one 16-byte
// pair load or store on a semi-planar side, an 8-byte one per plane on a
// planar side, the bytes sorted by byte permutes), for 4 rows. The 4x2
// block kernel had made these pairs 2.0-2.1x the memory bound on 4:2:0.
struct ChromaMove {
  LumaCopy luma;  // luma_blocks(luma) blocks across, before the chroma's
  // Chroma, each side: U and V planes (semi-planar: both the plane of
  // pairs, `vu` where V comes first), their strides.
  const uint8_t* in[2];
  size_t in_stride[2];
  bool in_semi, in_vu;
  uint8_t* out[2];
  size_t out_stride[2];
  bool out_semi, out_vu;
  int samples, rows;
  bool vec;  // every chroma plane aligned for the thread's vector access
};

constexpr int kMoveRows = 4;                    // chroma rows per thread
constexpr int kMoveBand = kBlockY * kMoveRows;  // chroma rows per block and band

__global__ void __launch_bounds__(kThreads) move_chroma_kernel(const ChromaMove m) {
  const int luma_x = luma_blocks(m.luma);
  if (static_cast<int>(blockIdx.x) < luma_x) {
    copy_luma(m.luma, static_cast<int>(blockIdx.x));
    return;
  }
  const int s0 = ((static_cast<int>(blockIdx.x) - luma_x) * kBlockX + threadIdx.x) * 8;
  if (s0 >= m.samples) return;
  const bool vec = m.vec && s0 + 8 <= m.samples;
  for (int band = blockIdx.y * kMoveBand; band < m.rows; band += gridDim.y * kMoveBand) {
    CO_UNROLL
    for (int j = 0; j < kMoveRows; ++j) {
      const int y = band + threadIdx.y * kMoveRows + j;
      if (y >= m.rows) break;
      const uint8_t* iu = m.in[0] + static_cast<size_t>(y) * m.in_stride[0];
      const uint8_t* iv = m.in[1] + static_cast<size_t>(y) * m.in_stride[1];
      uint8_t* ou = m.out[0] + static_cast<size_t>(y) * m.out_stride[0];
      uint8_t* ov = m.out[1] + static_cast<size_t>(y) * m.out_stride[1];
      if (!vec) {
        for (int i = s0; i < min(s0 + 8, m.samples); ++i) {
          const int a = m.in_semi ? 2 * i + (m.in_vu ? 1 : 0) : i;
          const int b = m.in_semi ? 2 * i + (m.in_vu ? 0 : 1) : i;
          const uint8_t u = iu[a], v = iv[b];
          ou[m.out_semi ? 2 * i + (m.out_vu ? 1 : 0) : i] = u;
          ov[m.out_semi ? 2 * i + (m.out_vu ? 0 : 1) : i] = v;
        }
        continue;
      }
      // u, v: the 8 samples of U and of V, 4 a word.
      uint2 u, v;
      if (m.in_semi) {
        const uint4 q = *reinterpret_cast<const uint4*>(iu + 2 * s0);
        const uint32_t lo = m.in_vu ? 0x7531u : 0x6420u, hi = m.in_vu ? 0x6420u : 0x7531u;
        u = make_uint2(__byte_perm(q.x, q.y, lo), __byte_perm(q.z, q.w, lo));
        v = make_uint2(__byte_perm(q.x, q.y, hi), __byte_perm(q.z, q.w, hi));
      } else {
        u = *reinterpret_cast<const uint2*>(iu + s0);
        v = *reinterpret_cast<const uint2*>(iv + s0);
      }
      if (m.out_semi) {
        const uint2 a = m.out_vu ? v : u, b = m.out_vu ? u : v;
        *reinterpret_cast<uint4*>(ou + 2 * s0) =
            make_uint4(__byte_perm(a.x, b.x, 0x5140), __byte_perm(a.x, b.x, 0x7362),
                       __byte_perm(a.y, b.y, 0x5140), __byte_perm(a.y, b.y, 0x7362));
      } else {
        *reinterpret_cast<uint2*>(ou + s0) = u;
        *reinterpret_cast<uint2*>(ov + s0) = v;
      }
    }
  }
}

// Whether move_chroma_cuda makes this pair (see there).
bool moves_chroma(PixelFormat in, PixelFormat out, const ConvertCoefficients& k) {
  using F = PixelFormat;
  auto side = [](F f) { return f == F::kI420 || f == F::kNV12 || f == F::kNV21; };
  auto side422 = [](F f) { return f == F::kY42B || f == F::kNV16; };
  return in != out && ((side(in) && side(out)) || (side422(in) && side422(out))) &&
         k.in_side.sample_bytes == 1 && k.out_side.sample_bytes == 1;
}

void move_chroma_cuda(const ImageRef& in, const ImageRef& out, const ConvertCoefficients& k,
                      cudaStream_t stream) {
  const ConvertSide &is = k.in_side, &os = k.out_side;
  ChromaMove m{};
  m.samples = (out.width + (1 << os.x_sub) - 1) >> os.x_sub;
  m.rows = (out.height + (1 << os.y_sub) - 1) >> os.y_sub;
  if (m.samples == 0 || m.rows == 0) return;
  m.in_semi = is.plane[1] == is.plane[2];
  m.out_semi = os.plane[1] == os.plane[2];
  m.in_vu = m.in_semi && is.offset[2] < is.offset[1];
  m.out_vu = m.out_semi && os.offset[2] < os.offset[1];
  m.vec = true;
  for (int c = 0; c < 2; ++c) {
    // Semi-planar: both pointers at the plane's start.
    const PlaneRef& ip = in.planes[is.plane[1 + c]];
    const PlaneRef& op = out.planes[os.plane[1 + c]];
    m.in[c] = ip.data;
    m.in_stride[c] = ip.stride;
    m.out[c] = op.data;
    m.out_stride[c] = op.stride;
    m.vec = m.vec && aligned_to(ip, m.in_semi ? 16 : 8) && aligned_to(op, m.out_semi ? 16 : 8);
  }
  const int bands = (m.rows + kMoveBand - 1) / kMoveBand;
  m.luma = luma_copy(in.planes[0], out.planes[0], out.width, out.height,
                     (out.height + bands - 1) / bands);
  const int chroma_blocks = (m.samples + 8 * kBlockX - 1) / (8 * kBlockX);
  const dim3 grid(luma_blocks(m.luma) + chroma_blocks, std::min<unsigned>(bands, kMaxGridY));
  move_chroma_kernel<<<grid, dim3(kBlockX, kBlockY), 0, stream>>>(m);
  CO_CUDA_CHECK_LAUNCH("the convert kernel (chroma moved)");
}

// YUV to YUV through the plane scaler (k.scale_planes; both sides 8-bit,
// planar or semi-planar): luma is copied and each chroma plane scaled on
// its own, as videoconvert's fast paths do, with the scaler's geometry
// worked out once per launch (convert_math::ChromaScaler). The window
// kernel (below) does both in one launch; where it does not apply,
// scale_planes_kernel makes 4 bytes of a row of an output chroma plane a
// thread (4 samples of one component, or 2 U, V pairs), after the copy
// kernel's launch for luma.
struct ScaledPlane {
  // Input chroma: where U and V start, their step and the row stride.
  const uint8_t* in[2];
  int in_step;
  size_t in_stride[2];
  // Output chroma plane z (planar: U, then V; semi-planar: the
  // one plane of pairs, U at byte u_byte of each).
  uint8_t* out[2];
  size_t out_stride[2];
  bool planar;
  int u_byte;
  int row_bytes, rows;
  bool aligned;  // 4-byte stores
  // For scale_window_kernel: input bytes per row (the window's columns)
  // and rows, and whether the input planes' pointers and strides are
  // 4-byte words.
  int in_cols, in_rows;
  bool in_a4;
  // scale_window_kernel copies luma in the same launch: its first
  // luma_blocks(luma) blocks across; the blocks after them are
  // chroma_blocks per chroma plane.
  LumaCopy luma;
  int chroma_blocks;
};

__global__ void __launch_bounds__(kThreads)
    scale_planes_kernel(const convert_math::ChromaScaler s, const ScaledPlane p) {
  const int x = (blockIdx.x * kBlockX + threadIdx.x) * 4;
  if (x >= p.row_bytes) return;
  const int n = min(4, p.row_bytes - x);
  uint8_t* const out = blockIdx.z == 0 ? p.out[0] : p.out[1];
  const size_t out_stride = blockIdx.z == 0 ? p.out_stride[0] : p.out_stride[1];
  for (int y = blockIdx.y * kBlockY + threadIdx.y; y < p.rows; y += gridDim.y * kBlockY) {
    int vi, vp;
    convert_math::scaler_row(s, y, &vi, &vp);
    uint32_t word = 0;
    for (int b = 0; b < n; ++b) {
      const int byte = x + b;
      const bool u = p.planar ? blockIdx.z == 0 : (byte & 1) == p.u_byte;
      const uint8_t* src = u ? p.in[0] : p.in[1];
      const size_t stride = u ? p.in_stride[0] : p.in_stride[1];
      auto at = [&](int sx, int sy) {
        return static_cast<int>(src[sy * stride + static_cast<size_t>(sx) * p.in_step]);
      };
      const int sx = p.planar ? byte : byte >> 1;
      word |= static_cast<uint32_t>(convert_math::scaled_chroma(s, at, sx, y, vi, vp)) << (8 * b);
    }
    uint8_t* d = out + static_cast<size_t>(y) * out_stride + x;
    if (n == 4 && p.aligned) {
      *reinterpret_cast<uint32_t*>(d) = word;
    } else {
      for (int b = 0; b < n; ++b) d[b] = static_cast<uint8_t>(word >> (8 * b));
    }
  }
}

// The same scaler where each axis is kept, halved or scaled by taps (kH,
// kV: ScaleAxis), a word of 4 output bytes at a time. Planar planes, and
// semi-planar ones scaled down only (their U, V bytes then stay where they
// are, so a row's bytes scale as one plane).
//
// A thread's 4 outputs of a row come from one window of the input row: the
// 4 columns under them (kept), 8 (halved), or, scaled by taps, the columns
// from the first one's left tap to the last one's right tap (taps step
// less than a column, so 5 at most), read as the two aligned words that
// hold them where the plane allows. Scaled across, output k is one dot
// product of 4 window bytes (a byte permute) and its taps, both made once
// per thread. Down, two rows' words are averaged or blended as whole
// words: each half of a word's bytes takes one multiply in 16-bit lanes (a
// sum up to 255 * 256 + 128 stays in its lane).
//
// A thread makes kScaleRows consecutive output rows, and so does the whole
// warp (a block's rows are its warps). It reads the input rows they take
// from one pointer stepped a stride at a time, all before using any, and
// scales each across once, however many outputs it feeds:
// - rows doubled (4:2:0 to 4:2:2 or 4:4:4 at even heights, kAxisDouble)
//   take the 4 input rows under them with the taps' fixed pattern
//   (vertical_tap): output row 2m - 1 is input rows m - 1 and m weighted
//   192 and 64, row 2m the same rows weighted 64 and 192, and the first
//   and last rows, the input's, are what the same rule gives on rows
//   clamped to the plane;
// - other rows scaled by taps take theirs from the lanes that worked them
//   out, one row each (vertical_tap_rcp).
// The order is the reference's: kVFirst, down then across; else across,
// then down. scaled_chroma's per-sample choice among the cases had made
// I420 -> Y444 9.4x the memory bound, and a window kernel where each thread
// made one row, its taps worked out by every thread for every row, 5.6x.
enum ScaleAxis : int { kAxisKeep, kAxisHalf, kAxisTaps, kAxisDouble };

constexpr int kScaleRows = 4;
constexpr int kScaleBand = kBlockY * kScaleRows;  // output rows per block and band

// Rows a and b blended down, byte by byte: (a (256 - p) + b p + 128) >> 8.
__device__ __forceinline__ uint32_t blend_rows(uint32_t a, uint32_t b, uint32_t p) {
  const uint32_t q = 256 - p;
  const uint32_t even = (a & 0x00FF00FFu) * q + (b & 0x00FF00FFu) * p + 0x00800080u;
  const uint32_t odd = ((a >> 8) & 0x00FF00FFu) * q + ((b >> 8) & 0x00FF00FFu) * p + 0x00800080u;
  return ((even >> 8) & 0x00FF00FFu) | (odd & 0xFF00FF00u);
}

template <int kH, int kV, bool kVFirst>
__global__ void __launch_bounds__(kThreads)
    scale_window_kernel(const convert_math::ChromaScaler s, const ScaledPlane p) {
  const int luma_x = luma_blocks(p.luma);
  if (static_cast<int>(blockIdx.x) < luma_x) {
    copy_luma(p.luma, static_cast<int>(blockIdx.x));
    return;
  }
  const int cx = static_cast<int>(blockIdx.x) - luma_x;
  const bool z = cx >= p.chroma_blocks;
  const int x = ((z ? cx - p.chroma_blocks : cx) * kBlockX + threadIdx.x) * 4;
  const bool live = x < p.row_bytes;
  const int n = min(4, p.row_bytes - x);
  uint8_t* const out = z ? p.out[1] : p.out[0];
  const size_t out_stride = z ? p.out_stride[1] : p.out_stride[0];
  const uint8_t* const src = z ? p.in[1] : p.in[0];
  const size_t in_stride = z ? p.in_stride[1] : p.in_stride[0];
  // The window: 8 bytes from `base` (4 kept).
  int base = kH == kAxisHalf ? 2 * x : x;
  // Output k is one unsigned dot product of 4 bytes, (l, r, l, l) . (255 -
  // a, a, 1, 0) = l (256 - a) + r a, the bytes picked from the window by
  // sel[k] and the weights in taps[k].
  uint32_t sel[4] = {}, taps[4] = {};
  if constexpr (kH == kAxisTaps) {
    const int c0 = (x * s.inc) >> 16;
    base = c0 & ~3;
    CO_UNROLL
    for (int k = 0; k < 4; ++k) {
      const int t = (x + k) * s.inc;
      const uint32_t left = static_cast<uint32_t>((t >> 16) - base), a = (t >> 8) & 255;
      sel[k] = left * 0x1101u + ((left + 1) << 4);
      taps[k] = (255 - a) | a << 8 | 1u << 16;
    }
  }
  constexpr int kBytes = kH == kAxisKeep ? 4 : 8;
  const bool words = p.in_a4 && base + kBytes <= p.in_cols;
  struct Window {
    uint32_t w[2];
  };
  auto window = [&](int row) {
    Window v{};
    const uint8_t* r = src + static_cast<size_t>(row) * in_stride;
    if (words) {
      v.w[0] = *reinterpret_cast<const uint32_t*>(r + base);
      if (kBytes == 8) v.w[1] = *reinterpret_cast<const uint32_t*>(r + base + 4);
    } else {
      // Columns past the row are clamped: they reach an output only with
      // a weight of 0, or for samples past the output row.
      CO_UNROLL
      for (int j = 0; j < kBytes; ++j)
        v.w[j >> 2] |= static_cast<uint32_t>(r[min(base + j, p.in_cols - 1)]) << (8 * (j & 3));
    }
    return v;
  };
  auto across = [&](const Window& v) -> uint32_t {
    if constexpr (kH == kAxisKeep) {
      return v.w[0];
    } else if constexpr (kH == kAxisHalf) {
      // (b0 + b1 + 1) >> 1 for each pair of bytes, in 16-bit lanes.
      const uint32_t h0 =
          ((v.w[0] & 0x00FF00FFu) + ((v.w[0] >> 8) & 0x00FF00FFu) + 0x00010001u) >> 1;
      const uint32_t h1 =
          ((v.w[1] & 0x00FF00FFu) + ((v.w[1] >> 8) & 0x00FF00FFu) + 0x00010001u) >> 1;
      return __byte_perm(h0, h1, 0x6420);
    } else {
      uint32_t sum[4];
      CO_UNROLL
      for (int k = 0; k < 4; ++k) sum[k] = __dp4a(__byte_perm(v.w[0], v.w[1], sel[k]), taps[k], 0u);
      // Each output is its sum's second byte (the sum >> 8).
      return __byte_perm(__byte_perm(sum[0], sum[1], 0x51u), __byte_perm(sum[2], sum[3], 0x51u),
                         0x5410u);
    }
  };
  // The windows of kN consecutive input rows from row i0, clamped to the
  // plane: words from one pointer stepped a stride at a time where the
  // rows are all in the plane.
  auto windows = [&](int i0, auto& w) {
    constexpr int kN = sizeof(w) / sizeof(w[0]);
    if (words && i0 >= 0 && i0 + kN <= p.in_rows) {
      const uint8_t* r = src + static_cast<size_t>(i0) * in_stride + base;
      CO_UNROLL
      for (int j = 0; j < kN; ++j, r += in_stride) {
        w[j].w[0] = *reinterpret_cast<const uint32_t*>(r);
        w[j].w[1] = kBytes == 8 ? *reinterpret_cast<const uint32_t*>(r + 4) : 0u;
      }
    } else {
      CO_UNROLL
      for (int j = 0; j < kN; ++j) w[j] = window(min(max(i0 + j, 0), p.in_rows - 1));
    }
  };
  const int lane = threadIdx.x;
  for (int band = blockIdx.y * kScaleBand; band < p.rows; band += gridDim.y * kScaleBand) {
    const int first = band + threadIdx.y * kScaleRows;
    if (first >= p.rows) continue;  // the whole warp
    const int rows = min(kScaleRows, p.rows - first);
    uint32_t word[kScaleRows];
    if constexpr (kV == kAxisKeep) {
      if (!live) continue;
      Window w[kScaleRows];
      windows(first, w);
      CO_UNROLL
      for (int j = 0; j < kScaleRows; ++j) word[j] = across(w[j]);
    } else if constexpr (kV == kAxisHalf) {
      if (!live) continue;
      Window w[2 * kScaleRows];
      windows(2 * first, w);
      CO_UNROLL
      for (int j = 0; j < kScaleRows; ++j) {
        const Window &upper = w[2 * j], &lower = w[2 * j + 1];
        word[j] = kVFirst ? across(Window{{__vavgu4(upper.w[0], lower.w[0]),
                                           __vavgu4(upper.w[1], lower.w[1])}})
                          : __vavgu4(across(upper), across(lower));
      }
    } else if constexpr (kV == kAxisDouble) {
      // Input rows first / 2 - 1 to first / 2 + 2 (first is even).
      if (!live) continue;
      Window w[kScaleRows];
      windows((first >> 1) - 1, w);
      uint32_t r[kScaleRows];
      CO_UNROLL
      for (int j = 0; j < kScaleRows; ++j) r[j] = across(w[j]);
      word[0] = blend_rows(r[0], r[1], 192);
      word[1] = blend_rows(r[1], r[2], 64);
      word[2] = blend_rows(r[1], r[2], 192);
      word[3] = blend_rows(r[2], r[3], 64);
    } else {
      int r[kScaleRows], vp[kScaleRows];
      int ti = 0, tp = 0;
      if (lane < kScaleRows)
        convert_math::scaler_row_rcp(s, min(first + lane, p.rows - 1), &ti, &tp);
      CO_UNROLL
      for (int j = 0; j < kScaleRows; ++j) {
        r[j] = __shfl_sync(0xFFFFFFFFu, ti, j);
        vp[j] = __shfl_sync(0xFFFFFFFFu, tp, j);
      }
      if (!live) continue;
      const int last = r[rows - 1] + 1;  // the last input row taken
      if (!kVFirst && last - r[0] < kScaleRows + 1) {
        // Scaled up: every input row the outputs take, read and scaled
        // across once, then picked for each output.
        Window w[kScaleRows + 1];
        windows(r[0], w);
        uint32_t h[kScaleRows + 1];
        CO_UNROLL
        for (int i = 0; i <= kScaleRows; ++i) h[i] = across(w[i]);
        auto pick = [&](int i) {
          uint32_t v = h[0];
          CO_UNROLL
          for (int k = 1; k <= kScaleRows; ++k) v = i == k ? h[k] : v;
          return v;
        };
        CO_UNROLL
        for (int j = 0; j < kScaleRows; ++j)
          word[j] = blend_rows(pick(r[j] - r[0]), pick(r[j] + 1 - r[0]), vp[j]);
      } else {
        CO_UNROLL
        for (int j = 0; j < kScaleRows; ++j) {
          word[j] = 0;
          if (j >= rows) continue;
          const Window w0 = window(r[j]), w1 = window(r[j] + 1);
          word[j] = kVFirst ? across(Window{{blend_rows(w0.w[0], w1.w[0], vp[j]),
                                             blend_rows(w0.w[1], w1.w[1], vp[j])}})
                            : blend_rows(across(w0), across(w1), vp[j]);
        }
      }
    }
    if (n == 4 && p.aligned) {
      uint8_t* dst = out + static_cast<size_t>(first) * out_stride + x;
      CO_UNROLL
      for (int j = 0; j < kScaleRows; ++j, dst += out_stride)
        if (j < rows) *reinterpret_cast<uint32_t*>(dst) = word[j];
      continue;
    }
    CO_UNROLL
    for (int j = 0; j < kScaleRows; ++j) {
      if (j >= rows) break;
      uint8_t* dst = out + static_cast<size_t>(first + j) * out_stride + x;
      for (int b = 0; b < n; ++b) dst[b] = static_cast<uint8_t>(word[j] >> (8 * b));
    }
  }
}

void scale_planes_cuda(const ImageRef& in, const ImageRef& out, const ConvertCoefficients& k,
                       cudaStream_t stream) {
  const ConvertSide &is = k.in_side, &os = k.out_side;
  ScaledPlane p{};
  for (int c = 0; c < 2; ++c) {
    p.in[c] = in.planes[is.plane[c + 1]].data + is.offset[c + 1];
    p.in_stride[c] = in.planes[is.plane[c + 1]].stride;
  }
  p.in_step = is.step[1];
  p.planar = os.plane[1] != os.plane[2];
  const int chroma_planes = p.planar ? 2 : 1;
  p.aligned = true;
  for (int c = 0; c < chroma_planes; ++c) {
    p.out[c] = out.planes[1 + c].data;
    p.out_stride[c] = out.planes[1 + c].stride;
    p.aligned = p.aligned && aligned_to(out.planes[1 + c], 4);
  }
  p.u_byte = os.offset[1];
  p.row_bytes = static_cast<int>(plane_row_bytes(out.format, 1, out.width));
  p.rows = static_cast<int>(plane_rows(out.format, 1, out.height));
  if (p.row_bytes == 0 || p.rows == 0) return;
  const dim3 grid((p.row_bytes + 4 * kBlockX - 1) / (4 * kBlockX),
                  std::min<unsigned>((p.rows + kBlockY - 1) / kBlockY, kMaxGridY), chroma_planes);
  const convert_math::ChromaScaler s =
      convert_math::chroma_scaler(k, in.width, in.height, out.width, out.height);
  // Each axis kept, halved (the planar shortcuts) or scaled by taps, as
  // convert_math::scaled_chroma decides.
  int h = s.iw == s.ow ? kAxisKeep : s.ih == s.oh && s.hh ? kAxisHalf : kAxisTaps;
  int v = s.ih == s.oh ? kAxisKeep : s.iw == s.ow && s.vh ? kAxisHalf : kAxisTaps;
  if (s.hh && s.vh && s.iw != s.ow && s.ih != s.oh) h = v = kAxisHalf;  // down, then across
  if (v == kAxisTaps && s.oh == 2 * s.ih && s.across_first) v = kAxisDouble;
  // Semi-planar: U, V bytes where the output has them, scaled down only.
  const bool same_bytes = is.step[1] == 1 || (h == kAxisKeep && is.offset[2] == is.offset[1] + 1 &&
                                              p.u_byte == 0 && is.plane[1] == is.plane[2]);
  const bool window = same_bytes && (h != kAxisTaps || (s.iw >= 2 && s.inc < 65536)) &&
                      ((v != kAxisTaps && v != kAxisDouble) || s.ih >= 2);
  p.in_cols = p.planar ? s.iw : 2 * s.iw;
  p.in_rows = s.ih;
  p.in_a4 = true;
  for (int c = 0; c < chroma_planes; ++c)
    p.in_a4 = p.in_a4 && reinterpret_cast<uintptr_t>(p.in[c]) % 4 == 0 && p.in_stride[c] % 4 == 0;
  const dim3 block(kBlockX, kBlockY);
  bool ran = false;
  // A window kernel's block makes kScaleBand rows at a time, and luma
  // comes in the same launch (as a launch of the copy kernel of its own, it
  // had cost I420 -> Y444 2.3x the memory bound where 2.0x is the window
  // kernel's).
  const int band_count = (p.rows + kScaleBand - 1) / kScaleBand;
  p.luma = luma_copy(in.planes[0], out.planes[0],
                     static_cast<int>(plane_row_bytes(out.format, 0, out.width)), out.height,
                     (out.height + band_count - 1) / band_count);
  p.chroma_blocks = static_cast<int>(grid.x);
  const dim3 bands(luma_blocks(p.luma) + p.chroma_blocks * chroma_planes,
                   std::min<unsigned>(band_count, kMaxGridY));
  auto run = [&](auto kernel) {
    kernel<<<bands, block, 0, stream>>>(s, p);
    ran = true;
  };
  if (window) {
    if (h == kAxisHalf && v == kAxisHalf)
      run(scale_window_kernel<kAxisHalf, kAxisHalf, true>);
    else if (h == kAxisKeep && v == kAxisDouble)
      run(scale_window_kernel<kAxisKeep, kAxisDouble, false>);
    else if (h == kAxisTaps && v == kAxisDouble)
      run(scale_window_kernel<kAxisTaps, kAxisDouble, false>);
    else if (h == kAxisKeep && v == kAxisTaps)
      run(scale_window_kernel<kAxisKeep, kAxisTaps, false>);
    else if (h == kAxisKeep && v == kAxisHalf)
      run(scale_window_kernel<kAxisKeep, kAxisHalf, false>);
    else if (h == kAxisTaps && v == kAxisKeep)
      run(scale_window_kernel<kAxisTaps, kAxisKeep, false>);
    else if (h == kAxisHalf && v == kAxisKeep)
      run(scale_window_kernel<kAxisHalf, kAxisKeep, false>);
    else if (h == kAxisTaps && v == kAxisTaps && s.across_first)
      run(scale_window_kernel<kAxisTaps, kAxisTaps, false>);
    else if (h == kAxisTaps && v == kAxisTaps)
      run(scale_window_kernel<kAxisTaps, kAxisTaps, true>);
  }
  if (!ran) {
    // Luma: the copy kernel on the Y planes as GRAY8 images.
    ImageRef in_y{PixelFormat::kGRAY8, in.width, in.height, {in.planes[0]}};
    ImageRef out_y{PixelFormat::kGRAY8, out.width, out.height, {out.planes[0]}};
    copy_cuda(in_y, out_y, stream);
    scale_planes_kernel<<<grid, block, 0, stream>>>(s, p);
  }
  CO_CUDA_CHECK_LAUNCH("the convert kernel (chroma planes scaled)");
}

// --- 10-bit 4:2:0 input (P010_10LE, I420_10LE) to 8-bit packed RGB or to
// 8-bit 4:2:2 or 4:4:4 YUV: one thread per 4x2 block of pixels, on the
// reference's 16-bit samples (convert_math::unpack16, the 3:1 chroma
// interpolation across and then down, to_output<true>'s matrix, samples
// taken to 8 bits by >> 8), luma read as one 8-byte word per row where the
// plane allows, each chroma row's four columns (the block's two and their
// neighbours) read once and interpolated for the block's 4 pixels.

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

// The horizontal step for the block's 4 pixels (see horizontal_step).
__device__ __forceinline__ void deep_across(const int s[4], int h[4]) {
  h[0] = convert_math::mix31(s[1], s[0]);
  h[1] = convert_math::mix31(s[1], s[2]);
  h[2] = convert_math::mix31(s[2], s[1]);
  h[3] = convert_math::mix31(s[2], s[3]);
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

// Five blocks per multiprocessor, as yuv_to_packed_kernel (4K, H200:
// P010_10LE -> RGBA 3.9x -> 3.5x, I420_10LE -> YUY2 4.2x -> 3.5x,
// P010_10LE -> Y444 3.7x -> 3.1x).
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

// --- Row-wise conversions: one thread per 4x2 block, as
// yuv_to_packed_kernel, for inputs whose chroma rows are luma rows (8-bit
// 4:2:2: NV16, Y42B, YUY2, UYVY; 4:4:4: Y444) or that have no chroma (8-bit
// packed RGB, 4- and 3-byte), to packed RGB (YUV input), 4:2:0 (8- and
// 10-bit), 4:4:4 and 4:2:2 YUV, and grey (RGB input: luma alone). Each row
// gives its 4 luma samples and each
// pixel's chroma: 4:2:2 chroma brought across only (horizontal_step, or
// the nearest sample), 4:4:4 as stored, RGB through the matrix; no row is
// shared between blocks. 4:2:0 output averages each row's pairs, then the
// two rows (convert_math::block_chroma's order).

// Where rows_kernel's rows come from.
enum RowSource : int { kFromPacked422, kFromPlanes422, kFrom444, kFromRgb32, kFromRgb24 };

// Row y's luma samples x0 .. x0 + 3 (clamped to the picture, as the
// reference's pixels are) and the chroma around them (see ChromaRow).
struct Row422 {
  uint32_t luma;
  ChromaRow chroma;
};

// fetch422_row for planar and semi-planar 4:2:2 in rows_kernel's kFast
// instance: 4 columns inside the picture and aligned planes, so every
// access is one load; rows reached by one 32 x 32-bit multiply, and the
// chroma neighbours at offsets `left` and `right` (in columns, clamped to
// the plane) worked out once per thread.
template <bool kLinear>
__device__ __forceinline__ Row422 fetch422_fast(const ConvertLayout& L, const ImageRef& in, int y,
                                                int x0, int left, int right) {
  auto row = [&](int p) {
    return in.planes[p].data + static_cast<size_t>(static_cast<uint32_t>(y)) *
                                   static_cast<uint32_t>(in.planes[p].stride);
  };
  const int c0 = x0 >> 1;
  Row422 r{};
  r.luma = *reinterpret_cast<const uint32_t*>(row(0) + x0);
  if (L.in_semi) {  // NV16: (U, V) pairs
    const uint8_t* p = row(1) + 2 * c0;
    r.chroma.mid = *reinterpret_cast<const uint32_t*>(p);
    if (kLinear) {
      r.chroma.left = *reinterpret_cast<const uint16_t*>(p + 2 * left);
      r.chroma.right = *reinterpret_cast<const uint16_t*>(p + 2 * right);
    }
  } else {
    const uint8_t* u = row(1) + c0;
    const uint8_t* v = row(2) + c0;
    r.chroma.mid = __byte_perm(*reinterpret_cast<const uint16_t*>(u),
                               *reinterpret_cast<const uint16_t*>(v), 0x5140);
    if (kLinear) {
      r.chroma.left = static_cast<uint32_t>(u[left]) | static_cast<uint32_t>(v[left]) << 8;
      r.chroma.right = static_cast<uint32_t>(u[right]) | static_cast<uint32_t>(v[right]) << 8;
    }
  }
  return r;
}

template <bool kPackedIn, bool kLinear>
__device__ __forceinline__ Row422 fetch422_row(const ConvertLayout& L, const ImageRef& in, int y,
                                               int x0, bool full, int cw) {
  const int width = in.width, c0 = x0 >> 1;
  Row422 r{};
  if constexpr (!kPackedIn) {
    r.luma = load_luma(in.planes[0].data + static_cast<size_t>(y) * in.planes[0].stride, x0, width,
                       full, L.in_a4[0]);
    r.chroma = fetch_chroma_row<kLinear>(L, in, L.in_semi, c0, y, cw);
    return r;
  }
  // Pair words c0 - 1 .. c0 + 2 (w[0] .. w[3]), clamped to the row.
  const uint8_t* row = in.planes[0].data + static_cast<size_t>(y) * in.planes[0].stride;
  auto word = [&](int pair) {
    const uint8_t* p = row + 4 * static_cast<size_t>(pair);
    if (L.in_a4[0]) return *reinterpret_cast<const uint32_t*>(p);
    return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
           static_cast<uint32_t>(p[2]) << 16 | static_cast<uint32_t>(p[3]) << 24;
  };
  uint32_t w[4];
  if (c0 + 1 < cw && L.in_a16) {
    const uint2 m = *reinterpret_cast<const uint2*>(row + 4 * static_cast<size_t>(c0));
    w[1] = m.x, w[2] = m.y;
  } else {
    w[1] = word(c0);
    w[2] = word(min(c0 + 1, cw - 1));
  }
  if (kLinear) {
    w[0] = word(max(c0 - 1, 0));
    w[3] = word(min(c0 + 2, cw - 1));
  }
  r.luma = __byte_perm(w[1], w[2], L.pair_luma_sel);
  if (!full) {
    // Pixels past the width repeat the last one (an odd width's last pair
    // holds a second luma the reference does not read).
    const int last = width - 1 - x0;
    uint32_t sel = 0;
    for (int i = 0; i < 4; ++i) sel |= static_cast<uint32_t>(min(i, last)) << (4 * i);
    r.luma = __byte_perm(r.luma, 0, sel);
  }
  r.chroma.mid = __byte_perm(w[1], w[2], L.pair_uv_sel);
  if (kLinear) {
    r.chroma.left = __byte_perm(w[0], 0, L.pair_one_uv_sel);
    r.chroma.right = __byte_perm(w[3], 0, L.pair_one_uv_sel);
  }
  return r;
}

// 10-bit 4:2:0 output (kToP010, kToI420_10) and GRAY16_LE (kToGrey16):
// row y's 4 luma samples and the chroma samples c0 and c0 + 1 (the first n
// inside the plane) of chroma row `by`, U and V, all on the 16-bit scale,
// each packed as convert_math::packed16 packs it.
template <int kOut>
__device__ __forceinline__ void store_deep420_luma(const ConvertLayout& L, const ImageRef& out,
                                                   int y, int x0, int width, bool full,
                                                   const int (&luma)[4]) {
  uint32_t w[4];
  CO_UNROLL
  for (int i = 0; i < 4; ++i) {
    const uint32_t v = static_cast<uint32_t>(luma[i]);
    w[i] = kOut == kToP010 ? v & 0xFFC0u : (kOut == kToGrey16 ? v : v >> 6);
  }
  uint8_t* d = out.planes[0].data + static_cast<size_t>(y) * out.planes[0].stride + 2 * x0;
  if (full && L.out_a16) {
    *reinterpret_cast<uint2*>(d) = make_uint2(w[0] | w[1] << 16, w[2] | w[3] << 16);
    return;
  }
  for (int i = 0; i < 4 && x0 + i < width; ++i) {
    if (L.out_a2[0]) {
      reinterpret_cast<uint16_t*>(d)[i] = static_cast<uint16_t>(w[i]);
    } else {
      d[2 * i] = static_cast<uint8_t>(w[i]);
      d[2 * i + 1] = static_cast<uint8_t>(w[i] >> 8);
    }
  }
}

template <int kOut>
__device__ __forceinline__ void store_deep420_chroma(const ConvertLayout& L, const ImageRef& out,
                                                     int by, int c0, int n, const int (&u)[2],
                                                     const int (&v)[2]) {
  auto pack = [](int s) {
    return kOut == kToP010 ? static_cast<uint32_t>(s) & 0xFFC0u : static_cast<uint32_t>(s) >> 6;
  };
  auto store16 = [](uint8_t* d, uint32_t w, bool a2) {
    if (a2) {
      *reinterpret_cast<uint16_t*>(d) = static_cast<uint16_t>(w);
    } else {
      d[0] = static_cast<uint8_t>(w);
      d[1] = static_cast<uint8_t>(w >> 8);
    }
  };
  if constexpr (kOut == kToP010) {
    uint8_t* d = out.planes[1].data + static_cast<size_t>(by) * out.planes[1].stride + 4 * c0;
    for (int j = 0; j < n; ++j) {
      const uint32_t w = pack(u[j]) | pack(v[j]) << 16;  // (U, V) words
      if (L.out_a4[1]) {
        reinterpret_cast<uint32_t*>(d)[j] = w;
      } else {
        store16(d + 4 * j, w, false);
        store16(d + 4 * j + 2, w >> 16, false);
      }
    }
  } else {
    uint8_t* du = out.planes[1].data + static_cast<size_t>(by) * out.planes[1].stride + 2 * c0;
    uint8_t* dv = out.planes[2].data + static_cast<size_t>(by) * out.planes[2].stride + 2 * c0;
    if (n == 2 && L.out_a4[1] && L.out_a4[2]) {
      *reinterpret_cast<uint32_t*>(du) = pack(u[0]) | pack(u[1]) << 16;
      *reinterpret_cast<uint32_t*>(dv) = pack(v[0]) | pack(v[1]) << 16;
    } else {
      for (int j = 0; j < n; ++j) {
        store16(du + 2 * j, pack(u[j]), L.out_a2[1]);
        store16(dv + 2 * j, pack(v[j]), L.out_a2[2]);
      }
    }
  }
}

// The 16-bit chroma (convert_math's kDeep arithmetic: samples * 257, 3:1
// across, pairs averaged) of a 4:2:2 row's two output pairs, U in u[j] and
// V in v[j]; the pixel past an odd width is the last one.
template <bool kLinear>
__device__ __forceinline__ void deep422_pairs(const ChromaRow& row, int x0, int width, int (&u)[2],
                                              int (&v)[2]) {
  using convert_math::average;
  using convert_math::mix31;
  auto at = [](uint32_t w, int b) { return static_cast<int>((w >> (8 * b)) & 0xFFu) * 257; };
  const int su[4] = {at(row.left, 0), at(row.mid, 0), at(row.mid, 2), at(row.right, 0)};
  const int sv[4] = {at(row.left, 1), at(row.mid, 1), at(row.mid, 3), at(row.right, 1)};
  int hu[4], hv[4];
  if (kLinear) {
    deep_across(su, hu);
    deep_across(sv, hv);
  } else {
    hu[0] = hu[1] = su[1], hu[2] = hu[3] = su[2];
    hv[0] = hv[1] = sv[1], hv[2] = hv[3] = sv[2];
  }
  if (x0 + 1 >= width) hu[1] = hu[0], hv[1] = hv[0];
  if (x0 + 3 >= width) hu[3] = hu[2], hv[3] = hv[2];
  u[0] = average(hu[0], hu[1]), u[1] = average(hu[2], hu[3]);
  v[0] = average(hv[0], hv[1]), v[1] = average(hv[2], hv[3]);
}

// Row y's 4 pixels from x0 for rows_kernel: luma in the bytes of `luma`,
// each pixel's chroma U | V << 16 (8 bits each) in c[i]; a pixel past the
// width repeats the last one, as the reference's clamped pixels do.
struct RowPixels {
  uint32_t luma, c[4];
};

// Row y's 4 packed RGB pixels from x0 (3-byte: kRgb24), each a word with
// the pixel's bytes from byte 0; past the width the last one repeats.
template <bool kRgb24>
__device__ __forceinline__ void load_rgb_pixels(const ConvertLayout& L, const ImageRef& in, int y,
                                                int x0, bool full, uint32_t px[4]) {
  const int width = in.width;
  const uint8_t* row = in.planes[0].data + static_cast<size_t>(y) * in.planes[0].stride;
  if constexpr (!kRgb24) {
    load_packed(row, x0, width, full, L.in_a16, L.in_a4[0], px);
  } else if (full && L.in_a4[0]) {
    const uint32_t* q = reinterpret_cast<const uint32_t*>(row + static_cast<size_t>(x0) * 3);
    const uint32_t w[3] = {q[0], q[1], q[2]};
    rgb24::unpack(w, px);
  } else {
    CO_UNROLL
    for (int i = 0; i < 4; ++i) {
      const uint8_t* p = row + static_cast<size_t>(min(x0 + i, width - 1)) * 3;
      px[i] = static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
              static_cast<uint32_t>(p[2]) << 16;
    }
  }
}

// kFast: rows_kernel's kFast instance (fetch422_fast for planar and
// semi-planar 4:2:2).
template <int kSrc, bool kLinear, bool kFast = false>
__device__ __forceinline__ RowPixels fetch_row_pixels(const ConvertLayout& L, const ImageRef& in,
                                                      int y, int x0, bool full, int cw) {
  const int width = in.width;
  RowPixels r;
  if constexpr (kSrc == kFromPacked422 || kSrc == kFromPlanes422) {
    const int c0 = x0 >> 1;
    const Row422 s =
        kFast && kSrc == kFromPlanes422
            ? fetch422_fast<kLinear>(L, in, y, x0, c0 >= 1 ? -1 : 0, c0 + 2 < cw ? 2 : 1)
            : fetch422_row<kSrc == kFromPacked422, kLinear>(L, in, y, x0, full, cw);
    r.luma = s.luma;
    if (kLinear) {
      horizontal_step(s.chroma, r.c);
    } else {
      r.c[0] = r.c[1] = __byte_perm(s.chroma.mid, 0, 0x4140);
      r.c[2] = r.c[3] = __byte_perm(s.chroma.mid, 0, 0x4342);
    }
    // A pixel past an odd width is the last one clamped (see
    // yuv_to_packed_kernel).
    if (x0 + 1 >= width) r.c[1] = r.c[0];
    if (x0 + 3 >= width) r.c[3] = r.c[2];
  } else if constexpr (kSrc == kFrom444) {
    auto plane = [&](int p) {
      return load_luma(in.planes[p].data + static_cast<size_t>(y) * in.planes[p].stride, x0, width,
                       full, L.in_a4[p]);
    };
    r.luma = plane(0);
    const uint32_t u = plane(1), v = plane(2);
    CO_UNROLL
    for (int i = 0; i < 4; ++i)
      r.c[i] = __byte_perm(u, v, 0x0400u + static_cast<uint32_t>(i * 0x0101)) & 0x00FF00FFu;
  } else {
    uint32_t px[4];
    load_rgb_pixels<kSrc == kFromRgb24>(L, in, y, x0, full, px);
    const ConvertCoefficients& k = L.k;
    r.luma = 0;
    CO_UNROLL
    for (int i = 0; i < 4; ++i) {
      const int cr = byte_of(px[i], L.in_sel[0]), cg = byte_of(px[i], L.in_sel[1]),
                cb = byte_of(px[i], L.in_sel[2]);
      r.luma |= static_cast<uint32_t>(convert_math::rgb_to(k.to_yuv[0], cr, cg, cb)) << (8 * i);
      r.c[i] = static_cast<uint32_t>(convert_math::rgb_to(k.to_yuv[1], cr, cg, cb)) |
               static_cast<uint32_t>(convert_math::rgb_to(k.to_yuv[2], cr, cg, cb)) << 16;
    }
  }
  return r;
}

// Row y's 4 luma samples (l[i]) and its two output pairs' chroma (u[j],
// v[j]) on the 16-bit scale, for 10-bit 4:2:0 output (convert_math's
// kDeep arithmetic): 8-bit YUV samples * 257, 4:2:2 chroma 3:1 across on
// that scale; RGB through to_output<true>; pairs averaged.
template <int kSrc, bool kLinear, bool kFast = false>
__device__ __forceinline__ void fetch_deep_row(const ConvertLayout& L, const ImageRef& in, int y,
                                               int x0, bool full, int cw, int (&l)[4], int (&u)[2],
                                               int (&v)[2]) {
  using convert_math::average;
  if constexpr (kSrc == kFromRgb32 || kSrc == kFromRgb24) {
    uint32_t px[4];
    load_rgb_pixels<kSrc == kFromRgb24>(L, in, y, x0, full, px);
    // to_output<true>'s matrix on the samples times 257, in 32 bits.
    const ConvertCoefficients& k = L.k;
    int cu[4], cv[4];
    CO_UNROLL
    for (int i = 0; i < 4; ++i) {
      const int r = byte_of(px[i], L.in_sel[0]), g = byte_of(px[i], L.in_sel[1]),
                b = byte_of(px[i], L.in_sel[2]);
      l[i] = convert_math::rgb8_to16(k.to_yuv[0], k.to_yuv_offset16[0], r, g, b);
      cu[i] = convert_math::rgb8_to16(k.to_yuv[1], k.to_yuv_offset16[1], r, g, b);
      cv[i] = convert_math::rgb8_to16(k.to_yuv[2], k.to_yuv_offset16[2], r, g, b);
    }
    CO_UNROLL
    for (int j = 0; j < 2; ++j) {
      u[j] = average(cu[2 * j], cu[2 * j + 1]);
      v[j] = average(cv[2 * j], cv[2 * j + 1]);
    }
    return;
  }
  uint32_t luma;
  if constexpr (kSrc == kFrom444) {
    const RowPixels r = fetch_row_pixels<kSrc, kLinear, kFast>(L, in, y, x0, full, cw);
    luma = r.luma;
    auto at = [](uint32_t w, int b) { return static_cast<int>((w >> (8 * b)) & 0xFFu) * 257; };
    CO_UNROLL
    for (int j = 0; j < 2; ++j) {
      u[j] = average(at(r.c[2 * j], 0), at(r.c[2 * j + 1], 0));
      v[j] = average(at(r.c[2 * j], 2), at(r.c[2 * j + 1], 2));
    }
  } else {
    const int c0 = x0 >> 1;
    const Row422 r =
        kFast && kSrc == kFromPlanes422
            ? fetch422_fast<kLinear>(L, in, y, x0, c0 >= 1 ? -1 : 0, c0 + 2 < cw ? 2 : 1)
            : fetch422_row<kSrc == kFromPacked422, kLinear>(L, in, y, x0, full, cw);
    luma = r.luma;
    deep422_pairs<kLinear>(r.chroma, x0, in.width, u, v);
  }
  CO_UNROLL
  for (int i = 0; i < 4; ++i) l[i] = static_cast<int>((luma >> (8 * i)) & 0xFFu) * 257;
}

// kFast: the picture's width is a multiple of 4 and every plane of both
// sides is aligned to 4 bytes, plane 0 to 16 (rows_fast): each thread's 4
// columns lie inside the picture and every access can be a word, so the
// loads' and stores' byte-wise and clamped fallbacks drop out of the
// kernel (see rows_kernel).
template <int kSrc, bool kLinear, int kOut, bool kFast>
__device__ __forceinline__ void rows_body(const ConvertLayout& L, const ImageRef& in,
                                          const ImageRef& out, int blocks_x, int blocks_y) {
  constexpr bool k420 = kOut == kToSemi420 || kOut == kToPlanar420;
  constexpr bool kGrey = kOut == kToGrey8 || kOut == kToGrey16;
  constexpr bool kDeep = kOut == kToP010 || kOut == kToI420_10 || kOut == kToGrey16;
  const int bx4 = blockIdx.x * blockDim.x + threadIdx.x;
  if (bx4 >= blocks_x) return;
  const int width = in.width, x0 = 4 * bx4, c0 = x0 >> 1;
  const bool full = kFast || x0 + 4 <= width;
  // Both rows read before either is written (the kFast instance, planar
  // and semi-planar 4:2:2): the compiler cannot move a load above a store
  // that may alias it, so the second row's loads had waited for the first
  // row's stores (Y42B -> NV12 2.3x -> 1.9x the memory bound). The other
  // sources measured slower that way (UYVY -> NV12 1.8x -> 2.1x).
  constexpr bool kAhead = kFast && kSrc == kFromPlanes422;
  const int cw = (width + 1) >> 1;
  for (int by = blockIdx.y * blockDim.y + threadIdx.y; by < blocks_y;
       by += gridDim.y * blockDim.y) {
    uint32_t avg[2][2];      // 4:2:0 output: each row's two pair averages
    int du[2][2], dv[2][2];  // the same on the 16-bit scale (kDeep)
    // 8-bit output: row y's stores from its pixels (4:2:0: its luma; the
    // block row's chroma goes below, from average_row's pair averages).
    auto write_row = [&](int y, const RowPixels& r) {
      if constexpr (kOut == kToGrey8 || k420) {
        store_luma(out.planes[0].data + static_cast<size_t>(y) * out.planes[0].stride, x0, width,
                   full, L.out_a4[0], r.luma);
      } else if constexpr (kOut == kToRgb) {
        uint32_t uv[4];
        CO_UNROLL
        for (int i = 0; i < 4; ++i) uv[i] = r.c[i] ^ 0x00800080u;  // splats in bytes 0 and 2
        store_rgb_row(L, out, y, x0, width, full, r.luma, uv);
      } else if constexpr (!kDeep) {
        store_yuv_row<kOut>(L, out, y, x0, width, full, r.luma, r.c, pair_average(r.c[0], r.c[1]),
                            pair_average(r.c[2], r.c[3]));
      }
    };
    auto average_row = [&](int dy, const RowPixels& r) {
      if constexpr (k420) {
        avg[dy][0] = pair_average(r.c[0], r.c[1]);
        avg[dy][1] = pair_average(r.c[2], r.c[3]);
      }
    };
    if constexpr (kAhead) {
      // An odd height's last block row reads its one row twice (the clamped
      // row repeats it, as in the reference) and writes it once.
      const int y0 = 2 * by, y1 = min(2 * by + 1, in.height - 1);
      const bool second = 2 * by + 1 < in.height;
      if constexpr (kDeep) {
        int luma[2][4];
        fetch_deep_row<kSrc, kLinear, kFast>(L, in, y0, x0, full, cw, luma[0], du[0], dv[0]);
        fetch_deep_row<kSrc, kLinear, kFast>(L, in, y1, x0, full, cw, luma[1], du[1], dv[1]);
        store_deep420_luma<kOut>(L, out, y0, x0, width, full, luma[0]);
        if (second) store_deep420_luma<kOut>(L, out, y1, x0, width, full, luma[1]);
      } else {
        const RowPixels rows[2] = {fetch_row_pixels<kSrc, kLinear, kFast>(L, in, y0, x0, full, cw),
                                   fetch_row_pixels<kSrc, kLinear, kFast>(L, in, y1, x0, full, cw)};
        CO_UNROLL
        for (int dy = 0; dy < 2; ++dy) {
          average_row(dy, rows[dy]);
          if (dy == 0 || second) write_row(dy == 0 ? y0 : y1, rows[dy]);
        }
      }
    } else {
      CO_UNROLL
      for (int dy = 0; dy < 2; ++dy) {
        const int y = 2 * by + dy;
        if (y >= in.height) {  // odd height: the clamped row repeats the last
          avg[1][0] = avg[0][0], avg[1][1] = avg[0][1];
          du[1][0] = du[0][0], du[1][1] = du[0][1];
          dv[1][0] = dv[0][0], dv[1][1] = dv[0][1];
          continue;
        }
        if constexpr (kDeep) {
          int luma[4];
          fetch_deep_row<kSrc, kLinear>(L, in, y, x0, full, cw, luma, du[dy], dv[dy]);
          store_deep420_luma<kOut>(L, out, y, x0, width, full, luma);
          continue;
        }
        const RowPixels r = fetch_row_pixels<kSrc, kLinear>(L, in, y, x0, full, cw);
        write_row(y, r);
        average_row(dy, r);
      }
    }
    if constexpr (k420)
      store_chroma_pairs<kOut == kToSemi420>(
          L, out.planes[1].data + static_cast<size_t>(by) * out.planes[1].stride,
          out.planes[2].data + static_cast<size_t>(by) * out.planes[2].stride,
          L.out_swap ? 0x4602 : 0x6420, c0, min(2, cw - c0), pair_average(avg[0][0], avg[1][0]),
          pair_average(avg[0][1], avg[1][1]));
    if constexpr (kDeep && !kGrey) {
      using convert_math::average;
      const int u[2] = {average(du[0][0], du[1][0]), average(du[0][1], du[1][1])};
      const int v[2] = {average(dv[0][0], dv[1][0]), average(dv[0][1], dv[1][1])};
      store_deep420_chroma<kOut>(L, out, by, c0, min(2, cw - c0), u, v);
    }
  }
}

template <int kSrc, bool kLinear, int kOut, bool kFast>
__global__ void __launch_bounds__(kThreads)
    rows_kernel(const __grid_constant__ ConvertLayout L, const __grid_constant__ ImageRef in,
                const __grid_constant__ ImageRef out, int blocks_x, int blocks_y) {
  if constexpr (kFast) {
    // The alignments rows_fast checked, as constants the compiler folds.
    ConvertLayout f = L;
    for (int p = 0; p < 3; ++p) {
      f.in_a4[p] = f.in_a2[p] = f.out_a4[p] = f.out_a2[p] = true;
    }
    f.in_a16 = f.out_a16 = true;
    rows_body<kSrc, kLinear, kOut, true>(f, in, out, blocks_x, blocks_y);
  } else {
    rows_body<kSrc, kLinear, kOut, false>(L, in, out, blocks_x, blocks_y);
  }
}

// --- Grey (GRAY8, GRAY16_LE) to packed RGB: every output pixel is a
// function of one 8-bit value (the sample, or a 16-bit sample's high byte:
// the reference replicates it on the 16-bit scale and keeps the top 8
// bits), so each block first makes the 256 pixels of a table in shared
// memory with the reference's own to_output (videoconvert's matrix where
// the RGB side is limited range, k.grey_matrix; else the sample
// replicated), thread t entry t, and each thread then looks up 4 pixels of
// each of kGreyRows rows: one word or 8-byte load, 4 table reads, one
// 16-byte store or three word stores (3-byte RGB).
constexpr int kGreyRows = 4;

template <bool kDeep, bool kRgb24>
__global__ void __launch_bounds__(kThreads)
    grey_packed_kernel(const __grid_constant__ ConvertLayout L, const __grid_constant__ ImageRef in,
                       const __grid_constant__ ImageRef out, int blocks_x) {
  __shared__ uint32_t table[256];
  {
    const int t = threadIdx.y * blockDim.x + threadIdx.x;  // 256 threads
    convert_math::Pixel p;
    p.c[0] = kDeep ? t * 257 : t;
    p.c[1] = p.c[2] = kDeep ? 32768 : 128;
    p.a = kDeep ? 65535 : 255;
    convert_math::to_output<kDeep>(L.k, &p);
    constexpr int shift = kDeep ? 8 : 0;
    uint32_t w = 0;
    for (int c = 0; c < 3; ++c)
      w |= static_cast<uint32_t>((p.c[c] >> shift) & 0xFF) << (8 * L.k.out_offsets[c]);
    if (!kRgb24 && L.k.out_offsets[3] >= 0)
      w |= static_cast<uint32_t>((p.a >> shift) & 0xFF) << (8 * L.k.out_offsets[3]);
    table[t] = w;
  }
  __syncthreads();
  const int bx4 = blockIdx.x * blockDim.x + threadIdx.x;
  if (bx4 >= blocks_x) return;
  const int width = in.width, x0 = 4 * bx4;
  const bool full = x0 + 4 <= width;
  const int y_first = (blockIdx.y * blockDim.y + threadIdx.y) * kGreyRows;
  const int y_end = min(in.height, y_first + kGreyRows);
  for (int y = y_first; y < y_end; ++y) {
    const uint8_t* row = in.planes[0].data + static_cast<size_t>(y) * in.planes[0].stride;
    uint32_t g;  // the 4 pixels' 8-bit values
    if constexpr (kDeep) {
      if (full && L.in_a8[0]) {
        const uint2 v = *reinterpret_cast<const uint2*>(row + 2 * x0);
        g = __byte_perm(v.x, v.y, 0x7531);
      } else {
        g = 0;
        for (int i = 0; i < 4; ++i)
          g |= static_cast<uint32_t>(row[2 * min(x0 + i, width - 1) + 1]) << (8 * i);
      }
    } else {
      g = load_luma(row, x0, width, full, L.in_a4[0]);
    }
    uint32_t px[4];
    CO_UNROLL
    for (int i = 0; i < 4; ++i) px[i] = table[(g >> (8 * i)) & 0xFFu];
    uint8_t* orow = out.planes[0].data + static_cast<size_t>(y) * out.planes[0].stride;
    if constexpr (kRgb24)
      store_rgb24(orow, x0, width, full, L.out_a4[0], px);
    else
      store_packed(orow, x0, width, full, L.out_a16, L.out_a4[0], px);
  }
}

void convert_any_cuda(const ImageRef& in, const ImageRef& out, const ConvertCoefficients& k,
                      cudaStream_t stream) {
  if (k.scale_planes) {
    scale_planes_cuda(in, out, k, stream);
    return;
  }
  if (repacks_samples(out, k)) {
    repack_samples_cuda(in, out, k, stream);
    return;
  }
  const int bw = (in.width + 1) / 2, bh = (in.height + 1) / 2;
  if (bw == 0 || bh == 0) return;
  const dim3 grid((bw + kBlockX - 1) / kBlockX,
                  static_cast<unsigned>(std::min<int>((bh + kBlockY - 1) / kBlockY, kMaxGridY)));
  // The tile kernel where it measured faster (4K, H100: 8-bit sides to
  // packed RGB or packed 4:2:2 without interpolated chroma, e.g. RGB ->
  // RGBA 2.4x -> 1.7x of the memory bound, I420 -> YUY2 5.7x -> 4.0x); a
  // thread per block writing its own samples elsewhere (see tile_out).
  TileOut o;
  if (tile_out(k, &o)) {
    convert_tile_kernel<<<grid, dim3(kBlockX, kBlockY), 0, stream>>>(k, o, in, out, bw, bh);
  } else if (k.deep) {
    convert_block_kernel<true><<<grid, dim3(kBlockX, kBlockY), 0, stream>>>(k, in, out, bw, bh);
  } else {
    convert_block_kernel<false><<<grid, dim3(kBlockX, kBlockY), 0, stream>>>(k, in, out, bw, bh);
  }
  CO_CUDA_CHECK_LAUNCH("the convert kernel");
}

// Block rows per thread of the kernels that go down a column of 4x2 blocks
// (yuv_to_packed_kernel, deep420_kernel): 4 where the picture still gives
// several waves of thread blocks on a large GPU (4K gives about a
// thousand), fewer for smaller pictures, down to one (yuv_to_packed_kernel
// takes at most 2: see its launch).
int rows_per_thread(int bw, int bh) {
  return bw * bh >= (1 << 19) ? 4 : bw * bh >= (1 << 17) ? 2 : 1;
}

// f(std::integral_constant<int, K>{}) for the YuvOut K that yuv_out names:
// one switch from the run-time choice to the kernels' template argument.
// k420: the 4:2:0 outputs are among the choices (rows_kernel's).
template <bool k420 = false, typename F>
void with_yuv_out(int yuv_out, const F& f) {
  if constexpr (k420) {
    if (yuv_out == kToSemi420) return f(std::integral_constant<int, kToSemi420>{});
    if (yuv_out == kToPlanar420) return f(std::integral_constant<int, kToPlanar420>{});
    if (yuv_out == kToP010) return f(std::integral_constant<int, kToP010>{});
    if (yuv_out == kToI420_10) return f(std::integral_constant<int, kToI420_10>{});
    if (yuv_out == kToGrey8) return f(std::integral_constant<int, kToGrey8>{});
    if (yuv_out == kToGrey16) return f(std::integral_constant<int, kToGrey16>{});
  }
  switch (yuv_out) {
    case kToPacked422:
      f(std::integral_constant<int, kToPacked422>{});
      break;
    case kToSemi422:
      f(std::integral_constant<int, kToSemi422>{});
      break;
    case kToPlanar422:
      f(std::integral_constant<int, kToPlanar422>{});
      break;
    case kToPlanar444:
      f(std::integral_constant<int, kToPlanar444>{});
      break;
    default:
      f(std::integral_constant<int, kToRgb>{});
      break;
  }
}

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
      // At most 2 block rows a thread: at 4 (4K) 8-bit 4:2:0 to 4:2:2 ran
      // 2.03x of the memory bound on an H100 against 1.97x at 2 (I420 ->
      // NV16; NV12 -> Y42B 1.98x -> 1.90x), and no output gained from 4.
      // The 10-bit kernel keeps 4 (P010 -> NV16 1.64x, 1.83x at 2).
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

// The layout the 4x2-block kernels take: permutes and alignments derived
// from the formats (rgb24: 3-byte RGB output; yuv_out: YuvOut).
ConvertLayout layout_of(const ImageRef& in, const ImageRef& out,
                        const ConvertCoefficients& coefficients, bool rgb24, int yuv_out) {
  ConvertLayout L{};
  L.k = coefficients;
  const ConvertCoefficients& k = L.k;
  for (int c = 0; c < 3; ++c) L.in_sel[c] = 0x4440u | static_cast<uint32_t>(k.in_offsets[c]);
  L.out_rgb24 = rgb24;
  L.yuv_out = yuv_out;
  if (yuv_out == kToPacked422) {
    const ConvertSide& os = coefficients.out_side;
    const int to[4] = {os.offset[0], os.offset[1], os.offset[0] + 2, os.offset[2]};
    for (int c = 0; c < 4; ++c) L.pair_perm |= static_cast<uint32_t>(c) << (4 * to[c]);
  }
  // Packed RGB output only (grey and YUV output have no pixel words, and
  // their offsets of alpha are -1).
  for (int c = 0; c < 4 && k.out_family == convert_math::kPacked; ++c) {
    // 3-byte output has no alpha byte: byte 3 of its pixel words is unused.
    const int to = rgb24 && c == 3 ? 3 : k.out_offsets[c];
    L.out_perm |= static_cast<uint32_t>(c) << (4 * to);
    // From packed input only; 3-byte input has no alpha byte (-1).
    if (k.in_family == convert_math::kPacked && k.in_offsets[c] >= 0)
      L.repack_perm |= static_cast<uint32_t>(k.in_offsets[c]) << (4 * to);
    L.yuv_perm |= static_cast<uint32_t>(c == 1 ? 4 : c == 2 ? 2 : 2 * c) << (4 * to);
  }
  const int in_planes = format_info(in.format).n_planes;
  const int out_planes = format_info(out.format).n_planes;
  for (int p = 0; p < 3; ++p) {
    L.in_a4[p] = p < in_planes && aligned_to(in.planes[p], 4);
    L.in_a2[p] = p < in_planes && aligned_to(in.planes[p], 2);
    L.in_a8[p] = p < in_planes && aligned_to(in.planes[p], 8);
    L.out_a4[p] = p < out_planes && aligned_to(out.planes[p], 4);
    L.out_a2[p] = p < out_planes && aligned_to(out.planes[p], 2);
  }
  L.in_a16 = aligned_to(in.planes[0], 16);
  L.in_semi = in.format == PixelFormat::kNV12 || in.format == PixelFormat::kNV21 ||
              in.format == PixelFormat::kP010_10LE || in.format == PixelFormat::kNV16;
  const ConvertSide& is = coefficients.in_side;
  if (coefficients.in_family == convert_math::kYuv && is.plane[0] == is.plane[1]) {
    // packed 4:2:2: Y at offset[0] and offset[0] + 2 of each pair word
    const uint32_t y = is.offset[0], u = is.offset[1], v = is.offset[2];
    L.pair_luma_sel = y | (y + 2) << 4 | (y + 4) << 8 | (y + 6) << 12;
    L.pair_uv_sel = u | v << 4 | (u + 4) << 8 | (v + 4) << 12;
    L.pair_one_uv_sel = u | v << 4 | 0x4400u;
  }
  L.in_swap = in.format == PixelFormat::kNV21;
  L.out_semi = out.format == PixelFormat::kNV12 || out.format == PixelFormat::kNV21;
  L.out_swap = out.format == PixelFormat::kNV21;
  L.out_a16 = aligned_to(out.planes[0], 16);
  return L;
}

// The YuvOut that writes `out` when it is 8-bit 4:2:2 or 4:4:4 YUV; kToRgb
// for every other format.
int yuv_out_to(PixelFormat out) {
  switch (out) {
    case PixelFormat::kYUY2:
    case PixelFormat::kUYVY:
      return kToPacked422;
    case PixelFormat::kNV16:
      return kToSemi422;
    case PixelFormat::kY42B:
      return kToPlanar422;
    case PixelFormat::kY444:
      return kToPlanar444;
    default:
      return kToRgb;
  }
}

void grey_packed_cuda(const ImageRef& in, const ImageRef& out, const ConvertCoefficients& k,
                      cudaStream_t stream) {
  const bool rgb24 = out.format == PixelFormat::kRGB || out.format == PixelFormat::kBGR;
  const ConvertLayout L = layout_of(in, out, k, rgb24, kToRgb);
  const int bw = (in.width + 3) / 4, bh = (in.height + kGreyRows - 1) / kGreyRows;
  if (bw == 0 || bh == 0) return;
  const dim3 grid((bw + kBlockX - 1) / kBlockX, (bh + kBlockY - 1) / kBlockY);
  if (grid.y > kMaxGridY) throw Error("convert: the image is too tall (more than 2,097,120 rows)");
  const dim3 block(kBlockX, kBlockY);
  if (k.deep && rgb24)
    grey_packed_kernel<true, true><<<grid, block, 0, stream>>>(L, in, out, bw);
  else if (k.deep)
    grey_packed_kernel<true, false><<<grid, block, 0, stream>>>(L, in, out, bw);
  else if (rgb24)
    grey_packed_kernel<false, true><<<grid, block, 0, stream>>>(L, in, out, bw);
  else
    grey_packed_kernel<false, false><<<grid, block, 0, stream>>>(L, in, out, bw);
  CO_CUDA_CHECK_LAUNCH("the convert kernel (grey to packed RGB)");
}

// Whether deep420_kernel makes the pair: 10-bit 4:2:0 to 8-bit packed RGB
// (kToRgb) or 8-bit 4:2:2 and 4:4:4 YUV (*yuv_out), chroma interpolated.
bool deep420_takes(PixelFormat in, PixelFormat out, const ConvertCoefficients& k, int* yuv_out) {
  using F = PixelFormat;
  if ((in != F::kP010_10LE && in != F::kI420_10LE) || k.chroma_x != kUpLinear ||
      k.chroma_y != kUpLinear || k.scale_planes)
    return false;
  *yuv_out = yuv_out_to(out);
  return k.out_family == convert_math::kPacked || *yuv_out != kToRgb;
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

// What yuv_to_packed_kernel makes of a pair of 8-bit YUV formats: 4:2:0
// (NV12, NV21, I420) to 4:2:2 or 4:4:4 outside the plane scaler's pairs,
// or kToRgb where it makes none of them.
int yuv_out_of(PixelFormat in, PixelFormat out, const ConvertCoefficients& k) {
  using F = PixelFormat;
  if ((in != F::kNV12 && in != F::kNV21 && in != F::kI420) || k.scale_planes) return kToRgb;
  return yuv_out_to(out);
}

// What rows_kernel makes of a pair: its source (RowSource) and output
// (YuvOut and the 4:2:0 kinds above), or false where it makes none of
// them. 8-bit 4:2:2 input to 8-bit packed RGB, 8- and 10-bit 4:2:0, 4:4:4
// and the other 4:2:2 layouts; Y444 to the same but its plane scaler's
// pairs (I420, Y42B); 8-bit packed RGB to 4:2:2, 4:4:4 and 10-bit 4:2:0,
// and 3-byte RGB to 8-bit 4:2:0 too (4-byte RGB has convert_kernel there);
// packed RGB to GRAY16_LE, and 3-byte RGB to GRAY8. Limited-range RGB
// (convert_math::matrix8) and grey input stay elsewhere.
bool rows_takes(PixelFormat in, PixelFormat out, const ConvertCoefficients& k, int* source,
                int* yuv_out) {
  using F = PixelFormat;
  if (k.scale_planes || k.rgb_matrix8 || k.grey_matrix) return false;
  const FormatInfo& i = format_info(in);
  const bool yuv_in =
      in == F::kNV16 || in == F::kY42B || in == F::kYUY2 || in == F::kUYVY || in == F::kY444;
  const bool rgb_in = k.in_family == convert_math::kPacked && i.sample_bytes == 1 && !is_bayer(in);
  if (!yuv_in && !rgb_in) return false;
  *source = in == F::kYUY2 || in == F::kUYVY ? kFromPacked422
            : in == F::kY444                 ? kFrom444
            : yuv_in                         ? kFromPlanes422
            : i.comp[0].pixel_stride == 3    ? kFromRgb24
                                             : kFromRgb32;
  switch (out) {
    case F::kP010_10LE:
      *yuv_out = kToP010;
      return true;
    case F::kI420_10LE:
      *yuv_out = kToI420_10;
      return true;
    case F::kNV12:
    case F::kNV21:
      *yuv_out = kToSemi420;
      return *source != kFromRgb32;
    case F::kI420:
      *yuv_out = kToPlanar420;
      return *source != kFromRgb32;
    // 4-byte RGB to GRAY8 is one of the first nine formats' pairs.
    case F::kGRAY8:
      *yuv_out = kToGrey8;
      return *source == kFromRgb24;
    case F::kGRAY16_LE:
      *yuv_out = kToGrey16;
      return rgb_in;
    default:
      break;
  }
  if (k.deep) return false;
  if (k.out_family == convert_math::kPacked) {
    *yuv_out = kToRgb;
    return yuv_in;
  }
  *yuv_out = yuv_out_to(out);
  return *yuv_out != kToRgb;
}

// Whether rows_kernel's kFast instance may run (see rows_body).
bool rows_fast(const ImageRef& in, const ImageRef& out) {
  if (in.width % 4 != 0) return false;
  for (const ImageRef* image : {&in, &out}) {
    const FormatInfo& info = format_info(image->format);
    for (int p = 0; p < info.n_planes; ++p)
      if (!aligned_to(image->planes[p], p == 0 ? 16 : 4)) return false;
  }
  return true;
}

// Whether it launched a kernel (false for a pair no instance below makes:
// the caller converts it on the generic path).
bool rows_cuda(const ImageRef& in, const ImageRef& out, const ConvertCoefficients& k, int source,
               int yuv_out, cudaStream_t stream) {
  const bool rgb24 = out.format == PixelFormat::kRGB || out.format == PixelFormat::kBGR;
  const ConvertLayout L = layout_of(in, out, k, rgb24, yuv_out);
  const int bw = (in.width + 3) / 4, bh = (in.height + 1) / 2;
  if (bw == 0 || bh == 0) return true;
  const dim3 grid((bw + kBlockX - 1) / kBlockX,
                  static_cast<unsigned>(std::min<int>((bh + kBlockY - 1) / kBlockY, kMaxGridY)));
  const dim3 block(kBlockX, kBlockY);
  const bool linear = k.chroma_x == kUpLinear;
  bool ran = false;
  const bool fast = rows_fast(in, out);
  // kernel(std::true_type) and kernel(std::false_type): the kFast instance
  // and the other (the same for sources without a kFast one: planar and
  // semi-planar 4:2:2 have it, the others were within 2x of the memory
  // bound without it).
  auto run = [&](auto kernel) {
    if (fast)
      kernel(std::true_type{})<<<grid, block, 0, stream>>>(L, in, out, bw, bh);
    else
      kernel(std::false_type{})<<<grid, block, 0, stream>>>(L, in, out, bw, bh);
    ran = true;
  };
  with_yuv_out<true>(yuv_out, [&](auto kind) {
    constexpr int kOut = decltype(kind)::value;
    // Only the kernels some pair runs are built (see chroma_path and
    // rows_takes): 4:2:2 chroma is taken from the nearest sample between
    // equal subsamplings, and from packed 4:2:2 to I420 and Y444;
    // interpolated everywhere else.
    constexpr bool k422 = kOut == kToPacked422 || kOut == kToSemi422 || kOut == kToPlanar422;
    constexpr bool kGrey = kOut == kToGrey8 || kOut == kToGrey16;  // from RGB only
    if constexpr (!k422 && !kGrey) {
      if (linear && source == kFromPacked422)
        run([](auto) { return rows_kernel<kFromPacked422, true, kOut, false>; });
      else if (linear && source == kFromPlanes422)
        run([](auto f) { return rows_kernel<kFromPlanes422, true, kOut, decltype(f)::value>; });
    }
    if constexpr (k422 || kOut == kToPlanar420 || kOut == kToPlanar444) {
      if (!linear && source == kFromPacked422)
        run([](auto) { return rows_kernel<kFromPacked422, false, kOut, false>; });
    }
    if constexpr (k422) {
      if (!linear && source == kFromPlanes422)
        run([](auto f) { return rows_kernel<kFromPlanes422, false, kOut, decltype(f)::value>; });
    }
    if constexpr (kOut != kToPlanar420 && kOut != kToPlanar422 && kOut != kToPlanar444 && !kGrey) {
      if (source == kFrom444) run([](auto) { return rows_kernel<kFrom444, false, kOut, false>; });
    }
    if constexpr (kOut != kToRgb && kOut != kToSemi420 && kOut != kToPlanar420 &&
                  kOut != kToGrey8) {
      if (source == kFromRgb32)
        run([](auto) { return rows_kernel<kFromRgb32, false, kOut, false>; });
    }
    if constexpr (kOut != kToRgb) {
      if (source == kFromRgb24)
        run([](auto) { return rows_kernel<kFromRgb24, false, kOut, false>; });
    }
  });
  if (ran) CO_CUDA_CHECK_LAUNCH("the convert kernel (by rows)");
  return ran;
}

}  // namespace

void convert_cuda(const ImageRef& in, const ImageRef& out, const ConvertParams& params,
                  CUstream_st* stream) {
  if (is_bayer(in.format)) {
    debayer_cuda(in, out, stream);
    return;
  }
  // The first nine formats, and NV21 as NV12 with its pairs swapped.
  const std::vector<PixelFormat>& nine = rgb32_yuv420_gray8_formats();
  auto fast = [&nine](PixelFormat f) {
    return f == PixelFormat::kNV21 || std::find(nine.begin(), nine.end(), f) != nine.end();
  };
  const ConvertCoefficients coefficients = convert_coefficients(in.format, out.format, params);
  if (convert_copies_bytes(in, out)) {  // a format to itself
    copy_cuda(in, out, stream);
    return;
  }
  if (moves_chroma(in.format, out.format, coefficients)) {
    move_chroma_cuda(in, out, coefficients, stream);
    return;
  }
  int source = 0, rows_out = 0;
  if (rows_takes(in.format, out.format, coefficients, &source, &rows_out) &&
      rows_cuda(in, out, coefficients, source, rows_out, stream))
    return;
  // GRAY8 to 4-byte RGB is one of the first nine formats' pairs (measured
  // a little faster there).
  if ((in.format == PixelFormat::kGRAY16_LE ||
       (in.format == PixelFormat::kGRAY8 &&
        (out.format == PixelFormat::kRGB || out.format == PixelFormat::kBGR))) &&
      coefficients.out_family == convert_math::kPacked) {
    grey_packed_cuda(in, out, coefficients, stream);
    return;
  }
  int deep_out = kToRgb;
  if (deep420_takes(in.format, out.format, coefficients, &deep_out)) {
    deep420_cuda(in, out, coefficients, deep_out, stream);
    return;
  }
  // 4:2:0 YUV to 3-byte RGB through yuv_to_packed_kernel too.
  const bool rgb24 = (out.format == PixelFormat::kRGB || out.format == PixelFormat::kBGR) &&
                     coefficients.in_family == convert_math::kYuv;
  // 8-bit 4:2:0 YUV to 4:2:2 and 4:4:4 (not through the plane scaler)
  // through it as well.
  const int yuv_out = yuv_out_of(in.format, out.format, coefficients);
  // Those kernels run neither of the arithmetics of limited-range RGB
  // (convert_math::matrix8, grey through the matrix).
  if (!fast(in.format) || !(fast(out.format) || rgb24 || yuv_out != kToRgb) ||
      coefficients.rgb_matrix8 || coefficients.grey_matrix) {
    convert_any_cuda(in, out, coefficients, stream);
    return;
  }
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

}  // namespace cudaoverlap
