// The `balance` kernel: videobalance's brightness, contrast, saturation and
// hue, with videobalance's arithmetic so the two agree to the byte.
//
// Luma goes through a table, y' = clamp(16 + (y - 16) * contrast +
// brightness * 255); chroma (u, v), centred on 128, is rotated by hue * pi and
// scaled by saturation, each result rounded to nearest-even and clamped.
// Packed RGB is taken to 8-bit BT.601 limited-range YCbCr and back with
// videobalance's fixed-point matrices (whatever the caps' colorimetry, as
// videobalance does); alpha and padding are kept. GRAY8 (which videobalance
// does not take) gets the luma table only. All parameters at their defaults
// copy the frame, as videobalance's passthrough does.
#pragma once

#include <cstdint>

#include "kernel.h"
#include "video_format.h"

struct CUstream_st;

namespace cudaoverlap {

// The luma table and the chroma constants both implementations use.
struct BalanceConstants {
  uint8_t table_y[256];
  double hue_cos;
  double hue_sin;
  double saturation;
};
BalanceConstants balance_constants(const BalanceParams& params);

// Byte offsets of R, G and B in a packed 4-byte pixel of `format`.
void rgb_byte_offsets(PixelFormat format, int* r, int* g, int* b);

void balance_reference(const ImageRef& in, const ImageRef& out, const BalanceParams& params);
void balance_cuda(const ImageRef& in, const ImageRef& out, const BalanceParams& params,
                  bool inject_launch_failure, CUstream_st* stream);

}  // namespace cudaoverlap
