// The fused per-pixel launch's device code (see fused_pixels.h), compiled
// into the library for the built-in stages and at run time (NVRTC) around a
// user's per-pixel function (kernels/custom/custom.h), so both run the same
// stages the same way. Each thread takes 4 pixels of each of kFusedRows
// rows, loaded as words where the rows are aligned for it, all loaded
// before any is stored, and runs every stage on each in order: a shuffle is
// one byte_perm and an XOR, a balance balance.cu's own pixel arithmetic
// against its luma table (copied to shared memory per block), a user's
// stage the function given.
#pragma once

#ifndef __CUDACC_RTC__
#include <cuda_runtime.h>

#include <cstdint>
#endif

#include "kernels/balance/balance_pixel.cuh"
#include "kernels/pixel_stage.h"
#include "kernels/rgb24_words.cuh"

namespace cudaoverlap {
namespace fused {

constexpr int kThreads = kFusedThreads;
constexpr int kRows = kFusedRows;

// Every stage on the pixels a thread holds: each stage's words read once
// (the same for the whole warp) and applied to all of them. `user(word,
// x, y)` runs a kUser stage on the pixel at (x, y), on every pixel slot
// without a branch: a slot past the picture's edge is given the nearest
// pixel's coordinates, and its result is never stored.
template <class User>
__device__ __forceinline__ void run_stages(const FusedArgs& a, const uint8_t (*tables)[256],
                                           uint32_t (&px)[kRows * 4], int x0, int y0,
                                           const User& user) {
  for (int i = 0; i < a.n; ++i) {
    const PixelStage& s = a.stage[i];
    if (s.kind == PixelStage::Kind::kShuffle) {
      const uint32_t selector = s.selector, constant = s.constant, mask = s.mask;
#pragma unroll
      for (int p = 0; p < kRows * 4; ++p) px[p] = __byte_perm(px[p], constant, selector) ^ mask;
    } else if (s.kind == PixelStage::Kind::kBalance) {
      const RgbBalanceWords words = s.balance;
#pragma unroll
      for (int p = 0; p < kRows * 4; ++p) px[p] = balance_pixel(words, tables[i], px[p]);
    } else {
#pragma unroll
      for (int p = 0; p < kRows * 4; ++p)
        px[p] = user(px[p], min(x0 + p % 4, a.width - 1), min(y0 + p / 4, a.rows - 1));
    }
  }
}

// 4 pixels of `bytes` bytes from p: as words where `words` (p aligned to
// 16 for 4-byte pixels, to 4 for 3-byte ones) and all 4 lie in the row,
// else byte by byte.
template <int kBytes>
__device__ __forceinline__ void load4(const uint8_t* p, int n, bool words, uint32_t px[4]) {
  if (words && n == 4) {
    if constexpr (kBytes == 4) {
      const uint4 v = *reinterpret_cast<const uint4*>(p);
      px[0] = v.x, px[1] = v.y, px[2] = v.z, px[3] = v.w;
    } else {
      const uint32_t* q = reinterpret_cast<const uint32_t*>(p);
      const uint32_t w[3] = {q[0], q[1], q[2]};
      rgb24::unpack(w, px);
    }
    return;
  }
  for (int i = 0; i < 4; ++i) {
    px[i] = 0;
    if (i < n)
      for (int b = 0; b < kBytes; ++b) px[i] |= static_cast<uint32_t>(p[kBytes * i + b]) << (8 * b);
  }
}

template <int kBytes>
__device__ __forceinline__ void store4(uint8_t* p, int n, bool words, const uint32_t px[4]) {
  if (words && n == 4) {
    if constexpr (kBytes == 4) {
      *reinterpret_cast<uint4*>(p) = make_uint4(px[0], px[1], px[2], px[3]);
    } else {
      uint32_t w[3];
      rgb24::pack(px, w);
      uint32_t* q = reinterpret_cast<uint32_t*>(p);
      q[0] = w[0], q[1] = w[1], q[2] = w[2];
    }
    return;
  }
  for (int i = 0; i < n; ++i)
    for (int b = 0; b < kBytes; ++b) p[kBytes * i + b] = static_cast<uint8_t>(px[i] >> (8 * b));
}

// The whole launch, for a grid of kThreads-thread blocks 4 * kThreads
// pixels wide, each block row going down the picture kRows rows at a time.
// No __restrict__: `src` and `dst` may be the same frame.
template <int kIn, int kOut, class User>
__device__ __forceinline__ void fused_pixels(const FusedArgs& a, bool in_words, bool out_words,
                                             const User& user) {
  __shared__ uint8_t tables[kMaxFusedStages][256];
  const int x0 = (blockIdx.x * blockDim.x + threadIdx.x) * 4;
  const int n = min(4, a.width - x0);  // < 1: a thread past the row's end
  uint32_t px[kRows * 4] = {};
  const auto load = [&](int y0) {
#pragma unroll
    for (int r = 0; r < kRows; ++r)
      if (y0 + r < a.rows)
        load4<kIn>(
            a.src + static_cast<size_t>(y0 + r) * a.src_stride + static_cast<size_t>(x0) * kIn, n,
            in_words, px + 4 * r);
  };
  // The first loads are in flight while the block copies the luma tables.
  int y0 = blockIdx.y * kRows;
  if (n > 0) load(y0);
  for (int i = 0; i < a.n; ++i)
    if (a.stage[i].kind == PixelStage::Kind::kBalance)
      for (int j = threadIdx.x; j < 256; j += blockDim.x) tables[i][j] = a.stage[i].table_y[j];
  __syncthreads();
  if (n <= 0) return;
  while (y0 < a.rows) {
    run_stages(a, tables, px, x0, y0, user);
#pragma unroll
    for (int r = 0; r < kRows; ++r)
      if (y0 + r < a.rows)
        store4<kOut>(
            a.dst + static_cast<size_t>(y0 + r) * a.dst_stride + static_cast<size_t>(x0) * kOut, n,
            out_words, px + 4 * r);
    y0 += gridDim.y * kRows;
    if (y0 < a.rows) load(y0);
  }
}

}  // namespace fused
}  // namespace cudaoverlap
