// Statistics, trace, QoS and measured latency of the element; see stats.h.
#include "stats.h"

#include <algorithm>

// Each frame's stay as the latency estimate counts it, at TRACE level:
// GST_DEBUG=cudaoverlap-latency:7 (scripts/latency-check.sh reads them).
GST_DEBUG_CATEGORY_STATIC(latency_debug);

namespace cudaoverlap {
namespace {

GstDebugCategory* latency_category() {
  static GstDebugCategory* category = [] {
    GST_DEBUG_CATEGORY_INIT(latency_debug, "cudaoverlap-latency", 0,
                            "cudaoverlap: each frame's own stay");
    return latency_debug;
  }();
  return category;
}

constexpr const char* kStageNames[kStatsStages] = {
    "wait-slot", "staging", "upload", "compute", "download", "push", "latency",
};

}  // namespace

// ---------------------------------------------------------------------------
// ElementStats

void ElementStats::Stage::add(double ms) {
  ++count;
  sum_ms += ms;
  max_ms = std::max(max_ms, ms);
}

void ElementStats::frame_in() {
  std::lock_guard<std::mutex> lock(mutex_);
  ++in_;
}

void ElementStats::frame_dropped() {
  std::lock_guard<std::mutex> lock(mutex_);
  ++dropped_;
}

void ElementStats::frame_submitted(uint64_t uploaded) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++in_flight_;
  uploaded_ += uploaded;
}

void ElementStats::set_devices(const std::vector<std::string>& names) {
  std::lock_guard<std::mutex> lock(mutex_);
  devices_.assign(names.size(), DeviceStats());
  for (size_t i = 0; i < names.size(); ++i) devices_[i].name = names[i];
}

void ElementStats::devices_live() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (DeviceStats& d : devices_) d.live = true;
}

void ElementStats::frame_lost() {
  std::lock_guard<std::mutex> lock(mutex_);
  --in_flight_;
}

void ElementStats::device_failed(int device) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (device >= 0 && static_cast<size_t>(device) < devices_.size())
    devices_[static_cast<size_t>(device)].live = false;
}

void ElementStats::frame_out(const FrameTiming& timing, const TimeSpan& push, int device,
                             uint64_t downloaded) {
  std::lock_guard<std::mutex> lock(mutex_);
  downloaded_ += downloaded;
  if (device >= 0 && static_cast<size_t>(device) < devices_.size()) {
    DeviceStats& d = devices_[static_cast<size_t>(device)];
    ++d.out;
    if (timing.upload.valid()) d.upload.add(timing.upload.ms());
    if (timing.compute.valid()) d.compute.add(timing.compute.ms());
    if (timing.download.valid()) d.download.add(timing.download.ms());
  }
  ++out_;
  if (timing.graph) ++graph_frames_;
  // May go below zero for a moment: the element counts a submission after
  // submit() returned, by when the src task may have pushed the frame.
  --in_flight_;
  const auto add = [&](StatsStage stage, const TimeSpan& span) {
    if (span.valid()) stages_[static_cast<int>(stage)].add(span.ms());
  };
  add(StatsStage::kWaitSlot, timing.wait_slot);
  add(StatsStage::kStaging, timing.staging);
  add(StatsStage::kUpload, timing.upload);
  add(StatsStage::kCompute, timing.compute);
  add(StatsStage::kDownload, timing.download);
  add(StatsStage::kPush, push);
  add(StatsStage::kLatency, TimeSpan{timing.arrived_ns, push.start_ns});
  if (timing.parts > 0 && static_cast<size_t>(timing.parts) == steps_.size())
    for (int k = 0; k < timing.parts; ++k) steps_[static_cast<size_t>(k)].add(timing.part(k).ms());
  if (first_out_ns_ < 0) first_out_ns_ = push.end_ns;
  last_out_ns_ = push.end_ns;
}

void ElementStats::set_bands(int bands) {
  std::lock_guard<std::mutex> lock(mutex_);
  bands_ = bands;
}

void ElementStats::set_steps(const std::vector<std::string>& names) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (names == step_names_) return;
  step_names_ = names;
  steps_.assign(names.size(), Stage{});
}

void ElementStats::flushed() {
  std::lock_guard<std::mutex> lock(mutex_);
  in_flight_ = 0;
}

void ElementStats::reset() {
  std::lock_guard<std::mutex> lock(mutex_);
  in_ = out_ = dropped_ = graph_frames_ = uploaded_ = downloaded_ = 0;
  in_flight_ = 0;
  stages_ = {};
  bands_ = 0;
  devices_.clear();
  step_names_.clear();
  steps_.clear();
  first_out_ns_ = last_out_ns_ = -1;
}

GstStructure* ElementStats::to_structure() const {
  std::lock_guard<std::mutex> lock(mutex_);
  GstStructure* s = gst_structure_new(
      "cudaoverlap-stats", "frames-in", G_TYPE_UINT64, static_cast<guint64>(in_), "frames-out",
      G_TYPE_UINT64, static_cast<guint64>(out_), "frames-dropped", G_TYPE_UINT64,
      static_cast<guint64>(dropped_), "frames-in-flight", G_TYPE_UINT,
      static_cast<guint>(std::max<int64_t>(in_flight_, 0)), "frames-staged", G_TYPE_UINT64,
      static_cast<guint64>(stages_[static_cast<int>(StatsStage::kStaging)].count), "bands",
      G_TYPE_UINT, static_cast<guint>(bands_), "frames-as-graphs", G_TYPE_UINT64,
      static_cast<guint64>(graph_frames_), "bytes-uploaded", G_TYPE_UINT64,
      static_cast<guint64>(uploaded_), "bytes-downloaded", G_TYPE_UINT64,
      static_cast<guint64>(downloaded_), nullptr);
  for (int i = 0; i < kStatsStages; ++i) {
    const Stage& stage = stages_[i];
    const std::string name = kStageNames[i];
    const double mean = stage.count > 0 ? stage.sum_ms / static_cast<double>(stage.count) : 0.0;
    gst_structure_set(s, (name + "-mean-ms").c_str(), G_TYPE_DOUBLE, mean,
                      (name + "-max-ms").c_str(), G_TYPE_DOUBLE, stage.max_ms, nullptr);
  }
  // Wall time per frame from the pushes: the interval between the first and
  // the last, over the frames after the first.
  double fps = 0.0;
  double efficiency = 0.0;
  if (out_ > 1 && last_out_ns_ > first_out_ns_) {
    const double wall_ms =
        static_cast<double>(last_out_ns_ - first_out_ns_) / 1e6 / static_cast<double>(out_ - 1);
    fps = 1000.0 / wall_ms;
    // How many stages work at once on average: about 1 when each frame is
    // finished before the next starts, up to 4 when all overlap. Only the
    // element's own work counts: waiting for a slot is backpressure, and a
    // push lasts as long as downstream (a syncing sink waits in it).
    double busy_ms = 0.0;
    for (StatsStage stage :
         {StatsStage::kStaging, StatsStage::kUpload, StatsStage::kCompute, StatsStage::kDownload}) {
      const Stage& st = stages_[static_cast<int>(stage)];
      if (st.count > 0) busy_ms += st.sum_ms / static_cast<double>(st.count);
    }
    efficiency = busy_ms / wall_ms;
  }
  gst_structure_set(s, "frames-per-second", G_TYPE_DOUBLE, fps, "overlap-efficiency", G_TYPE_DOUBLE,
                    efficiency, nullptr);
  GValue devices = G_VALUE_INIT;
  g_value_init(&devices, GST_TYPE_ARRAY);
  for (size_t i = 0; i < devices_.size(); ++i) {
    const DeviceStats& d = devices_[i];
    const auto mean = [](const Stage& stage) {
      return stage.count > 0 ? stage.sum_ms / static_cast<double>(stage.count) : 0.0;
    };
    GstStructure* entry = gst_structure_new(
        "cudaoverlap-device-stats", "index", G_TYPE_UINT, static_cast<guint>(i), "name",
        G_TYPE_STRING, d.name.c_str(), "live", G_TYPE_BOOLEAN, d.live ? TRUE : FALSE, "frames-out",
        G_TYPE_UINT64, static_cast<guint64>(d.out), "frames-per-second", G_TYPE_DOUBLE,
        out_ > 0 ? fps * static_cast<double>(d.out) / static_cast<double>(out_) : 0.0,
        "upload-mean-ms", G_TYPE_DOUBLE, mean(d.upload), "upload-max-ms", G_TYPE_DOUBLE,
        d.upload.max_ms, "compute-mean-ms", G_TYPE_DOUBLE, mean(d.compute), "compute-max-ms",
        G_TYPE_DOUBLE, d.compute.max_ms, "download-mean-ms", G_TYPE_DOUBLE, mean(d.download),
        "download-max-ms", G_TYPE_DOUBLE, d.download.max_ms, nullptr);
    GValue value = G_VALUE_INIT;
    g_value_init(&value, GST_TYPE_STRUCTURE);
    g_value_take_boxed(&value, entry);
    gst_value_array_append_and_take_value(&devices, &value);
  }
  gst_structure_take_value(s, "devices", &devices);
  GValue steps = G_VALUE_INIT;
  g_value_init(&steps, GST_TYPE_ARRAY);
  for (size_t i = 0; i < steps_.size(); ++i) {
    const Stage& st = steps_[i];
    GstStructure* entry =
        gst_structure_new("cudaoverlap-step-stats", "index", G_TYPE_UINT, static_cast<guint>(i),
                          "name", G_TYPE_STRING, step_names_[i].c_str(), "frames", G_TYPE_UINT64,
                          static_cast<guint64>(st.count), "compute-mean-ms", G_TYPE_DOUBLE,
                          st.count > 0 ? st.sum_ms / static_cast<double>(st.count) : 0.0,
                          "compute-max-ms", G_TYPE_DOUBLE, st.max_ms, nullptr);
    GValue value = G_VALUE_INIT;
    g_value_init(&value, GST_TYPE_STRUCTURE);
    g_value_take_boxed(&value, entry);
    gst_value_array_append_and_take_value(&steps, &value);
  }
  gst_structure_take_value(s, "steps", &steps);
  return s;
}

// ---------------------------------------------------------------------------
// StatsTicker

namespace {

struct TickerTarget {
  GstElement* element;  // a reference
  const ElementStats* stats;
};

gboolean post_stats(GstClock*, GstClockTime, GstClockID, gpointer user_data) {
  auto* target = static_cast<TickerTarget*>(user_data);
  gst_element_post_message(
      target->element,
      gst_message_new_element(GST_OBJECT_CAST(target->element), target->stats->to_structure()));
  return TRUE;
}

void free_target(gpointer user_data) {
  auto* target = static_cast<TickerTarget*>(user_data);
  gst_object_unref(target->element);
  delete target;
}

}  // namespace

void StatsTicker::start(GstElement* element, const ElementStats* stats, guint interval_ms) {
  stop();
  if (interval_ms == 0) return;
  GstClock* clock = gst_system_clock_obtain();
  const GstClockTime interval = static_cast<GstClockTime>(interval_ms) * GST_MSECOND;
  id_ = gst_clock_new_periodic_id(clock, gst_clock_get_time(clock) + interval, interval);
  gst_object_unref(clock);
  auto* target = new TickerTarget{GST_ELEMENT(gst_object_ref(element)), stats};
  if (gst_clock_id_wait_async(id_, post_stats, target, free_target) != GST_CLOCK_OK) {
    GST_WARNING_OBJECT(element, "cannot schedule the stats messages");
    stop();
  }
}

void StatsTicker::stop() {
  if (id_ == nullptr) return;
  // After this no new call starts; one already running holds its own
  // reference to the element, and the stats live as long as the element.
  gst_clock_id_unschedule(id_);
  gst_clock_id_unref(id_);
  id_ = nullptr;
}

// ---------------------------------------------------------------------------
// LatencyEstimate

GstClockTime first_latency_estimate(size_t bytes, bool cuda) {
  constexpr double kCudaBytesPerNs = 10.0;
  constexpr double kCpuBytesPerNs = 2.0;
  constexpr GstClockTime kFixedNs = 200000;
  return kFixedNs + static_cast<GstClockTime>(static_cast<double>(bytes) /
                                              (cuda ? kCudaBytesPerNs : kCpuBytesPerNs));
}

int64_t LatencyEstimate::percentile99() {
  sorted_.assign(window_.begin(), window_.end());
  const size_t at = (sorted_.size() - 1) * 99 / 100;
  std::nth_element(sorted_.begin(), sorted_.begin() + static_cast<std::ptrdiff_t>(at),
                   sorted_.end());
  return sorted_[at];
}

bool LatencyEstimate::add(int64_t stay_ns) {
  // With a 10 % margin, rounded up to 10 us, so that ordinary jitter does
  // not announce a new latency with every frame.
  const auto with_margin = [](int64_t ns) {
    const int64_t step = 10000;
    return (ns + ns / 10 + step - 1) / step * step;
  };
  std::lock_guard<std::mutex> lock(mutex_);
  if (++seen_ <= kSkip) return false;
  if (window_.size() < kWindow) {
    window_.push_back(stay_ns);
  } else {
    window_[next_] = stay_ns;
    next_ = (next_ + 1) % kWindow;
  }
  const int64_t measured = seen_ - kSkip;
  if (measured < kWarmup) return false;
  // Raised only when a frame stayed longer than reported (it was late);
  // looked at for a lower value every kLowerEvery frames.
  const bool late = stay_ns > reported_ns_;
  const bool lower_tick = measured % kLowerEvery == 0;
  if (reported_ns_ >= 0 && !late && !lower_tick) return false;
  const int64_t value = with_margin(percentile99());
  const bool raise = reported_ns_ < 0 || (late && value > reported_ns_);
  const bool lower = lower_tick && value < reported_ns_ - std::max(reported_ns_ / 10, kMinLowerNs);
  if (!raise && !lower) return false;
  reported_ns_ = value;
  return true;
}

GstClockTime LatencyEstimate::own(GstClockTime estimate) const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (reported_ns_ >= 0) return static_cast<GstClockTime>(reported_ns_);
  return GST_CLOCK_TIME_IS_VALID(estimate) ? estimate : 0;
}

void LatencyEstimate::reset() {
  std::lock_guard<std::mutex> lock(mutex_);
  seen_ = 0;
  window_.clear();
  next_ = 0;
  reported_ns_ = -1;
}

// ---------------------------------------------------------------------------
// Instruments

void Instruments::set_stats_interval(guint ms) {
  std::lock_guard<std::mutex> lock(settings_mutex_);
  stats_interval_ms_ = ms;
}

guint Instruments::stats_interval() const {
  std::lock_guard<std::mutex> lock(settings_mutex_);
  return stats_interval_ms_;
}

void Instruments::set_trace_file(const std::string& path) {
  std::lock_guard<std::mutex> lock(settings_mutex_);
  trace_file_ = path;
}

std::string Instruments::trace_file() const {
  std::lock_guard<std::mutex> lock(settings_mutex_);
  return trace_file_;
}

std::string Instruments::start(GstElement* element, const std::vector<std::string>& devices) {
  stats_.reset();
  stats_.set_devices(devices);
  latency_.reset();
  const bool qos = qos_.enabled();
  qos_.reset();
  qos_.set_enabled(qos);
  pushed_ = 0;
  last_push_end_ns_ = -1;
  std::string path;
  guint interval_ms;
  {
    std::lock_guard<std::mutex> lock(settings_mutex_);
    path = trace_file_;
    interval_ms = stats_interval_ms_;
  }
  ticker_.start(element, &stats_, interval_ms);
  if (path.empty()) return {};
  gchar* name = gst_element_get_name(element);
  const std::string problem =
      trace_.open(path, name, devices.size() > 1 ? devices : std::vector<std::string>());
  g_free(name);
  return problem;
}

void Instruments::stop(GstElement* element) {
  ticker_.stop();
  trace_.close();
  warn_trace_failure(element);
}

void Instruments::warn_trace_failure(GstElement* element) {
  const std::string failure = trace_.take_failure();
  if (failure.empty() || element == nullptr) return;
  GST_ELEMENT_WARNING(element, RESOURCE, WRITE, ("cudaoverlap: %s", failure.c_str()), (nullptr));
}

bool Instruments::drop_late(GstElement* element, GstBuffer* buffer) {
  stats_.frame_in();
  if (!qos_.drop(element, buffer)) return false;
  stats_.frame_dropped();
  GST_LOG_OBJECT(element, "QoS: dropped a late frame at %" GST_TIME_FORMAT,
                 GST_TIME_ARGS(GST_BUFFER_PTS(buffer)));
  return true;
}

void Instruments::add_own_latency(GstElement* element, GstQuery* query, gint fps_n, gint fps_d,
                                  int ring_size, GstClockTime estimate) const {
  gboolean live;
  GstClockTime min, max;
  gst_query_parse_latency(query, &live, &min, &max);
  const bool have_rate = fps_n > 0 && fps_d > 0;
  const GstClockTime frame =
      have_rate ? gst_util_uint64_scale_int(GST_SECOND, fps_d, fps_n) : GST_CLOCK_TIME_NONE;
  const GstClockTime own = latency_.own(estimate);
  const GstClockTime buffered = static_cast<GstClockTime>(ring_size) * (have_rate ? frame : own);
  min += own;
  if (GST_CLOCK_TIME_IS_VALID(max)) max += std::max(buffered, own);
  GST_DEBUG_OBJECT(element,
                   "latency: own %" GST_TIME_FORMAT ", total live %d, min %" GST_TIME_FORMAT
                   ", max %" GST_TIME_FORMAT,
                   GST_TIME_ARGS(own), live, GST_TIME_ARGS(min), GST_TIME_ARGS(max));
  gst_query_set_latency(query, live, min, max);
}

void Instruments::sink_event(GstEvent* event) {
  qos_.sink_event(event);
  if (GST_EVENT_TYPE(event) == GST_EVENT_FLUSH_STOP) stats_.flushed();
}

void Instruments::pushed(GstElement* element, const FrameTiming& timing, const TimeSpan& push,
                         int device, uint64_t downloaded) {
  stats_.frame_out(timing, push, device, downloaded);
  trace_.write_frame(pushed_++, timing, push, device);
  warn_trace_failure(element);
  // The element's own latency (LatencyEstimate): arrival to ready, less a
  // wait for a slot downstream holds, plus what it took from then to the
  // push (fetching the frame, a copy), counted from when this task was free
  // again where it was still blocked in the previous push.
  const int64_t previous_push_end_ns = last_push_end_ns_;
  last_push_end_ns_ = push.end_ns;
  if (timing.arrived_ns < 0 || timing.ready_ns < timing.arrived_ns) return;
  const int64_t waited_ns =
      timing.wait_slot.valid() ? timing.wait_slot.end_ns - timing.wait_slot.start_ns : 0;
  const int64_t free_ns = std::max(timing.ready_ns, previous_push_end_ns);
  const int64_t stay_ns = std::max<int64_t>(0, timing.ready_ns - timing.arrived_ns - waited_ns) +
                          std::max<int64_t>(0, push.start_ns - free_ns);
  GST_CAT_TRACE_OBJECT(latency_category(), element,
                       "stay %" G_GINT64_FORMAT " ns: arrived to ready %" G_GINT64_FORMAT
                       ", of which waiting for a slot %" G_GINT64_FORMAT
                       ", ready to delivered %" G_GINT64_FORMAT ", ready to push %" G_GINT64_FORMAT
                       ", previous push ended %" G_GINT64_FORMAT " after ready",
                       stay_ns, timing.ready_ns - timing.arrived_ns, waited_ns,
                       timing.delivered_ns - timing.ready_ns, push.start_ns - timing.ready_ns,
                       previous_push_end_ns - timing.ready_ns);
  if (!latency_.add(stay_ns)) return;
  GST_INFO_OBJECT(element, "measured latency is now %" GST_TIME_FORMAT ": asking to recompute",
                  GST_TIME_ARGS(latency_.own(0)));
  gst_element_post_message(element, gst_message_new_latency(GST_OBJECT_CAST(element)));
}

}  // namespace cudaoverlap
