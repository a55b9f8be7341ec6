// See application.h.
#include "kernels/application/application.h"

#include "kernels/error.h"

namespace cudaoverlap {

std::string ApplicationOperation::check(const ImageRef& in, const ImageRef& out) const {
  if (!process_ || !*process_)
    return "kernel=application runs the application's process callback, and none was given";
  return Operation::check(in, out);
}

bool ApplicationOperation::same_as(const Operation& other) const {
  const auto* o = dynamic_cast<const ApplicationOperation*>(&other);
  return o && o->process_ == process_;
}

void ApplicationOperation::run(const ImageRef& in, const ImageRef& out, CUstream_st* stream) const {
  if (!(*process_)(in, out, stream))
    throw OperationError(
        "the application's process handler did not process the frame (it returned FALSE, or "
        "none is connected)");
}

void ApplicationOperation::enqueue_cuda(const ImageRef& in, const ImageRef& out, const Workspace&,
                                        CUstream_st* stream) const {
  run(in, out, stream);
}

void ApplicationOperation::run_reference(const ImageRef& in, const ImageRef& out,
                                         const Workspace&) const {
  run(in, out, nullptr);
}

const OperationEntry& application_entry() {
  static const OperationEntry entry{
      "application",
      "Application: the application's own work on each frame, put on the compute stream by a "
      "handler of the process signal",
      true,
      {},
      [](const KernelParams& p) -> std::shared_ptr<const Operation> {
        return std::make_shared<ApplicationOperation>(p.application);
      },
      true};
  return entry;
}

}  // namespace cudaoverlap
