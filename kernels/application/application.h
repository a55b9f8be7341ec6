// kernel=application: whatever the application puts on the compute stream
// for each frame, through a callback (the element's `process` signal), run
// with the same events around it as a built-in kernel: its upload before,
// its download after, the frames around it overlapped.
//
// The callback is called where a kernel would be enqueued: on the cuda
// backend from the thread that submits the frame, with device planes and
// the compute stream, before the frame's download is enqueued; on the cpu
// backend from the backend's compute thread, with host planes and no
// stream, when the frame's upload is done. The output has the input's
// format and size.
#pragma once

#include "kernels/operation.h"
#include "kernels/operation_entry.h"

namespace cudaoverlap {

class ApplicationOperation final : public Operation {
 public:
  explicit ApplicationOperation(std::shared_ptr<const ApplicationProcess> process)
      : process_(std::move(process)) {}

  const char* name() const override { return "application"; }
  std::vector<PixelFormat> output_formats(PixelFormat in) const override { return keep_format(in); }
  // Unknown: the application's work may read any row.
  bool mixes_rows(PixelFormat, PixelFormat) const override { return true; }
  // The application's code runs every frame.
  bool capturable() const override { return false; }
  std::string check(const ImageRef& in, const ImageRef& out) const override;
  bool same_as(const Operation& other) const override;
  void enqueue_cuda(const ImageRef& in, const ImageRef& out, const Workspace& workspace,
                    CUstream_st* stream) const override;
  void run_reference(const ImageRef& in, const ImageRef& out,
                     const Workspace& workspace) const override;

 private:
  void run(const ImageRef& in, const ImageRef& out, CUstream_st* stream) const;

  const std::shared_ptr<const ApplicationProcess> process_;
};

// Its registry entry (operation_entry.h).
const OperationEntry& application_entry();

}  // namespace cudaoverlap
