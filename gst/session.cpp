// See session.h.
#include "session.h"

#include <algorithm>
#include <utility>

#include "device_choice.h"
#include "input_frame.h"
#include "kernels/chain/chain.h"
#include "kernels/custom/custom.h"
#include "kernels/error.h"
#include "pinned_allocator.h"
#include "session_private.h"
#include "upstream_pinning.h"

GST_DEBUG_CATEGORY(cudaoverlap_session_debug);

namespace cudaoverlap {
namespace session_text {

std::string describe(const GstVideoInfo& info, PixelFormat format) {
  return std::to_string(GST_VIDEO_INFO_WIDTH(&info)) + "x" +
         std::to_string(GST_VIDEO_INFO_HEIGHT(&info)) + " " + format_name(info, format);
}

std::string caps_text(GstCaps* caps) {
  gchar* text = gst_caps_to_string(caps);
  std::string result = text ? text : "";
  g_free(text);
  return result;
}

std::string takes(const SessionSettings& settings) {
  std::vector<PixelFormat> formats;
  try {
    formats = make_operation(settings.kernel, settings.params)->input_formats();
  } catch (const Error&) {
    formats = all_pixel_formats();
  }
  std::vector<PixelFormat> raw, bayer;
  for (PixelFormat f : formats) (is_bayer(f) ? bayer : raw).push_back(f);
  std::string text =
      "kernel=" + settings.kernel + " takes video/x-raw in system memory in " + format_list(raw);
  if (!bayer.empty()) text += ", or video/x-bayer in " + format_list(bayer);
  return text + "; put videoconvert before it";
}

}  // namespace session_text

using session_text::caps_text;
using session_text::describe;
using session_text::takes;

Session::Session(GstElement* element, GstPad* sinkpad, GstPad* srcpad,
                 std::function<SessionSettings()> settings)
    : element_(element), sinkpad_(sinkpad), srcpad_(srcpad), settings_(std::move(settings)) {
  static const bool debug_ready = [] {
    // The element's category (gst_debug_category_new hands back an existing
    // one), so `GST_DEBUG=cudaoverlap:5` shows all of it.
    GST_DEBUG_CATEGORY_INIT(cudaoverlap_session_debug, "cudaoverlap", 0, "cudaoverlap element");
    return true;
  }();
  (void)debug_ready;
  gst_video_info_init(&in_info_);
}

Session::~Session() { stop(true); }

bool Session::claim_error() {
  std::lock_guard<std::mutex> lock(info_mutex_);
  const bool first = !error_posted_;
  error_posted_ = true;
  return first;
}

// ---------------------------------------------------------------------------
// Owner thread: start, stop, pad activation

bool Session::start(GstCudaOverlapBackend backend, int device_id, const std::string& devices,
                    const CudaContextChoice& cuda_context, int cpu_threads) {
  if (device_) return true;
  {
    std::lock_guard<std::mutex> lock(info_mutex_);
    error_posted_ = false;
  }
  try {
    std::string warning;
    devices_ = open_devices(backend, device_id, devices, &warning, cuda_context, cpu_threads);
    device_ = devices_.front();
    if (device_->cuda_device() >= 0 && devices_.size() == 1) cuda_context_ = cuda_context;
    if (!warning.empty())
      GST_ELEMENT_WARNING(element_, RESOURCE, NOT_FOUND, ("%s", warning.c_str()), (nullptr));
  } catch (const std::exception& e) {
    SESSION_ERROR(RESOURCE, NOT_FOUND, e.what());
    return false;
  }
  const bool chain_custom = settings_().params.chain && chain_has_custom(*settings_().params.chain);
  if ((settings_().kernel == "custom" || chain_custom) && device_->cuda_device() < 0) {
    SESSION_ERROR(
        RESOURCE, SETTINGS,
        std::string(chain_custom ? "the chain's custom step" : "kernel=custom") +
            " runs CUDA source, which needs the cuda backend; "
            "cudaoverlap is on " +
            device_->describe() +
            (backend == GST_CUDA_OVERLAP_BACKEND_AUTO ? " because no CUDA device was found" : ""));
    device_.reset();
    devices_.clear();
    return false;
  }
  GST_INFO_OBJECT(element_, "running on %s", describe_devices().c_str());
  custom_swap_.start();
  std::vector<std::string> names;
  for (const auto& device : devices_) names.push_back(device->describe());
  const std::string problem = instruments_.start(element_, names);  // stats, trace-file
  if (!problem.empty()) SESSION_ERROR(RESOURCE, OPEN_WRITE, problem);
  return problem.empty();
}

void Session::stop(bool finalizing) {
  custom_swap_.stop();
  install_engine(nullptr);
  queue_.clear();
  outputs_.drop_copies();  // the src pad task has stopped
  instruments_.stop(finalizing ? nullptr : element_);
  cuda_output_.reset();
  out_cuda_ = false;
  device_.reset();
  cuda_context_ = {};
  devices_.clear();
  out_format_.reset();
  if (in_caps_) gst_caps_unref(in_caps_);
  in_caps_ = nullptr;
  if (out_caps_) gst_caps_unref(out_caps_);
  out_caps_ = nullptr;
  submitted_ = 0;
  passthrough_ = false;
  std::lock_guard<std::mutex> lock(info_mutex_);
  fps_n_ = 0;
  fps_d_ = 1;
  latency_estimate_ = GST_CLOCK_TIME_NONE;
  geometry_ = GeometryTransform();
}

void Session::task_loop(gpointer session) { static_cast<Session*>(session)->push_next(); }

bool Session::start_task() { return gst_pad_start_task(srcpad_, task_loop, this, nullptr); }

bool Session::activate_src(bool active) {
  if (active) {
    queue_.restart();
    submitted_ = 0;
    return start_task();
  }
  begin_flush();  // wakes the task and frees queued slots
  return gst_pad_stop_task(srcpad_);
}

void Session::activate_sink(bool active) {
  // On deactivation GStreamer waits for chain() to return: a submit()
  // waiting for a free slot must be woken.
  if (!active) begin_flush();
}

void Session::begin_flush() {
  std::lock_guard<std::mutex> lock(engine_mutex_);
  queue_.set_flushing();
  if (engine_) engine_->flush_start();
}

std::string Session::describe_devices() const {
  if (devices_.size() == 1) return devices_.front()->describe();
  std::string text = std::to_string(devices_.size()) + " devices (";
  for (size_t i = 0; i < devices_.size(); ++i)
    text += (i > 0 ? ", " : "") + devices_[i]->describe();
  return text + ")";
}

void Session::install_engine(std::unique_ptr<MultiEngine> engine) {
  std::shared_ptr<MultiEngine> old;
  {
    std::lock_guard<std::mutex> lock(engine_mutex_);
    old = std::move(engine_);
    engine_ = std::move(engine);
    // A flush that began before this engine existed covers it too.
    if (engine_ && queue_.flow() == GST_FLOW_FLUSHING) engine_->flush_start();
  }
  // A replacement compiled for the old engine is not for this one.
  custom_swap_.engine_installed(engine_ ? &engine_->config() : nullptr);
  // Joins the workers, or waits for the task's deliver() under way, here
  // rather than wherever the last reference goes (the task holds one while
  // it pulls). Frames already downstream keep their slots alive.
  if (old) old->stop();
  old.reset();
}

void Session::release_unwanted() {
  // The queue drops what it is handed while the flow is not OK, which
  // frees each frame's slot; chain() may be waiting for one, and returns
  // the flow upstream once it has it. Without this nobody would fetch them.
  if (const std::shared_ptr<MultiEngine> engine = pulled_engine())
    while (OutputFrame frame = engine->deliver()) frame.release();
}

std::shared_ptr<MultiEngine> Session::pulled_engine() {
  std::lock_guard<std::mutex> lock(engine_mutex_);
  return engine_ && engine_->pulls() ? engine_ : nullptr;
}

void Session::replace_custom_kernel(CustomKernelParams params) {
  custom_swap_.request(std::move(params));
}

void Session::take_replacement_kernel() {
  const std::shared_ptr<const Operation> op = custom_swap_.take_ready();
  if (!op || !engine_) return;
  std::string problem;
  const EngineConfig& config = engine_->config();
  // Interlaced fields stay apart only with a kernel that keeps to its rows.
  if (GST_VIDEO_INFO_IS_INTERLACED(&in_info_) &&
      op->mixes_rows(config.input.format, config.output.format) &&
      !config.operation->mixes_rows(config.input.format, config.output.format))
    problem = "it mixes rows, which would mix the fields of this interlaced stream";
  if (problem.empty()) {
    try {
      engine_->replace_operation(op);
    } catch (const Error& e) {
      problem = e.what();
    }
  }
  if (!problem.empty()) {
    const std::string message =
        "kernel=custom: the new source is not taken, the running kernel stays: " + problem;
    GST_ELEMENT_WARNING(element_, RESOURCE, SETTINGS, ("%s", message.c_str()), (nullptr));
    return;
  }
  custom_swap_.swapped_in(op);
  GST_INFO_OBJECT(element_, "kernel=custom replaced between frames");
}

// ---------------------------------------------------------------------------
// Engine callbacks (worker thread; nothing may escape into it)

uint64_t Session::frame_epoch(const OutputFrame& frame) {
  const FrameInfo* info = frame.user_as<FrameInfo>();
  return info != nullptr ? info->epoch : UINT64_MAX;
}

void Session::on_frame(OutputFrame frame) {
  try {
    const uint64_t epoch = frame_epoch(frame);
    queue_.push_frame(std::move(frame), epoch);
  } catch (const std::exception& e) {
    GST_WARNING_OBJECT(element_, "dropped a frame: %s", e.what());
  }
}

void Session::on_device_warning(int device, const std::string& message) {
  try {
    instruments_.device_failed(device);
    const std::string text = "cudaoverlap left a device out: " + message;
    GST_ELEMENT_WARNING(element_, RESOURCE, FAILED, ("%s", text.c_str()), (nullptr));
  } catch (...) {
    GST_WARNING_OBJECT(element_, "could not report a device failure");
  }
}

void Session::on_error(const std::string& message) {
  try {
    SESSION_ERROR(STREAM, FAILED, "cudaoverlap could not process a frame: " + message);
    queue_.fail(GST_FLOW_ERROR);
  } catch (...) {
    GST_WARNING_OBJECT(element_, "could not report an engine error");
  }
}

bool Session::report(Status status) {
  if (status == Status::kError)
    SESSION_ERROR(STREAM, FAILED, "cudaoverlap could not process a frame: " + engine_->error());
  return status == Status::kOk;
}

// ---------------------------------------------------------------------------
// Streaming thread: caps, buffers, events

GstFlowReturn Session::chain(GstBuffer* buffer) {
  try {
    return submit(buffer);
  } catch (const std::exception& e) {
    SESSION_ERROR(STREAM, FAILED, std::string("cudaoverlap failed: ") + e.what());
  } catch (...) {
    SESSION_ERROR(STREAM, FAILED, "cudaoverlap failed with an unknown exception");
  }
  return GST_FLOW_ERROR;
}

GstFlowReturn Session::submit(GstBuffer* buffer) {
  const int64_t arrived_ns = host_now_ns();  // the element's latency starts here
  // Owns the buffer from here on, on every path.
  auto info = std::make_shared<FrameInfo>(buffer);

  const GstFlowReturn flow = queue_.flow();
  if (flow != GST_FLOW_OK) {
    GST_DEBUG_OBJECT(element_, "refusing a buffer: %s", gst_flow_get_name(flow));
    return flow;
  }
  if ((!engine_ && !passthrough_) || !out_format_) {
    std::string refused;
    {
      std::lock_guard<std::mutex> lock(info_mutex_);
      refused = refused_caps_;
    }
    SESSION_ERROR(CORE, NEGOTIATION,
                  std::string("cudaoverlap received a buffer without accepted caps") +
                      (refused.empty() ? "" : " (it refused " + refused + ")") + ": " +
                      takes(settings_()));
    return GST_FLOW_NOT_NEGOTIATED;
  }
  // Properties under a control binding take their values for this frame,
  // as GstBaseTransform has them do; a kernel parameter that changed, here
  // or from another thread, marks the src pad for the renegotiation below.
  const GstClockTime stream_time = instruments_.stream_time(buffer);
  if (GST_CLOCK_TIME_IS_VALID(stream_time))
    gst_object_sync_values(GST_OBJECT(element_), stream_time);
  // Downstream asked for other caps (RECONFIGURE), or a kernel parameter
  // changed: negotiate again before this frame, as GstBaseTransform does.
  if (gst_pad_check_reconfigure(srcpad_) && in_caps_ != nullptr &&
      !configure(in_caps_, GST_SEQNUM_INVALID)) {
    gst_pad_mark_reconfigure(srcpad_);
    return GST_PAD_IS_FLUSHING(srcpad_) ? GST_FLOW_FLUSHING : GST_FLOW_NOT_NEGOTIATED;
  }
  // QoS: a frame downstream would show too late is dropped before it costs
  // an upload.
  if (instruments_.drop_late(element_, buffer)) return GST_FLOW_OK;
  if (passthrough_) return pass_through(std::move(info), arrived_ns);
  take_replacement_kernel();

  const FrameLayout in_layout = engine_->config().input;
  auto mapped = std::make_shared<MappedInput>();
  const std::string problem =
      mapped->map(buffer, in_info_, in_layout, in_cuda_ ? cuda_context_.handle : nullptr);
  if (!problem.empty()) {
    SESSION_ERROR(STREAM, FORMAT,
                  "cudaoverlap received a buffer that does not hold the frame its caps (" +
                      describe(in_info_, in_format_) + ") describe: " + problem +
                      "; the element before it sends truncated frames or wrong caps");
    return GST_FLOW_ERROR;
  }

  info->epoch = queue_.epoch();
  info->format = out_format_;
  InputFrame input;
  input.image = mapped->image(in_layout.format);
  if (out_cuda_) {
    // Out in GStreamer's CUDA memory: written there on the device.
    info->destination = cuda_output_.acquire();
    if (!info->destination) {
      SESSION_ERROR(RESOURCE, NO_SPACE_LEFT,
                    "cudaoverlap could not get a buffer of GStreamer's CUDA memory for " +
                        describe(out_format_->info, out_format_->layout.format) +
                        " (out of GPU memory?)");
      return GST_FLOW_ERROR;
    }
    input.destination = info->destination->image(out_format_->layout.format);
  }
  // Our pinned pool's memory uploads as it is; so does upstream's own memory
  // that keeps coming back, once pinned (upstream_pinning.h). Either stays
  // mapped and referenced until its upload completed; anything else is
  // staged inside submit(), and unmapped when this function returns.
  // memory_id names the pages for cuda-graphs (InputFrame::memory_id).
  // GStreamer's CUDA memory (InputFrame::on_device) is read on the device,
  // and the cpu backend reads every frame where it lies
  // (EngineConfig::host_in_place): both stay mapped until delivered.
  const bool in_place = device_->host_memory_is_device_memory();
  input.on_device = in_cuda_;
  input.pinned =
      !in_cuda_ && !in_place && buffer_is_pinned(buffer, device_.get(), &input.memory_id);
  if (!input.pinned && !in_cuda_ && !in_place && pin_upstream_.load())
    input.pinned = pin_upstream_memory(buffer, input.image, in_layout, device_, &input.memory_id) ==
                   UpstreamPin::kPinned;
  GST_LOG_OBJECT(element_, "%" GST_PTR_FORMAT " is %s", buffer,
                 input.on_device ? "CUDA memory: read on the device"
                 : in_place      ? "read where it lies (cpu backend)"
                 : input.pinned  ? "pinned: uploaded without staging"
                                 : "staged");
  if (input.pinned || input.on_device || in_place) input.keep_alive = mapped;
  const bool input_on_device = input.on_device || in_place;  // nothing crosses
  input.user = std::move(info);
  input.arrived_ns = arrived_ns;
  const Status status = engine_->submit(std::move(input));
  switch (status) {
    case Status::kOk:
      ++submitted_;
      instruments_.submitted(input_on_device ? 0 : in_layout.pixel_bytes());
      if (engine_->pulls()) {
        queue_.note_submitted();  // the task fetches it
        // Unless downstream stopped taking frames meanwhile: the task then
        // fetched what was in flight before this frame (release_unwanted),
        // and this one would keep its slot and upstream's buffer until the
        // next flush. Handed out here instead, to the queue, which drops it.
        if (queue_.flow() != GST_FLOW_OK) (void)engine_->drain();
      }
      return queue_.flow();
    case Status::kFlushing: {
      const GstFlowReturn now = queue_.flow();
      return now != GST_FLOW_OK ? now : GST_FLOW_FLUSHING;
    }
    case Status::kError:
      report(status);
      return GST_FLOW_ERROR;
  }
  return GST_FLOW_ERROR;
}

GstFlowReturn Session::pass_through(std::shared_ptr<FrameInfo> info, int64_t arrived_ns) {
  // No more frames waiting than a ring holds: upstream is held back as an
  // engine would hold it.
  if (!queue_.wait_room(static_cast<size_t>(std::max(passthrough_depth_, 1)))) return queue_.flow();
  // A crop meta the buffer carries from before upstream learnt that
  // downstream answers ALLOCATION now (configure() asked it to negotiate
  // again): the window copied out, since downstream may not take one.
  if (gst_buffer_get_video_crop_meta(info->input) != nullptr) {
    std::string problem;
    GstBuffer* window = copy_window(info->input, in_info_, in_format_, &problem);
    if (window == nullptr) {
      SESSION_ERROR(STREAM, FORMAT,
                    "cudaoverlap received a buffer that does not hold the frame its caps (" +
                        describe(in_info_, in_format_) + ") describe: " + problem);
      return GST_FLOW_ERROR;
    }
    gst_buffer_unref(info->input);
    info->input = window;
  }
  info->epoch = queue_.epoch();
  info->format = out_format_;
  FrameTiming timing;
  timing.arrived_ns = arrived_ns;
  timing.ready_ns = host_now_ns();
  const uint64_t epoch = info->epoch;
  queue_.push_frame(OutputFrame(nullptr, -1, submitted_, ImageRef{}, std::move(info), timing),
                    epoch);
  ++submitted_;
  instruments_.submitted();
  return queue_.flow();
}

bool Session::drain() { return !engine_ || report(engine_->drain()); }

void Session::resume_after_eos() {
  GST_DEBUG_OBJECT(element_, "a new stream or segment after downstream's EOS: flowing again");
  drain();                      // what is in flight goes nowhere: the flow is not OK
  gst_pad_pause_task(srcpad_);  // the task's last iteration has ended
  queue_.restart();
  submitted_ = 0;
  start_task();
}

gboolean Session::finish_after_flow(GstEvent* event, GstFlowReturn flow) {
  // Upstream has finished and will not see this flow return any more.
  if (flow == GST_FLOW_NOT_LINKED || flow < GST_FLOW_EOS) GST_ELEMENT_FLOW_ERROR(element_, flow);
  gst_pad_pause_task(srcpad_);  // nothing else pushes while EOS goes out
  return gst_pad_push_event(srcpad_, event);
}

gboolean Session::sink_event(GstEvent* event) {
  instruments_.sink_event(event);  // SEGMENT for QoS, FLUSH_STOP for the counters
  switch (GST_EVENT_TYPE(event)) {
    case GST_EVENT_FLUSH_START: {
      begin_flush();  // unblocks a waiting submit()
      // Downstream first, so a push the task is blocked in returns, then
      // wait for the task's current iteration.
      const gboolean ret = gst_pad_push_event(srcpad_, event);
      gst_pad_pause_task(srcpad_);
      return ret;
    }
    case GST_EVENT_FLUSH_STOP: {
      if (engine_) engine_->flush_stop();  // drops what was in flight
      queue_.restart();
      submitted_ = 0;
      const gboolean ret = gst_pad_push_event(srcpad_, event);
      start_task();
      return ret;
    }
    case GST_EVENT_EOS: {
      GstFlowReturn flow = queue_.flow();
      if (flow == GST_FLOW_OK) {
        // Every frame in flight goes out before EOS: drain() puts them all
        // in the queue, and EOS is queued behind them.
        if (!drain()) {
          gst_event_unref(event);
          return FALSE;
        }
        if (queue_.push_event(event, submitted_)) return TRUE;
        flow = queue_.flow();  // downstream answered meanwhile
      }
      if (flow == GST_FLOW_FLUSHING) {
        gst_event_unref(event);
        return FALSE;
      }
      return finish_after_flow(event, flow);
    }
    case GST_EVENT_CAPS: {
      GstCaps* caps = nullptr;
      gst_event_parse_caps(event, &caps);
      const bool ok = configure(caps, gst_event_get_seqnum(event));
      gst_event_unref(event);
      return ok;
    }
    case GST_EVENT_STREAM_START:
    case GST_EVENT_SEGMENT:
      if (queue_.flow() == GST_FLOW_EOS) resume_after_eos();
      break;
    default:
      break;
  }
  if (!GST_EVENT_IS_SERIALIZED(event))
    return gst_pad_event_default(sinkpad_, GST_OBJECT_CAST(element_), event);
  // Queued behind the frames submitted before it: it keeps its place.
  if (queue_.push_event(event, submitted_)) return TRUE;
  // Not flowing: sticky events are taken (upstream sends them again after a
  // flush), others refused.
  const bool sticky = GST_EVENT_IS_STICKY(event);
  gst_event_unref(event);
  return sticky;
}

gboolean Session::propose_allocation(GstQuery* query) {
  // Buffers passed through go to downstream as they are: its answer, once
  // what is queued (the caps among it) went out, as serialized queries do.
  if (passthrough_) return drain_for_query() && gst_pad_peer_query(srcpad_, query);
  // A crop meta is applied as the frame is mapped (input_frame.h), so
  // videocrop and decoders crop without a copy.
  gst_query_add_allocation_meta(query, GST_VIDEO_CROP_META_API_TYPE, nullptr);
  // GStreamer's CUDA memory: upstream's own pool, in the context the
  // pipeline shares, is read where it is; no pool from here.
  GstCaps* caps = nullptr;
  gst_query_parse_allocation(query, &caps, nullptr);
  if (caps_in_cuda_memory(caps)) {
    gst_query_add_allocation_meta(query, GST_VIDEO_META_API_TYPE, nullptr);
    return TRUE;
  }
  // The engine holds each input buffer until its upload is done, and
  // upstream writes the next: ring-size + 2, growing if upstream holds more
  // (max 0) rather than stalling it.
  const guint min_buffers = static_cast<guint>(settings_().ring_size) *
                                static_cast<guint>(std::max<size_t>(devices_.size(), 1)) +
                            2;
  // Pinned memory of our device: frames written there upload without a
  // staging copy. Without a device (not started), or without the pinned
  // memory for it, a plain pool.
  std::string problem;
  if (device_ && propose_pinned_pool(query, device_, min_buffers, &problem)) return TRUE;
  if (!problem.empty())
    GST_ELEMENT_WARNING(element_, RESOURCE, NO_SPACE_LEFT, ("cudaoverlap: %s", problem.c_str()),
                        (nullptr));
  return propose_video_pool(query, min_buffers);
}

bool Session::drain_for_query() { return drain() && queue_.wait_empty(); }

// ---------------------------------------------------------------------------
// Any thread: upstream events, queries

gboolean Session::src_event(GstEvent* event) {
  switch (GST_EVENT_TYPE(event)) {
    case GST_EVENT_QOS:
      instruments_.src_event(event);  // drop late frames
      break;
    case GST_EVENT_NAVIGATION: {
      GeometryTransform geometry;
      {
        std::lock_guard<std::mutex> lock(info_mutex_);
        geometry = geometry_;
      }
      event = navigation_to_input(event, geometry);  // a click lands on the pixel it shows
      break;
    }
    default:
      break;
  }
  return gst_pad_event_default(srcpad_, GST_OBJECT_CAST(element_), event);
}

void Session::add_own_latency(GstQuery* query) {
  // Every device's ring can hold frames waiting for an earlier one.
  const int ring_size =
      settings_().ring_size * static_cast<int>(std::max<size_t>(devices_.size(), 1));
  gint fps_n, fps_d;
  GstClockTime estimate;
  {
    std::lock_guard<std::mutex> lock(info_mutex_);
    fps_n = fps_n_;
    fps_d = fps_d_;
    estimate = latency_estimate_;
  }
  // Own latency: min as measured (the estimate until measured), max
  // ring-size frames.
  instruments_.add_own_latency(element_, query, fps_n, fps_d, ring_size, estimate);
}

void Session::note_refused_caps(GstCaps* caps) {
  const std::string text = caps_text(caps);
  GST_INFO_OBJECT(element_, "refusing caps %s", text.c_str());
  std::lock_guard<std::mutex> lock(info_mutex_);
  refused_caps_ = text;
}

void Session::check_caps_event(GstCaps* caps) {
  const SessionSettings settings = settings_();
  GstVideoInfo info;
  PixelFormat format;
  bool taken = gst_caps_is_fixed(caps) && video_info_from_caps(caps, &info, &format);
  if (taken) {
    // System memory, or GStreamer's CUDA memory (which ACCEPT_CAPS let in
    // only where the element shares the pipeline's CUDA context).
    GstCapsFeatures* features = gst_caps_get_features(caps, 0);
    taken = features == nullptr ||
            gst_caps_features_is_equal(features, GST_CAPS_FEATURES_MEMORY_SYSTEM_MEMORY) ||
            caps_in_cuda_memory(caps);
  }
  if (taken) {
    try {
      taken = !make_operation(settings.kernel, settings.params)->output_formats(format).empty();
    } catch (const Error&) {
      taken = true;  // the kernel's own error comes at start
    }
  }
  if (taken) return;
  SESSION_ERROR(CORE, NEGOTIATION,
                "cudaoverlap cannot process caps " + caps_text(caps) + ": " + takes(settings));
}

// ---------------------------------------------------------------------------
// Src pad task

void Session::push_next() {
  OutputItem item;
  uint64_t ticket = 0;
  switch (queue_.pop_or_pull(&item, &ticket)) {
    case OutputQueue::Next::kStopped:
      GST_DEBUG_OBJECT(element_, "not flowing (%s): pausing the task",
                       gst_flow_get_name(queue_.flow()));
      release_unwanted();
      gst_pad_pause_task(srcpad_);
      return;
    case OutputQueue::Next::kPull: {
      // A frame submitted and not fetched yet: wait for it here and push
      // it, or what the queue says is due before it. Nothing in flight
      // (another engine now, or drain() handed it out): no more fetching
      // until the next frame is noted.
      const std::shared_ptr<MultiEngine> engine = pulled_engine();
      OutputFrame frame = engine ? engine->deliver() : OutputFrame();
      if (!frame) {
        queue_.pulled_nothing(ticket);
        return;
      }
      const uint64_t epoch = frame_epoch(frame);
      if (!queue_.take_pulled(std::move(frame), epoch, &item)) return;
      break;
    }
    case OutputQueue::Next::kItem:
      break;
  }
  GstFlowReturn flow = GST_FLOW_OK;
  if (item.event != nullptr) {
    GST_LOG_OBJECT(element_, "pushing %" GST_PTR_FORMAT, item.event);
    // A refused event is not a flow error; refused caps show up as
    // not-negotiated on the next buffer.
    GstCaps* caps = nullptr;
    if (GST_EVENT_TYPE(item.event) == GST_EVENT_CAPS) {
      gst_event_parse_caps(item.event, &caps);
      gst_caps_ref(caps);
    }
    const gboolean pushed = gst_pad_push_event(srcpad_, item.event);
    // Downstream has its caps now: its ALLOCATION answer for frames in
    // CUDA memory, in data order (cuda_output.h).
    if (caps && pushed && caps_in_cuda_memory(caps)) {
      cuda_output_.ask_downstream(srcpad_, caps);
      GST_INFO_OBJECT(element_, "frames in CUDA memory go into %s pool",
                      cuda_output_.downstream_pool() ? "downstream's" : "the element's own");
    }
    if (caps) gst_caps_unref(caps);
  } else {
    try {
      const FrameTiming timing = item.frame.timing();
      const int device = item.frame.device();
      const std::shared_ptr<FrameInfo> info =
          std::dynamic_pointer_cast<FrameInfo>(item.frame.user());
      if (!info) throw Error("a frame came back without its input buffer");
      bool copied = false;
      GstBuffer* buffer = nullptr;
      const ImageRef& out = item.frame.image();
      // Nothing crosses back to the host where the frame goes out on the
      // device, nor on the cpu backend (EngineConfig::host_in_place).
      const uint64_t downloaded =
          item.frame && !info->destination && !device_->host_memory_is_device_memory()
              ? FrameLayout{out.format, out.width, out.height}.pixel_bytes()
              : 0;
      if (!item.frame) {
        buffer = std::exchange(info->input, nullptr);  // passed through: no slot
      } else {
        buffer = outputs_.make(std::move(item.frame), *info->format, info->input, &copied);
        // Upstream's buffer is not held while downstream holds ours.
        gst_buffer_unref(info->input);
        info->input = nullptr;
      }
      if (buffer == nullptr)
        throw Error("no buffer to copy a frame into (downstream holds " +
                    std::to_string(outputs_.held()) + " of the ring's buffers)");
      if (copied)
        GST_LOG_OBJECT(element_,
                       "downstream holds %d buffers: output copied to keep the ring "
                       "moving",
                       outputs_.held());
      TimeSpan push{host_now_ns(), -1};
      flow = gst_pad_push(srcpad_, buffer);
      push.end_ns = host_now_ns();
      instruments_.pushed(element_, timing, push, device, downloaded);  // stats, trace, latency
    } catch (const std::exception& e) {
      SESSION_ERROR(STREAM, FAILED, std::string("cudaoverlap failed: ") + e.what());
      flow = GST_FLOW_ERROR;
    }
  }
  GstEvent* eos = queue_.done(flow);
  if (flow == GST_FLOW_OK) return;

  GST_DEBUG_OBJECT(element_, "downstream returned %s: pausing the task", gst_flow_get_name(flow));
  release_unwanted();
  if (eos != nullptr && flow != GST_FLOW_FLUSHING) {
    // Upstream already sent EOS, so no chain() will return this flow to it;
    // its EOS, which was waiting behind the frames, still goes downstream.
    if (flow == GST_FLOW_NOT_LINKED || flow < GST_FLOW_EOS) GST_ELEMENT_FLOW_ERROR(element_, flow);
    gst_pad_push_event(srcpad_, eos);
  } else if (eos != nullptr) {
    gst_event_unref(eos);
  }
  gst_pad_pause_task(srcpad_);
}

}  // namespace cudaoverlap
