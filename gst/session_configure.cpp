// Session::configure: an engine for new caps (see session.h).
#include <string>
#include <utility>
#include <vector>

#include "session.h"
#include "session_private.h"

namespace cudaoverlap {

using session_text::caps_text;
using session_text::describe;
using session_text::takes;

// Statistics measure the device stages of one frame in this many: enough
// for a mean and a maximum that move with the stream, without the event
// records and clock reads of every frame (host time on every thread).
constexpr int kStatsTimingInterval = 8;

namespace {

// The parts of `op` the engine times (FrameTiming::parts): all of them
// where frames run whole and there are at most FrameTiming::kMaxParts;
// none otherwise, so that stats and trace list only what they measure.
std::vector<std::string> measured_parts(const Operation& op, const EngineConfig& config,
                                        int bands) {
  std::vector<std::string> parts = op.parts(config.input.format, config.output.format);
  if (bands != 1 || parts.size() > static_cast<size_t>(FrameTiming::kMaxParts)) parts.clear();
  return parts;
}

}  // namespace

bool Session::upstream_is_live() {
  GstQuery* query = gst_query_new_latency();
  gboolean live = FALSE;
  if (gst_pad_peer_query(sinkpad_, query)) gst_query_parse_latency(query, &live, nullptr, nullptr);
  gst_query_unref(query);
  return live;
}

bool Session::configure(GstCaps* caps, guint32 seqnum) {
  GstVideoInfo in;
  PixelFormat format;
  if (!video_info_from_caps(caps, &in, &format)) {
    SESSION_ERROR(STREAM, FORMAT,
                  "cudaoverlap cannot process caps " + caps_text(caps) + ": " + takes(settings_()));
    return false;
  }
  SessionSettings settings = settings_();
  // A kernel=custom swapped in while playing stays what runs; a refused
  // change of the properties is not taken up by new caps either.
  if (const auto accepted = custom_swap_.accepted()) settings.params.custom = *accepted;
  // kernel=custom compiles for the architecture of the device it runs on.
  settings.params.custom.device = device_ ? device_->cuda_device() : -1;
  EngineConfig config;
  config.ring_size = settings.ring_size;
  config.mode = settings.mode;
  // The src pad task fetches each frame when it is done (one device): a
  // thread fewer to wake per frame than a worker handing it over.
  config.pull = true;
  // Device stage times: every frame's for `trace-file`, one frame's in
  // kStatsTimingInterval for the means and maxima of `stats`.
  config.timing = true;
  config.timing_interval = instruments_.tracing() ? 1 : kStatsTimingInterval;

  auto out = std::make_shared<OutputFormat>();
  GstCaps* chosen_caps = nullptr;
  const std::string refused =
      negotiate_output(settings.kernel, settings.params, in, format,
                       gst_structure_has_field(gst_caps_get_structure(caps, 0), "colorimetry"),
                       srcpad_, cuda_context_.shared != nullptr, &config.operation, &out->info,
                       &chosen_caps);
  if (!refused.empty()) {
    SESSION_ERROR(STREAM, FORMAT,
                  "cudaoverlap cannot process " + describe(in, format) + ": " + refused);
    return false;
  }
  // Negotiated from the table's raw formats, so always found.
  PixelFormat out_format = PixelFormat::kRGBA;
  pixel_format_from_gst(GST_VIDEO_INFO_FORMAT(&out->info), &out_format);
  out->layout = layout_from_info(out->info, out_format);
  out->default_layout = true;  // the engine writes GStreamer's own layout
  out->geometry.flip = config.operation->orientation();
  const Crop crop = config.operation->crop();
  out->geometry.crop_left = crop.left;
  out->geometry.crop_top = crop.top;
  out->geometry.in_width = GST_VIDEO_INFO_WIDTH(&in) - crop.left - crop.right;
  out->geometry.in_height = GST_VIDEO_INFO_HEIGHT(&in) - crop.top - crop.bottom;
  const FrameSizes placed = config.operation->sizes();
  out->geometry.scaled_width =
      placed.known() ? placed.picture_width() : GST_VIDEO_INFO_WIDTH(&out->info);
  out->geometry.scaled_height =
      placed.known() ? placed.picture_height() : GST_VIDEO_INFO_HEIGHT(&out->info);
  out->geometry.picture_x = placed.known() ? placed.dest_x : 0;
  out->geometry.picture_y = placed.known() ? placed.dest_y : 0;
  out->geometry.colours_change =
      GST_VIDEO_INFO_FORMAT(&in) != GST_VIDEO_INFO_FORMAT(&out->info) ||
      !gst_video_colorimetry_is_equal(&in.colorimetry, &out->info.colorimetry);
  config.input = layout_from_info(in, format);
  config.output = out->layout;
  config.graphs = settings.graphs;
  config.host_in_place = true;  // the cpu backend copies nothing
  // bands=0: a live upstream's frames come one at a time, which bands
  // bring out sooner (live_bands, engine.h); others run whole.
  config.bands = settings.bands > 0   ? settings.bands
                 : upstream_is_live() ? live_bands(config.input, config.output)
                                      : 1;

  // Caps the kernel leaves alone go on as they came (every field kept);
  // others are downstream's choice as it made it, or written from the
  // output info. In GStreamer's CUDA memory where downstream names it and
  // the pipeline's CUDA context is shared with one device; in system
  // memory otherwise, whatever memory the input is in.
  const bool in_cuda = caps_in_cuda_memory(caps);
  if (in_cuda && cuda_context_.shared == nullptr) {
    // Offered from the properties (gst-launch links in NULL), but the
    // element started without the context (another backend, device-id
    // changed since the context was taken).
    if (chosen_caps) gst_caps_unref(chosen_caps);
    SESSION_ERROR(CORE, NEGOTIATION,
                  "cudaoverlap cannot take GStreamer's CUDA memory: it runs on " +
                      describe_devices() +
                      " without the CUDA context it shares with the pipeline; put cudadownload "
                      "before it, or run it on one CUDA device");
    return false;
  }
  GstCaps* through = transform_caps(*config.operation, GST_PAD_SINK, caps);
  GstCaps* out_caps = in_memories(through, false);
  gst_caps_unref(through);
  GstCaps* in_system = in_memories(caps, false);  // the memory aside
  const bool kept = gst_caps_is_equal(out_caps, in_system);
  gst_caps_unref(in_system);
  if (!kept) {
    gst_caps_unref(out_caps);
    // In system memory, whichever downstream chose: decided below.
    out_caps = chosen_caps ? in_memories(chosen_caps, false) : gst_video_info_to_caps(&out->info);
  }
  if (chosen_caps) gst_caps_unref(chosen_caps);
  const bool out_cuda =
      cuda_context_.shared != nullptr && downstream_takes_cuda_memory(srcpad_, out_caps);
  if (out_cuda) {
    GstCaps* cuda = caps_with_cuda_memory(out_caps);
    gst_caps_unref(out_caps);
    out_caps = cuda;
  }
  // Nothing asked of the frames (Operation::passes_through_same_caps):
  // they go on untouched, and no engine runs.
  const bool passthrough = in_cuda == out_cuda &&
                           config.operation->passes_through_same_caps() &&
                           gst_video_info_is_equal(&in, &out->info);
  bool same_engine = !passthrough && engine_ && engine_->config() == config;
  if (passthrough && engine_) {
    // What is in flight goes out before the frames passed on.
    if (!report(engine_->drain())) {
      gst_caps_unref(out_caps);
      return false;
    }
    install_engine(nullptr);
  }
  if (passthrough) {
    GST_INFO_OBJECT(element_, "%s: nothing to do, buffers passed through",
                    describe(in, format).c_str());
  } else if (!same_engine && engine_) {
    // Only the operation's parameters changed (a property set while
    // playing): the running engine takes it between two frames where it
    // can, without draining and starting again.
    EngineConfig with_new_operation = engine_->config();
    with_new_operation.operation = config.operation;
    if (with_new_operation == config) {
      try {
        engine_->replace_operation(config.operation);
        same_engine = true;
        instruments_.set_steps(measured_parts(*config.operation, config, engine_->bands()));
        GST_DEBUG_OBJECT(element_, "kernel %s: new parameters from the next frame",
                         config.operation->name());
      } catch (const Error& e) {
        GST_DEBUG_OBJECT(element_, "restarting the engine for the new parameters: %s", e.what());
      }
    }
  }
  const bool same_caps = out_caps_ != nullptr && gst_caps_is_equal(out_caps, out_caps_);

  if (!same_engine && !passthrough) {
    if (!device_) {
      gst_caps_unref(out_caps);
      SESSION_ERROR(CORE, STATE_CHANGE, "cudaoverlap received caps before it was started");
      return false;
    }
    // What is in flight was made for the old configuration: out first.
    if (engine_ && !report(engine_->drain())) {
      gst_caps_unref(out_caps);
      return false;
    }
    MultiEngineCallbacks callbacks;
    callbacks.on_frame = [this](OutputFrame frame) { on_frame(std::move(frame)); };
    callbacks.on_lost = [this](const std::shared_ptr<FrameUser>& user) {
      // Its place in the order still counts for the events behind it.
      const auto* info = dynamic_cast<const FrameInfo*>(user.get());
      queue_.push_lost(info != nullptr ? info->epoch : UINT64_MAX);
      instruments_.lost();
    };
    callbacks.on_warning = [this](int device, const std::string& message) {
      on_device_warning(device, message);
    };
    callbacks.on_error = [this](const std::string& message) { on_error(message); };
    auto engine = std::make_unique<MultiEngine>(devices_, config, std::move(callbacks));
    instruments_.engine_starting();
    try {
      engine->start();
    } catch (const Error& e) {
      install_engine(nullptr);
      gst_caps_unref(out_caps);
      SESSION_ERROR(RESOURCE, NO_SPACE_LEFT,
                    "cudaoverlap cannot start on " + describe_devices() + " for " +
                        describe(in, format) + ": " + e.what());
      return false;
    }
    GST_INFO_OBJECT(
        element_, "engine started: %s, ring-size %d, kernel %s, %d band%s, %d of %d devices",
        describe(in, format).c_str(), config.ring_size, config.operation->name(), engine->bands(),
        engine->bands() == 1 ? "" : "s", engine->live_devices(), engine->devices());
    instruments_.engine_started(engine->bands());
    instruments_.set_steps(measured_parts(*config.operation, config, engine->bands()));
    install_engine(std::move(engine));
    // Per device: with at most ring-size - 1 wrapped buffers out in all,
    // every device keeps a slot downstream does not hold, and a frame dealt
    // to any of them gets one.
    outputs_.set_ring_size(config.ring_size);
  }

  // Frames out in CUDA memory go into buffers of a pool for these caps,
  // downstream's where it offers one in our context (cuda_output.h).
  if (out_cuda && !passthrough && (!same_caps || !cuda_output_.configured())) {
    const std::string problem = cuda_output_.configure(out_caps, cuda_context_.shared,
                                                       static_cast<guint>(config.ring_size) + 1);
    if (!problem.empty()) {
      gst_caps_unref(out_caps);
      SESSION_ERROR(RESOURCE, NO_SPACE_LEFT,
                    "cudaoverlap cannot send " + describe(out->info, out->layout.format) +
                        " in GStreamer's CUDA memory: " + problem);
      return false;
    }
    GST_INFO_OBJECT(element_, "output in CUDA memory");
  } else if (!out_cuda || passthrough) {
    cuda_output_.reset();
  }
  out_cuda_ = out_cuda && !passthrough;

  if (in_caps_ != caps) {
    gst_caps_ref(caps);
    if (in_caps_) gst_caps_unref(in_caps_);
    in_caps_ = caps;
  }
  in_info_ = in;
  in_cuda_ = in_cuda;
  in_format_ = format;
  out_format_ = out;
  // Into or out of passthrough mid-stream: ALLOCATION's answer changes
  // (downstream's, or ours with its crop meta), so upstream asks again.
  if (passthrough != passthrough_ && out_caps_ != nullptr)
    gst_pad_push_event(sinkpad_, gst_event_new_reconfigure());
  passthrough_ = passthrough;
  passthrough_depth_ = settings.ring_size;
  {
    std::lock_guard<std::mutex> lock(info_mutex_);
    fps_n_ = GST_VIDEO_INFO_FPS_N(&in);
    fps_d_ = GST_VIDEO_INFO_FPS_D(&in);
    geometry_ = out->geometry;
    latency_estimate_ = passthrough
                            ? 0
                            : first_latency_estimate(config.input.size + config.output.size,
                                                     device_ && device_->cuda_device() >= 0);
  }
  if (same_caps) {
    gst_caps_unref(out_caps);
    return true;
  }
  // After the frames submitted so far, which were made for the old caps.
  GST_DEBUG_OBJECT(element_, "output caps %" GST_PTR_FORMAT, out_caps);
  GstEvent* event = gst_event_new_caps(out_caps);
  if (seqnum != GST_SEQNUM_INVALID) gst_event_set_seqnum(event, seqnum);
  if (out_caps_) gst_caps_unref(out_caps_);
  out_caps_ = out_caps;  // the event holds its own reference
  if (!queue_.push_event(event, submitted_)) gst_event_unref(event);
  return true;
}

}  // namespace cudaoverlap
