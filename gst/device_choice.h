// Which device the element runs on: the `backend` and `device-id`
// properties turned into a cudaoverlap::Device when the element starts
// (READY->PAUSED). Kept apart from the element so the policy (auto falls
// back to the cpu backend with a warning) reads in one place.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "device.h"
#include "gstcudaoverlapenums.h"

namespace cudaoverlap {

// Throws Error with a sentence a user can act on (no CUDA device, device-id
// out of range). `warning` receives a sentence when auto fell back to the
// cpu backend, else stays empty.
// The context the cuda backend works in (make_cuda_device): a CUcontext of
// the device and what keeps it alive; a null handle: the device's primary
// context.
struct CudaContextChoice {
  void* handle = nullptr;
  std::shared_ptr<void> keep;
  // The GstCudaContext that wraps `handle` (kept by `keep`), where the
  // pipeline shares one: pools of GStreamer's CUDA memory are made in it.
  void* shared = nullptr;
};

// `cpu_threads`: the cpu backend's (CpuDeviceOptions::threads).
std::shared_ptr<Device> open_device(GstCudaOverlapBackend backend, int device_id,
                                    std::string* warning, const CudaContextChoice& context = {},
                                    int cpu_threads = 1);

// The devices to spread frames over: `devices` ("0,1", "all", or empty for
// device_id alone; device_id -1 is "all"). With the cpu backend (set, or
// auto without CUDA) a list stands for as many cpu devices, "all" for one.
// Throws Error naming what is wrong with the list (not a number, listed
// twice, no such device).
// `context`: as open_device's, for device_id alone (no list); `cpu_threads`
// as open_device's, for each cpu device.
std::vector<std::shared_ptr<Device>> open_devices(GstCudaOverlapBackend backend, int device_id,
                                                  const std::string& devices, std::string* warning,
                                                  const CudaContextChoice& context = {},
                                                  int cpu_threads = 1);

}  // namespace cudaoverlap
