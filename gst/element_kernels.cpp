// What the element's kernel=custom and chain properties name, loaded when
// it starts and when one changes while playing (see element_private.h).
#include <string>

#include "custom_settings.h"
#include "element_private.h"
#include "kernels/custom/custom.h"

GST_DEBUG_CATEGORY_EXTERN(gst_cuda_overlap_debug);
#define GST_CAT_DEFAULT gst_cuda_overlap_debug

namespace cudaoverlap {
namespace {

// kernel=custom's parameters from its properties, the source file read now
// (so an edit is picked up at each start and each change while playing);
// `keep`: also the session's settings from now on (at start; while playing
// the session keeps what it swapped in). Returns what is wrong with them,
// or empty.
std::string make_custom(GstCudaOverlap* self, CustomKernelParams* made, bool keep) {
  GST_OBJECT_LOCK(self);
  GstCudaOverlapPrivate* priv = self->priv;
  const std::string file = priv->kernel_file;
  CustomKernelParams params;
  params.source = priv->kernel_source;
  params.entry = priv->kernel_entry;
  std::string problem = custom_params_from_structure(priv->kernel_params, &params.params);
  if (problem.empty()) problem = custom_launch_from_string(priv->kernel_launch, &params);
  GST_OBJECT_UNLOCK(self);
  if (problem.empty() && !file.empty()) {
    if (!params.source.empty())
      problem = "kernel-file and kernel-source are both set: give the kernel's source once";
    else
      problem = custom_source_from_file(file, &params);
  }
  if (problem.empty()) problem = check_custom_params(params);
  if (keep) {
    GST_OBJECT_LOCK(self);
    priv->custom = params;
    priv->operation.reset();
    GST_OBJECT_UNLOCK(self);
  }
  *made = std::move(params);
  return problem;
}

bool kernel_is_custom(GstCudaOverlap* self) {
  GST_OBJECT_LOCK(self);
  const bool custom = self->priv->chain_text.empty() &&
                      std::string(kernel_name_from_gst(self->priv->kernel)) == "custom";
  GST_OBJECT_UNLOCK(self);
  return custom;
}

// The kernels of the chain's custom steps, loaded from their words (files
// read now); false, with the chain's problem set, where one cannot be.
bool load_chain(GstCudaOverlap* self) {
  GST_OBJECT_LOCK(self);
  const std::shared_ptr<const ChainSpec> chain = self->priv->chain;
  GST_OBJECT_UNLOCK(self);
  std::string problem;
  const std::shared_ptr<const ChainSpec> loaded = load_chain_kernels(chain, &problem);
  GST_OBJECT_LOCK(self);
  GstCudaOverlapPrivate* priv = self->priv;
  if (priv->chain == chain) {  // not set again meanwhile
    if (!problem.empty()) {
      priv->chain_problem = "cudaoverlap cannot run its chain: " + problem;
    } else if (loaded != chain) {  // custom steps loaded (an earlier failure is gone)
      priv->chain = loaded;
      priv->chain_problem.clear();
      priv->operation.reset();
    }
  }
  GST_OBJECT_UNLOCK(self);
  return problem.empty();
}

}  // namespace

bool element_load_kernels(GstCudaOverlap* self) {
  load_chain(self);
  GST_OBJECT_LOCK(self);
  const std::string chain_problem = self->priv->chain_problem;
  GST_OBJECT_UNLOCK(self);
  if (!chain_problem.empty()) {
    GST_ELEMENT_ERROR(self, RESOURCE, SETTINGS, ("%s", chain_problem.c_str()), (nullptr));
    return false;
  }
  CustomKernelParams params;
  const std::string problem = make_custom(self, &params, true);
  if (kernel_is_custom(self) && !problem.empty()) {
    GST_ELEMENT_ERROR(self, RESOURCE, SETTINGS, ("%s", problem.c_str()), (nullptr));
    return false;
  }
  return true;
}

void element_replace_custom(GstCudaOverlap* self) {
  if (!kernel_is_custom(self)) return;
  CustomKernelParams params;
  const std::string problem = make_custom(self, &params, false);
  if (!problem.empty()) {
    GST_ELEMENT_WARNING(self, RESOURCE, SETTINGS,
                        ("kernel=custom: the new source is not taken, the running kernel stays: %s",
                         problem.c_str()),
                        (nullptr));
    return;
  }
  self->priv->session->replace_custom_kernel(std::move(params));
}

}  // namespace cudaoverlap
