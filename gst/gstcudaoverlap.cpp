// The cudaoverlap element: GObject glue between GStreamer's pads and the
// overlap engine of pipeline-core.
//
// Data flow: chain() maps each input buffer and hands it to Engine::submit()
// (which blocks while the ring is full: that is the element's backpressure);
// the engine's worker delivers finished frames in order to on_frame(), which
// puts them in an OutputQueue; the src pad task pops frames and serialized
// events from that queue, wraps each frame's pinned memory in a GstBuffer
// without copying, and pushes it. When downstream drops the buffer, the slot
// returns to the ring. chain() never pushes.

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
 * gst-launch-1.0 v4l2src ! videoconvert ! video/x-raw,format=NV12 ! cudaoverlap ring-size=4 !
 * autovideosink
 * ]| A camera feed through the GPU with four frames in flight.
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

#include <atomic>
#include <memory>
#include <mutex>
#include <string>

#include "device_choice.h"
#include "engine.h"
#include "error.h"
#include "gstcudaoverlapenums.h"
#include "input_frame.h"
#include "kernel_properties.h"
#include "output_buffer.h"
#include "output_queue.h"
#include "pinned_allocator.h"
#include "upstream_pinning.h"
#include "stats.h"
#include "video_mapping.h"

GST_DEBUG_CATEGORY_STATIC(gst_cuda_overlap_debug);
#define GST_CAT_DEFAULT gst_cuda_overlap_debug

using namespace cudaoverlap;

namespace {

constexpr GstCudaOverlapKernel DEFAULT_KERNEL = GST_CUDA_OVERLAP_KERNEL_COPY;
constexpr int MIN_RING_SIZE = 1;
constexpr int MAX_RING_SIZE = 16;
constexpr int DEFAULT_RING_SIZE = 3;
constexpr GstCudaOverlapMode DEFAULT_MODE = GST_CUDA_OVERLAP_MODE_OVERLAPPED;
constexpr GstCudaOverlapBackend DEFAULT_BACKEND = GST_CUDA_OVERLAP_BACKEND_AUTO;
constexpr int DEFAULT_DEVICE_ID = 0;
constexpr bool DEFAULT_PIN_UPSTREAM = true;

enum {
  PROP_0,
  PROP_KERNEL,
  PROP_RING_SIZE,
  PROP_MODE,
  PROP_BACKEND,
  PROP_DEVICE_ID,
  PROP_PIN_UPSTREAM_MEMORY,
};

GstStaticPadTemplate sink_template =
    GST_STATIC_PAD_TEMPLATE("sink", GST_PAD_SINK, GST_PAD_ALWAYS,
                            GST_STATIC_CAPS(GST_VIDEO_CAPS_MAKE(GST_CUDA_OVERLAP_FORMATS)));
GstStaticPadTemplate src_template =
    GST_STATIC_PAD_TEMPLATE("src", GST_PAD_SRC, GST_PAD_ALWAYS,
                            GST_STATIC_CAPS(GST_VIDEO_CAPS_MAKE(GST_CUDA_OVERLAP_FORMATS)));

}  // namespace

struct GstCudaOverlapPrivate {
  // Properties. Guarded by the object lock; changed only in NULL and READY.
  GstCudaOverlapKernel kernel = DEFAULT_KERNEL;
  int ring_size = DEFAULT_RING_SIZE;
  GstCudaOverlapMode mode = DEFAULT_MODE;
  GstCudaOverlapBackend backend = DEFAULT_BACKEND;
  int device_id = DEFAULT_DEVICE_ID;
  KernelProperties kernel_props;  // video-direction, brightness, …
  // Read by the streaming thread per frame; may change at any time.
  std::atomic<bool> pin_upstream{DEFAULT_PIN_UPSTREAM};

  // Also guarded by the object lock: read by queries on any thread.
  gint fps_n = 0;
  gint fps_d = 1;
  std::string rejected_caps;  // last caps refused by ACCEPT_CAPS, for messages
  bool error_posted = false;  // one GST_ELEMENT_ERROR per run is enough

  // Lock order: pad stream locks, then the object lock or engine_lock (never
  // both), then OutputQueue's own mutex, then the engine's. No lock of ours
  // is held while calling submit(), drain() or stop(), which may block.
  std::mutex engine_lock;
  // Replaced only under engine_lock, and only by the streaming thread (CAPS)
  // or by the owner while streaming is stopped (start/stop), so the
  // streaming thread, the engine's single producer, uses it without the
  // lock. Other threads (FLUSH_START, pad deactivation) use it under the lock.
  std::unique_ptr<Engine> engine;
  bool flushing = false;  // engine_lock: a new engine must start flushed too

  // Owner thread, in start()/stop().
  std::shared_ptr<Device> device;

  // Streaming thread only.
  GstVideoInfo in_info;
  FrameLayout in_layout;
  std::shared_ptr<const OutputFormat> out_format;
  uint64_t submitted = 0;  // frames submitted since the last queue restart

  OutputQueue queue;
  OutputBuffers outputs;
  Instruments instruments;  // stats, trace, QoS, measured latency: its own locks
};

struct _GstCudaOverlap {
  GstElement parent;
  GstPad* sinkpad;
  GstPad* srcpad;
  GstCudaOverlapPrivate* priv;
};

G_DEFINE_TYPE(GstCudaOverlap, gst_cuda_overlap, GST_TYPE_ELEMENT);
GST_ELEMENT_REGISTER_DEFINE(cudaoverlap, "cudaoverlap", GST_RANK_NONE, GST_TYPE_CUDA_OVERLAP);

// Posts the first error of a run as a GST_ELEMENT_ERROR; later ones are
// consequences of it and only logged.
#define GST_CUDA_OVERLAP_ERROR(self, domain, code, message)                                        \
  do {                                                                                             \
    const std::string gst_cuda_overlap_message_ = (message);                                       \
    if (gst_cuda_overlap_claim_error(self))                                                        \
      GST_ELEMENT_ERROR(self, domain, code, ("%s", gst_cuda_overlap_message_.c_str()), (nullptr)); \
    else                                                                                           \
      GST_WARNING_OBJECT(self, "further error: %s", gst_cuda_overlap_message_.c_str());            \
  } while (0)

static bool gst_cuda_overlap_claim_error(GstCudaOverlap* self) {
  GST_OBJECT_LOCK(self);
  const bool first = !self->priv->error_posted;
  self->priv->error_posted = true;
  GST_OBJECT_UNLOCK(self);
  return first;
}

static std::string gst_cuda_overlap_video_description(const GstVideoInfo& info) {
  return std::to_string(GST_VIDEO_INFO_WIDTH(&info)) + "x" +
         std::to_string(GST_VIDEO_INFO_HEIGHT(&info)) + " " + GST_VIDEO_INFO_NAME(&info);
}

// ---------------------------------------------------------------------------
// Engine life cycle

// Replaces the engine; the old one is stopped outside the lock.
static void gst_cuda_overlap_install_engine(GstCudaOverlap* self, std::unique_ptr<Engine> engine) {
  GstCudaOverlapPrivate* priv = self->priv;
  std::unique_ptr<Engine> old;
  {
    std::lock_guard<std::mutex> lock(priv->engine_lock);
    old = std::move(priv->engine);
    priv->engine = std::move(engine);
    if (priv->engine && priv->flushing) priv->engine->flush_start();
  }
  // Joins the worker. Frames already downstream keep their slots alive.
  old.reset();
}

// READY->PAUSED: opens the device. Safe to call twice.
static bool gst_cuda_overlap_start(GstCudaOverlap* self) {
  GstCudaOverlapPrivate* priv = self->priv;
  if (priv->device) return true;
  GST_OBJECT_LOCK(self);
  const GstCudaOverlapBackend backend = priv->backend;
  const int device_id = priv->device_id;
  priv->error_posted = false;
  GST_OBJECT_UNLOCK(self);

  try {
    std::string warning;
    priv->device = open_device(backend, device_id, &warning);
    if (!warning.empty())
      GST_ELEMENT_WARNING(self, RESOURCE, NOT_FOUND, ("%s", warning.c_str()), (nullptr));
  } catch (const std::exception& e) {
    GST_CUDA_OVERLAP_ERROR(self, RESOURCE, NOT_FOUND, e.what());
    return false;
  }
  GST_INFO_OBJECT(self, "running on %s", priv->device->describe().c_str());
  const std::string problem = priv->instruments.start(GST_ELEMENT(self));  // stats, trace-file
  if (!problem.empty()) GST_CUDA_OVERLAP_ERROR(self, RESOURCE, OPEN_WRITE, problem);
  return problem.empty();
}

// PAUSED->READY (and finalize): mirrors start(). Safe to call twice.
static void gst_cuda_overlap_stop(GstCudaOverlap* self) {
  GstCudaOverlapPrivate* priv = self->priv;
  gst_cuda_overlap_install_engine(self, nullptr);
  {
    std::lock_guard<std::mutex> lock(priv->engine_lock);
    priv->flushing = false;
  }
  priv->queue.clear();
  priv->instruments.stop();
  priv->device.reset();
  priv->out_format.reset();
  priv->submitted = 0;
  GST_OBJECT_LOCK(self);
  priv->fps_n = 0;
  priv->fps_d = 1;
  GST_OBJECT_UNLOCK(self);
}

static void gst_cuda_overlap_on_frame(GstCudaOverlap* self, OutputFrame frame) {
  // Engine worker thread: nothing may escape into it.
  try {
    const auto* info = static_cast<const FrameInfo*>(frame.user().get());
    const uint64_t epoch = info != nullptr ? info->epoch : UINT64_MAX;
    self->priv->queue.push_frame(std::move(frame), epoch);
  } catch (const std::exception& e) {
    GST_WARNING_OBJECT(self, "dropped a frame: %s", e.what());
  }
}

static void gst_cuda_overlap_on_error(GstCudaOverlap* self, const std::string& message) {
  try {
    GST_CUDA_OVERLAP_ERROR(self, STREAM, FAILED,
                           "cudaoverlap could not process a frame: " + message);
    self->priv->queue.fail(GST_FLOW_ERROR);
  } catch (...) {
    GST_WARNING_OBJECT(self, "could not report an engine error");
  }
}

static bool gst_cuda_overlap_report_status(GstCudaOverlap* self, Status status) {
  if (status == Status::kError)
    GST_CUDA_OVERLAP_ERROR(self, STREAM, FAILED,
                           "cudaoverlap could not process a frame: " + self->priv->engine->error());
  return status == Status::kOk;
}

// Streaming thread, on CAPS: drains what is in flight with the old caps, then
// makes an engine for the new ones unless format and size stay the same.
static bool gst_cuda_overlap_configure(GstCudaOverlap* self, GstCaps* caps) {
  GstCudaOverlapPrivate* priv = self->priv;
  GstVideoInfo in;
  PixelFormat format;
  if (!gst_video_info_from_caps(&in, caps) ||
      !pixel_format_from_gst(GST_VIDEO_INFO_FORMAT(&in), &format)) {
    gchar* text = gst_caps_to_string(caps);
    const std::string message = std::string("cudaoverlap cannot process caps ") + text +
                                ": it takes video/x-raw in system memory in " +
                                GST_CUDA_OVERLAP_FORMATS + "; put videoconvert before it";
    g_free(text);
    GST_CUDA_OVERLAP_ERROR(self, STREAM, FORMAT, message);
    return false;
  }
  GST_OBJECT_LOCK(self);
  const KernelId kernel = kernel_from_gst(priv->kernel);
  EngineConfig config;
  config.ring_size = priv->ring_size;
  config.mode = mode_from_gst(priv->mode);
  config.timing = true;  // device stage times for `stats` and `trace-file`
  priv->kernel_props.apply(&config.params);
  GST_OBJECT_UNLOCK(self);

  auto out = std::make_shared<OutputFormat>();
  const std::string refused =
      negotiate_output(kernel, in, self->srcpad, &config.params, &out->info);
  if (!refused.empty()) {
    GST_CUDA_OVERLAP_ERROR(self, STREAM, FORMAT, refused);
    return false;
  }
  out->layout = layout_from_info(out->info);
  out->default_layout = true;  // the engine writes GStreamer's own layout

  if (priv->engine && !gst_cuda_overlap_report_status(self, priv->engine->drain())) return false;

  const FrameLayout in_layout = layout_from_info(in);
  const bool same_geometry = priv->engine && priv->in_layout.format == in_layout.format &&
                             priv->in_layout.width == in_layout.width &&
                             priv->in_layout.height == in_layout.height && priv->out_format &&
                             same_output(priv->out_format->info, out->info);
  if (!same_geometry) {
    if (!priv->device) {
      GST_CUDA_OVERLAP_ERROR(self, CORE, STATE_CHANGE,
                             "cudaoverlap received caps before it was started");
      return false;
    }
    config.input = in_layout;
    config.output = out->layout;
    config.kernel = kernel;
    EngineCallbacks callbacks;
    callbacks.on_frame = [self](OutputFrame frame) {
      gst_cuda_overlap_on_frame(self, std::move(frame));
    };
    callbacks.on_error = [self](const std::string& message) {
      gst_cuda_overlap_on_error(self, message);
    };
    auto engine = std::make_unique<Engine>(priv->device, config, std::move(callbacks));
    try {
      engine->start();
    } catch (const Error& e) {
      gst_cuda_overlap_install_engine(self, nullptr);
      GST_CUDA_OVERLAP_ERROR(self, RESOURCE, NO_SPACE_LEFT,
                             std::string("cudaoverlap cannot start on ") +
                                 priv->device->describe() + " for " +
                                 gst_cuda_overlap_video_description(in) + ": " + e.what());
      return false;
    }
    GST_INFO_OBJECT(self, "engine started: %s, ring-size %d, kernel %s",
                    gst_cuda_overlap_video_description(in).c_str(), config.ring_size,
                    kernel_name(kernel));
    gst_cuda_overlap_install_engine(self, std::move(engine));
    priv->outputs.set_ring_size(config.ring_size);
  }
  priv->in_info = in;
  priv->in_layout = in_layout;
  priv->out_format = std::move(out);
  GST_OBJECT_LOCK(self);
  priv->fps_n = GST_VIDEO_INFO_FPS_N(&in);
  priv->fps_d = GST_VIDEO_INFO_FPS_D(&in);
  GST_OBJECT_UNLOCK(self);
  return true;
}

// ---------------------------------------------------------------------------
// Sink pad: buffers, events, queries

static GstFlowReturn gst_cuda_overlap_submit(GstCudaOverlap* self, GstBuffer* buffer) {
  GstCudaOverlapPrivate* priv = self->priv;
  const int64_t arrived_ns = host_now_ns();  // the element's latency starts here
  // Owns the buffer from here on, on every path.
  auto info = std::make_shared<FrameInfo>(buffer);

  const GstFlowReturn flow = priv->queue.flow();
  if (flow != GST_FLOW_OK) {
    GST_DEBUG_OBJECT(self, "refusing a buffer: downstream returned %s", gst_flow_get_name(flow));
    return flow;
  }
  if (!priv->engine || !priv->out_format) {
    GST_OBJECT_LOCK(self);
    const std::string rejected = priv->rejected_caps;
    GST_OBJECT_UNLOCK(self);
    GST_CUDA_OVERLAP_ERROR(
        self, CORE, NEGOTIATION,
        std::string("cudaoverlap received a buffer without accepted caps") +
            (rejected.empty() ? "" : " (it refused " + rejected + ")") +
            ": it takes video/x-raw in system memory in " GST_CUDA_OVERLAP_FORMATS
            "; put videoconvert before it");
    return GST_FLOW_NOT_NEGOTIATED;
  }
  // QoS: a frame downstream would show too late is dropped before it costs an upload.
  if (priv->instruments.drop_late(GST_ELEMENT(self), buffer)) return GST_FLOW_OK;

  const GstVideoInfo& in = priv->in_info;
  MappedInput mapped;
  const std::string problem = mapped.map(buffer, in, priv->in_layout);
  if (!problem.empty()) {
    GST_CUDA_OVERLAP_ERROR(self, STREAM, FORMAT,
                           "cudaoverlap received a buffer smaller than its caps (" +
                               gst_cuda_overlap_video_description(in) + ") say: " + problem +
                               "; the element before it sends truncated frames or wrong caps");
    return GST_FLOW_ERROR;
  }

  info->epoch = priv->queue.epoch();
  info->format = priv->out_format;
  InputFrame input;
  input.image = mapped.image(priv->in_layout.format);
  // Our pinned pool's memory uploads as it is and stays referenced until its
  // upload is done; anything else is staged inside submit(), so the frame
  // can be unmapped right after.
  input.pinned = buffer_is_pinned(buffer, priv->device.get());
  // Upstream's own memory that keeps coming back is pinned once, then
  // treated the same way (upstream_pinning.h).
  if (!input.pinned && priv->pin_upstream.load())
    input.pinned = pin_upstream_memory(buffer, input.image, priv->in_layout, priv->device) ==
                   UpstreamPin::kPinned;
  GST_LOG_OBJECT(self, "%" GST_PTR_FORMAT " is %s", buffer,
                 input.pinned ? "pinned: uploaded without staging" : "staged");
  if (input.pinned)
    input.keep_alive = std::shared_ptr<void>(gst_buffer_ref(buffer), [](void* b) {
      gst_buffer_unref(static_cast<GstBuffer*>(b));
    });
  input.user = std::move(info);
  input.arrived_ns = arrived_ns;
  const Status status = priv->engine->submit(std::move(input));
  switch (status) {
    case Status::kOk:
      ++priv->submitted;
      priv->instruments.submitted();
      return priv->queue.flow();
    case Status::kFlushing: {
      const GstFlowReturn downstream = priv->queue.flow();
      return downstream != GST_FLOW_OK ? downstream : GST_FLOW_FLUSHING;
    }
    case Status::kError:
      gst_cuda_overlap_report_status(self, status);
      return GST_FLOW_ERROR;
  }
  return GST_FLOW_ERROR;
}

static GstFlowReturn gst_cuda_overlap_chain(GstPad*, GstObject* parent, GstBuffer* buffer) {
  GstCudaOverlap* self = GST_CUDA_OVERLAP(parent);
  try {
    return gst_cuda_overlap_submit(self, buffer);
  } catch (const std::exception& e) {
    GST_CUDA_OVERLAP_ERROR(self, STREAM, FAILED, std::string("cudaoverlap failed: ") + e.what());
  } catch (...) {
    GST_CUDA_OVERLAP_ERROR(self, STREAM, FAILED, "cudaoverlap failed with an unknown exception");
  }
  return GST_FLOW_ERROR;
}

static void gst_cuda_overlap_loop(gpointer user_data);

static gboolean gst_cuda_overlap_handle_sink_event(GstCudaOverlap* self, GstEvent* event) {
  GstCudaOverlapPrivate* priv = self->priv;
  priv->instruments.sink_event(event);  // SEGMENT for QoS, FLUSH_STOP for the counters
  switch (GST_EVENT_TYPE(event)) {
    case GST_EVENT_FLUSH_START: {
      {
        std::lock_guard<std::mutex> lock(priv->engine_lock);
        priv->flushing = true;
        if (priv->engine) priv->engine->flush_start();  // unblocks a waiting submit()
      }
      priv->queue.set_flushing();
      // Downstream first, so a push the task is blocked in returns, then
      // wait for the task's current iteration.
      const gboolean ret = gst_pad_push_event(self->srcpad, event);
      gst_pad_pause_task(self->srcpad);
      return ret;
    }
    case GST_EVENT_FLUSH_STOP: {
      if (priv->engine) priv->engine->flush_stop();  // drops what was in flight
      {
        std::lock_guard<std::mutex> lock(priv->engine_lock);
        priv->flushing = false;
      }
      priv->queue.restart();
      priv->submitted = 0;
      const gboolean ret = gst_pad_push_event(self->srcpad, event);
      gst_pad_start_task(self->srcpad, gst_cuda_overlap_loop, self, nullptr);
      return ret;
    }
    case GST_EVENT_EOS: {
      const GstFlowReturn flow = priv->queue.flow();
      if (flow != GST_FLOW_OK) {
        // Upstream has finished and will not see this flow return any more.
        if (flow == GST_FLOW_NOT_LINKED || flow < GST_FLOW_EOS) GST_ELEMENT_FLOW_ERROR(self, flow);
        gst_event_unref(event);
        return FALSE;
      }
      // Every frame in flight goes out before EOS: drain() puts them all in
      // the queue, and EOS is queued behind them.
      if (priv->engine && !gst_cuda_overlap_report_status(self, priv->engine->drain())) {
        gst_event_unref(event);
        return FALSE;
      }
      priv->queue.push_event(event, priv->submitted);
      return TRUE;
    }
    case GST_EVENT_CAPS: {
      GstCaps* caps = nullptr;
      gst_event_parse_caps(event, &caps);
      if (!gst_cuda_overlap_configure(self, caps)) {
        gst_event_unref(event);
        return FALSE;
      }
      GST_OBJECT_LOCK(self);
      const KernelId kernel = kernel_from_gst(priv->kernel);
      KernelParams params;
      priv->kernel_props.apply(&params);
      GST_OBJECT_UNLOCK(self);
      GstCaps* out_caps = transform_caps(kernel, params, GST_PAD_SINK, caps);
      if (!gst_caps_is_equal(out_caps, caps)) {
        gst_event_unref(event);
        gst_caps_unref(out_caps);
        out_caps = gst_video_info_to_caps(&priv->out_format->info);
        event = gst_event_new_caps(out_caps);
      }
      gst_caps_unref(out_caps);
      priv->queue.push_event(event, priv->submitted);
      return TRUE;
    }
    default:
      break;
  }
  if (!GST_EVENT_IS_SERIALIZED(event))
    return gst_pad_event_default(self->sinkpad, GST_OBJECT_CAST(self), event);
  if (priv->queue.flow() != GST_FLOW_OK && !GST_EVENT_IS_STICKY(event)) {
    gst_event_unref(event);
    return FALSE;
  }
  // Queued behind the frames submitted before it: it keeps its place.
  priv->queue.push_event(event, priv->submitted);
  return TRUE;
}

static gboolean gst_cuda_overlap_sink_event(GstPad*, GstObject* parent, GstEvent* event) {
  GstCudaOverlap* self = GST_CUDA_OVERLAP(parent);
  GST_LOG_OBJECT(self, "sink event %" GST_PTR_FORMAT, event);
  try {
    return gst_cuda_overlap_handle_sink_event(self, event);
  } catch (const std::exception& e) {
    // The event may or may not have been consumed; leaking it beats a
    // double unref.
    GST_CUDA_OVERLAP_ERROR(self, STREAM, FAILED, std::string("cudaoverlap failed: ") + e.what());
  }
  return FALSE;
}

static GstCaps* gst_cuda_overlap_query_caps(GstCudaOverlap* self, GstPad* pad, GstCaps* filter) {
  GST_OBJECT_LOCK(self);
  const KernelId kernel = kernel_from_gst(self->priv->kernel);
  KernelParams params;
  self->priv->kernel_props.apply(&params);
  GST_OBJECT_UNLOCK(self);
  return query_caps_through(kernel, params, pad,
                            pad == self->sinkpad ? self->srcpad : self->sinkpad, filter);
}

static gboolean gst_cuda_overlap_common_query(GstCudaOverlap* self, GstPad* pad, GstQuery* query,
                                              bool* handled) {
  *handled = true;
  switch (GST_QUERY_TYPE(query)) {
    case GST_QUERY_CAPS: {
      GstCaps* filter = nullptr;
      gst_query_parse_caps(query, &filter);
      GstCaps* caps = gst_cuda_overlap_query_caps(self, pad, filter);
      gst_query_set_caps_result(query, caps);
      gst_caps_unref(caps);
      return TRUE;
    }
    case GST_QUERY_ACCEPT_CAPS: {
      GstCaps* caps = nullptr;
      gst_query_parse_accept_caps(query, &caps);
      GstCaps* allowed = gst_cuda_overlap_query_caps(self, pad, caps);
      const bool accepted = caps_acceptable(caps, allowed);
      gst_caps_unref(allowed);
      if (!accepted) {
        gchar* text = gst_caps_to_string(caps);
        GST_INFO_OBJECT(pad, "refusing caps %s", text);
        GST_OBJECT_LOCK(self);
        self->priv->rejected_caps = text;
        GST_OBJECT_UNLOCK(self);
        g_free(text);
      }
      gst_query_set_accept_caps_result(query, accepted);
      return TRUE;
    }
    default:
      *handled = false;
      return FALSE;
  }
}

static gboolean gst_cuda_overlap_sink_query(GstPad* pad, GstObject* parent, GstQuery* query) {
  GstCudaOverlap* self = GST_CUDA_OVERLAP(parent);
  try {
    bool handled;
    const gboolean ret = gst_cuda_overlap_common_query(self, pad, query, &handled);
    if (handled) return ret;
    if (GST_QUERY_TYPE(query) == GST_QUERY_ALLOCATION) {
      // The engine holds each input buffer until its frame comes out, and
      // upstream writes the next: ring-size + 2, growing if upstream holds
      // more (max 0) rather than stalling it.
      GST_OBJECT_LOCK(self);
      const guint min_buffers = static_cast<guint>(self->priv->ring_size) + 2;
      GST_OBJECT_UNLOCK(self);
      // Pinned memory of our device: frames written there upload without a
      // staging copy. Without a device (not started) a plain pool.
      if (self->priv->device && propose_pinned_pool(query, self->priv->device, min_buffers))
        return TRUE;
      return propose_video_pool(query, min_buffers);
    }
    if (GST_QUERY_IS_SERIALIZED(query)) {
      // A serialized query (DRAIN, custom ones) must see the stream as it
      // is after the buffers before it: everything goes downstream first.
      GstCudaOverlapPrivate* priv = self->priv;
      if (priv->engine && !gst_cuda_overlap_report_status(self, priv->engine->drain()))
        return FALSE;
      if (!priv->queue.wait_empty()) return FALSE;
    }
    return gst_pad_query_default(pad, parent, query);
  } catch (const std::exception& e) {
    GST_WARNING_OBJECT(self, "query failed: %s", e.what());
  }
  return FALSE;
}

// ---------------------------------------------------------------------------
// Src pad: the task that pushes, and queries

static gboolean gst_cuda_overlap_src_event(GstPad* pad, GstObject* parent, GstEvent* event) {
  GST_CUDA_OVERLAP(parent)->priv->instruments.src_event(event);  // QOS: drop late frames
  return gst_pad_event_default(pad, parent, event);
}

static gboolean gst_cuda_overlap_src_query(GstPad* pad, GstObject* parent, GstQuery* query) {
  GstCudaOverlap* self = GST_CUDA_OVERLAP(parent);
  bool handled;
  const gboolean ret = gst_cuda_overlap_common_query(self, pad, query, &handled);
  if (handled) return ret;
  if (GST_QUERY_TYPE(query) != GST_QUERY_LATENCY) return gst_pad_query_default(pad, parent, query);

  if (!gst_pad_peer_query(self->sinkpad, query)) return FALSE;
  GST_OBJECT_LOCK(self);
  const gint fps_n = self->priv->fps_n;
  const gint fps_d = self->priv->fps_d;
  const int ring_size = self->priv->ring_size;
  GST_OBJECT_UNLOCK(self);
  // Own latency: min as measured (one frame until measured), max ring-size frames.
  self->priv->instruments.add_own_latency(GST_ELEMENT(self), query, fps_n, fps_d, ring_size);
  return TRUE;
}

static GstBuffer* gst_cuda_overlap_wrap_output(GstCudaOverlap* self, OutputFrame frame) {
  const std::shared_ptr<FrameInfo> info = std::static_pointer_cast<FrameInfo>(frame.user());
  bool copied = false;
  GstBuffer* buffer =
      self->priv->outputs.make(std::move(frame), *info->format, info->input, &copied);
  // Upstream's buffer is not held while downstream holds ours.
  if (info->input) gst_buffer_unref(info->input);
  info->input = nullptr;
  if (copied)
    GST_LOG_OBJECT(self, "downstream holds %d buffers: output copied to keep the ring moving",
                   self->priv->outputs.held());
  return buffer;
}

static void gst_cuda_overlap_loop(gpointer user_data) {
  GstCudaOverlap* self = GST_CUDA_OVERLAP(user_data);
  GstCudaOverlapPrivate* priv = self->priv;
  OutputItem item;
  if (!priv->queue.pop(&item)) {
    GST_DEBUG_OBJECT(self, "flushing: pausing the task");
    gst_pad_pause_task(self->srcpad);
    return;
  }
  GstFlowReturn flow = GST_FLOW_OK;
  if (item.event != nullptr) {
    GST_LOG_OBJECT(self, "pushing %" GST_PTR_FORMAT, item.event);
    // A refused event is not a flow error; refused caps show up as
    // not-negotiated on the next buffer.
    gst_pad_push_event(self->srcpad, item.event);
  } else {
    try {
      const FrameTiming timing = item.frame.timing();
      GstBuffer* buffer = gst_cuda_overlap_wrap_output(self, std::move(item.frame));
      TimeSpan push{host_now_ns(), -1};
      flow = gst_pad_push(self->srcpad, buffer);
      push.end_ns = host_now_ns();
      priv->instruments.pushed(GST_ELEMENT(self), timing, push);  // stats, trace, latency
    } catch (const std::exception& e) {
      GST_CUDA_OVERLAP_ERROR(self, STREAM, FAILED, std::string("cudaoverlap failed: ") + e.what());
      flow = GST_FLOW_ERROR;
    }
  }
  const bool eos_pending = priv->queue.done(flow);
  if (flow == GST_FLOW_OK) return;

  GST_DEBUG_OBJECT(self, "downstream returned %s: pausing the task", gst_flow_get_name(flow));
  if (eos_pending && (flow == GST_FLOW_NOT_LINKED || flow < GST_FLOW_EOS)) {
    // Upstream already sent EOS, so no chain() will return this flow to it.
    GST_ELEMENT_FLOW_ERROR(self, flow);
    gst_pad_push_event(self->srcpad, gst_event_new_eos());
  }
  gst_pad_pause_task(self->srcpad);
}

static gboolean gst_cuda_overlap_src_activate_mode(GstPad* pad, GstObject* parent, GstPadMode mode,
                                                   gboolean active) {
  GstCudaOverlap* self = GST_CUDA_OVERLAP(parent);
  if (mode != GST_PAD_MODE_PUSH) return FALSE;
  if (active) {
    self->priv->queue.restart();
    self->priv->submitted = 0;
    return gst_pad_start_task(pad, gst_cuda_overlap_loop, self, nullptr);
  }
  self->priv->queue.set_flushing();  // wakes the task and frees queued slots
  return gst_pad_stop_task(pad);
}

static gboolean gst_cuda_overlap_sink_activate_mode(GstPad*, GstObject* parent, GstPadMode mode,
                                                    gboolean active) {
  GstCudaOverlap* self = GST_CUDA_OVERLAP(parent);
  if (mode != GST_PAD_MODE_PUSH) return FALSE;
  std::lock_guard<std::mutex> lock(self->priv->engine_lock);
  // On deactivation GStreamer waits for chain() to return: a submit() waiting
  // for a free slot must be woken.
  self->priv->flushing = !active;
  if (!active && self->priv->engine) self->priv->engine->flush_start();
  return TRUE;
}

// ---------------------------------------------------------------------------
// GObject and GstElement

static GstStateChangeReturn gst_cuda_overlap_change_state(GstElement* element,
                                                          GstStateChange transition) {
  GstCudaOverlap* self = GST_CUDA_OVERLAP(element);
  if (transition == GST_STATE_CHANGE_READY_TO_PAUSED && !gst_cuda_overlap_start(self))
    return GST_STATE_CHANGE_FAILURE;
  const GstStateChangeReturn ret =
      GST_ELEMENT_CLASS(gst_cuda_overlap_parent_class)->change_state(element, transition);
  if (transition == GST_STATE_CHANGE_PAUSED_TO_READY ||
      (transition == GST_STATE_CHANGE_READY_TO_PAUSED && ret == GST_STATE_CHANGE_FAILURE))
    gst_cuda_overlap_stop(self);
  return ret;
}

static void gst_cuda_overlap_set_property(GObject* object, guint prop_id, const GValue* value,
                                          GParamSpec* pspec) {
  GstCudaOverlap* self = GST_CUDA_OVERLAP(object);
  GstCudaOverlapPrivate* priv = self->priv;
  if (prop_id == PROP_PIN_UPSTREAM_MEMORY) {  // read per frame: any state
    priv->pin_upstream = g_value_get_boolean(value);
    return;
  }
  GST_OBJECT_LOCK(self);
  // The engine and device are made with these at start and on caps.
  if (GST_STATE(self) > GST_STATE_READY) {
    GST_OBJECT_UNLOCK(self);
    GST_WARNING_OBJECT(self, "'%s' can only be changed in the NULL or READY state; ignored",
                       pspec->name);
    return;
  }
  switch (prop_id) {
    case PROP_KERNEL:
      priv->kernel = static_cast<GstCudaOverlapKernel>(g_value_get_enum(value));
      break;
    case PROP_RING_SIZE:
      priv->ring_size = g_value_get_int(value);
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
    default:
      if (!set_kernel_property(&priv->kernel_props, kKernelPropertiesFirstId, prop_id, value) &&
          !priv->instruments.set_property(prop_id, value))
        G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK(self);
}

static void gst_cuda_overlap_get_property(GObject* object, guint prop_id, GValue* value,
                                          GParamSpec* pspec) {
  GstCudaOverlap* self = GST_CUDA_OVERLAP(object);
  GstCudaOverlapPrivate* priv = self->priv;
  GST_OBJECT_LOCK(self);
  switch (prop_id) {
    case PROP_KERNEL:
      g_value_set_enum(value, priv->kernel);
      break;
    case PROP_RING_SIZE:
      g_value_set_int(value, priv->ring_size);
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
    case PROP_PIN_UPSTREAM_MEMORY:
      g_value_set_boolean(value, priv->pin_upstream.load());
      break;
    default:
      if (!get_kernel_property(priv->kernel_props, kKernelPropertiesFirstId, prop_id, value) &&
          !priv->instruments.get_property(prop_id, value))
        G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK(self);
}

static void gst_cuda_overlap_finalize(GObject* object) {
  GstCudaOverlap* self = GST_CUDA_OVERLAP(object);
  gst_cuda_overlap_stop(self);
  delete self->priv;
  G_OBJECT_CLASS(gst_cuda_overlap_parent_class)->finalize(object);
}

static void gst_cuda_overlap_init(GstCudaOverlap* self) {
  self->priv = new GstCudaOverlapPrivate();
  gst_video_info_init(&self->priv->in_info);

  self->sinkpad = gst_pad_new_from_static_template(&sink_template, "sink");
  gst_pad_set_chain_function(self->sinkpad, GST_DEBUG_FUNCPTR(gst_cuda_overlap_chain));
  gst_pad_set_event_function(self->sinkpad, GST_DEBUG_FUNCPTR(gst_cuda_overlap_sink_event));
  gst_pad_set_query_function(self->sinkpad, GST_DEBUG_FUNCPTR(gst_cuda_overlap_sink_query));
  gst_pad_set_activatemode_function(self->sinkpad,
                                    GST_DEBUG_FUNCPTR(gst_cuda_overlap_sink_activate_mode));
  gst_element_add_pad(GST_ELEMENT(self), self->sinkpad);

  self->srcpad = gst_pad_new_from_static_template(&src_template, "src");
  gst_pad_set_query_function(self->srcpad, GST_DEBUG_FUNCPTR(gst_cuda_overlap_src_query));
  gst_pad_set_event_function(self->srcpad, GST_DEBUG_FUNCPTR(gst_cuda_overlap_src_event));
  gst_pad_set_activatemode_function(self->srcpad,
                                    GST_DEBUG_FUNCPTR(gst_cuda_overlap_src_activate_mode));
  gst_element_add_pad(GST_ELEMENT(self), self->srcpad);
}

static void gst_cuda_overlap_class_init(GstCudaOverlapClass* klass) {
  GObjectClass* gobject_class = G_OBJECT_CLASS(klass);
  GstElementClass* element_class = GST_ELEMENT_CLASS(klass);
  gobject_class->set_property = gst_cuda_overlap_set_property;
  gobject_class->get_property = gst_cuda_overlap_get_property;
  gobject_class->finalize = gst_cuda_overlap_finalize;
  element_class->change_state = GST_DEBUG_FUNCPTR(gst_cuda_overlap_change_state);

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
                       "CUDA device to run on (as numbered by CUDA); ignored by the cpu backend", 0,
                       G_MAXINT, DEFAULT_DEVICE_ID, flags));
  g_object_class_install_property(
      gobject_class, PROP_PIN_UPSTREAM_MEMORY,
      g_param_spec_boolean(
          "pin-upstream-memory", "Pin upstream memory",
          "Page-lock a memory block of upstream's the second time it arrives (buffer pools "
          "recycle theirs; imagefreeze pushes one again and again) and upload later frames in it "
          "without the staging copy; unpinned when upstream frees it. Off: every frame not in "
          "the element's own pinned pool is copied into pinned staging memory",
          DEFAULT_PIN_UPSTREAM,
          static_cast<GParamFlags>(G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
                                   GST_PARAM_MUTABLE_PLAYING)));
  install_kernel_properties(gobject_class, kKernelPropertiesFirstId, flags);
  Instruments::install_properties(gobject_class);  // stats, stats-interval, trace-file, qos

  gst_element_class_add_static_pad_template(element_class, &sink_template);
  gst_element_class_add_static_pad_template(element_class, &src_template);
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
  gst_type_mark_as_plugin_api(GST_TYPE_CUDA_OVERLAP_VIDEO_DIRECTION,
                              static_cast<GstPluginAPIFlags>(0));
  GST_DEBUG_CATEGORY_INIT(gst_cuda_overlap_debug, "cudaoverlap", 0,
                          "overlapped upload/kernel/download of raw video");
}
