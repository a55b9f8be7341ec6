// The `copy` operation (see copy.h) and its CPU reference: the oracle for
// copy.cu, and what the cpu backend runs.
#include "kernels/copy/copy.h"

#include <cstring>

namespace cudaoverlap {

void copy_reference(const ImageRef& in, const ImageRef& out) {
  const FormatInfo& info = format_info(in.format);
  for (int p = 0; p < info.n_planes; ++p) {
    const size_t row_bytes = plane_row_bytes(in.format, p, in.width);
    const size_t rows = plane_rows(in.format, p, in.height);
    for (size_t y = 0; y < rows; ++y)
      std::memcpy(out.planes[p].data + y * out.planes[p].stride,
                  in.planes[p].data + y * in.planes[p].stride, row_bytes);
  }
}

void CopyOperation::enqueue_cuda(const ImageRef& in, const ImageRef& out, const Workspace&,
                                 CUstream_st* stream) const {
  CO_CUDA_ONLY(copy_cuda(in, out, stream));
}

void CopyOperation::run_reference(const ImageRef& in, const ImageRef& out, const Workspace&) const {
  copy_reference(in, out);
}

const OperationEntry& copy_entry() {
  static const OperationEntry entry{"copy",
                                    "Copy: the output equals the input byte for byte",
                                    true,
                                    {},
                                    [](const KernelParams&) -> std::shared_ptr<const Operation> {
                                      return std::make_shared<CopyOperation>();
                                    }};
  return entry;
}

}  // namespace cudaoverlap
