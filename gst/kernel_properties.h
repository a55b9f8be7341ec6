// The element's kernel-parameter properties (video-direction, brightness,
// contrast, saturation, hue, sigma): their GParamSpecs with the ranges, defaults
// and documentation of videoflip and videobalance, their storage, and their
// translation into the engine's KernelParams.
//
// They live apart from gstcudaoverlap.cpp so the element only delegates:
// it installs them after its own properties, forwards unknown property ids
// here, and copies the values into EngineConfig::params on caps.
#pragma once

#include <glib-object.h>

#include "gstcudaoverlapenums.h"
#include "kernel.h"

namespace cudaoverlap {

// Property ids from here on are the kernel parameters; far above the
// element's own ids so either list can grow without renumbering the other.
constexpr guint kKernelPropertiesFirstId = 1000;

struct KernelProperties {
  GstCudaOverlapVideoDirection video_direction = GST_CUDA_OVERLAP_VIDEO_DIRECTION_IDENTITY;
  BalanceParams balance;
  double sigma = KernelParams().blur_sigma;

  // Copies the values into `params`, leaving its other fields alone.
  void apply(KernelParams* params) const;
};

// Installs the properties with ids first_id, first_id + 1, …
void install_kernel_properties(GObjectClass* klass, guint first_id, GParamFlags flags);

// Set and get for an id given to install_kernel_properties; false when
// `prop_id` is not one of them. GObject has already refused values outside
// each spec's range by the time set is called.
bool set_kernel_property(KernelProperties* props, guint first_id, guint prop_id,
                         const GValue* value);
bool get_kernel_property(const KernelProperties& props, guint first_id, guint prop_id,
                         GValue* value);

}  // namespace cudaoverlap
