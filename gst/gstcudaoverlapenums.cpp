// See gstcudaoverlapenums.h.
#include "gstcudaoverlapenums.h"

#include <vector>

#include "kernels/operation_registry.h"

namespace {

// The operations the element offers, in the registry's order.
std::vector<const cudaoverlap::OperationEntry*> offered_operations() {
  std::vector<const cudaoverlap::OperationEntry*> offered;
  for (const cudaoverlap::OperationEntry& entry : cudaoverlap::operation_registry())
    if (entry.offered) offered.push_back(&entry);
  return offered;
}

}  // namespace

GType gst_cuda_overlap_kernel_get_type(void) {
  static GType type = 0;
  if (g_once_init_enter(&type)) {
    // Registered once for the process and never freed, as GEnum values are.
    const auto offered = offered_operations();
    auto* values = new GEnumValue[offered.size() + 1];
    for (size_t i = 0; i < offered.size(); ++i)
      values[i] = GEnumValue{static_cast<gint>(i), offered[i]->description, offered[i]->name};
    values[offered.size()] = GEnumValue{0, nullptr, nullptr};
    GType registered = g_enum_register_static("GstCudaOverlapKernel", values);
    g_once_init_leave(&type, registered);
  }
  return type;
}

GType gst_cuda_overlap_mode_get_type(void) {
  static GType type = 0;
  static const GEnumValue values[] = {
      {GST_CUDA_OVERLAP_MODE_OVERLAPPED,
       "Overlapped: upload, kernel and download of consecutive frames run at the same time "
       "on three streams",
       "overlapped"},
      {GST_CUDA_OVERLAP_MODE_SERIAL,
       "Serial: one stream, each frame finished before the next starts (to measure what "
       "overlap buys)",
       "serial"},
      {0, nullptr, nullptr},
  };
  if (g_once_init_enter(&type)) {
    GType registered = g_enum_register_static("GstCudaOverlapMode", values);
    g_once_init_leave(&type, registered);
  }
  return type;
}

GType gst_cuda_overlap_backend_get_type(void) {
  static GType type = 0;
  static const GEnumValue values[] = {
      {GST_CUDA_OVERLAP_BACKEND_AUTO,
       "Auto: CUDA when a device exists, else the cpu backend (with a warning)", "auto"},
      {GST_CUDA_OVERLAP_BACKEND_CUDA, "CUDA: the GPU given by device-id; an error without one",
       "cuda"},
      {GST_CUDA_OVERLAP_BACKEND_CPU,
       "CPU: host threads run each operation's CPU path on the buffers themselves (for "
       "machines without a GPU, and for tests)",
       "cpu"},
      {0, nullptr, nullptr},
  };
  if (g_once_init_enter(&type)) {
    GType registered = g_enum_register_static("GstCudaOverlapBackend", values);
    g_once_init_leave(&type, registered);
  }
  return type;
}

namespace cudaoverlap {

const char* kernel_name_from_gst(gint kernel) {
  const auto offered = offered_operations();
  return kernel >= 0 && static_cast<size_t>(kernel) < offered.size() ? offered[kernel]->name
                                                                     : "copy";
}

Mode mode_from_gst(GstCudaOverlapMode mode) {
  return mode == GST_CUDA_OVERLAP_MODE_SERIAL ? Mode::kSerial : Mode::kOverlapped;
}

}  // namespace cudaoverlap
