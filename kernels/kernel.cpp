// Dispatch from KernelId to each kernel's CPU reference and CUDA launcher.
#include "kernel.h"

#include "copy.h"
#include "error.h"
#include "invert.h"
#include "synthetic.h"

namespace cudaoverlap {

const char* kernel_name(KernelId id) {
  switch (id) {
    case KernelId::kCopy:
      return "copy";
    case KernelId::kInvert:
      return "invert";
    case KernelId::kSynthetic:
      return "synthetic";
  }
  return "unknown";
}

std::string kernel_check(KernelId id, const ImageRef& in, const ImageRef& out) {
  switch (id) {
    case KernelId::kCopy:
    case KernelId::kInvert:
    case KernelId::kSynthetic:
      if (in.format != out.format || in.width != out.width || in.height != out.height)
        return std::string("kernel '") + kernel_name(id) +
               "' needs the same format and size on input and output";
      if (in.width <= 0 || in.height <= 0) return "the image has no pixels";
      return {};
  }
  return "unknown kernel";
}

void run_kernel_reference(KernelId id, const KernelParams& params, const ImageRef& in,
                          const ImageRef& out) {
  if (params.inject_launch_failure)
    throw Error(std::string("injected failure of kernel '") + kernel_name(id) + "'");
  switch (id) {
    case KernelId::kCopy:
      copy_reference(in, out);
      return;
    case KernelId::kInvert:
      invert_reference(in, out);
      return;
    case KernelId::kSynthetic:
      synthetic_reference(in, out);
      return;
  }
  throw Error("unknown kernel");
}

#ifdef CUDAOVERLAP_HAVE_CUDA

bool kernels_have_cuda() { return true; }

void launch_kernel_cuda(KernelId id, const KernelParams& params, const ImageRef& in,
                        const ImageRef& out, CUstream_st* stream) {
  switch (id) {
    case KernelId::kCopy:
      copy_cuda(in, out, params.inject_launch_failure, stream);
      return;
    case KernelId::kInvert:
      invert_cuda(in, out, params.inject_launch_failure, stream);
      return;
    case KernelId::kSynthetic:
      synthetic_cuda(in, out, params.synthetic_us, params.inject_launch_failure, stream);
      return;
  }
  throw Error("unknown kernel");
}

#else

bool kernels_have_cuda() { return false; }

void launch_kernel_cuda(KernelId, const KernelParams&, const ImageRef&, const ImageRef&,
                        CUstream_st*) {
  throw Error("cudaoverlap was built without CUDA; rebuild with -Dcuda=enabled");
}

#endif

}  // namespace cudaoverlap
