// See element_properties.h.
#include "element_properties.h"

#include <string>
#include <vector>

#include "kernels/operation_registry.h"

namespace cudaoverlap {

const ParamSpec* parameter_of(guint prop_id) {
  static const std::vector<const ParamSpec*> specs = declared_parameters();
  if (prop_id < PROP_PARAMETER_FIRST || prop_id - PROP_PARAMETER_FIRST >= specs.size())
    return nullptr;
  return specs[prop_id - PROP_PARAMETER_FIRST];
}

ParamValues default_parameters() {
  ParamValues values;
  for (const ParamSpec* spec : declared_parameters()) values.set(spec->name, spec->default_value);
  return values;
}

namespace {

// The GType of an enumerated parameter: GStreamer's own where it names one
// (registered by the library that defines it), else one registered here
// from the declared choices, once, for the life of the process as
// GStreamer's enum types are.
GType enum_type(const ParamSpec& spec) {
  GType type = g_type_from_name(spec.gst_enum);
  if (type != 0) return type;
  GEnumValue* values = g_new0(GEnumValue, spec.choices.size() + 1);
  for (size_t i = 0; i < spec.choices.size(); ++i)
    values[i] = {spec.choices[i].value, spec.choices[i].description, spec.choices[i].nick};
  return g_enum_register_static(spec.gst_enum, values);
}

}  // namespace

double parameter_from_value(const ParamSpec& spec, const GValue* value) {
  switch (spec.type) {
    case ParamSpec::Type::kDouble:
      return g_value_get_double(value);
    case ParamSpec::Type::kInt:
      return g_value_get_int(value);
    case ParamSpec::Type::kUInt:
      return g_value_get_uint(value);
    case ParamSpec::Type::kBool:
      return g_value_get_boolean(value) ? 1 : 0;
    case ParamSpec::Type::kEnum:
      return g_value_get_enum(value);
  }
  return 0;
}

void parameter_to_value(const ParamSpec& spec, double number, GValue* value) {
  switch (spec.type) {
    case ParamSpec::Type::kDouble:
      g_value_set_double(value, number);
      break;
    case ParamSpec::Type::kInt:
      g_value_set_int(value, static_cast<gint>(number));
      break;
    case ParamSpec::Type::kUInt:
      g_value_set_uint(value, static_cast<guint>(number));
      break;
    case ParamSpec::Type::kBool:
      g_value_set_boolean(value, number != 0);
      break;
    case ParamSpec::Type::kEnum:
      g_value_set_enum(value, static_cast<gint>(number));
      break;
  }
}

void install_element_properties(GObjectClass* gobject_class) {
  const auto flags = static_cast<GParamFlags>(G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
                                              GST_PARAM_MUTABLE_READY);
  g_object_class_install_property(
      gobject_class, PROP_KERNEL,
      g_param_spec_enum("kernel", "Kernel", "What is computed on each frame",
                        GST_TYPE_CUDA_OVERLAP_KERNEL, DEFAULT_KERNEL, flags));
  g_object_class_install_property(
      gobject_class, PROP_RING_SIZE,
      g_param_spec_int("ring-size", "Ring size",
                       "Frames in flight at once; each needs two device and two pinned host "
                       "frame buffers. More hides more jitter and adds latency (up to ring-size "
                       "frames)",
                       MIN_RING_SIZE, MAX_RING_SIZE, DEFAULT_RING_SIZE, flags));
  g_object_class_install_property(
      gobject_class, PROP_BANDS,
      g_param_spec_int(
          "bands", "Bands",
          "Horizontal bands each frame is split into, whose upload, kernel and download overlap "
          "within the frame, so that it is out sooner. 0: automatic (4 to 8 bands when upstream "
          "is live, whole frames otherwise); 1: whole frames. Kernels whose output rows depend "
          "on far-away input rows always run on whole frames",
          0, MAX_BANDS, DEFAULT_BANDS, flags));
  g_object_class_install_property(
      gobject_class, PROP_CUDA_GRAPHS,
      g_param_spec_boolean(
          "cuda-graphs", "CUDA graphs",
          "Enqueue a frame that finds no other in flight (a live source's) as one CUDA graph, "
          "captured once per slot and input memory, instead of call by call: less host work "
          "per live frame. Other frames, serial mode, kernel=application and the cpu backend "
          "go call by call either way",
          DEFAULT_CUDA_GRAPHS, flags));
  g_object_class_install_property(
      gobject_class, PROP_MODE,
      g_param_spec_enum("mode", "Mode",
                        "overlapped runs upload, kernel and download of consecutive frames at "
                        "the same time; serial finishes each frame first (to measure the gain)",
                        GST_TYPE_CUDA_OVERLAP_MODE, DEFAULT_MODE, flags));
  g_object_class_install_property(
      gobject_class, PROP_BACKEND,
      g_param_spec_enum("backend", "Backend",
                        "Where frames are processed: auto takes CUDA when a device exists, else "
                        "the cpu backend with a warning",
                        GST_TYPE_CUDA_OVERLAP_BACKEND, DEFAULT_BACKEND, flags));
  g_object_class_install_property(
      gobject_class, PROP_DEVICE_ID,
      g_param_spec_int("device-id", "Device ID",
                       "CUDA device to run on (as numbered by CUDA); -1: every CUDA device, as "
                       "devices=all does; ignored by the cpu backend and when devices is set",
                       -1, G_MAXINT, DEFAULT_DEVICE_ID, flags));
  g_object_class_install_property(
      gobject_class, PROP_DEVICES,
      g_param_spec_string(
          "devices", "Devices",
          "CUDA devices to spread frames over, as numbered by CUDA (\"0,1\"), or \"all\": each "
          "frame goes to the device free first, output in input order; a device that fails is "
          "left out with a warning. Empty: device-id alone",
          "", flags));
  g_object_class_install_property(
      gobject_class, PROP_N_THREADS,
      g_param_spec_uint(
          "n-threads", "Threads",
          "Threads the cpu backend computes a frame on, each a band of its rows; 0: one per "
          "core (at most 64). Frames of under 128 K pixels, and kernels whose bands cannot be "
          "made apart (see the README), run on one. The CUDA backend ignores it",
          0, MAX_N_THREADS, DEFAULT_N_THREADS, flags));
  g_object_class_install_property(
      gobject_class, PROP_PIN_UPSTREAM_MEMORY,
      g_param_spec_boolean(
          "pin-upstream-memory", "Pin upstream memory",
          "Page-lock upstream's memory the second time it arrives (as pools recycle it) and "
          "upload from it without a staging copy; unpinned when upstream frees it. Off: frames "
          "not in the element's own pinned pool are copied into pinned staging memory",
          DEFAULT_PIN_UPSTREAM,
          static_cast<GParamFlags>(G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
                                   GST_PARAM_MUTABLE_PLAYING)));
  // The operations' parameters, from their declarations: those that are
  // only a kernel argument also while playing, and controllable.
  const std::vector<const ParamSpec*> parameters = declared_parameters();
  for (size_t i = 0; i < parameters.size(); ++i) {
    const ParamSpec& spec = *parameters[i];
    const guint id = PROP_PARAMETER_FIRST + static_cast<guint>(i);
    if (std::string(spec.name) == "video-direction") {
      g_object_class_override_property(gobject_class, id, "video-direction");
      continue;
    }
    const auto spec_flags = static_cast<GParamFlags>(
        G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
        (spec.while_playing ? GST_PARAM_MUTABLE_PLAYING | GST_PARAM_CONTROLLABLE
                            : GST_PARAM_MUTABLE_READY));
    GParamSpec* pspec = nullptr;
    switch (spec.type) {
      case ParamSpec::Type::kDouble:
        pspec = g_param_spec_double(spec.name, spec.nick, spec.blurb, spec.min, spec.max,
                                    spec.default_value, spec_flags);
        break;
      case ParamSpec::Type::kInt:
        pspec = g_param_spec_int(spec.name, spec.nick, spec.blurb, static_cast<gint>(spec.min),
                                 static_cast<gint>(spec.max), static_cast<gint>(spec.default_value),
                                 spec_flags);
        break;
      case ParamSpec::Type::kUInt:
        pspec = g_param_spec_uint(spec.name, spec.nick, spec.blurb, static_cast<guint>(spec.min),
                                  static_cast<guint>(spec.max),
                                  static_cast<guint>(spec.default_value), spec_flags);
        break;
      case ParamSpec::Type::kBool:
        pspec = g_param_spec_boolean(spec.name, spec.nick, spec.blurb, spec.default_value != 0,
                                     spec_flags);
        break;
      case ParamSpec::Type::kEnum:
        pspec = g_param_spec_enum(spec.name, spec.nick, spec.blurb, enum_type(spec),
                                  static_cast<gint>(spec.default_value), spec_flags);
        break;
    }
    g_object_class_install_property(gobject_class, id, pspec);
  }
  // kernel=custom's: also while playing (compiled aside, swapped between
  // two frames).
  const auto playing_flags = static_cast<GParamFlags>(G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
                                                      GST_PARAM_MUTABLE_PLAYING);
  g_object_class_install_property(
      gobject_class, PROP_KERNEL_FILE,
      g_param_spec_string(
          "kernel-file", "Kernel file",
          "kernel=custom: a file of CUDA C written against <cudaoverlap/pixel.cuh>, read and "
          "compiled for the GPU when the element starts (the result cached on disk)",
          nullptr, playing_flags));
  g_object_class_install_property(
      gobject_class, PROP_KERNEL_SOURCE,
      g_param_spec_string("kernel-source", "Kernel source",
                          "kernel=custom: the CUDA C itself, instead of kernel-file", nullptr,
                          playing_flags));
  g_object_class_install_property(
      gobject_class, PROP_KERNEL_PARAMS,
      g_param_spec_boxed(
          "kernel-params", "Kernel parameters",
          "kernel=custom: a structure whose fields become the members of the kernel's Params, "
          "by name and type, e.g. \"params, amount=(float)1.5, radius=(int)2\" ((int), (uint), "
          "(float), (double) and (boolean) fields)",
          GST_TYPE_STRUCTURE, playing_flags));
  g_object_class_install_property(
      gobject_class, PROP_KERNEL_ENTRY,
      g_param_spec_string("kernel-entry", "Kernel entry",
                          "kernel=custom: the name of the per-pixel function, or with "
                          "kernel-launch of the __global__ kernel",
                          DEFAULT_KERNEL_ENTRY, playing_flags));
  g_object_class_install_property(
      gobject_class, PROP_KERNEL_LAUNCH,
      g_param_spec_string(
          "kernel-launch", "Kernel launch",
          "kernel=custom: empty for a per-pixel function (the element writes the kernel around "
          "it); a block shape such as \"32x8\", or with the pixels each thread covers "
          "\"32x8/4x1\", for a whole __global__ kernel(InFrame in, OutFrame out, Params "
          "params) launched over the picture",
          "", playing_flags));
  g_object_class_install_property(
      gobject_class, PROP_STATS,
      g_param_spec_boxed(
          "stats", "Statistics",
          "Frames in, out, dropped (QoS) and in flight; mean and max ms of each stage "
          "(wait-slot, staging, upload, compute, download, push) and of the element's latency; "
          "frames-per-second; overlap-efficiency; bands; bytes uploaded and downloaded. Device "
          "stages are measured on one "
          "frame in 8 (every frame while writing a trace-file)",
          GST_TYPE_STRUCTURE, static_cast<GParamFlags>(G_PARAM_READABLE | G_PARAM_STATIC_STRINGS)));
  g_object_class_install_property(
      gobject_class, PROP_STATS_INTERVAL,
      g_param_spec_uint("stats-interval", "Statistics interval",
                        "Post the stats as an element message (\"cudaoverlap-stats\") on the bus "
                        "every this many ms, also while no frame flows; 0 = never",
                        0, G_MAXUINT, DEFAULT_STATS_INTERVAL, flags));
  g_object_class_install_property(
      gobject_class, PROP_TRACE_FILE,
      g_param_spec_string("trace-file", "Trace file",
                          "Write a timeline of every frame's stages to this file in the "
                          "Chrome/Perfetto JSON format (open it in ui.perfetto.dev or draw it "
                          "with scripts/trace-to-png.py); empty = none. One element per file",
                          nullptr, flags));
  g_object_class_install_property(
      gobject_class, PROP_QOS,
      g_param_spec_boolean("qos", "QoS",
                           "Drop frames that downstream reports as too late before they are "
                           "uploaded, and post QoS messages",
                           DEFAULT_QOS, flags));
  g_object_class_install_property(
      gobject_class, PROP_CHAIN,
      g_param_spec_string(
          "chain", "Chain",
          "Several kernels in this one element, one PCIe round trip a frame, written as in "
          "gst-launch-1.0: \"balance contrast=1.2 ! blur sigma=2 ! flip video-direction=90r ! "
          "convert\", each step a kernel with its own parameters; convert and scale only as the "
          "last step. Set: kernel and its parameter properties are not used. Empty: kernel",
          "", static_cast<GParamFlags>(flags | GST_PARAM_MUTABLE_READY)));
}

}  // namespace cudaoverlap
