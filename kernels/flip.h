// The `flip` kernel: rotates or mirrors the image as videoflip's
// video-direction does (KernelParams::flip). Every plane is rearranged on its
// own grid of pixel groups (4 bytes for packed RGB, 1 for luma and I420
// chroma, 2 for NV12's interleaved UV), which is what videoflip does, so
// chroma moves with its luma for even sizes and odd sizes round the same way.
// The 90-degree directions and the two diagonals swap width and height.
#pragma once

#include "kernel.h"
#include "video_format.h"

struct CUstream_st;

namespace cudaoverlap {

void flip_reference(const ImageRef& in, const ImageRef& out, FlipDirection direction);
void flip_cuda(const ImageRef& in, const ImageRef& out, FlipDirection direction,
               bool inject_launch_failure, CUstream_st* stream);

}  // namespace cudaoverlap
