// A crop, a change of size, a turn and borders, as `scale` and `convert`
// make them: the input's window (the frame less its crop-* edges) scaled
// by `method` to the picture's size (before the turn), through tap tables
// built once for the sizes from the caps, turned by `video-direction` (as
// `flip` turns, from a frame in the workspace), and put in the output
// where FrameSizes' dest_* say, `border-color` around it (borders.h).
// Both operations hold one, so the parameters, the checks and the tables
// are written once. Its workspace: the tables, then the frame to turn.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "kernels/kernel_params.h"
#include "kernels/operation.h"
#include "kernels/scale/borders.h"
#include "kernels/scale/scale_image.h"

namespace cudaoverlap {

class Resize {
 public:
  Resize() = default;
  // `values`: method, crop-* and border-color where declared; `sizes` from
  // the caps; `colorimetry`: the output's, for the border's colour.
  Resize(const ParamValues& values, const FrameSizes& sizes, const Colorimetry& colorimetry = {});

  // False where the sizes are unknown or the frame is neither cropped,
  // scaled, turned nor bordered: the operation then runs as at one size.
  bool active() const { return active_; }
  // True when the window's size is not the picture's before the turn
  // (else the window is only cut out).
  bool scales() const { return scales_; }
  FlipDirection direction() const { return direction_; }
  bool turns() const { return direction_ != FlipDirection::kIdentity; }
  // True when an output row depends on input rows other than its own:
  // vertical taps, or a turn other than a mirror across.
  bool moves_rows() const {
    return (scales_ && window_height() != upright_height()) ||
           (turns() && direction_ != FlipDirection::kHoriz);
  }
  // Whether the turn can make `format` (4:2:2 that is not packed turns its
  // chroma's subsampling down: not on the quarter turns).
  bool can_turn(PixelFormat format) const;
  // The picture's size before the turn (what the window is scaled to).
  int upright_width() const {
    return flip_swaps_size(direction_) ? sizes_.picture_height() : sizes_.picture_width();
  }
  int upright_height() const {
    return flip_swaps_size(direction_) ? sizes_.picture_width() : sizes_.picture_height();
  }
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
  // `out`'s border in the border colour, on output rows [y0, y1) (y1 < 0:
  // every row); nothing without borders.
  void fill_borders_cuda(const ImageRef& out, CUstream_st* stream, int y0 = 0, int y1 = -1) const;
  void fill_borders_reference(const ImageRef& out, int y0 = 0, int y1 = -1) const;
  // The picture's rows among output rows [y0, y1) (empty in the border).
  RowRange picture_rows(int y0, int y1) const;
  // The input rows output rows [y0, y1) of a `format` frame read: the
  // window's rows their taps reach, chroma's too; every row where the
  // picture turns.
  RowRange band_reads(PixelFormat format, int y0, int y1) const;
  // Where the window, scaled (and converted) to the upright size, is
  // written: the picture's place in `out`, or the workspace's frame to
  // turn, in `out`'s format.
  ImageRef target(const ImageRef& out, uint8_t* workspace) const;
  // That frame turned into the picture's place in `out`; nothing where
  // nothing turns.
  void turn_cuda(const ImageRef& out, uint8_t* workspace, CUstream_st* stream) const;
  void turn_reference(const ImageRef& out, uint8_t* workspace) const;

  // The workspace it needs: the tables, then the frame to turn.
  size_t workspace_bytes() const { return workspace_bytes_; }
  void prepare_cuda(uint8_t* workspace, CUstream_st* stream) const;
  void prepare_reference(uint8_t* workspace) const;
  // Scales a window-sized `in` to `out` (one format), tables at
  // `workspace`: `out`'s rows [y0, y1) (y1 < 0: all of them).
  void scale_cuda(const ImageRef& in, const ImageRef& out, const uint8_t* workspace,
                  CUstream_st* stream, int y0 = 0, int y1 = -1) const;
  void scale_reference(const ImageRef& in, const ImageRef& out, const uint8_t* workspace,
                       int y0 = 0, int y1 = -1) const;
  void scale_cpu(const ImageRef& in, const ImageRef& out, const uint8_t* workspace, int y0 = 0,
                 int y1 = -1) const;

  bool operator==(const Resize& o) const {
    return sizes_ == o.sizes_ && crop_ == o.crop_ && border_argb_ == o.border_argb_ &&
           colorimetry_ == o.colorimetry_ && direction_ == o.direction_;
  }

 private:
  FrameSizes sizes_;
  Crop crop_;
  uint32_t border_argb_ = 0xff000000;
  Colorimetry colorimetry_;
  // With borders: the border colour in every format it may meet.
  std::vector<std::pair<PixelFormat, BorderColour>> colours_;
  const BorderColour& colour_for(PixelFormat format) const;
  FlipDirection direction_ = FlipDirection::kIdentity;
  bool active_ = false;
  bool scales_ = false;
  ScaleTables tables_;
  size_t turn_at_ = 0;  // the frame to turn, in the workspace
  size_t workspace_bytes_ = 0;
};

// What scale and convert answer alike, from their Resize: the size is
// downstream's, the crop and the turn are the parameters', and with none
// of them at equal caps the frame passes through.
class ResizingOperation : public Operation {
 public:
  ResizingOperation(const ParamValues& values, const FrameSizes& sizes,
                    const Colorimetry& colorimetry)
      : Operation(values), resize_(values, sizes, colorimetry) {}
  bool size_from_downstream() const override { return true; }
  Crop crop() const override { return resize_.crop(); }
  FrameSizes sizes() const override { return resize_.sizes(); }
  bool passes_through_same_caps() const override {
    return !resize_.crop().any() && !resize_.turns();
  }
  bool swaps_axes() const override { return flip_swaps_size(resize_.direction()); }
  FlipDirection orientation() const override { return resize_.direction(); }

 protected:
  Resize resize_;
};

// The parameters scale and convert declare for it: method, crop-left,
// crop-right, crop-top, crop-bottom, add-borders, border-color and
// video-direction.
const std::vector<ParamSpec>& resize_params();

}  // namespace cudaoverlap
