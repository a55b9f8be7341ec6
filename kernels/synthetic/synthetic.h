// The `synthetic` kernel, for measuring overlap: a copy followed by a fixed
// busy time on the GPU (its parameter synthetic-us, timed on the GPU's own
// global timer), so compute can be set to match the transfer time of a
// frame. The CPU reference is the copy; the cpu backend does not emulate the
// busy time.
#pragma once

#include <cstdint>

#include "kernels/operation.h"
#include "kernels/operation_entry.h"

namespace cudaoverlap {

class SyntheticOperation final : public Operation {
 public:
  explicit SyntheticOperation(const ParamValues& values)
      : Operation(values), busy_us_(static_cast<uint32_t>(values.number("synthetic-us"))) {}
  const char* name() const override { return "synthetic"; }
  std::vector<PixelFormat> output_formats(PixelFormat in) const override { return keep_format(in); }
  bool mixes_rows(PixelFormat, PixelFormat) const override { return false; }
  // A band copies its rows and is busy for its share of the frame's time.
  int band_halo(PixelFormat, PixelFormat) const override { return 0; }
  void enqueue_cuda_rows(const ImageRef& in, const ImageRef& out, const Workspace& workspace,
                         int y0, int y1, CUstream_st* stream) const override;
  void enqueue_cuda(const ImageRef& in, const ImageRef& out, const Workspace& workspace,
                    CUstream_st* stream) const override;
  void run_reference(const ImageRef& in, const ImageRef& out,
                     const Workspace& workspace) const override;

 private:
  uint32_t busy_us_;
};

void synthetic_reference(const ImageRef& in, const ImageRef& out);
void synthetic_cuda(const ImageRef& in, const ImageRef& out, uint32_t busy_us, CUstream_st* stream);

// Its registry entry (operation_entry.h).
const OperationEntry& synthetic_entry();

}  // namespace cudaoverlap
