// The cudaoverlap element as a GObject: the type, its pads, the property
// table, and pad functions that forward to the Session (session.h), which
// owns what the element does with buffers, events and queries. The data
// flow is described there: chain() only submits, the src pad task pushes.

/**
 * SECTION:element-cudaoverlap
 * @title: cudaoverlap
 *
 * Processes raw video on an NVIDIA GPU with the upload of frame N+1, the
 * kernel of frame N and the download of frame N-1 running at the same time,
 * so a continuous feed stays pipelined instead of paying upload + compute +
 * download serially for every frame. Without a GPU the cpu backend runs the
 * same pipeline on host threads.
 *
 * The output of each frame is pushed from the element's own thread in the
 * pinned host memory it was downloaded to, without a copy; `ring-size`
 * frames can be in flight.
 *
 * ## Example launch lines
 * |[
 * gst-launch-1.0 videotestsrc num-buffers=600 ! video/x-raw,format=RGBA,width=3840,height=2160 !
 * cudaoverlap kernel=invert ! fakesink
 * ]| Inverts 600 4K frames on the GPU.
 * |[
 * gst-launch-1.0 v4l2src ! video/x-raw,format=YUY2 ! cudaoverlap kernel=convert !
 * video/x-raw,format=RGBA ! autovideosink
 * ]| A camera's YUY2 converted to RGBA on the GPU; a live source, so each
 * frame is split into bands that overlap one another (`bands`).
 * |[
 * gst-launch-1.0 videotestsrc num-buffers=100 ! cudaoverlap backend=cpu mode=serial ! fakesink
 * ]| The cpu backend, one frame at a time, e.g. on a machine without a GPU.
 *
 * Debugging aids for the cpu backend, read when the element starts:
 * `CUDAOVERLAP_CPU_MAX_DELAY_US` delays each stream operation at random by up
 * to that many microseconds (to expose ordering bugs), and
 * `CUDAOVERLAP_CPU_MEMORY_LIMIT` caps the bytes it may allocate, to play a
 * GPU with little memory.
 */
#include "gstcudaoverlap.h"

#include <gst/video/video.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "cuda_device.h"
#include "cudaoverlap/cudaoverlap.h"
#include "custom_settings.h"
#include "element_private.h"
#include "element_properties.h"
#include "gstcudaoverlapenums.h"
#include "kernels/chain/chain.h"
#include "kernels/custom/custom.h"
#include "negotiation.h"
#include "session.h"
#include "video_mapping.h"

GST_DEBUG_CATEGORY(gst_cuda_overlap_debug);
#define GST_CAT_DEFAULT gst_cuda_overlap_debug

using namespace cudaoverlap;

namespace {

enum {
  SIGNAL_PROCESS,
  LAST_SIGNAL,
};

guint gst_cuda_overlap_signals[LAST_SIGNAL];

}  // namespace

// flip's video-direction is GStreamer's GstVideoDirection interface, as
// videoflip's is.
static void gst_cuda_overlap_video_direction_init(GstVideoDirectionInterface*) {}

G_DEFINE_TYPE_WITH_CODE(GstCudaOverlap, gst_cuda_overlap, GST_TYPE_ELEMENT,
                        G_IMPLEMENT_INTERFACE(GST_TYPE_VIDEO_DIRECTION,
                                              gst_cuda_overlap_video_direction_init));
GST_ELEMENT_REGISTER_DEFINE(cudaoverlap, "cudaoverlap", GST_RANK_NONE, GST_TYPE_CUDA_OVERLAP);

// What the session builds engines from; the caller holds the object lock.
static SessionSettings gst_cuda_overlap_settings_unlocked(GstCudaOverlap* self) {
  SessionSettings settings;
  const GstCudaOverlapPrivate* priv = self->priv;
  settings.kernel = priv->chain ? "chain" : kernel_name_from_gst(priv->kernel);
  settings.params.chain = priv->chain;
  settings.ring_size = priv->ring_size;
  settings.bands = priv->bands;
  settings.graphs = priv->cuda_graphs;
  settings.mode = mode_from_gst(priv->mode);
  settings.params.values = priv->parameters;
  settings.params.custom = priv->custom;
  settings.params.application = priv->application;
  return settings;
}

// What the session builds engines from, read under the object lock.
static SessionSettings gst_cuda_overlap_settings(GstCudaOverlap* self) {
  GST_OBJECT_LOCK(self);
  SessionSettings settings = gst_cuda_overlap_settings_unlocked(self);
  GST_OBJECT_UNLOCK(self);
  return settings;
}

static Session& gst_cuda_overlap_session(GstObject* parent) {
  return *GST_CUDA_OVERLAP(parent)->priv->session;
}

// ---------------------------------------------------------------------------
// Pads: each function forwards to the session

static GstFlowReturn gst_cuda_overlap_chain(GstPad*, GstObject* parent, GstBuffer* buffer) {
  return gst_cuda_overlap_session(parent).chain(buffer);
}

static gboolean gst_cuda_overlap_sink_event(GstPad*, GstObject* parent, GstEvent* event) {
  GST_LOG_OBJECT(parent, "sink event %" GST_PTR_FORMAT, event);
  try {
    return gst_cuda_overlap_session(parent).sink_event(event);
  } catch (const std::exception& e) {
    // The event may or may not have been consumed; leaking it beats a
    // double unref.
    GST_ELEMENT_ERROR(parent, STREAM, FAILED, ("cudaoverlap failed: %s", e.what()), (nullptr));
  }
  return FALSE;
}

static gboolean gst_cuda_overlap_src_event(GstPad*, GstObject* parent, GstEvent* event) {
  return gst_cuda_overlap_session(parent).src_event(event);
}

// The operation the properties make now: made once after they change.
static std::shared_ptr<const Operation> gst_cuda_overlap_operation(GstCudaOverlap* self) {
  // Made under the object lock, so no property change can slip in between
  // (making one only constructs it: nothing is compiled or allocated).
  GST_OBJECT_LOCK(self);
  std::shared_ptr<const Operation> op = self->priv->operation;
  try {
    if (!op) {
      const SessionSettings settings = gst_cuda_overlap_settings_unlocked(self);
      op = self->priv->operation = make_operation(settings.kernel, settings.params);
    }
  } catch (...) {
    GST_OBJECT_UNLOCK(self);
    throw;
  }
  GST_OBJECT_UNLOCK(self);
  return op;
}

// The CUDA device the properties name where the element runs on one (its
// CUDA context and memory are shared with the pipeline: cuda_context.h);
// -1 where it does not (the cpu backend, `devices`).
static int gst_cuda_overlap_one_cuda_device(GstCudaOverlap* self) {
  GST_OBJECT_LOCK(self);
  const GstCudaOverlapPrivate* priv = self->priv;
  const int device = priv->devices.empty() && priv->backend != GST_CUDA_OVERLAP_BACKEND_CPU
                         ? priv->device_id
                         : -1;
  GST_OBJECT_UNLOCK(self);
  return device;
}

// The caps either pad can take: the other side's peer through the kernel.
static GstCaps* gst_cuda_overlap_query_caps(GstCudaOverlap* self, GstPad* pad, GstCaps* filter) {
  std::shared_ptr<const Operation> op;
  try {
    op = gst_cuda_overlap_operation(self);
  } catch (const Error&) {
    return gst_caps_new_empty();
  }
  return query_caps_through(*op, pad, pad == self->sinkpad ? self->srcpad : self->sinkpad, filter,
                            self->priv->cuda_context.offers_memory(
                                gst_cuda_overlap_one_cuda_device(self)));
}

// CAPS and ACCEPT_CAPS, the same on both pads. False when `query` is another.
static bool gst_cuda_overlap_caps_query(GstCudaOverlap* self, GstPad* pad, GstQuery* query) {
  switch (GST_QUERY_TYPE(query)) {
    case GST_QUERY_CAPS: {
      GstCaps* filter = nullptr;
      gst_query_parse_caps(query, &filter);
      GstCaps* caps = gst_cuda_overlap_query_caps(self, pad, filter);
      gst_query_set_caps_result(query, caps);
      gst_caps_unref(caps);
      return true;
    }
    case GST_QUERY_ACCEPT_CAPS: {
      GstCaps* caps = nullptr;
      gst_query_parse_accept_caps(query, &caps);
      GstCaps* allowed = gst_cuda_overlap_query_caps(self, pad, caps);
      const bool accepted = caps_acceptable(caps, allowed);
      gst_caps_unref(allowed);
      if (!accepted) self->priv->session->note_refused_caps(caps);
      gst_query_set_accept_caps_result(query, accepted);
      return true;
    }
    default:
      return false;
  }
}

// A CAPS event reaches the event function only once ACCEPT_CAPS took its
// caps; caps the kernel can never take would leave upstream with a bare
// not-negotiated, so they are looked at here first and the refusal is
// explained. (A refusal that depends on downstream is not: upstream may
// negotiate again, and a frame without accepted caps says why.)
static GstPadProbeReturn gst_cuda_overlap_caps_probe(GstPad*, GstPadProbeInfo* info,
                                                     gpointer user_data) {
  GstEvent* event = GST_PAD_PROBE_INFO_EVENT(info);
  if (GST_EVENT_TYPE(event) != GST_EVENT_CAPS) return GST_PAD_PROBE_OK;
  GstCaps* caps = nullptr;
  gst_event_parse_caps(event, &caps);
  try {
    GST_CUDA_OVERLAP(user_data)->priv->session->check_caps_event(caps);
  } catch (const std::exception& e) {
    GST_WARNING_OBJECT(user_data, "caps check failed: %s", e.what());
  }
  return GST_PAD_PROBE_OK;
}

static gboolean gst_cuda_overlap_sink_query(GstPad* pad, GstObject* parent, GstQuery* query) {
  GstCudaOverlap* self = GST_CUDA_OVERLAP(parent);
  try {
    if (self->priv->cuda_context.answer(GST_ELEMENT(self), query)) return TRUE;
    if (gst_cuda_overlap_caps_query(self, pad, query)) return TRUE;
    if (GST_QUERY_TYPE(query) == GST_QUERY_ALLOCATION)
      return self->priv->session->propose_allocation(query);
    if (GST_QUERY_IS_SERIALIZED(query) && !self->priv->session->drain_for_query()) return FALSE;
    return gst_pad_query_default(pad, parent, query);
  } catch (const std::exception& e) {
    GST_WARNING_OBJECT(self, "query failed: %s", e.what());
  }
  return FALSE;
}

static gboolean gst_cuda_overlap_src_query(GstPad* pad, GstObject* parent, GstQuery* query) {
  GstCudaOverlap* self = GST_CUDA_OVERLAP(parent);
  if (self->priv->cuda_context.answer(GST_ELEMENT(self), query)) return TRUE;
  if (gst_cuda_overlap_caps_query(self, pad, query)) return TRUE;
  if (GST_QUERY_TYPE(query) != GST_QUERY_LATENCY) return gst_pad_query_default(pad, parent, query);
  if (!gst_pad_peer_query(self->sinkpad, query)) return FALSE;
  self->priv->session->add_own_latency(query);
  return TRUE;
}

static gboolean gst_cuda_overlap_src_activate_mode(GstPad*, GstObject* parent, GstPadMode mode,
                                                   gboolean active) {
  if (mode != GST_PAD_MODE_PUSH) return FALSE;
  return gst_cuda_overlap_session(parent).activate_src(active);
}

static gboolean gst_cuda_overlap_sink_activate_mode(GstPad*, GstObject* parent, GstPadMode mode,
                                                    gboolean active) {
  if (mode != GST_PAD_MODE_PUSH) return FALSE;
  gst_cuda_overlap_session(parent).activate_sink(active);
  return TRUE;
}

// ---------------------------------------------------------------------------
// GObject and GstElement

static GstStateChangeReturn gst_cuda_overlap_change_state(GstElement* element,
                                                          GstStateChange transition) {
  GstCudaOverlap* self = GST_CUDA_OVERLAP(element);
  Session& session = *self->priv->session;
  // The pipeline's CUDA context at NULL->READY, as GStreamer's CUDA
  // elements take theirs, so that those started after find it.
  if (transition == GST_STATE_CHANGE_NULL_TO_READY)
    self->priv->cuda_context.share(element, gst_cuda_overlap_one_cuda_device(self));
  if (transition == GST_STATE_CHANGE_READY_TO_PAUSED) {
    GST_OBJECT_LOCK(self);
    const GstCudaOverlapBackend backend = self->priv->backend;
    const int device_id = self->priv->device_id;
    const std::string devices = self->priv->devices;
    const guint n_threads = self->priv->n_threads;
    GST_OBJECT_UNLOCK(self);
    if (!element_load_kernels(self)) return GST_STATE_CHANGE_FAILURE;
    const CudaContextChoice context =
        devices.empty() ? self->priv->cuda_context.choice(device_id) : CudaContextChoice{};
    // n-threads=0: one per core, as videoconvert's (at most MAX_N_THREADS).
    const int cpu_threads = static_cast<int>(
        n_threads > 0 ? n_threads : std::min<guint>(g_get_num_processors(), MAX_N_THREADS));
    if (!session.start(backend, device_id, devices, context, cpu_threads))
      return GST_STATE_CHANGE_FAILURE;
  }
  const GstStateChangeReturn ret =
      GST_ELEMENT_CLASS(gst_cuda_overlap_parent_class)->change_state(element, transition);
  if (transition == GST_STATE_CHANGE_PAUSED_TO_READY ||
      (transition == GST_STATE_CHANGE_READY_TO_PAUSED && ret == GST_STATE_CHANGE_FAILURE))
    session.stop();
  if (transition == GST_STATE_CHANGE_READY_TO_NULL) self->priv->cuda_context.reset();
  return ret;
}

// A CUDA context from the application or the bin (other types are the
// parent's).
static void gst_cuda_overlap_set_context(GstElement* element, GstContext* context) {
  GstCudaOverlap* self = GST_CUDA_OVERLAP(element);
  GST_OBJECT_LOCK(self);
  const int device_id = self->priv->device_id;
  GST_OBJECT_UNLOCK(self);
  self->priv->cuda_context.set(element, context, device_id);
  GST_ELEMENT_CLASS(gst_cuda_overlap_parent_class)->set_context(element, context);
}

// A declared parameter set: taken in NULL and READY, and while playing where
// it is only a kernel argument, when the next frame renegotiates (the
// output caps may change, as a flip's do) and runs with it.
static void gst_cuda_overlap_set_parameter(GstCudaOverlap* self, const ParamSpec& spec,
                                           const GValue* value, bool playing) {
  const double number = parameter_from_value(spec, value);
  if (!spec.takes(number)) {
    // An enum GStreamer defines may hold values the operation does not take
    // (video-direction's auto and custom).
    GEnumValue* named = spec.type == ParamSpec::Type::kEnum
                            ? g_enum_get_value(G_ENUM_CLASS(g_type_class_peek(G_VALUE_TYPE(value))),
                                               static_cast<gint>(number))
                            : nullptr;
    GST_ELEMENT_WARNING(self, LIBRARY, SETTINGS,
                        ("%s=%s is not taken; it stays as it was", spec.name,
                         named ? named->value_nick : std::to_string(number).c_str()),
                        (nullptr));
    return;
  }
  if (playing && !spec.while_playing) {
    GST_WARNING_OBJECT(self, "'%s' can only be changed in the NULL or READY state; ignored",
                       spec.name);
    return;
  }
  GST_OBJECT_LOCK(self);
  const bool changed = self->priv->parameters.number(spec.name) != number;
  self->priv->parameters.set(spec.name, number);
  if (changed) self->priv->operation.reset();
  GST_OBJECT_UNLOCK(self);
  if (changed && playing) {
    GST_DEBUG_OBJECT(self, "%s changed while playing: the next frame runs with it", spec.name);
    gst_pad_mark_reconfigure(self->srcpad);
  }
}

static void gst_cuda_overlap_set_property(GObject* object, guint prop_id, const GValue* value,
                                          GParamSpec* pspec) {
  GstCudaOverlap* self = GST_CUDA_OVERLAP(object);
  GstCudaOverlapPrivate* priv = self->priv;
  Session& session = *priv->session;
  GST_OBJECT_LOCK(self);
  // kernel=custom's source and parameters may change while playing: the
  // session compiles them aside and swaps them in between two frames.
  const bool custom_property = prop_id == PROP_KERNEL_FILE || prop_id == PROP_KERNEL_SOURCE ||
                               prop_id == PROP_KERNEL_PARAMS || prop_id == PROP_KERNEL_ENTRY ||
                               prop_id == PROP_KERNEL_LAUNCH;
  const bool playing = GST_STATE(self) > GST_STATE_READY;
  if (const ParamSpec* spec = parameter_of(prop_id)) {
    GST_OBJECT_UNLOCK(self);
    gst_cuda_overlap_set_parameter(self, *spec, value, playing);
    return;
  }
  // Engines, the device and the instruments are made with these at start
  // and on caps; pin-upstream-memory is read per frame.
  if (playing && prop_id != PROP_PIN_UPSTREAM_MEMORY && !custom_property) {
    GST_OBJECT_UNLOCK(self);
    GST_WARNING_OBJECT(self, "'%s' can only be changed in the NULL or READY state; ignored",
                       pspec->name);
    return;
  }
  switch (prop_id) {
    case PROP_KERNEL:
      priv->kernel = g_value_get_enum(value);
      priv->operation.reset();
      break;
    case PROP_RING_SIZE:
      priv->ring_size = g_value_get_int(value);
      break;
    case PROP_BANDS:
      priv->bands = g_value_get_int(value);
      break;
    case PROP_CUDA_GRAPHS:
      priv->cuda_graphs = g_value_get_boolean(value);
      break;
    case PROP_MODE:
      priv->mode = static_cast<GstCudaOverlapMode>(g_value_get_enum(value));
      break;
    case PROP_BACKEND:
      priv->backend = static_cast<GstCudaOverlapBackend>(g_value_get_enum(value));
      break;
    case PROP_DEVICE_ID:
      priv->device_id = g_value_get_int(value);
      break;
    case PROP_DEVICES: {
      const gchar* devices = g_value_get_string(value);
      priv->devices = devices ? devices : "";
      break;
    }
    case PROP_N_THREADS:
      priv->n_threads = g_value_get_uint(value);
      break;
    case PROP_PIN_UPSTREAM_MEMORY:
      session.set_pin_upstream(g_value_get_boolean(value));
      break;
    case PROP_KERNEL_FILE: {
      const gchar* path = g_value_get_string(value);
      priv->kernel_file = path ? path : "";
      break;
    }
    case PROP_KERNEL_SOURCE: {
      const gchar* text = g_value_get_string(value);
      priv->kernel_source = text ? text : "";
      break;
    }
    case PROP_KERNEL_PARAMS: {
      if (priv->kernel_params) gst_structure_free(priv->kernel_params);
      const GstStructure* structure = gst_value_get_structure(value);
      priv->kernel_params = structure ? gst_structure_copy(structure) : nullptr;
      break;
    }
    case PROP_KERNEL_ENTRY: {
      const gchar* name = g_value_get_string(value);
      priv->kernel_entry = name ? name : DEFAULT_KERNEL_ENTRY;
      break;
    }
    case PROP_KERNEL_LAUNCH: {
      const gchar* text = g_value_get_string(value);
      priv->kernel_launch = text ? text : "";
      break;
    }
    case PROP_STATS_INTERVAL:
      session.instruments().set_stats_interval(g_value_get_uint(value));
      break;
    case PROP_TRACE_FILE: {
      const gchar* path = g_value_get_string(value);
      session.instruments().set_trace_file(path ? path : "");
      break;
    }
    case PROP_QOS:
      session.instruments().set_qos(g_value_get_boolean(value));
      break;
    case PROP_CHAIN: {
      // Parsed, and its custom steps' files read, without the lock; then
      // published at once, so no caps query meets a chain half made.
      const gchar* text = g_value_get_string(value);
      const std::string chain_text = text ? text : "";
      GST_OBJECT_UNLOCK(self);
      std::shared_ptr<const ChainSpec> chain;
      std::string problem;
      if (!chain_text.empty()) {
        try {
          chain = parse_chain(chain_text);
          const std::shared_ptr<const ChainSpec> loaded = load_chain_kernels(chain, &problem);
          if (loaded) chain = loaded;
        } catch (const Error& e) {
          problem = e.what();
        }
      }
      GST_OBJECT_LOCK(self);
      priv->chain_text = chain_text;
      priv->chain = chain;
      priv->chain_problem =
          problem.empty() ? std::string() : "cudaoverlap cannot run its chain: " + problem;
      priv->operation.reset();
      break;
    }
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK(self);
  if (custom_property && playing) element_replace_custom(self);
}

static void gst_cuda_overlap_get_property(GObject* object, guint prop_id, GValue* value,
                                          GParamSpec* pspec) {
  GstCudaOverlap* self = GST_CUDA_OVERLAP(object);
  GstCudaOverlapPrivate* priv = self->priv;
  const Session& session = *priv->session;
  GST_OBJECT_LOCK(self);
  if (const ParamSpec* spec = parameter_of(prop_id)) {
    const double number = priv->parameters.number(spec->name);
    GST_OBJECT_UNLOCK(self);
    parameter_to_value(*spec, number, value);
    return;
  }
  switch (prop_id) {
    case PROP_KERNEL:
      g_value_set_enum(value, priv->kernel);
      break;
    case PROP_RING_SIZE:
      g_value_set_int(value, priv->ring_size);
      break;
    case PROP_BANDS:
      g_value_set_int(value, priv->bands);
      break;
    case PROP_CUDA_GRAPHS:
      g_value_set_boolean(value, priv->cuda_graphs);
      break;
    case PROP_MODE:
      g_value_set_enum(value, priv->mode);
      break;
    case PROP_BACKEND:
      g_value_set_enum(value, priv->backend);
      break;
    case PROP_DEVICE_ID:
      g_value_set_int(value, priv->device_id);
      break;
    case PROP_DEVICES:
      g_value_set_string(value, priv->devices.c_str());
      break;
    case PROP_N_THREADS:
      g_value_set_uint(value, priv->n_threads);
      break;
    case PROP_PIN_UPSTREAM_MEMORY:
      g_value_set_boolean(value, session.pin_upstream());
      break;
    case PROP_KERNEL_FILE:
      g_value_set_string(value, priv->kernel_file.empty() ? nullptr : priv->kernel_file.c_str());
      break;
    case PROP_KERNEL_SOURCE:
      g_value_set_string(value,
                         priv->kernel_source.empty() ? nullptr : priv->kernel_source.c_str());
      break;
    case PROP_KERNEL_PARAMS:
      gst_value_set_structure(value, priv->kernel_params);
      break;
    case PROP_KERNEL_ENTRY:
      g_value_set_string(value, priv->kernel_entry.c_str());
      break;
    case PROP_KERNEL_LAUNCH:
      g_value_set_string(value, priv->kernel_launch.c_str());
      break;
    case PROP_STATS:
      g_value_take_boxed(value, session.instruments().stats());
      break;
    case PROP_STATS_INTERVAL:
      g_value_set_uint(value, session.instruments().stats_interval());
      break;
    case PROP_TRACE_FILE: {
      const std::string path = session.instruments().trace_file();
      g_value_set_string(value, path.empty() ? nullptr : path.c_str());
      break;
    }
    case PROP_QOS:
      g_value_set_boolean(value, session.instruments().qos());
      break;
    case PROP_CHAIN:
      g_value_set_string(value, priv->chain_text.empty() ? nullptr : priv->chain_text.c_str());
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK(self);
}

static void gst_cuda_overlap_finalize(GObject* object) {
  GstCudaOverlap* self = GST_CUDA_OVERLAP(object);
  delete self->priv;  // the session stops first
  G_OBJECT_CLASS(gst_cuda_overlap_parent_class)->finalize(object);
}

// kernel=application's frame as the `process` signal gives it.
static CudaOverlapImage gst_cuda_overlap_image(const ImageRef& image) {
  CudaOverlapImage out{};
  out.format = gst_format_of(image.format);
  out.width = image.width;
  out.height = image.height;
  out.n_planes = format_info(image.format).n_planes;
  for (int p = 0; p < out.n_planes; ++p) {
    out.data[p] = image.planes[p].data;
    out.stride[p] = image.planes[p].stride;
    out.row_bytes[p] = plane_row_bytes(image.format, p, image.width);
    out.rows[p] = static_cast<int>(plane_rows(image.format, p, image.height));
  }
  return out;
}

static void gst_cuda_overlap_init(GstCudaOverlap* self) {
  self->priv = new GstCudaOverlapPrivate();
  self->priv->application = std::make_shared<const ApplicationProcess>(
      [self](const ImageRef& in, const ImageRef& out, CUstream_st* stream) {
        // Frames still in flight while the element flushes or stops are
        // thrown away: the application is not made to work on them.
        GST_OBJECT_LOCK(self->srcpad);
        const bool flushing = GST_PAD_IS_FLUSHING(self->srcpad);
        GST_OBJECT_UNLOCK(self->srcpad);
        if (flushing) return true;
        const CudaOverlapImage in_image = gst_cuda_overlap_image(in);
        const CudaOverlapImage out_image = gst_cuda_overlap_image(out);
        gboolean processed = FALSE;
        g_signal_emit(self, gst_cuda_overlap_signals[SIGNAL_PROCESS], 0, &in_image, &out_image,
                      static_cast<gpointer>(stream), &processed);
        return processed != FALSE;
      });

  GstElementClass* klass = GST_ELEMENT_GET_CLASS(self);
  self->sinkpad =
      gst_pad_new_from_template(gst_element_class_get_pad_template(klass, "sink"), "sink");
  gst_pad_set_chain_function(self->sinkpad, GST_DEBUG_FUNCPTR(gst_cuda_overlap_chain));
  gst_pad_set_event_function(self->sinkpad, GST_DEBUG_FUNCPTR(gst_cuda_overlap_sink_event));
  gst_pad_set_query_function(self->sinkpad, GST_DEBUG_FUNCPTR(gst_cuda_overlap_sink_query));
  gst_pad_set_activatemode_function(self->sinkpad,
                                    GST_DEBUG_FUNCPTR(gst_cuda_overlap_sink_activate_mode));
  gst_pad_add_probe(self->sinkpad, GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM, gst_cuda_overlap_caps_probe,
                    self, nullptr);
  gst_element_add_pad(GST_ELEMENT(self), self->sinkpad);

  self->srcpad = gst_pad_new_from_template(gst_element_class_get_pad_template(klass, "src"), "src");
  gst_pad_set_query_function(self->srcpad, GST_DEBUG_FUNCPTR(gst_cuda_overlap_src_query));
  gst_pad_set_event_function(self->srcpad, GST_DEBUG_FUNCPTR(gst_cuda_overlap_src_event));
  gst_pad_set_activatemode_function(self->srcpad,
                                    GST_DEBUG_FUNCPTR(gst_cuda_overlap_src_activate_mode));
  gst_element_add_pad(GST_ELEMENT(self), self->srcpad);

  self->priv->session =
      std::make_unique<Session>(GST_ELEMENT(self), self->sinkpad, self->srcpad,
                                [self] { return gst_cuda_overlap_settings(self); });
}

static void gst_cuda_overlap_class_init(GstCudaOverlapClass* klass) {
  GObjectClass* gobject_class = G_OBJECT_CLASS(klass);
  GstElementClass* element_class = GST_ELEMENT_CLASS(klass);
  gobject_class->set_property = gst_cuda_overlap_set_property;
  gobject_class->get_property = gst_cuda_overlap_get_property;
  gobject_class->finalize = gst_cuda_overlap_finalize;
  element_class->change_state = GST_DEBUG_FUNCPTR(gst_cuda_overlap_change_state);
  element_class->set_context = GST_DEBUG_FUNCPTR(gst_cuda_overlap_set_context);

  install_element_properties(gobject_class);

  /**
   * GstCudaOverlap::process:
   * @cudaoverlap: the element
   * @in: (type gpointer): the frame's input, a `const CudaOverlapImage *`
   *   (`<cudaoverlap/cudaoverlap.h>`): device planes on the cuda backend
   * @out: (type gpointer): its output, same format and size, to be written
   * @stream: the CUDA stream (`cudaStream_t`) to put the work on; NULL on
   *   the cpu backend, where the planes are host memory
   *
   * kernel=application: emitted for each frame where a kernel would run.
   * The handler enqueues its work on @stream and returns TRUE; the element's
   * events order that work after the frame's upload and before its
   * download. It must not synchronise or allocate per frame; it is called
   * from the streaming thread (cuda) or the cpu backend's compute thread.
   * With several devices (`devices`) the device of the frame is current,
   * and on the cpu backend the stand-ins' compute threads call it at the
   * same time: what it shares must be thread-safe.
   *
   * Returns: TRUE when the frame was processed; FALSE fails it (an error).
   */
  gst_cuda_overlap_signals[SIGNAL_PROCESS] = g_signal_new(
      "process", G_TYPE_FROM_CLASS(klass), G_SIGNAL_RUN_LAST, 0, g_signal_accumulator_true_handled,
      nullptr, nullptr, G_TYPE_BOOLEAN, 3, G_TYPE_POINTER, G_TYPE_POINTER, G_TYPE_POINTER);

  // Both templates come from the format table (video_mapping.h).
  GstCaps* sink_formats = template_caps(GST_PAD_SINK);
  GstCaps* src_formats = template_caps(GST_PAD_SRC);
  gst_element_class_add_pad_template(
      element_class, gst_pad_template_new("sink", GST_PAD_SINK, GST_PAD_ALWAYS, sink_formats));
  gst_element_class_add_pad_template(
      element_class, gst_pad_template_new("src", GST_PAD_SRC, GST_PAD_ALWAYS, src_formats));
  gst_caps_unref(src_formats);
  gst_caps_unref(sink_formats);
  gst_element_class_set_static_metadata(
      element_class, "CUDA overlapped video filter", "Filter/Effect/Video/Hardware",
      "Runs a kernel (copy, invert, flip, balance, blur, edge, convert) on raw video on an "
      "NVIDIA GPU, with the upload, kernel and download of consecutive frames overlapped on "
      "separate streams and ring-size frames in flight; output is pushed from its own thread "
      "without a copy. Example: gst-launch-1.0 "
      "videotestsrc ! video/x-raw,format=RGBA ! cudaoverlap kernel=invert ! autovideosink",
      "cudaoverlap developers <dev@cudaoverlap.invalid>");

  gst_type_mark_as_plugin_api(GST_TYPE_CUDA_OVERLAP_KERNEL, static_cast<GstPluginAPIFlags>(0));
  gst_type_mark_as_plugin_api(GST_TYPE_CUDA_OVERLAP_MODE, static_cast<GstPluginAPIFlags>(0));
  gst_type_mark_as_plugin_api(GST_TYPE_CUDA_OVERLAP_BACKEND, static_cast<GstPluginAPIFlags>(0));
  GST_DEBUG_CATEGORY_INIT(gst_cuda_overlap_debug, "cudaoverlap", 0,
                          "overlapped upload/kernel/download of raw video");
}
