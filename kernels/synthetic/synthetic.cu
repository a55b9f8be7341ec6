// CUDA implementation of the `synthetic` kernel (see synthetic.h).
#include "kernels/copy/copy.h"
#include "kernels/cuda_check.h"
#include "kernels/synthetic/synthetic.h"

namespace cudaoverlap {
namespace {

__device__ uint64_t global_timer_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// One thread spins: the compute stream is busy for `busy_ns` while the copy
// engines stay free, which is what overlap is about.
__global__ void busy_kernel(uint64_t busy_ns) {
  const uint64_t start = global_timer_ns();
  while (global_timer_ns() - start < busy_ns) {
  }
}

}  // namespace

void synthetic_cuda(const ImageRef& in, const ImageRef& out, uint32_t busy_us,
                    CUstream_st* stream) {
  copy_cuda(in, out, stream);
  if (busy_us == 0) return;
  busy_kernel<<<1, 1, 0, stream>>>(uint64_t{busy_us} * 1000);
  CO_CUDA_CHECK_LAUNCH("the synthetic busy kernel");
}

}  // namespace cudaoverlap
