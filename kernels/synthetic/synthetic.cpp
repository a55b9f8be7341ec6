// CPU reference of the `synthetic` kernel: its output is a copy.
#include "kernels/synthetic/synthetic.h"

#include "kernels/copy/copy.h"

namespace cudaoverlap {

void synthetic_reference(const ImageRef& in, const ImageRef& out) { copy_reference(in, out); }

void SyntheticOperation::enqueue_cuda(const ImageRef& in, const ImageRef& out, const Workspace&,
                                      CUstream_st* stream) const {
  CO_CUDA_ONLY(synthetic_cuda(in, out, busy_us_, stream));
}

void SyntheticOperation::enqueue_cuda_rows(const ImageRef& in, const ImageRef& out,
                                           const Workspace&, int y0, int y1,
                                           CUstream_st* stream) const {
  const auto busy_us = static_cast<uint32_t>(uint64_t{busy_us_} * (y1 - y0) / in.height);
  CO_CUDA_ONLY(synthetic_cuda(image_rows(in, y0, y1), image_rows(out, y0, y1), busy_us, stream));
}

void SyntheticOperation::run_reference(const ImageRef& in, const ImageRef& out,
                                       const Workspace&) const {
  synthetic_reference(in, out);
}

const OperationEntry& synthetic_entry() {
  static const OperationEntry entry{
      "synthetic",
      "Synthetic: a copy plus synthetic-us of GPU busy time per frame (benchmarks)",
      false,
      {{"synthetic-us", "Synthetic busy time",
        "kernel=synthetic: microseconds the GPU is kept busy per frame", ParamSpec::Type::kUInt, 0,
        4294967295.0, 0}},
      [](const KernelParams& p) -> std::shared_ptr<const Operation> {
        return std::make_shared<SyntheticOperation>(p.values);
      }};
  return entry;
}

}  // namespace cudaoverlap
