// A chain's per-pixel steps in one launch: each pixel read once, taken
// through every step's stage (kernels/pixel_stage.h) in registers, and
// written once, so that three such steps cost about what one does. The
// device code is fused_pixels.cuh.
#pragma once

#include "kernels/operation.h"
#include "kernels/pixel_stage.h"

namespace cudaoverlap {

// One fused launch's arguments and shape: blocks of kFusedThreads threads.
struct FusedLaunch {
  FusedArgs args{};
  bool in_words = false;  // rows aligned for word loads
  bool out_words = false;
  int in_bytes = 0, out_bytes = 0;  // 3 or 4: the kernel's instance
  unsigned grid_x = 0, grid_y = 0;  // 0: nothing to do (an empty picture)
};

// The launch running stages[0..n) on every pixel of `in` into `out`: both
// of pixel-stage formats, of one size; they may be the same memory (each
// thread reads its pixels before it writes them). 1 <= n <=
// kMaxFusedStages. Throws Error otherwise. No CUDA needed.
FusedLaunch fused_launch(const ImageRef& in, const ImageRef& out, const PixelStage* stages, int n);

// Runs it with the built-in stages (no kUser among them). Throws Error.
// CUDA builds only (callers go through CO_CUDA_ONLY).
void fused_pixels_cuda(const ImageRef& in, const ImageRef& out, const PixelStage* stages, int n,
                       CUstream_st* stream);

}  // namespace cudaoverlap
