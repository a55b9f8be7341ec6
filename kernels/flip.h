// The `flip` kernel: rotates or mirrors the image as videoflip's
// video-direction does (KernelParams::flip). Every plane is rearranged on its
// own grid of pixel groups (4 bytes for packed RGB, 1 for luma and I420
// chroma, 2 for NV12's interleaved UV), which is what videoflip does, so
// chroma moves with its luma for even sizes and odd sizes round the same way.
// The 90-degree directions and the two diagonals swap width and height.
#pragma once

#include "kernel_params.h"
#include "operation.h"

namespace cudaoverlap {

class FlipOperation final : public Operation {
 public:
  explicit FlipOperation(FlipDirection direction) : direction_(direction) {}
  const char* name() const override { return "flip"; }
  std::vector<PixelFormat> output_formats(PixelFormat in) const override {
    return keep_format_of(in, rgb32_yuv420_gray8_formats());
  }
  bool mixes_rows(PixelFormat, PixelFormat) const override {
    return direction_ != FlipDirection::kIdentity && direction_ != FlipDirection::kHoriz;
  }
  bool swaps_axes() const override { return flip_swaps_size(direction_); }
  FlipDirection orientation() const override { return direction_; }
  bool same_as(const Operation& other) const override;
  void enqueue_cuda(const ImageRef& in, const ImageRef& out, const Workspace& workspace,
                    CUstream_st* stream) const override;
  void run_reference(const ImageRef& in, const ImageRef& out,
                     const Workspace& workspace) const override;

 private:
  FlipDirection direction_;
};

void flip_reference(const ImageRef& in, const ImageRef& out, FlipDirection direction);
void flip_cuda(const ImageRef& in, const ImageRef& out, FlipDirection direction,
               CUstream_st* stream);

}  // namespace cudaoverlap
