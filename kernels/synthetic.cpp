// CPU reference of the `synthetic` kernel: its output is a copy.
#include "synthetic.h"

#include "copy.h"

namespace cudaoverlap {

void synthetic_reference(const ImageRef& in, const ImageRef& out) { copy_reference(in, out); }

bool SyntheticOperation::same_as(const Operation& other) const {
  const auto* o = dynamic_cast<const SyntheticOperation*>(&other);
  return o != nullptr && o->busy_us_ == busy_us_;
}

void SyntheticOperation::enqueue_cuda(const ImageRef& in, const ImageRef& out, const Workspace&,
                                      CUstream_st* stream) const {
  CO_CUDA_ONLY(synthetic_cuda(in, out, busy_us_, stream));
}

void SyntheticOperation::run_reference(const ImageRef& in, const ImageRef& out,
                                       const Workspace&) const {
  synthetic_reference(in, out);
}

}  // namespace cudaoverlap
