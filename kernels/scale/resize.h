// A crop, a change of size and borders, as `scale` and `convert` make
// them: the input's window (the frame less its crop-* edges) scaled by
// `method` to the picture's size, through tap tables built once for the
// sizes from the caps, and put in the output where FrameSizes' dest_* say,
// `border-color` around it (borders.h). Both operations hold one, so the
// parameters, the checks and the tables are written once.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/kernel_params.h"
#include "kernels/operation.h"
#include "kernels/scale/scale_image.h"

namespace cudaoverlap {

class Resize {
 public:
  Resize() = default;
  // `values`: method, crop-* and border-color where declared; `sizes` from
  // the caps; `colorimetry`: the output's, for the border's colour.
  Resize(const ParamValues& values, const FrameSizes& sizes, const Colorimetry& colorimetry = {});

  // False where the sizes are unknown or the frame is neither cropped,
  // scaled nor bordered: the operation then runs as at one size.
  bool active() const { return active_; }
  // True when the window's size is not the picture's (else the window is
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
  // The picture's place in `out`, seen as an image of its own.
  ImageRef picture(const ImageRef& out) const;
  // `out`'s border in the border colour; nothing without borders.
  void fill_borders_cuda(const ImageRef& out, CUstream_st* stream) const;
  void fill_borders_reference(const ImageRef& out) const;

  size_t table_bytes() const { return tables_.bytes.size(); }
  void prepare_cuda(uint8_t* workspace, CUstream_st* stream) const;
  void prepare_reference(uint8_t* workspace) const;
  // Scales a window-sized `in` to `out` (one format), tables at `workspace`.
  void scale_cuda(const ImageRef& in, const ImageRef& out, const uint8_t* workspace,
                  CUstream_st* stream) const;
  void scale_reference(const ImageRef& in, const ImageRef& out, const uint8_t* workspace) const;

  bool operator==(const Resize& o) const {
    return sizes_ == o.sizes_ && crop_ == o.crop_ && border_argb_ == o.border_argb_ &&
           colorimetry_ == o.colorimetry_;
  }

 private:
  FrameSizes sizes_;
  Crop crop_;
  uint32_t border_argb_ = 0xff000000;
  Colorimetry colorimetry_;
  bool active_ = false;
  bool scales_ = false;
  ScaleTables tables_;
};

// The parameters scale and convert declare for it: method, crop-left,
// crop-right, crop-top, crop-bottom, add-borders and border-color.
const std::vector<ParamSpec>& resize_params();

}  // namespace cudaoverlap
