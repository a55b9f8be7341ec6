// A chain's per-pixel steps in one launch: each pixel read once, taken
// through every step's stage (kernels/pixel_stage.h) in registers, and
// written once, so that three such steps cost about what one does.
#pragma once

#include "kernels/operation.h"
#include "kernels/pixel_stage.h"

namespace cudaoverlap {

// Stages one launch runs at most; a longer run of per-pixel steps is cut
// into launches of this many.
constexpr int kMaxFusedStages = 8;

// stages[0..n) applied in order to every pixel of `in`, into `out`: both of
// pixel-stage formats, of one size; they may be the same memory (each
// thread reads its pixels before it writes them). 1 <= n <=
// kMaxFusedStages. Throws Error. CUDA builds only (callers go through
// CO_CUDA_ONLY).
void fused_pixels_cuda(const ImageRef& in, const ImageRef& out, const PixelStage* stages, int n,
                       CUstream_st* stream);

}  // namespace cudaoverlap
