// One small move-only RAII class per CUDA resource: stream, event, device
// buffer, pinned host buffer. Destructors are noexcept and report (never
// throw) a failing release. In the lowest layer, so that kernels' own
// resources (tables, timing, test hooks) and the engine's cuda backend
// (pipeline-core/cuda_device.cpp) hold them the same way. CUDA-only header:
// included by .cu files, the cuda backend and GPU tests.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <utility>

#include "kernels/cuda_check.h"

namespace cudaoverlap {

// Owns one raw handle; Traits::destroy(handle) releases it.
template <typename Handle, typename Traits>
class CudaHandle {
 public:
  CudaHandle() = default;
  explicit CudaHandle(Handle handle) : handle_(handle) {}
  CudaHandle(CudaHandle&& other) noexcept : handle_(std::exchange(other.handle_, Handle{})) {}
  CudaHandle& operator=(CudaHandle&& other) noexcept {
    if (this != &other) {
      reset();
      handle_ = std::exchange(other.handle_, Handle{});
    }
    return *this;
  }
  CudaHandle(const CudaHandle&) = delete;
  CudaHandle& operator=(const CudaHandle&) = delete;
  ~CudaHandle() { reset(); }

  Handle get() const { return handle_; }
  void reset() noexcept {
    if (handle_ != Handle{}) Traits::destroy(handle_);
    handle_ = Handle{};
  }

 private:
  Handle handle_{};
};

struct StreamTraits {
  static void destroy(cudaStream_t s) noexcept { CO_CUDA_CHECK_NOEXCEPT(cudaStreamDestroy(s)); }
};
struct EventTraits {
  static void destroy(cudaEvent_t e) noexcept { CO_CUDA_CHECK_NOEXCEPT(cudaEventDestroy(e)); }
};
struct DeviceMemoryTraits {
  static void destroy(void* p) noexcept { CO_CUDA_CHECK_NOEXCEPT(cudaFree(p)); }
};
struct PinnedMemoryTraits {
  static void destroy(void* p) noexcept { CO_CUDA_CHECK_NOEXCEPT(cudaFreeHost(p)); }
};

// A non-blocking stream: it never synchronizes with the legacy default stream.
class CudaStream : public CudaHandle<cudaStream_t, StreamTraits> {
 public:
  static CudaStream create() {
    cudaStream_t s = nullptr;
    CO_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    return CudaStream(s);
  }
  using CudaHandle::CudaHandle;
};

// An event without timing: the cheapest kind to record and wait on.
class CudaEvent : public CudaHandle<cudaEvent_t, EventTraits> {
 public:
  // `blocking`: a host thread in cudaEventSynchronize sleeps until the
  // device signals the event (cudaEventBlockingSync) instead of polling.
  static CudaEvent create(bool blocking = false) {
    cudaEvent_t e = nullptr;
    CO_CUDA_CHECK(cudaEventCreateWithFlags(
        &e, cudaEventDisableTiming | (blocking ? cudaEventBlockingSync : 0u)));
    return CudaEvent(e);
  }
  // An event that takes a GPU timestamp when it completes, for
  // cudaEventElapsedTime: statistics and traces only, never barriers.
  static CudaEvent create_timing(bool blocking = false) {
    cudaEvent_t e = nullptr;
    CO_CUDA_CHECK(
        cudaEventCreateWithFlags(&e, blocking ? cudaEventBlockingSync : cudaEventDefault));
    return CudaEvent(e);
  }
  using CudaHandle::CudaHandle;
};

class DeviceMemory : public CudaHandle<void*, DeviceMemoryTraits> {
 public:
  static DeviceMemory allocate(size_t bytes) {
    void* p = nullptr;
    CO_CUDA_CHECK(cudaMalloc(&p, bytes));
    return DeviceMemory(p);
  }
  using CudaHandle::CudaHandle;
};

class PinnedMemory : public CudaHandle<void*, PinnedMemoryTraits> {
 public:
  static PinnedMemory allocate(size_t bytes) {
    void* p = nullptr;
    CO_CUDA_CHECK(cudaMallocHost(&p, bytes));
    return PinnedMemory(p);
  }
  using CudaHandle::CudaHandle;
};

}  // namespace cudaoverlap
