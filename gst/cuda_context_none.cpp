// SharedCudaContext (cuda_context.h) in a build without gstreamer-cuda-1.0:
// no context is ever held, so the pads offer no CUDA memory and the cuda
// backend works in its device's primary context.
#include "cuda_context.h"

namespace cudaoverlap {

SharedCudaContext::~SharedCudaContext() = default;
void SharedCudaContext::set(GstElement*, GstContext*, int) {}
bool SharedCudaContext::answer(GstElement*, GstQuery*) const { return false; }
std::string SharedCudaContext::ensure(GstElement*, int) {
  return "this build has no GStreamer CUDA library";
}
void SharedCudaContext::share(GstElement*, int) {}
bool SharedCudaContext::offers_memory(int) const { return false; }
void SharedCudaContext::reset() {}
CudaContextChoice SharedCudaContext::choice(int) const { return {}; }

}  // namespace cudaoverlap
