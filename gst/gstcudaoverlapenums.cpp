// See gstcudaoverlapenums.h.
#include "gstcudaoverlapenums.h"

GType gst_cuda_overlap_kernel_get_type(void) {
  static GType type = 0;
  static const GEnumValue values[] = {
      {GST_CUDA_OVERLAP_KERNEL_COPY, "Copy: the output equals the input byte for byte", "copy"},
      {GST_CUDA_OVERLAP_KERNEL_INVERT,
       "Invert: 255 - v on every colour, luma and chroma sample; alpha and padding kept", "invert"},
      {GST_CUDA_OVERLAP_KERNEL_FLIP,
       "Flip: rotate or mirror as videoflip does, by video-direction (width and height swap "
       "for 90r, 90l, ul-lr and ur-ll)",
       "flip"},
      {GST_CUDA_OVERLAP_KERNEL_BALANCE,
       "Balance: brightness, contrast, saturation and hue as videobalance computes them",
       "balance"},
      {GST_CUDA_OVERLAP_KERNEL_BLUR,
       "Blur: Gaussian of sigma pixels, separable, edges clamped; alpha kept", "blur"},
      {GST_CUDA_OVERLAP_KERNEL_EDGE,
       "Edge: Sobel gradient magnitude of luma, as grey in R, G and B (alpha kept) or in Y with "
       "neutral chroma",
       "edge"},
      {GST_CUDA_OVERLAP_KERNEL_CONVERT,
       "Convert: to the format downstream asks for (RGBA, BGRA, RGBx, BGRx, ARGB, ABGR, NV12, "
       "I420, GRAY8), with the caps' colorimetry (BT.601/BT.709, full/limited range) as "
       "videoconvert converts; e.g. cudaoverlap kernel=convert ! video/x-raw,format=NV12",
       "convert"},
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

GType gst_cuda_overlap_video_direction_get_type(void) {
  static GType type = 0;
  static const GEnumValue values[] = {
      {GST_CUDA_OVERLAP_VIDEO_DIRECTION_IDENTITY, "Identity (no rotation)", "identity"},
      {GST_CUDA_OVERLAP_VIDEO_DIRECTION_90R, "Rotate clockwise 90 degrees", "90r"},
      {GST_CUDA_OVERLAP_VIDEO_DIRECTION_180, "Rotate 180 degrees", "180"},
      {GST_CUDA_OVERLAP_VIDEO_DIRECTION_90L, "Rotate counter-clockwise 90 degrees", "90l"},
      {GST_CUDA_OVERLAP_VIDEO_DIRECTION_HORIZ, "Flip horizontally", "horiz"},
      {GST_CUDA_OVERLAP_VIDEO_DIRECTION_VERT, "Flip vertically", "vert"},
      {GST_CUDA_OVERLAP_VIDEO_DIRECTION_UL_LR, "Flip across upper left/lower right diagonal",
       "ul-lr"},
      {GST_CUDA_OVERLAP_VIDEO_DIRECTION_UR_LL, "Flip across upper right/lower left diagonal",
       "ur-ll"},
      {0, nullptr, nullptr},
  };
  if (g_once_init_enter(&type)) {
    GType registered = g_enum_register_static("GstCudaOverlapVideoDirection", values);
    g_once_init_leave(&type, registered);
  }
  return type;
}

namespace cudaoverlap {

KernelId kernel_from_gst(GstCudaOverlapKernel kernel) {
  switch (kernel) {
    case GST_CUDA_OVERLAP_KERNEL_INVERT:
      return KernelId::kInvert;
    case GST_CUDA_OVERLAP_KERNEL_FLIP:
      return KernelId::kFlip;
    case GST_CUDA_OVERLAP_KERNEL_BALANCE:
      return KernelId::kBalance;
    case GST_CUDA_OVERLAP_KERNEL_BLUR:
      return KernelId::kBlur;
    case GST_CUDA_OVERLAP_KERNEL_EDGE:
      return KernelId::kEdge;
    case GST_CUDA_OVERLAP_KERNEL_CONVERT:
      return KernelId::kConvert;
    default:
      return KernelId::kCopy;
  }
}

// The values are defined in the same order.
FlipDirection flip_direction_from_gst(GstCudaOverlapVideoDirection direction) {
  return static_cast<FlipDirection>(direction);
}

Mode mode_from_gst(GstCudaOverlapMode mode) {
  return mode == GST_CUDA_OVERLAP_MODE_SERIAL ? Mode::kSerial : Mode::kOverlapped;
}

}  // namespace cudaoverlap
