// A crop and a change of size, as `scale` and `convert` make them: the
// input's window (the frame less its crop-* edges) scaled to the output's
// size by `method`, through tap tables built once for the sizes from the
// caps. Both operations hold one, so the parameters, the checks and the
// tables are written once.
#pragma once

#include <string>
#include <vector>

#include "kernels/kernel_params.h"
#include "kernels/operation.h"
#include "kernels/scale/scale_image.h"

namespace cudaoverlap {

class Resize {
 public:
  Resize() = default;
  // `values`: method and crop-* where declared; `sizes` from the caps.
  Resize(const ParamValues& values, const FrameSizes& sizes);

  // False where the sizes are unknown or the frame is neither cropped nor
  // scaled: the operation then runs as at one size.
  bool active() const { return active_; }
  // True when the window's size is not the output's (else the window is
  // only cut out).
  bool scales() const { return scales_; }
  const Crop& crop() const { return crop_; }
  const FrameSizes& sizes() const { return sizes_; }
  int window_width() const { return sizes_.in_width - crop_.left - crop_.right; }
  int window_height() const { return sizes_.in_height - crop_.top - crop_.bottom; }

  // Empty when `in` -> `out` are the sizes it was made for and the crop
  // fits `in`'s format, else a sentence for `kernel`'s refusal.
  std::string check(const char* kernel, const ImageRef& in, const ImageRef& out) const;
  // `in`'s window, the same bytes seen as an image of its own.
  ImageRef window(const ImageRef& in) const;

  size_t table_bytes() const { return tables_.bytes.size(); }
  void prepare_cuda(uint8_t* workspace, CUstream_st* stream) const;
  void prepare_reference(uint8_t* workspace) const;
  // Scales a window-sized `in` to `out` (one format), tables at `workspace`.
  void scale_cuda(const ImageRef& in, const ImageRef& out, const uint8_t* workspace,
                  CUstream_st* stream) const;
  void scale_reference(const ImageRef& in, const ImageRef& out, const uint8_t* workspace) const;

  bool operator==(const Resize& o) const { return sizes_ == o.sizes_ && crop_ == o.crop_; }

 private:
  FrameSizes sizes_;
  Crop crop_;
  bool active_ = false;
  bool scales_ = false;
  ScaleTables tables_;
};

// The parameters scale and convert declare for it: method and crop-left,
// crop-right, crop-top, crop-bottom.
const std::vector<ParamSpec>& resize_params();

}  // namespace cudaoverlap
