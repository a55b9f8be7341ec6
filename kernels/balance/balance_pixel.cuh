// balance's arithmetic on one packed RGB pixel held in a word, shared by
// its own kernels (balance.cu) and a chain's fused launch
// (kernels/chain/fused_pixels.cuh); CUDA-only, compiled at run time too.
#pragma once

#ifndef __CUDACC_RTC__  // NVRTC (fused_pixels.cuh) has neither
#include <cuda_runtime.h>

#include <cstdint>
#endif

#include "kernels/pixel_stage.h"

namespace cudaoverlap {
namespace {

// The table's (u', v') for index u * 256 + v, as the bytes of a 16-bit value.
__device__ __forceinline__ uint32_t balance_chroma(const uint16_t* __restrict__ table,
                                                   uint32_t index) {
  return __ldg(table + index);
}

// dp4a of unsigned bytes in `a` and signed bytes in `b`: c plus the sum of
// the four byte products, exact in 32 bits. No intrinsic mixes the two.
__device__ __forceinline__ int dp4a_us(uint32_t a, uint32_t b, int c) {
  int d;
  asm("dp4a.u32.s32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  return d;
}

// c + lo * b0 + hi * b1, for the signed 16-bit halves lo and hi of `a` and
// the unsigned bytes 0 and 1 of `b`, exact in 32 bits.
__device__ __forceinline__ int dp2a_lo_su(uint32_t a, uint32_t b, int c) {
  int d;
  asm("dp2a.lo.s32.u32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  return d;
}

// A backward matrix row's coefficients of u' and v' as dp2a halves.
__host__ __device__ constexpr uint32_t coef_pair(int cu, int cv) {
  return static_cast<uint16_t>(cu) | static_cast<uint32_t>(static_cast<uint16_t>(cv)) << 16;
}

// One packed pixel as 4 bytes in a word (byte c of the pixel in bits 8c),
// with videobalance's matrices: yuv = (m * rgb + offset) >> 8, then
// rgb' = clamp((m' * yuv' + offset') >> 8).
//
// Forward: each row is one dp4a over the pixel word against that row's
// coefficients laid out by the format's byte offsets (alpha's 0). For 8-bit
// inputs the sums lie in [4096, 60196] for Y and [4208, 61328] for U and V
// (the negative coefficients of U and V add up to -112, the positive one is
// 112), so after >> 8 they are within [16, 239] and the reference's clamps
// never act. Being in [0, 65535], each sum holds its result in byte 1 and
// zeros above, so one byte_perm forms the chroma index u0 * 256 + v0.
//
// Backward: the chroma entry holds u' and v' in bytes 0 and 1, which dp2a
// multiplies by a row's two 16-bit coefficients, added to 298 * y' plus the
// row's offset. clamp(x >> 8, 0, 255) equals byte 1 of clamp(x, 0, 65535)
// (x < 0 gives 0 either way, x > 65535 gives 255, and otherwise x >> 8 is
// byte 1 of x), so the results are clamped unshifted and byte_perm takes byte
// 1 of each straight to its place: sel_rg puts R and G there, sel_ba B and
// the pixel's own fourth byte, zeros elsewhere (byte 3 of a clamped value).
__device__ __forceinline__ uint32_t balance_pixel(const RgbBalanceWords& a, const uint8_t* table,
                                                  uint32_t w) {
  const uint32_t yf = __dp4a(w, a.coef_y, 4096u);
  const int uf = dp4a_us(w, a.coef_u, 32768);
  const int vf = dp4a_us(w, a.coef_v, 32768);
  const int y1 = table[yf >> 8];
  const uint32_t t = balance_chroma(a.chroma, __byte_perm(vf, uf, 0x3351));
  const int y298 = 298 * y1;
  const int r = __vimin_s32_relu(dp2a_lo_su(coef_pair(0, 409), t, y298 - 57068), 65535);
  const int g = __vimin_s32_relu(dp2a_lo_su(coef_pair(-100, -208), t, y298 + 34707), 65535);
  const int b = __vimin_s32_relu(dp2a_lo_su(coef_pair(516, 0), t, y298 - 70870), 65535);
  return __byte_perm(r, g, a.sel_rg) | __byte_perm(b, w, a.sel_ba);
}

}  // namespace
}  // namespace cudaoverlap
