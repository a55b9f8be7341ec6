// The cuda backend in a build without CUDA: it exists and says why it can't
// be used.
#include "cuda_device.h"
#include "kernels/error.h"

namespace cudaoverlap {

int cuda_device_count(std::string* why) {
  if (why) *why = "cudaoverlap was built without CUDA support";
  return 0;
}

std::unique_ptr<Device> make_cuda_device(int) {
  throw Error(
      "no CUDA device: cudaoverlap was built without CUDA support (rebuild with -Dcuda=enabled "
      "where nvcc is installed); use backend=cpu");
}

std::unique_ptr<Device> make_cuda_device(int device_id, void*, std::shared_ptr<void>) {
  return make_cuda_device(device_id);
}

void* cuda_retain_primary_context(int) {
  throw Error("no CUDA device: cudaoverlap was built without CUDA support");
}

void cuda_release_primary_context(int) {}

double cuda_memory_peak_gbps(int) { return 0; }
size_t cuda_l2_cache_bytes(int) { return 0; }

size_t cuda_live_buffers() { return 0; }

}  // namespace cudaoverlap
