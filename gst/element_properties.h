// The cudaoverlap element's properties: their ids, defaults and
// gst-inspect-1.0 texts, installed on the class in one place, and the
// operations' declared parameters (parameter.h) as properties.
#pragma once

#include <gst/gst.h>

#include "gstcudaoverlapenums.h"
#include "kernels/parameter.h"

namespace cudaoverlap {

inline constexpr gint DEFAULT_KERNEL = 0;  // the registry's first: copy
inline constexpr int MIN_RING_SIZE = 1;
inline constexpr int MAX_RING_SIZE = 16;
inline constexpr int DEFAULT_RING_SIZE = 4;  // EngineConfig::ring_size says why
inline constexpr int MAX_BANDS = 16;
inline constexpr int DEFAULT_BANDS = 0;  // automatic
inline constexpr GstCudaOverlapMode DEFAULT_MODE = GST_CUDA_OVERLAP_MODE_OVERLAPPED;
inline constexpr GstCudaOverlapBackend DEFAULT_BACKEND = GST_CUDA_OVERLAP_BACKEND_AUTO;
inline constexpr int DEFAULT_DEVICE_ID = 0;
inline constexpr guint MAX_N_THREADS = 64;
inline constexpr guint DEFAULT_N_THREADS = 1;  // as videoconvert's
inline constexpr bool DEFAULT_PIN_UPSTREAM = true;
inline constexpr bool DEFAULT_CUDA_GRAPHS = true;
inline constexpr const char* DEFAULT_KERNEL_ENTRY = "process";
inline constexpr guint DEFAULT_STATS_INTERVAL = 0;
inline constexpr bool DEFAULT_QOS = true;

enum {
  PROP_0,
  PROP_KERNEL,
  PROP_RING_SIZE,
  PROP_BANDS,
  PROP_MODE,
  PROP_BACKEND,
  PROP_DEVICE_ID,
  PROP_DEVICES,
  PROP_N_THREADS,
  PROP_PIN_UPSTREAM_MEMORY,
  PROP_CUDA_GRAPHS,
  // kernel=custom's.
  PROP_KERNEL_FILE,
  PROP_KERNEL_SOURCE,
  PROP_KERNEL_PARAMS,
  PROP_KERNEL_ENTRY,
  PROP_KERNEL_LAUNCH,
  // What the element tells about itself (stats.h).
  PROP_STATS,
  PROP_STATS_INTERVAL,
  PROP_TRACE_FILE,
  PROP_QOS,
  PROP_CHAIN,
  // The operations' declared parameters (declared_parameters()), in order.
  PROP_PARAMETER_FIRST,
};

// The declared parameter behind property `prop_id`; null for the others.
const ParamSpec* parameter_of(guint prop_id);
// Every declared parameter at its default.
ParamValues default_parameters();

// A declared parameter's value as a number (parameter.h), and back.
double parameter_from_value(const ParamSpec& spec, const GValue* value);
void parameter_to_value(const ParamSpec& spec, double number, GValue* value);

// Installs every property above on the element's class.
void install_element_properties(GObjectClass* gobject_class);

}  // namespace cudaoverlap
