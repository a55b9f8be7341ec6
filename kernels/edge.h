// The `edge` kernel: Sobel gradient magnitude, in the input's format.
//
// The gradient is taken on luma: the Y plane of NV12 and I420, the grey
// samples of GRAY8, and for packed RGB the integer BT.601 luma
// (77 R + 150 G + 29 B + 128) >> 8. Both 3x3 Sobel kernels run with the
// image edges clamped; the magnitude is the integer square root of
// gx^2 + gy^2 (rounded down), clamped to 255. It is written to R, G and B
// (alpha and padding kept), to Y with neutral chroma (128) for YUV, or to
// GRAY8's samples. Integer throughout, so GPU and CPU agree to the byte.
#pragma once

#include <cstdint>

#include "video_format.h"

struct CUstream_st;

namespace cudaoverlap {

void edge_reference(const ImageRef& in, const ImageRef& out);
void edge_cuda(const ImageRef& in, const ImageRef& out, bool inject_launch_failure,
               CUstream_st* stream);

}  // namespace cudaoverlap
