// The GEnum types behind the element's `kernel`, `mode` and `backend`
// properties and the operations' enumerated parameters, and their
// translation to the engine's C++ enums.
//
// They live apart from the element so gst-inspect's names and nicks are
// defined in one place, and so tests can set properties by nick.
#pragma once

#include <glib-object.h>

#include "engine.h"

G_BEGIN_DECLS

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

G_END_DECLS

namespace cudaoverlap {

// The registry name of a GST_TYPE_CUDA_OVERLAP_KERNEL value.
const char* kernel_name_from_gst(gint kernel);
Mode mode_from_gst(GstCudaOverlapMode mode);

}  // namespace cudaoverlap
