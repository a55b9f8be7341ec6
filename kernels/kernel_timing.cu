// time_kernel_cuda (declared in kernel.h): GPU time of one kernel alone, for
// the benchmark's per-kernel table. CUDA events bracket many launches on a
// stream of its own, so launch overhead is amortised and no host clock or
// transfer enters the figure.
#include <cuda_runtime.h>

#include "cuda_check.h"
#include "error.h"
#include "kernel.h"

namespace cudaoverlap {
namespace {

// Move-only owners, so an exception thrown by a launch frees them.
class TimingStream {
 public:
  TimingStream() { CO_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking)); }
  ~TimingStream() { CO_CUDA_CHECK_NOEXCEPT(cudaStreamDestroy(stream_)); }
  TimingStream(const TimingStream&) = delete;
  TimingStream& operator=(const TimingStream&) = delete;
  cudaStream_t get() const { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
};

class TimingEvent {
 public:
  TimingEvent() { CO_CUDA_CHECK(cudaEventCreate(&event_)); }
  ~TimingEvent() { CO_CUDA_CHECK_NOEXCEPT(cudaEventDestroy(event_)); }
  TimingEvent(const TimingEvent&) = delete;
  TimingEvent& operator=(const TimingEvent&) = delete;
  cudaEvent_t get() const { return event_; }

 private:
  cudaEvent_t event_ = nullptr;
};

}  // namespace

double time_kernel_cuda(KernelId id, const KernelParams& params, const ImageRef& in,
                        const ImageRef& out, int iterations) {
  if (iterations < 1) throw Error("time_kernel_cuda: iterations must be at least 1");
  TimingStream stream;
  TimingEvent start, stop;
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
