// See gstcudaoverlapenums.h.
#include "gstcudaoverlapenums.h"

GType gst_cuda_overlap_kernel_get_type(void) {
  static GType type = 0;
  static const GEnumValue values[] = {
      {GST_CUDA_OVERLAP_KERNEL_COPY, "Copy: the output equals the input byte for byte", "copy"},
      {GST_CUDA_OVERLAP_KERNEL_INVERT,
       "Invert: 255 - v on every colour, luma and chroma sample; alpha and padding kept", "invert"},
      {0, nullptr, nullptr},
  };
  if (g_once_init_enter(&type)) {
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
       "CPU: host threads run the kernels' CPU reference (slow; for machines without a GPU "
       "and for tests)",
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

KernelId kernel_from_gst(GstCudaOverlapKernel kernel) {
  return kernel == GST_CUDA_OVERLAP_KERNEL_INVERT ? KernelId::kInvert : KernelId::kCopy;
}

Mode mode_from_gst(GstCudaOverlapMode mode) {
  return mode == GST_CUDA_OVERLAP_MODE_SERIAL ? Mode::kSerial : Mode::kOverlapped;
}

}  // namespace cudaoverlap
