// The `scale` kernel: resizes the picture to the size downstream asks for,
// keeping the format, by `method` (nearest, bilinear, bicubic, lanczos; see
// scale_taps.h), after taking the crop-* edges off (resize.h). At one size
// and no crop it copies the frame.
#pragma once

#include <vector>

#include "kernels/kernel_params.h"
#include "kernels/operation.h"
#include "kernels/operation_entry.h"
#include "kernels/scale/resize.h"

namespace cudaoverlap {

class ScaleOperation final : public ResizingOperation {
 public:
  // `sizes` from the caps; unset (zero), the output is the input's size.
  // `colorimetry`: the output's, for the border's colour.
  ScaleOperation(const ParamValues& values, const FrameSizes& sizes,
                 const Colorimetry& colorimetry = {})
      : ResizingOperation(values, sizes, colorimetry) {}
  const char* name() const override { return "scale"; }
  std::vector<PixelFormat> output_formats(PixelFormat in) const override;
  // Vertical taps mix rows, and turns other than a mirror across move
  // them; cropping and horizontal scaling keep them apart (a crop of odd
  // rows swaps the fields' order, as videocrop's).
  bool mixes_rows(PixelFormat, PixelFormat) const override { return resize_.moves_rows(); }
  // Bands of output rows, each from the input rows its taps reach (the
  // engine uploads those first); not where the picture turns.
  int band_halo(PixelFormat, PixelFormat) const override { return resize_.turns() ? -1 : 0; }
  RowRange band_reads(PixelFormat in, PixelFormat, int y0, int y1, int) const override {
    return resize_.band_reads(in, y0, y1);
  }
  void enqueue_cuda_rows(const ImageRef& in, const ImageRef& out, const Workspace& workspace,
                         int y0, int y1, CUstream_st* stream) const override;
  void run_reference_rows(const ImageRef& in, const ImageRef& out, const Workspace& workspace,
                          int y0, int y1) const override;
  std::string check(const ImageRef& in, const ImageRef& out) const override;
  bool same_as(const Operation& other) const override;
  size_t workspace_bytes() const override { return resize_.workspace_bytes(); }
  void prepare_cuda(const Workspace& workspace, CUstream_st* stream) const override;
  void prepare_reference(const Workspace& workspace) const override;
  void enqueue_cuda(const ImageRef& in, const ImageRef& out, const Workspace& workspace,
                    CUstream_st* stream) const override;
  void run_reference(const ImageRef& in, const ImageRef& out,
                     const Workspace& workspace) const override;
  // The same with the scaling pass of the cpu backend (scale_cpu).
  void run_cpu(const ImageRef& in, const ImageRef& out, const Workspace& workspace) const override;
  void run_cpu_rows(const ImageRef& in, const ImageRef& out, const Workspace& workspace, int y0,
                    int y1) const override;

 private:
  // Output rows [y0, y1) (y1 < 0: the whole frame), by the reference's
  // scaling pass or the cpu backend's.
  void run_host(const ImageRef& in, const ImageRef& out, const Workspace& workspace, int y0, int y1,
                bool fast) const;
};

// Its registry entry (operation_entry.h).
const OperationEntry& scale_entry();

}  // namespace cudaoverlap
