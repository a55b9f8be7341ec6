// The cudaoverlap element's GObject type. Everything else (pads, caps,
// events, the engine behind it) is private to gstcudaoverlap.cpp.
#pragma once

#include <gst/gst.h>

G_BEGIN_DECLS

#define GST_TYPE_CUDA_OVERLAP (gst_cuda_overlap_get_type())
G_DECLARE_FINAL_TYPE(GstCudaOverlap, gst_cuda_overlap, GST, CUDA_OVERLAP, GstElement)

GST_ELEMENT_REGISTER_DECLARE(cudaoverlap);

G_END_DECLS
