// The `convert` kernel: pixel-format conversion between every pair of the
// formats (RGBA, BGRA, RGBx, BGRx, ARGB, ABGR, RGB, BGR, GRAY8, NV12, NV21,
// I420, NV16, Y42B, YUY2, UYVY, Y444; P010_10LE, I420_10LE, GRAY16_LE) at
// the same size, following the
// YUV side's colorimetry (any matrix, by its Kr and Kb; limited or full range)
// the way videoconvert 1.22 (dither=none) does, path by path:
//
// - RGB to RGB moves bytes: the alpha or padding byte goes with the pixel
//   (255 from 3-byte RGB; none into it), whatever range either side's caps
//   give (videoconvert ignores it there).
// - RGB whose caps say range 16-235 (colorimetry=bt709 on RGB, for one) is
//   taken as videoconvert takes it: to and from YUV and grey its matrix
//   includes the 16..235 scale, run by its 8-bit ORC arithmetic, which
//   centres samples on 128 and drops the matrix's offsets (so Y = 235 from
//   limited RGB white is 233, as there). With a side deeper than 8 bits it
//   is refused.
// - YUV to RGB uses videoconvert's 8-bit fixed-point arithmetic
//   (KernelParams -> ConvertCoefficients::to_rgb, its ORC code's rounding);
//   chroma is taken from the nearest sample for I420 (its fast path) and
//   interpolated 3:1 along each subsampled axis, horizontally then
//   vertically, for the others (its generic path). Alpha or padding is 255.
// - RGB to YUV or GRAY8: each pixel's Y, U, V with 16-bit fixed-point
//   coefficients, then chroma averaged in pairs (rounding up) horizontally,
//   then vertically, where the output subsamples (videoconvert averages
//   vertically first: up to 1 apart). GRAY8 is full-range BT.601 luma.
// - GRAY8 to RGB replicates the sample; GRAY8 to and from BT.601 YUV
//   copies luma (neutral chroma 128), as videoconvert does. GRAY8 to and
//   from BT.709 YUV is refused (videoconvert goes through RGB there).
// - YUV to YUV keeps luma; the two sides must have the same matrix and
//   range (the operation's check refuses otherwise). Chroma is copied
//   between equal subsamplings, scaled plane by plane with GStreamer's
//   2-tap scaler between planar (I420, Y42B, Y444) or between semi-planar
//   (NV12, NV16) formats, taken from the nearest sample on videoconvert's
//   packed 4:2:2 fast paths (YUY2 and UYVY to and from I420, to Y444), and
//   otherwise interpolated as for RGB output, then averaged down.
// - An odd-width row of packed 4:2:2 output ends in a pair whose second
//   luma is past the picture: it repeats the last pixel.
// - With a side deeper than 8 bits (P010_10LE, I420_10LE, GRAY16_LE) every
//   sample is taken to 16 bits as videoconvert unpacks it (8-bit v * 257,
//   P010 v | v >> 10, I420_10LE v << 6 | v >> 4), chroma interpolated 3:1
//   (its generic path) or copied between equal subsamplings, the matrices
//   applied on 16-bit samples, and the result packed by truncation (8 bits:
//   >> 8; P010: & 0xFFC0; I420_10LE: >> 6).
// - Bayer mosaics (bggr, rggb, grbg, gbrg; video/x-bayer) are debayered to
//   the 4- and 3-byte RGB formats with bayer2rgb's bilinear method
//   (debayer_math.h); they are input only.
#pragma once

#include <cstdint>
#include <string>

#include "kernels/convert/convert_coefficients.h"
#include "kernels/kernel_params.h"
#include "kernels/operation.h"
#include "kernels/operation_entry.h"
#include "kernels/scale/resize.h"

namespace cudaoverlap {

// Empty when `in` can be converted to `out` with `params`, else why not.
std::string convert_check(const ImageRef& in, const ImageRef& out, const ConvertParams& params);

// The input rows either side of an output row that any path of convert
// reads, at most, in picture rows: 4:2:0 chroma interpolated from the
// neighbouring chroma row (3 picture rows away), then averaged in pairs on
// a 4:2:0 output; debayering's bilinear neighbours (1). Tested for every
// pair by running bands by view (tests/kernels).
constexpr int kConvertBandHalo = 4;

// Every format to every format; the output format and size are
// downstream's choice. The crop-* edges are taken off first (resize.h);
// a change of size is scaled as `scale` scales (`method`), in whichever
// of the two formats has fewer pixels to scale:
// the input scaled, then converted, when the picture shrinks; converted,
// then scaled, when it grows (and always for a Bayer mosaic, which is
// debayered first). Between the two steps the frame waits in the
// workspace, which the engine's one compute stream runs frame after frame.
class ConvertOperation final : public ResizingOperation {
 public:
  // `values`: its declared parameters (method); `sizes` from the caps,
  // unset where the size stays.
  ConvertOperation(const ConvertParams& params, const ParamValues& values = {},
                   const FrameSizes& sizes = {});
  const char* name() const override { return "convert"; }
  std::vector<PixelFormat> output_formats(PixelFormat in) const override;
  bool format_from_downstream() const override { return true; }
  size_t workspace_bytes() const override { return workspace_bytes_; }
  void prepare_cuda(const Workspace& workspace, CUstream_st* stream) const override;
  void prepare_reference(const Workspace& workspace) const override;
  bool mixes_rows(PixelFormat in, PixelFormat out) const override;
  // YUV to or from RGB or grey. (YUV to YUV keeps the samples, and needs
  // the same matrix on both sides.)
  bool uses_matrix(PixelFormat in, PixelFormat out) const override;
  std::string check(const ImageRef& in, const ImageRef& out) const override;
  bool same_as(const Operation& other) const override;
  void enqueue_cuda(const ImageRef& in, const ImageRef& out, const Workspace& workspace,
                    CUstream_st* stream) const override;
  void run_reference(const ImageRef& in, const ImageRef& out,
                     const Workspace& workspace) const override;
  // run_reference's steps by convert_cpu where it takes the pair and by
  // the cpu backend's scaling pass.
  void run_cpu(const ImageRef& in, const ImageRef& out, const Workspace& workspace) const override;
  void run_cpu_rows(const ImageRef& in, const ImageRef& out, const Workspace& workspace, int y0,
                    int y1) const override;
  // Between packed 8-bit RGB formats at one size: the bytes moved.
  bool pixel_stage(PixelFormat in, PixelFormat out, const Workspace& workspace,
                   PixelStage* stage) const override;
  // Bands: rows that mix no other rows take the default rows path (halo 0);
  // the others (4:2:0 chroma interpolated or averaged, debayering) run by
  // view with kConvertBandHalo rows, but for YUV to YUV through the plane
  // scaler, which runs whole frames (its taps depend on the planes'
  // heights).
  int band_halo(PixelFormat in, PixelFormat out) const override;
  bool bands_by_view(PixelFormat in, PixelFormat out) const override { return mixes_rows(in, out); }
  // The cpu backend's bands at once: also those run by view elsewhere
  // where convert_cpu takes the pair (4:2:0 YUV to RGB), which makes any
  // rows of the whole frame (run_cpu_rows).
  bool cpu_rows_at_once(PixelFormat in, PixelFormat out) const override;

 private:
  // The frame between the two steps of a resizing conversion, in the
  // workspace: the input's format at the output's size, or the output's
  // format at the window's.
  ImageRef between(const ImageRef& window, const ImageRef& out, uint8_t* workspace,
                   bool* scale_first) const;
  // run_reference's steps, or with `fast` run_cpu's.
  void run_host(const ImageRef& in, const ImageRef& whole_out, const Workspace& workspace,
                bool fast) const;

  ConvertParams params_;
  size_t between_at_ = 0;
  size_t workspace_bytes_ = 0;
};

// Whether convert_reference's output is its input, byte for byte, whatever
// the colorimetry (so a copy makes it): a format to itself with 8-bit
// samples (RGB to RGB moves the bytes, YUV to YUV of one subsampling copies
// luma and chroma) or GRAY16_LE (its samples go to 16 bits and back
// unchanged); not 10-bit formats (the bits beside a sample are cleared),
// nor packed 4:2:2 of odd width (its last pair's second luma, past the
// picture, repeats the last pixel).
bool convert_copies_bytes(const ImageRef& in, const ImageRef& out);

void convert_reference(const ImageRef& in, const ImageRef& out, const ConvertParams& params);
// The cpu backend's convert (convert_cpu.cpp), the reference's bytes
// faster: a copy where convert_copies_bytes, and 8-bit YUV to packed RGB.
// False, having written nothing, for the other pairs. Rows [y0, y1) of
// the whole frame only where y1 >= 0 (y0 a multiple of the formats' row
// step), with what those rows read of the input's other rows.
bool convert_cpu(const ImageRef& in, const ImageRef& out, const ConvertParams& params, int y0 = 0,
                 int y1 = -1);
// Whether convert_cpu converts the pair by its matrix (and so makes any
// rows of it); its copies are not counted.
bool convert_cpu_takes(PixelFormat in, PixelFormat out, const ConvertParams& params);
void convert_cuda(const ImageRef& in, const ImageRef& out, const ConvertParams& params,
                  CUstream_st* stream);

// Its registry entry (operation_entry.h).
const OperationEntry& convert_entry();

}  // namespace cudaoverlap
