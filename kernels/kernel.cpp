// Dispatch from KernelId to each kernel's CPU reference and CUDA launcher.
#include "kernel.h"

#include "balance.h"
#include "blur.h"
#include "copy.h"
#include "edge.h"
#include "error.h"
#include "flip.h"
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
    case KernelId::kFlip:
      return "flip";
    case KernelId::kBalance:
      return "balance";
    case KernelId::kBlur:
      return "blur";
    case KernelId::kEdge:
      return "edge";
    case KernelId::kConvert:
      return "convert";
  }
  return "unknown";
}

bool flip_swaps_size(FlipDirection direction) {
  switch (direction) {
    case FlipDirection::k90R:
    case FlipDirection::k90L:
    case FlipDirection::kUlLr:
    case FlipDirection::kUrLl:
      return true;
    default:
      return false;
  }
}

namespace {

std::string range_problem(const char* name, double value, double lo, double hi) {
  if (value >= lo && value <= hi) return {};
  return std::string(name) + " " + std::to_string(value) + " is out of range: it takes " +
         std::to_string(lo) + " to " + std::to_string(hi);
}

}  // namespace

std::string BalanceParams::check() const {
  for (const std::string& problem :
       {range_problem("brightness", brightness, -1, 1), range_problem("contrast", contrast, 0, 2),
        range_problem("saturation", saturation, 0, 2), range_problem("hue", hue, -1, 1)})
    if (!problem.empty()) return problem;
  return {};
}

std::string kernel_check(KernelId id, const ImageRef& in, const ImageRef& out) {
  if (in.width <= 0 || in.height <= 0) return "the image has no pixels";
  const bool same_size = in.width == out.width && in.height == out.height;
  switch (id) {
    case KernelId::kCopy:
    case KernelId::kInvert:
    case KernelId::kSynthetic:
    case KernelId::kBalance:
    case KernelId::kBlur:
    case KernelId::kEdge:
      if (in.format != out.format || !same_size)
        return std::string("kernel '") + kernel_name(id) +
               "' needs the same format and size on input and output";
      return {};
    case KernelId::kFlip:
      if (in.format != out.format ||
          !(same_size || (in.width == out.height && in.height == out.width)))
        return "kernel 'flip' needs the same format on input and output, and the same size or "
               "width and height swapped";
      return {};
    case KernelId::kConvert:
      if (!same_size)
        return "kernel 'convert' changes the format only: input and output need the same size";
      return {};
  }
  return "unknown kernel";
}

std::string kernel_check(KernelId id, const KernelParams& params, const ImageRef& in,
                         const ImageRef& out) {
  std::string problem = kernel_check(id, in, out);
  if (!problem.empty()) return problem;
  if (id == KernelId::kFlip) {
    const bool swap = flip_swaps_size(params.flip);
    if (out.width != (swap ? in.height : in.width) || out.height != (swap ? in.width : in.height))
      return std::string("kernel 'flip' with this video-direction makes ") +
             std::to_string(swap ? in.height : in.width) + "x" +
             std::to_string(swap ? in.width : in.height) + " from " + std::to_string(in.width) +
             "x" + std::to_string(in.height) + ", not " + std::to_string(out.width) + "x" +
             std::to_string(out.height);
  }
  if (id == KernelId::kBalance) return params.balance.check();
  if (id == KernelId::kConvert) return convert_check(in, out, params.convert);
  if (id == KernelId::kBlur &&
      !(params.blur_sigma >= kBlurMinSigma && params.blur_sigma <= kBlurMaxSigma))
    return "blur sigma " + std::to_string(params.blur_sigma) + " is out of range: it takes " +
           std::to_string(kBlurMinSigma) + " to " + std::to_string(kBlurMaxSigma) + " pixels";
  return {};
}

void run_kernel_reference(KernelId id, const KernelParams& params, const ImageRef& in,
                          const ImageRef& out) {
  if (params.inject_launch_failure)
    throw Error(std::string("injected failure of kernel '") + kernel_name(id) + "'");
  // Every kernel refuses what it cannot do here, parameters included, which
  // the engine's start-time check does not see.
  const std::string problem = kernel_check(id, params, in, out);
  if (!problem.empty()) throw Error(problem);
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
    case KernelId::kFlip:
      flip_reference(in, out, params.flip);
      return;
    case KernelId::kBalance:
      balance_reference(in, out, params.balance);
      return;
    case KernelId::kBlur:
      blur_reference(in, out, params.blur_sigma);
      return;
    case KernelId::kEdge:
      edge_reference(in, out);
      return;
    case KernelId::kConvert:
      convert_reference(in, out, params.convert);
      return;
  }
  throw Error("unknown kernel");
}

#ifdef CUDAOVERLAP_HAVE_CUDA

bool kernels_have_cuda() { return true; }

void launch_kernel_cuda(KernelId id, const KernelParams& params, const ImageRef& in,
                        const ImageRef& out, CUstream_st* stream) {
  // A host-side check (no GPU work) before anything is enqueued.
  const std::string problem = kernel_check(id, params, in, out);
  if (!problem.empty()) throw Error(problem);
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
    case KernelId::kFlip:
      flip_cuda(in, out, params.flip, params.inject_launch_failure, stream);
      return;
    case KernelId::kBalance:
      balance_cuda(in, out, params.balance, params.inject_launch_failure, stream);
      return;
    case KernelId::kBlur:
      blur_cuda(in, out, params.blur_sigma, params.inject_launch_failure, stream);
      return;
    case KernelId::kEdge:
      edge_cuda(in, out, params.inject_launch_failure, stream);
      return;
    case KernelId::kConvert:
      convert_cuda(in, out, params.convert, params.inject_launch_failure, stream);
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

double time_kernel_cuda(KernelId, const KernelParams&, const ImageRef&, const ImageRef&, int) {
  throw Error("cudaoverlap was built without CUDA; rebuild with -Dcuda=enabled");
}

#endif

}  // namespace cudaoverlap
