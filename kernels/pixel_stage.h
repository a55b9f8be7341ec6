// What an operation does to one pixel of packed 8-bit RGB, where the pixel
// at the same place of its output depends on that input pixel alone (invert,
// balance, a reordering of RGB bytes): a stage that a chain fuses with its
// neighbours' into one launch (kernels/chain/fused_pixels.h), so that
// several such steps read and write the frame once.
//
// A pixel is a 32-bit word holding its bytes in memory order (byte 3 of a
// 3-byte pixel is not the pixel's and is never stored). Plain data, no CUDA
// syntax: operations fill it on the host and it travels in a launch's
// arguments. The data part also compiles at run time (NVRTC), for a fused
// launch around a user's per-pixel function (kernels/custom/custom.h).
#pragma once

#ifndef __CUDACC_RTC__
#include <cstddef>
#include <cstdint>

#include "kernels/video_format.h"
#else
// NVRTC has no standard headers: the fixed-width types the data uses.
typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
#endif

namespace cudaoverlap {

// balance on packed RGB (kernels/balance/balance_pixel.cuh): the forward
// matrix's rows as dp4a coefficient bytes laid out by the format's byte
// offsets of R, G and B (0 for alpha or padding), the byte_perm selectors
// that place the results and keep the fourth byte, and the chroma table of
// its parameters on the device.
struct RgbBalanceWords {
  const uint16_t* chroma = nullptr;
  uint32_t coef_y = 0, coef_u = 0, coef_v = 0;
  uint32_t sel_rg = 0, sel_ba = 0;
};

struct PixelStage {
  enum class Kind : uint32_t {
    // out = byte_perm(in, constant, selector) ^ mask: a copy, an inversion
    // (mask), a reordering of bytes with constants (a selector nibble 4 + j
    // takes byte j of `constant`).
    kShuffle,
    // videobalance's arithmetic (kernels/balance/balance.h).
    kBalance,
    // A user's per-pixel function (kernel=custom): only a launch compiled
    // with that function runs it (CustomOperation::enqueue_fused_cuda).
    kUser,
  };
  Kind kind = Kind::kShuffle;
  uint32_t selector = 0x3210;
  uint32_t constant = 0;
  uint32_t mask = 0;
  RgbBalanceWords balance;
  uint8_t table_y[256] = {};  // kBalance: the luma table
};

// Stages one launch runs at most; a longer run of per-pixel steps is cut
// into launches of this many.
constexpr int kMaxFusedStages = 8;
// A fused launch's threads a block, and the rows a thread takes at a time
// (4 pixels of each).
constexpr int kFusedThreads = 256;
constexpr int kFusedRows = 2;

// What a fused launch receives (kernels/chain/fused_pixels.cuh): one plane
// of `rows` rows of `width` pixels each side, and the stages in order.
struct FusedArgs {
  const uint8_t* src;
  size_t src_stride;
  uint8_t* dst;
  size_t dst_stride;
  int width, rows;
  int n;
  PixelStage stage[kMaxFusedStages];
};

#ifndef __CUDACC_RTC__

// The formats stages work on: packed 8-bit RGB of 3 or 4 bytes a pixel
// (RGBA, BGRA, RGBx, BGRx, ARGB, ABGR, RGB, BGR).
bool is_pixel_stage_format(PixelFormat format);

// Bytes of one pixel of a stage format: 3 or 4.
int pixel_stage_bytes(PixelFormat format);

// The stage that moves a pixel of `in` to `out` as convert does between
// packed RGB formats: R, G and B to their places, the alpha or padding byte
// with them, 255 where `in` has none. Both must be stage formats.
PixelStage rgb_shuffle_stage(PixelFormat in, PixelFormat out);

// One kShuffle stage doing what `first` then `then` (both kShuffle) do.
PixelStage compose_shuffles(const PixelStage& first, const PixelStage& then);

// The stage on the host, for tests: kShuffle only.
uint32_t apply_shuffle(const PixelStage& stage, uint32_t pixel);

#endif  // __CUDACC_RTC__

}  // namespace cudaoverlap
