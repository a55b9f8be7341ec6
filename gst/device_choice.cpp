// See device_choice.h.
#include "device_choice.h"

#include <glib.h>

#include <cstdlib>

#include "cpu_device.h"
#include "cuda_device.h"

namespace cudaoverlap {
namespace {

// Debugging aids of the cpu backend, documented in the element's doc block.
CpuDeviceOptions cpu_options_from_environment() {
  CpuDeviceOptions options;
  if (const gchar* delay = g_getenv("CUDAOVERLAP_CPU_MAX_DELAY_US"))
    options.max_delay_us = static_cast<uint32_t>(std::strtoul(delay, nullptr, 10));
  if (const gchar* limit = g_getenv("CUDAOVERLAP_CPU_MEMORY_LIMIT"))
    options.memory_limit = static_cast<size_t>(std::strtoull(limit, nullptr, 10));
  if (const gchar* seed = g_getenv("CUDAOVERLAP_CPU_SEED"))
    options.seed = std::strtoull(seed, nullptr, 10);
  return options;
}

}  // namespace

std::shared_ptr<Device> open_device(GstCudaOverlapBackend backend, int device_id,
                                    std::string* warning) {
  switch (backend) {
    case GST_CUDA_OVERLAP_BACKEND_CPU:
      return make_cpu_device(cpu_options_from_environment());
    case GST_CUDA_OVERLAP_BACKEND_CUDA:
      return make_cuda_device(device_id);
    case GST_CUDA_OVERLAP_BACKEND_AUTO:
      break;
  }
  std::string why;
  if (cuda_device_count(&why) > 0) return make_cuda_device(device_id);
  *warning = "No CUDA device (" + why +
             "): cudaoverlap runs on its cpu backend, which is much slower. Set backend=cpu to "
             "silence this warning.";
  return make_cpu_device(cpu_options_from_environment());
}

}  // namespace cudaoverlap
