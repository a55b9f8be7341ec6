// The fused per-pixel launch with the built-in stages (see fused_pixels.h;
// the device code is fused_pixels.cuh).
#include <cuda_runtime.h>

#include "kernels/chain/fused_pixels.cuh"
#include "kernels/chain/fused_pixels.h"
#include "kernels/cuda_check.h"
#include "kernels/error.h"

namespace cudaoverlap {
namespace {

// A built-in launch has no user's stage.
struct NoUser {
  __device__ uint32_t operator()(uint32_t pixel, int, int) const { return pixel; }
};

template <int kIn, int kOut>
__global__ void __launch_bounds__(fused::kThreads)
    fused_pixels_kernel(const __grid_constant__ FusedArgs a, bool in_words, bool out_words) {
  fused::fused_pixels<kIn, kOut>(a, in_words, out_words, NoUser{});
}

template <int kIn, int kOut>
void launch(const FusedLaunch& l, cudaStream_t stream) {
  fused_pixels_kernel<kIn, kOut>
      <<<dim3(l.grid_x, l.grid_y), kFusedThreads, 0, stream>>>(l.args, l.in_words, l.out_words);
}

}  // namespace

void fused_pixels_cuda(const ImageRef& in, const ImageRef& out, const PixelStage* stages, int n,
                       CUstream_st* stream) {
  const FusedLaunch l = fused_launch(in, out, stages, n);
  for (int i = 0; i < n; ++i)
    if (stages[i].kind == PixelStage::Kind::kUser)
      throw Error("a user's per-pixel stage runs in the launch compiled with it");
  if (l.grid_x == 0 || l.grid_y == 0) return;
  if (l.in_bytes == 4 && l.out_bytes == 4)
    launch<4, 4>(l, stream);
  else if (l.in_bytes == 4)
    launch<4, 3>(l, stream);
  else if (l.out_bytes == 4)
    launch<3, 4>(l, stream);
  else
    launch<3, 3>(l, stream);
  CO_CUDA_CHECK_LAUNCH("the fused per-pixel kernel");
}

}  // namespace cudaoverlap
