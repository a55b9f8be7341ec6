// The `copy` kernel: output equals input byte for byte, plane by plane.
#pragma once

#include "kernels/operation.h"
#include "kernels/operation_entry.h"

namespace cudaoverlap {

class CopyOperation final : public Operation {
 public:
  const char* name() const override { return "copy"; }
  std::vector<PixelFormat> output_formats(PixelFormat in) const override { return keep_format(in); }
  bool mixes_rows(PixelFormat, PixelFormat) const override { return false; }
  // Each output row from its own input row.
  int band_halo(PixelFormat, PixelFormat) const override { return 0; }
  void enqueue_cuda(const ImageRef& in, const ImageRef& out, const Workspace& workspace,
                    CUstream_st* stream) const override;
  void run_reference(const ImageRef& in, const ImageRef& out,
                     const Workspace& workspace) const override;
};

// The implementations, also used by operations that reduce to a copy.
void copy_reference(const ImageRef& in, const ImageRef& out);
void copy_cuda(const ImageRef& in, const ImageRef& out, CUstream_st* stream);

// Its registry entry (operation_entry.h).
const OperationEntry& copy_entry();

}  // namespace cudaoverlap
