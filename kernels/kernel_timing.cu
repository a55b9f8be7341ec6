// time_operation_cuda (declared in operation.h): GPU time of one operation
// alone, for the benchmark's per-kernel table. CUDA events bracket many
// launches on a stream of its own, queued behind a kernel that holds the
// stream until the host has enqueued them all, so they run back to back:
// neither how fast the host enqueues nor any transfer enters the figure.
#include <cuda_runtime.h>

#include <string>
#include <vector>

#include "cuda_check.h"
#include "cuda_resources.h"
#include "error.h"
#include "operation.h"

namespace cudaoverlap {
namespace {

// Spins until *release is set (or about a second has passed, so that a
// host that never sets it cannot hang the stream).
__global__ void hold_kernel(const volatile int* release) {
  const long long start = clock64();
  while (*release == 0 && clock64() - start < (1LL << 31)) __nanosleep(1000);
}

// Sets the flag when it goes out of scope, also when a launch throws.
struct Release {
  volatile int* flag;
  ~Release() { *flag = 1; }
};

}  // namespace

double time_operation_cuda(const Operation& op, const ImageRef& in, const ImageRef& out,
                           int iterations) {
  return time_operation_cuda(op, std::vector<ImageRef>{in}, std::vector<ImageRef>{out}, iterations);
}

double time_operation_cuda(const Operation& op, const std::vector<ImageRef>& ins,
                           const std::vector<ImageRef>& outs, int iterations) {
  if (iterations < 1) throw Error("time_operation_cuda: iterations must be at least 1");
  if (ins.empty() || ins.size() != outs.size())
    throw Error("time_operation_cuda: as many outputs as inputs, at least one");
  for (size_t i = 0; i < ins.size(); ++i) {
    const std::string problem = op.check(ins[i], outs[i]);
    if (!problem.empty()) throw Error(problem);
  }
  // Owners, so an exception thrown by a launch frees them.
  const CudaStream stream = CudaStream::create();
  const CudaEvent start = CudaEvent::create_timing();
  const CudaEvent stop = CudaEvent::create_timing();
  const DeviceMemory memory =
      op.workspace_bytes() > 0 ? DeviceMemory::allocate(op.workspace_bytes()) : DeviceMemory();
  const Workspace workspace{static_cast<uint8_t*>(memory.get()), op.workspace_bytes()};
  op.prepare_cuda(workspace, stream.get());
  // One untimed launch per set: first-launch module loading is not the
  // kernel's cost.
  for (size_t i = 0; i < ins.size(); ++i) op.enqueue_cuda(ins[i], outs[i], workspace, stream.get());
  // Pinned host memory, which the device reads through unified addressing.
  const PinnedMemory flag = PinnedMemory::allocate(sizeof(int));
  {
    Release release{static_cast<volatile int*>(flag.get())};
    *release.flag = 0;
    hold_kernel<<<1, 1, 0, stream.get()>>>(release.flag);
    CO_CUDA_CHECK_LAUNCH("the timing's hold kernel");
    CO_CUDA_CHECK(cudaEventRecord(start.get(), stream.get()));
    for (int i = 0; i < iterations; ++i) {
      const size_t at = static_cast<size_t>(i) % ins.size();
      op.enqueue_cuda(ins[at], outs[at], workspace, stream.get());
    }
    CO_CUDA_CHECK(cudaEventRecord(stop.get(), stream.get()));
  }
  CO_CUDA_CHECK(cudaEventSynchronize(stop.get()));
  float ms = 0;
  CO_CUDA_CHECK(cudaEventElapsedTime(&ms, start.get(), stop.get()));
  return static_cast<double>(ms) / iterations;
}

double time_device_copy_cuda(void* dst, const void* src, size_t bytes, int iterations) {
  if (iterations < 1) throw Error("time_device_copy_cuda: iterations must be at least 1");
  const CudaStream stream = CudaStream::create();
  const CudaEvent start = CudaEvent::create_timing();
  const CudaEvent stop = CudaEvent::create_timing();
  CO_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream.get()));
  CO_CUDA_CHECK(cudaEventRecord(start.get(), stream.get()));
  for (int i = 0; i < iterations; ++i)
    CO_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream.get()));
  CO_CUDA_CHECK(cudaEventRecord(stop.get(), stream.get()));
  CO_CUDA_CHECK(cudaEventSynchronize(stop.get()));
  float ms = 0;
  CO_CUDA_CHECK(cudaEventElapsedTime(&ms, start.get(), stop.get()));
  return static_cast<double>(ms) / iterations;
}

}  // namespace cudaoverlap
