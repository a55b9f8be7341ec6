// The table of built-in operations (see operation_registry.h).
#include "operation_registry.h"

#include "application.h"
#include "balance.h"
#include "blur.h"
#include "convert.h"
#include "copy.h"
#include "custom.h"
#include "edge.h"
#include "error.h"
#include "flip.h"
#include "invert.h"
#include "synthetic.h"

namespace cudaoverlap {

const std::vector<OperationEntry>& operation_registry() {
  static const std::vector<OperationEntry> entries = {
      {"copy", "Copy: the output equals the input byte for byte", true,
       [](const KernelParams&) -> std::shared_ptr<const Operation> {
         return std::make_shared<CopyOperation>();
       }},
      {"invert", "Invert: max - v on every colour, luma and chroma sample; alpha and padding kept",
       true,
       [](const KernelParams&) -> std::shared_ptr<const Operation> {
         return std::make_shared<InvertOperation>();
       }},
      {"flip",
       "Flip: rotate or mirror as videoflip does, by video-direction (width and height swap "
       "for 90r, 90l, ul-lr and ur-ll)",
       true,
       [](const KernelParams& p) -> std::shared_ptr<const Operation> {
         return std::make_shared<FlipOperation>(p.flip);
       }},
      {"balance", "Balance: brightness, contrast, saturation and hue as videobalance computes them",
       true,
       [](const KernelParams& p) -> std::shared_ptr<const Operation> {
         return std::make_shared<BalanceOperation>(p.balance);
       }},
      {"blur", "Blur: Gaussian of sigma pixels, separable, edges clamped; alpha kept", true,
       [](const KernelParams& p) -> std::shared_ptr<const Operation> {
         return std::make_shared<BlurOperation>(p.blur_sigma);
       }},
      {"edge",
       "Edge: Sobel gradient magnitude of luma, as grey in R, G and B (alpha kept) or in Y with "
       "neutral chroma",
       true,
       [](const KernelParams&) -> std::shared_ptr<const Operation> {
         return std::make_shared<EdgeOperation>();
       }},
      {"convert",
       "Convert: to the format downstream asks for, with the caps' colorimetry (BT.601/BT.709, "
       "full/limited range) as videoconvert converts; e.g. cudaoverlap kernel=convert ! "
       "video/x-raw,format=NV12",
       true,
       [](const KernelParams& p) -> std::shared_ptr<const Operation> {
         return std::make_shared<ConvertOperation>(p.convert);
       }},
      {"custom",
       "Custom: your own CUDA C from kernel-file or kernel-source, compiled for the GPU when the "
       "element starts (cached on disk), with kernel-params' fields as its Params; cuda backend "
       "only",
       true,
       [](const KernelParams& p) -> std::shared_ptr<const Operation> {
         return std::make_shared<CustomOperation>(p.custom, p.convert.in);
       },
       true},
      {"application",
       "Application: the application's own work on each frame, put on the compute stream by a "
       "handler of the process signal",
       true,
       [](const KernelParams& p) -> std::shared_ptr<const Operation> {
         return std::make_shared<ApplicationOperation>(p.application);
       },
       true},
      {"synthetic", "Synthetic: a copy plus synthetic-us of GPU busy time per frame (benchmarks)",
       false,
       [](const KernelParams& p) -> std::shared_ptr<const Operation> {
         return std::make_shared<SyntheticOperation>(p.synthetic_us);
       }},
  };
  return entries;
}

std::shared_ptr<const Operation> make_operation(const std::string& name,
                                                const KernelParams& params) {
  std::string known;
  for (const OperationEntry& entry : operation_registry()) {
    if (name == entry.name) return entry.make(params);
    known += known.empty() ? "" : ", ";
    known += entry.name;
  }
  throw Error("there is no kernel '" + name + "': the kernels are " + known);
}

bool same_operation(const std::shared_ptr<const Operation>& a,
                    const std::shared_ptr<const Operation>& b) {
  if (!a || !b) return !a && !b;
  return a->same_as(*b);
}

}  // namespace cudaoverlap
