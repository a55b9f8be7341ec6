// time_operation_cuda (declared in kernel_timing.h): GPU time of one operation
// alone, for the benchmark's per-kernel table. CUDA events bracket many
// launches on a stream of its own, queued in batches behind a kernel that
// holds the stream until the host has enqueued the batch, so they run back
// to back: neither how fast the host enqueues nor any transfer enters the
// figure.
#include <cuda_runtime.h>

#include <algorithm>
#include <string>
#include <vector>

#include "kernels/cuda_check.h"
#include "kernels/cuda_resources.h"
#include "kernels/error.h"
#include "kernels/kernel_timing.h"
#include "kernels/operation.h"

namespace cudaoverlap {
namespace {

// Launches queued behind one hold: far below the depth of CUDA's launch
// queue (undocumented; about a thousand is the usual figure), with several
// launches per operation (blur on a three-plane format makes three). Past
// that depth a launch would block the host until the held stream drains.
constexpr int kBatch = 64;

// flag[0]: set by the host once a batch is enqueued; flag[1]: set here when
// about a second passed without it, so a host that never sets it cannot
// hang the stream, and the figure is not taken as a kernel's.
__global__ void hold_kernel(volatile int* flag) {
  unsigned long long start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  while (flag[0] == 0) {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    if (now - start > 1000000000ull) {
      flag[1] = 1;
      return;
    }
    __nanosleep(1000);
  }
}

// Releases the hold when it goes out of scope, also when a launch throws.
struct Release {
  volatile int* flag;
  ~Release() { flag[0] = 1; }
};

}  // namespace

double time_operation_cuda(const Operation& op, const std::vector<ImageRef>& ins,
                           const std::vector<ImageRef>& outs, int iterations, bool hold) {
  if (iterations < 1) throw Error("time_operation_cuda: iterations must be at least 1");
  if (ins.empty() || ins.size() != outs.size())
    throw Error("time_operation_cuda: as many outputs as inputs, at least one");
  for (size_t i = 0; i < ins.size(); ++i) {
    const std::string problem = op.check(ins[i], outs[i]);
    if (!problem.empty()) throw Error(problem);
  }
  // Owners, so an exception thrown by a launch frees them. The flags are
  // pinned host memory, which the device reads and writes through unified
  // addressing; made first, so they outlive the stream's work.
  const PinnedMemory flags = PinnedMemory::allocate(2 * sizeof(int));
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
  auto* flag = static_cast<volatile int*>(flags.get());
  double ms = 0;
  for (int done = 0; done < iterations;) {
    const int n = std::min(kBatch, iterations - done);
    flag[0] = 0;
    flag[1] = 0;
    {
      Release release{flag};
      if (hold) {
        hold_kernel<<<1, 1, 0, stream.get()>>>(flag);
        CO_CUDA_CHECK_LAUNCH("the timing's hold kernel");
      }
      CO_CUDA_CHECK(cudaEventRecord(start.get(), stream.get()));
      for (int i = done; i < done + n; ++i) {
        const size_t at = static_cast<size_t>(i) % ins.size();
        op.enqueue_cuda(ins[at], outs[at], workspace, stream.get());
      }
      CO_CUDA_CHECK(cudaEventRecord(stop.get(), stream.get()));
    }
    CO_CUDA_CHECK(cudaEventSynchronize(stop.get()));
    if (flag[1] != 0)
      throw Error(std::string("time_operation_cuda: ") + op.name() +
                  "'s launches were not all enqueued within a second of the stream's hold, so "
                  "the figure would time the host");
    float batch_ms = 0;
    CO_CUDA_CHECK(cudaEventElapsedTime(&batch_ms, start.get(), stop.get()));
    ms += batch_ms;
    done += n;
  }
  return ms / iterations;
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
