// The `invert` kernel: 255 - value on every colour, luma and chroma sample;
// alpha and padding bytes of packed formats are copied unchanged.
#pragma once

#include "operation.h"

namespace cudaoverlap {

class InvertOperation final : public Operation {
 public:
  const char* name() const override { return "invert"; }
  std::vector<PixelFormat> output_formats(PixelFormat in) const override { return keep_format(in); }
  bool mixes_rows(PixelFormat, PixelFormat) const override { return false; }
  bool same_as(const Operation& other) const override;
  void enqueue_cuda(const ImageRef& in, const ImageRef& out, const Workspace& workspace,
                    CUstream_st* stream) const override;
  void run_reference(const ImageRef& in, const ImageRef& out,
                     const Workspace& workspace) const override;
};

void invert_reference(const ImageRef& in, const ImageRef& out);
void invert_cuda(const ImageRef& in, const ImageRef& out, CUstream_st* stream);

}  // namespace cudaoverlap
