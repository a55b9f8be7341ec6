// The `convert` kernel: pixel-format conversion between every pair of
// RGBA, BGRA, RGBx, BGRx, ARGB, ABGR, NV12, I420 and GRAY8 at the same size,
// following the YUV side's colorimetry (BT.601 or BT.709 matrix, limited or
// full range) the way videoconvert (dither=none) does:
//
// - RGB to RGB moves bytes: the alpha or padding byte goes with the pixel.
// - 4:2:0 to RGB uses videoconvert's 8-bit fixed-point arithmetic
//   (KernelParams -> ConvertCoefficients::to_rgb, its ORC code's rounding);
//   chroma is taken from the nearest sample for I420 (its fast path) and
//   interpolated 3:1 horizontally then vertically for NV12 (its generic
//   path). Alpha or padding is 255.
// - RGB to 4:2:0 or GRAY8: each pixel's Y, U, V with 16-bit fixed-point
//   coefficients, then chroma averaged in pairs (rounding up) horizontally,
//   then vertically. GRAY8 is full-range BT.601 luma.
// - GRAY8 to RGB replicates the sample; GRAY8 to and from BT.601 4:2:0
//   copies luma (neutral chroma 128), as videoconvert does. GRAY8 to and
//   from BT.709 4:2:0 is refused (videoconvert goes through RGB there).
// - 4:2:0 to 4:2:0 repacks planes; the two sides must have the same matrix
//   and range (the operation's check refuses otherwise).
#pragma once

#include <cstdint>
#include <string>

#include "kernel_params.h"
#include "operation.h"

namespace cudaoverlap {

// Everything the per-pixel arithmetic needs, computed once on the host.
struct ConvertCoefficients {
  int in_family = 0, out_family = 0;  // packed RGB, grey, 4:2:0
  int in_offsets[4] = {0, 1, 2, 3};   // byte of R, G, B and alpha/padding
  int out_offsets[4] = {0, 1, 2, 3};
  int32_t to_rgb[5] = {};      // Y->RGB, V->R, U->B, U->G, V->G, x256
  int32_t to_yuv[3][4] = {};   // rows Y, U, V: R, G, B, offset; x65536
  bool linear_chroma = false;  // NV12 input: interpolated chroma
};
ConvertCoefficients convert_coefficients(PixelFormat in, PixelFormat out,
                                         const ConvertParams& params);

// Empty when `in` can be converted to `out` with `params`, else why not.
std::string convert_check(const ImageRef& in, const ImageRef& out, const ConvertParams& params);

// Every format to every format; the output format is downstream's choice.
class ConvertOperation final : public Operation {
 public:
  explicit ConvertOperation(const ConvertParams& params) : params_(params) {}
  const char* name() const override { return "convert"; }
  std::vector<PixelFormat> output_formats(PixelFormat in) const override;
  bool format_from_downstream() const override { return true; }
  bool mixes_rows(PixelFormat in, PixelFormat out) const override;
  std::string check(const ImageRef& in, const ImageRef& out) const override;
  bool same_as(const Operation& other) const override;
  void enqueue_cuda(const ImageRef& in, const ImageRef& out, const Workspace& workspace,
                    CUstream_st* stream) const override;
  void run_reference(const ImageRef& in, const ImageRef& out,
                     const Workspace& workspace) const override;

 private:
  ConvertParams params_;
};

void convert_reference(const ImageRef& in, const ImageRef& out, const ConvertParams& params);
void convert_cuda(const ImageRef& in, const ImageRef& out, const ConvertParams& params,
                  CUstream_st* stream);

}  // namespace cudaoverlap
