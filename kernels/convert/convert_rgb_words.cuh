// YUV to packed RGB pixel words for convert's 4x2-block kernels: the
// reference's 8-bit arithmetic in byte permutes, high-word multiplies and
// clamps in 16-bit lanes, and a block row of them stored.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/convert/convert_access.cuh"

namespace cudaoverlap {
namespace convert_detail {

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

}  // namespace convert_detail
}  // namespace cudaoverlap
