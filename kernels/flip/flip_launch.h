// flip's launchers beyond its dispatch (flip.cu), a file each. Internal to
// flip; no CUDA syntax.
#pragma once

#include "kernels/flip/flip.h"
#include "kernels/operation.h"

namespace cudaoverlap {
namespace flip_detail {

struct FlipGeometry;

// Packed 24-bit RGB on planes aligned to 16 bytes (flip_rgb24.cu).
void flip_rgb24_cuda(const PlaneRef& in, const PlaneRef& out, const FlipGeometry& g,
                     CUstream_st* stream);

// Packed 4:2:2 turned (90R, 90L, ul-lr, ur-ll), and mirrored at an odd
// width, where a pair takes its pixels from two input pairs
// (flip_packed422.cu). Even widths mirrored go through the word kernel.
void turn_y422_cuda(const ImageRef& in, const ImageRef& out, FlipDirection direction,
                    CUstream_st* stream);
void flip_y422_odd_cuda(const ImageRef& in, const ImageRef& out, FlipDirection direction,
                        CUstream_st* stream);

}  // namespace flip_detail
}  // namespace cudaoverlap
