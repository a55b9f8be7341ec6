// The `scale` kernel: resizes the picture to the size downstream asks for,
// keeping the format, by `method` (nearest, bilinear, bicubic, lanczos; see
// scale_taps.h). Every component is scaled on its own grid, as GStreamer's
// video scaler does: chroma of subsampled formats from the input's chroma
// grid to the output's, 10- and 16-bit samples at their depth, alpha like a
// colour, and the padding byte of RGBx-like formats written as 255. At one
// size it copies the frame.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/kernel_params.h"
#include "kernels/operation.h"
#include "kernels/operation_entry.h"
#include "kernels/scale/scale_taps.h"

namespace cudaoverlap {

struct ScaleComponent;

// The tables of one operation: each component grid's two axes, laid out as
// the workspace holds them.
struct ScaleTables {
  struct Axis {
    int taps = 0;
    int in_size = 0;
    int out_size = 0;
    size_t first_at = 0;   // byte offset of its int32 starts
    size_t weight_at = 0;  // byte offset of its int16 weights
  };
  // [0] x and [1] y of the full grid (luma, RGB, 4:4:4 chroma); [2] x
  // and [3] y of a grid halved along that axis (subsampled chroma).
  Axis axes[4];
  std::vector<uint8_t> bytes;
};

class ScaleOperation final : public Operation {
 public:
  // `sizes` from the caps; unset (zero), the output is the input's size.
  ScaleOperation(const ParamValues& values, const FrameSizes& sizes);
  const char* name() const override { return "scale"; }
  std::vector<PixelFormat> output_formats(PixelFormat in) const override;
  bool size_from_downstream() const override { return true; }
  // Vertical taps mix rows; only horizontal scaling keeps them apart.
  bool mixes_rows(PixelFormat, PixelFormat) const override {
    return sizes_.in_height != sizes_.out_height;
  }
  std::string check(const ImageRef& in, const ImageRef& out) const override;
  bool same_as(const Operation& other) const override;
  size_t workspace_bytes() const override { return tables_.bytes.size(); }
  void prepare_cuda(const Workspace& workspace, CUstream_st* stream) const override;
  void prepare_reference(const Workspace& workspace) const override;
  void enqueue_cuda(const ImageRef& in, const ImageRef& out, const Workspace& workspace,
                    CUstream_st* stream) const override;
  void run_reference(const ImageRef& in, const ImageRef& out,
                     const Workspace& workspace) const override;

  ScaleMethod method() const { return method_; }

 private:
  bool resizes() const;

  ScaleMethod method_;
  FrameSizes sizes_;
  ScaleTables tables_;
};

// The components of an `in` -> `out` frame (the same format) with their
// axes in `tables` (the workspace's copy of ScaleTables::bytes at
// `workspace`). Returns how many (at most kMaxComponents + 1: a padding
// byte).
int scale_components(const ImageRef& in, const ImageRef& out, const ScaleTables& tables,
                     const uint8_t* workspace, ScaleComponent* components);

// The tables for `sizes`, for every format's grids.
ScaleTables scale_tables(ScaleMethod method, const FrameSizes& sizes);

void scale_reference(const ImageRef& in, const ImageRef& out, const ScaleTables& tables,
                     const uint8_t* workspace);
// Copies `tables` into the device workspace, on `stream`.
void scale_prepare_cuda(const ScaleTables& tables, uint8_t* workspace, CUstream_st* stream);
void scale_cuda(const ImageRef& in, const ImageRef& out, const ScaleTables& tables,
                const uint8_t* workspace, CUstream_st* stream);

// The `method` parameter, declared by scale and by convert (which scales
// too).
const ParamSpec& scale_method_param();

// Its registry entry (operation_entry.h).
const OperationEntry& scale_entry();

}  // namespace cudaoverlap
