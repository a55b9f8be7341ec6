// See device_choice.h.
#include "device_choice.h"

#include <glib.h>

#include <algorithm>
#include <cstdlib>

#include "cpu_device.h"
#include "cuda_device.h"
#include "kernels/error.h"

namespace cudaoverlap {
namespace {

// The cpu backend's threads, and its debugging aids, documented in the
// element's doc block.
CpuDeviceOptions cpu_options(int threads) {
  CpuDeviceOptions options;
  options.threads = threads;
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
                                    std::string* warning, const CudaContextChoice& context,
                                    int cpu_threads) {
  switch (backend) {
    case GST_CUDA_OVERLAP_BACKEND_CPU:
      return make_cpu_device(cpu_options(cpu_threads));
    case GST_CUDA_OVERLAP_BACKEND_CUDA:
      return make_cuda_device(device_id, context.handle, context.keep);
    case GST_CUDA_OVERLAP_BACKEND_AUTO:
      break;
  }
  std::string why;
  if (cuda_device_count(&why) > 0) return make_cuda_device(device_id, context.handle, context.keep);
  *warning = "No CUDA device: " + why +
             ". cudaoverlap runs on its cpu backend, the fallback for machines without a GPU; "
             "set backend=cpu to silence this warning.";
  return make_cpu_device(cpu_options(cpu_threads));
}

std::vector<std::shared_ptr<Device>> open_devices(GstCudaOverlapBackend backend, int device_id,
                                                  const std::string& devices,
                                                  std::string* warning, const CudaContextChoice& context,
                                                  int cpu_threads) {
  std::string list = devices;
  list.erase(std::remove_if(list.begin(), list.end(), [](char c) { return c == ' '; }), list.end());
  if (list.empty() && device_id != -1)
    return {open_device(backend, device_id, warning, context, cpu_threads)};
  const bool all = list.empty() || list == "all";
  std::vector<int> numbers;
  if (!all) {
    size_t at = 0;
    while (at <= list.size()) {
      const size_t comma = std::min(list.find(',', at), list.size());
      const std::string item = list.substr(at, comma - at);
      char* end = nullptr;
      const long number = item.empty() ? -1 : std::strtol(item.c_str(), &end, 10);
      if (item.empty() || *end != '\0' || number < 0 || number > 1024)
        throw Error("devices='" + devices + "': '" + item +
                    "' is not a device number; give CUDA device numbers separated by commas "
                    "(\"0,1\"), or all");
      if (std::find(numbers.begin(), numbers.end(), number) != numbers.end())
        throw Error("devices='" + devices + "' names device " + item + " twice");
      numbers.push_back(static_cast<int>(number));
      at = comma + 1;
    }
  }
  // The backend first: auto without CUDA is the cpu backend, with its warning.
  std::shared_ptr<Device> first =
      open_device(backend, all ? 0 : numbers.front(), warning, {}, cpu_threads);
  std::vector<std::shared_ptr<Device>> opened;
  if (first->cuda_device() < 0) {
    // The cpu backend stands in for as many devices as were listed, each
    // with its own random delays; CUDAOVERLAP_CPU_FAIL_DEVICE=N and
    // CUDAOVERLAP_CPU_FAIL_AFTER=K make the N-th (from 0) fail after K
    // kernel launches.
    if (numbers.size() <= 1) return {std::move(first)};
    const gchar* fail_device = g_getenv("CUDAOVERLAP_CPU_FAIL_DEVICE");
    const gchar* fail_after = g_getenv("CUDAOVERLAP_CPU_FAIL_AFTER");
    for (size_t i = 0; i < numbers.size(); ++i) {
      CpuDeviceOptions options = cpu_options(cpu_threads);
      options.seed += i * 1000;
      options.stand_in = static_cast<int>(i);
      if (fail_device && fail_after && std::strtoul(fail_device, nullptr, 10) == i)
        options.fail_after_launches = std::strtoull(fail_after, nullptr, 10);
      opened.push_back(make_cpu_device(options));
    }
    return opened;
  }
  std::string why;
  const int count = cuda_device_count(&why);
  if (all)
    for (int i = 0; i < count; ++i) numbers.push_back(i);
  for (int number : numbers)
    if (number >= count)
      throw Error(
          "devices='" + devices + "' names CUDA device " + std::to_string(number) + ", but there " +
          (count == 1 ? "is 1 CUDA device" : "are " + std::to_string(count) + " CUDA devices") +
          " (numbered from 0)");
  opened.push_back(std::move(first));
  for (size_t i = 1; i < numbers.size(); ++i) opened.push_back(make_cuda_device(numbers[i]));
  return opened;
}

}  // namespace cudaoverlap
