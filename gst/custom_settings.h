// kernel=custom's properties (kernel-file, kernel-source, kernel-params,
// kernel-entry, kernel-launch) as the kernels layer takes them: the file
// read, the GstStructure's fields turned into typed parameters, the launch
// shape parsed. Each returns a sentence saying what is wrong, or empty.
#pragma once

#include <gst/gst.h>

#include <string>
#include <vector>

#include "kernels/chain/chain.h"
#include "kernels/kernel_params.h"

namespace cudaoverlap {

// `structure`'s fields, in order, as parameters (int, uint, float, double
// and boolean fields); null: none.
std::string custom_params_from_structure(const GstStructure* structure,
                                         std::vector<CustomParam>* params);

// "" (the per-pixel form), "32x8" (a whole kernel, blocks of 32x8 threads,
// a pixel each) or "32x8/4x1" (each thread 4x1 pixels).
std::string custom_launch_from_string(const std::string& text, CustomKernelParams* params);

// The source file's text, and its base name for NVRTC's messages.
std::string custom_source_from_file(const std::string& path, CustomKernelParams* params);

// `spec` with each custom step's kernel made from its words as kernel=custom's
// is from the properties of those names (files read now), checked; `spec`
// itself where it has none. Null, with a sentence naming the step in
// *problem, where a step's words cannot make a kernel.
std::shared_ptr<const ChainSpec> load_chain_kernels(const std::shared_ptr<const ChainSpec>& spec,
                                                    std::string* problem);

}  // namespace cudaoverlap
