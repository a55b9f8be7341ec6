// The GEnum types behind the element's `kernel`, `mode`, `backend` and
// `video-direction` properties, and their translation to the engine's C++
// enums.
//
// They live apart from the element so gst-inspect's names and nicks are
// defined in one place, and so tests can set properties by nick.
#pragma once

#include <glib-object.h>

#include "engine.h"

G_BEGIN_DECLS

// videoflip's video-direction values and nicks (GstVideoOrientationMethod)
// without `auto` and `custom`, which need tags or a matrix the element does
// not take: GObject then refuses them when set.
typedef enum {
  GST_CUDA_OVERLAP_VIDEO_DIRECTION_IDENTITY,
  GST_CUDA_OVERLAP_VIDEO_DIRECTION_90R,
  GST_CUDA_OVERLAP_VIDEO_DIRECTION_180,
  GST_CUDA_OVERLAP_VIDEO_DIRECTION_90L,
  GST_CUDA_OVERLAP_VIDEO_DIRECTION_HORIZ,
  GST_CUDA_OVERLAP_VIDEO_DIRECTION_VERT,
  GST_CUDA_OVERLAP_VIDEO_DIRECTION_UL_LR,
  GST_CUDA_OVERLAP_VIDEO_DIRECTION_UR_LL,
} GstCudaOverlapVideoDirection;

typedef enum {
  GST_CUDA_OVERLAP_MODE_OVERLAPPED,
  GST_CUDA_OVERLAP_MODE_SERIAL,
} GstCudaOverlapMode;

typedef enum {
  GST_CUDA_OVERLAP_BACKEND_AUTO,
  GST_CUDA_OVERLAP_BACKEND_CUDA,
  GST_CUDA_OVERLAP_BACKEND_CPU,
} GstCudaOverlapBackend;

// The kernel enum's values, nicks and descriptions come from the operation
// registry (operation_registry.h): value i is its i-th offered operation.
#define GST_TYPE_CUDA_OVERLAP_KERNEL (gst_cuda_overlap_kernel_get_type())
GType gst_cuda_overlap_kernel_get_type(void);
#define GST_TYPE_CUDA_OVERLAP_MODE (gst_cuda_overlap_mode_get_type())
GType gst_cuda_overlap_mode_get_type(void);
#define GST_TYPE_CUDA_OVERLAP_BACKEND (gst_cuda_overlap_backend_get_type())
GType gst_cuda_overlap_backend_get_type(void);
#define GST_TYPE_CUDA_OVERLAP_VIDEO_DIRECTION (gst_cuda_overlap_video_direction_get_type())
GType gst_cuda_overlap_video_direction_get_type(void);

G_END_DECLS

namespace cudaoverlap {

// The registry name of a GST_TYPE_CUDA_OVERLAP_KERNEL value.
const char* kernel_name_from_gst(gint kernel);
Mode mode_from_gst(GstCudaOverlapMode mode);
FlipDirection flip_direction_from_gst(GstCudaOverlapVideoDirection direction);

}  // namespace cudaoverlap
