// time_kernel_cuda (declared in kernel.h): GPU time of one kernel alone, for
// the benchmark's per-kernel table. CUDA events bracket many launches on a
// stream of its own, so launch overhead is amortised and no host clock or
// transfer enters the figure.
#include <cuda_runtime.h>

#include "cuda_check.h"
#include "cuda_resources.h"
#include "error.h"
#include "kernel.h"

namespace cudaoverlap {

double time_kernel_cuda(KernelId id, const KernelParams& params, const ImageRef& in,
                        const ImageRef& out, int iterations) {
  if (iterations < 1) throw Error("time_kernel_cuda: iterations must be at least 1");
  // Owners, so an exception thrown by a launch frees them.
  const CudaStream stream = CudaStream::create();
  const CudaEvent start = CudaEvent::create_timing();
  const CudaEvent stop = CudaEvent::create_timing();
  // One untimed launch: first-launch module loading is not the kernel's cost.
  launch_kernel_cuda(id, params, in, out, stream.get());
  CO_CUDA_CHECK(cudaEventRecord(start.get(), stream.get()));
  for (int i = 0; i < iterations; ++i) launch_kernel_cuda(id, params, in, out, stream.get());
  CO_CUDA_CHECK(cudaEventRecord(stop.get(), stream.get()));
  CO_CUDA_CHECK(cudaEventSynchronize(stop.get()));
  float ms = 0;
  CO_CUDA_CHECK(cudaEventElapsedTime(&ms, start.get(), stop.get()));
  return static_cast<double>(ms) / iterations;
}

}  // namespace cudaoverlap
