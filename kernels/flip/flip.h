// The `flip` kernel: rotates or mirrors the image as videoflip's
// video-direction does. Every plane is rearranged on its
// own grid of pixel groups (4 or 3 bytes for packed RGB, 1 or 2 for luma and
// planar chroma, 2 or 4 for NV12's or P010's interleaved UV), which is what
// videoflip does, so
// chroma moves with its luma for even sizes and odd sizes round the same way.
// The 90-degree directions and the two diagonals swap width and height.
#pragma once

#include "kernels/kernel_params.h"
#include "kernels/operation.h"
#include "kernels/operation_entry.h"

namespace cudaoverlap {

class FlipOperation final : public Operation {
 public:
  explicit FlipOperation(const ParamValues& values)
      : Operation(values), direction_(values.choice<FlipDirection>("video-direction")) {}
  const char* name() const override { return "flip"; }
  // Every format whose planes are grids of whole samples or sample pairs,
  // 4:2:2 (NV16, Y42B) only where the axes stay; and packed 4:2:2 (YUY2,
  // UYVY) as videoflip turns it (flip_math.h).
  std::vector<PixelFormat> output_formats(PixelFormat in) const override;
  bool mixes_rows(PixelFormat, PixelFormat) const override {
    return direction_ != FlipDirection::kIdentity && direction_ != FlipDirection::kHoriz;
  }
  // A horizontal flip keeps each row in its place; the others move rows.
  int band_halo(PixelFormat, PixelFormat) const override {
    return direction_ == FlipDirection::kIdentity || direction_ == FlipDirection::kHoriz ? 0 : -1;
  }
  bool swaps_axes() const override { return flip_swaps_size(direction_); }
  FlipDirection orientation() const override { return direction_; }
  void enqueue_cuda(const ImageRef& in, const ImageRef& out, const Workspace& workspace,
                    CUstream_st* stream) const override;
  void run_reference(const ImageRef& in, const ImageRef& out,
                     const Workspace& workspace) const override;
  void run_cpu(const ImageRef& in, const ImageRef& out, const Workspace& workspace) const override;
  void run_cpu_rows(const ImageRef& in, const ImageRef& out, const Workspace& workspace, int y0,
                    int y1) const override;

 private:
  FlipDirection direction_;
};

void flip_reference(const ImageRef& in, const ImageRef& out, FlipDirection direction);
// The cpu backend's flip (flip_cpu.cpp): the reference's bytes, faster.
void flip_cpu(const ImageRef& in, const ImageRef& out, FlipDirection direction);
// YUY2 or UYVY: flipped pair by pair (flip_math.h), not as a grid of words.
bool is_packed422(PixelFormat format);
void flip_cuda(const ImageRef& in, const ImageRef& out, FlipDirection direction,
               CUstream_st* stream);

// video-direction, as flip, scale and convert declare it.
const ParamSpec& flip_direction_param();

// Its registry entry (operation_entry.h).
const OperationEntry& flip_entry();

}  // namespace cudaoverlap
