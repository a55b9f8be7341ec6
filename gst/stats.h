// What the element can tell about itself while it runs: per-stage times and
// frame counters (the `stats` property and the `stats-interval` bus
// messages), the Chrome/Perfetto trace (`trace-file`), QoS dropping (`qos`)
// and the latency it reports in the LATENCY query, measured instead of
// guessed.
//
// Where the times come from: the engine measures each frame's device stages
// with timing events and its host stages (waiting for a slot, staging copy)
// with the host clock (FrameTiming, pipeline-core/engine.h); the element adds
// the push (the src pad task times gst_pad_push) and the time from chain()
// to the push, which is what GStreamer's latency tracer calls the element's
// latency. Everything is read after the frame left the engine, on the src pad
// task, so nothing here waits for the device or sits on the upload path.
//
// The element calls in from its pads, its task and its property functions;
// see each method for which thread. Logic lives here, the element only hooks.
#pragma once

#include <gst/gst.h>

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine.h"
#include "qos.h"
#include "trace_writer.h"

namespace cudaoverlap {

// Stages in the order of the `stats` structure. kLatency is not a stage but
// the whole stay of a frame in the element: chain() to the start of its push.
enum class StatsStage { kWaitSlot, kStaging, kUpload, kCompute, kDownload, kPush, kLatency };
constexpr int kStatsStages = 7;

// Counters and per-stage mean/max since start() (or reset()).
class ElementStats {
 public:
  // Streaming thread.
  void frame_in();
  void frame_dropped();
  // `uploaded`: the bytes its upload moves to the device.
  void frame_submitted(uint64_t uploaded);
  // Src pad task, after each push; `device` computed it (an index into
  // set_devices' names).
  // `downloaded`: the bytes its download moved back.
  void frame_out(const FrameTiming& timing, const TimeSpan& push, int device = 0,
                 uint64_t downloaded = 0);
  // Owner thread, after reset(): the devices frames are spread over.
  void set_devices(const std::vector<std::string>& names);
  // Any thread: a device failed and was left out.
  void device_failed(int device);
  // Streaming thread, before an engine starts: every device is live again.
  void devices_live();
  // Engine worker: a frame submitted was lost with its device.
  void frame_lost();
  // Streaming thread, FLUSH_STOP: frames in flight were discarded.
  void flushed();
  // Streaming thread, an engine started: the bands each frame is split into.
  void set_bands(int bands);
  // Streaming thread, an engine started: the names of the operation's parts
  // (Operation::parts: a chain's launches), whose compute times frames
  // then carry; empty: none are measured.
  void set_steps(const std::vector<std::string>& names);
  // Owner thread.
  void reset();
  // Any thread. A new "cudaoverlap-stats" structure (transfer full):
  // frames-in/out/dropped (guint64), frames-in-flight (guint),
  // frames-staged (guint64: frames copied into pinned staging memory),
  // bytes-uploaded and bytes-downloaded (guint64: the frames' pixels
  // copied to the device and back, row padding left out; on the cpu
  // backend, to and from its stand-in's memory),
  // <stage>-mean-ms / <stage>-max-ms (gdouble) for each stage,
  // frames-per-second and overlap-efficiency (gdouble): the mean staging,
  // upload, compute and download times over the wall time per frame;
  // bands (guint): what the running engine splits frames into, 0 before
  // one started (the `bands` property may say 0, automatic);
  // frames-as-graphs (guint64): of the frames out, those enqueued as one
  // CUDA graph launch (cuda-graphs: frames that found no other in flight,
  // after the element idled at least as long as the frame before took);
  // devices (GST_TYPE_ARRAY of "cudaoverlap-device-stats" structures, one
  // per device in the order given): index (guint), name (string), live
  // (gboolean: false once it failed and was left out), frames-out
  // (guint64), frames-per-second (gdouble: its share of the element's),
  // upload/compute/download-mean-ms and -max-ms (gdouble). The fields
  // above are the totals over all devices. steps (GST_TYPE_ARRAY of
  // "cudaoverlap-step-stats" structures, one per launch of a chain whose
  // frames run whole, not in bands; empty otherwise): index (guint), name
  // (string: "step 2 (blur)", "steps 3-5 (balance, invert, convert)" for a
  // fused launch), frames (guint64: those measured), compute-mean-ms and
  // -max-ms (gdouble).
  GstStructure* to_structure() const;

 private:
  struct Stage {
    uint64_t count = 0;
    double sum_ms = 0.0;
    double max_ms = 0.0;
    void add(double ms);
  };

  // Lock order: a leaf; nothing else is called with it held.
  mutable std::mutex mutex_;
  // Guarded by mutex_.
  uint64_t in_ = 0;
  uint64_t out_ = 0;
  uint64_t dropped_ = 0;
  uint64_t graph_frames_ = 0;
  uint64_t uploaded_ = 0;
  uint64_t downloaded_ = 0;
  int64_t in_flight_ = 0;
  int bands_ = 0;
  std::array<Stage, kStatsStages> stages_{};
  struct DeviceStats {
    std::string name;
    bool live = true;
    uint64_t out = 0;
    Stage upload, compute, download;
  };
  std::vector<DeviceStats> devices_;
  std::vector<std::string> step_names_;
  std::vector<Stage> steps_;
  int64_t first_out_ns_ = -1;
  int64_t last_out_ns_ = -1;
};

// Posts the stats as an element message every interval, from the system
// clock's thread, so that an application sees them also while no frame
// flows (a stalled pipeline shows as frames-out standing still).
class StatsTicker {
 public:
  StatsTicker() = default;
  ~StatsTicker() { stop(); }
  StatsTicker(const StatsTicker&) = delete;
  StatsTicker& operator=(const StatsTicker&) = delete;

  // Owner thread. The clock entry holds a reference to `element` until
  // stop(), which the element calls at PAUSED->READY.
  void start(GstElement* element, const ElementStats* stats, guint interval_ms);
  void stop();

 private:
  GstClockID id_ = nullptr;  // owner thread only
};

// The element's own latency, as measured: how long a frame takes from
// chain() to its push (Instruments::pushed), less any wait for a slot that
// downstream still holds and any time the src pad task was still blocked
// in the previous push once the frame was ready (a syncing sink holds each
// push: that is the sink's latency, and counting it would feed back, the
// more reported, the longer the sink holds each push). Before enough frames were measured, the
// caller's estimate for the caps is reported. Then the 99th percentile of
// the last kWindow stays, plus 10 %: a high quantile rather than the
// longest, so one frame in a hundred that the sink's own processing
// deadline absorbs does not delay every frame; over a window, so the report
// follows the stays down as well as up. Raised when a frame stayed longer
// than reported and the percentile passed it too; lowered once the
// percentile with its margin falls 10 % below (and at least kMinLowerNs),
// looked at every kLowerEvery frames, so that sub-millisecond jitter does
// not have the pipeline's latency set again and again. Each change is announced with a LATENCY
// message so that the pipeline asks again.
class LatencyEstimate {
 public:
  // Src pad task: one frame's stay. True when the reported value changed.
  bool add(int64_t stay_ns);
  // Any thread: what to add to the LATENCY query's min; `estimate` until
  // measured.
  GstClockTime own(GstClockTime estimate) const;
  void reset();  // owner thread

  static constexpr int kSkip = 5;     // first frames: lazy module loads, cold caches
  static constexpr int kWarmup = 10;  // frames measured before the first report
  static constexpr size_t kWindow = 128;
  static constexpr int kLowerEvery = 16;
  static constexpr int64_t kMinLowerNs = 50000;

 private:
  int64_t percentile99();     // of window_, with mutex_ held
  mutable std::mutex mutex_;  // a leaf
  // Guarded by mutex_.
  int64_t seen_ = 0;
  std::vector<int64_t> window_;  // the last kWindow stays, as a ring
  std::vector<int64_t> sorted_;  // percentile99's, kept to spare an allocation
  size_t next_ = 0;
  int64_t reported_ns_ = -1;  // -1: not measured yet
};

// The latency reported for a frame of `bytes` (input and output together)
// before any was measured: those bytes at a modest copy rate (10 GB/s over
// PCIe on the cuda backend; 2 GB/s, staging and one pass of the kernel, on
// the cpu backend), plus 0.2 ms for the calls and wake-ups. An honest
// upper estimate for the caps, replaced after kSkip + kWarmup frames.
GstClockTime first_latency_estimate(size_t bytes, bool cuda);

class Instruments {
 public:
  // Any thread (the element's property functions): the settings behind
  // `stats-interval`, `trace-file` and `qos`, read at start(); `stats` now
  // (transfer full).
  void set_stats_interval(guint ms);
  guint stats_interval() const;
  void set_trace_file(const std::string& path);
  std::string trace_file() const;
  void set_qos(bool enabled) { qos_.set_enabled(enabled); }
  bool qos() const { return qos_.enabled(); }
  GstStructure* stats() const { return stats_.to_structure(); }
  // Streaming thread, after start(): a trace is being written, which needs
  // every frame's device stages; statistics make do with a sample.
  bool tracing() { return trace_.is_open(); }

  // Owner thread, READY->PAUSED: resets the counters, opens the trace file
  // (with lanes per device when there are several) and starts the stats
  // messages; `devices` names the devices frames are spread over. Returns
  // an error sentence, or empty.
  std::string start(GstElement* element, const std::vector<std::string>& devices = {});
  // Any thread: device `device` failed and was left out (stats).
  void device_failed(int device) { stats_.device_failed(device); }
  // Streaming thread, before an engine starts (devices live again).
  void engine_starting() { stats_.devices_live(); }
  // Engine worker: a frame was lost with a failed device.
  void lost() { stats_.frame_lost(); }
  // Owner thread, PAUSED->READY (and finalize): stops the messages and
  // closes the trace. Twice is fine. A trace file that could not be
  // written (here or while frames were pushed) is a WARNING message on
  // `element`'s bus, once; none when `element` is null (finalize).
  void stop(GstElement* element);

  // Streaming thread, chain(): counts the frame; true when QoS says it is
  // too late to be worth uploading, in which case it is counted as dropped
  // and a QoS message is posted.
  bool drop_late(GstElement* element, GstBuffer* buffer);
  // Streaming thread: `buffer`'s stream time (QosTracker::stream_time).
  GstClockTime stream_time(GstBuffer* buffer) const { return qos_.stream_time(buffer); }
  void submitted(uint64_t uploaded = 0) { stats_.frame_submitted(uploaded); }
  // Streaming thread, an engine started.
  void engine_started(int bands) { stats_.set_bands(bands); }
  // Streaming thread, an engine started or took a new operation: its parts
  // (Operation::parts), whose times stats and trace show one by one.
  void set_steps(const std::vector<std::string>& names) {
    stats_.set_steps(names);
    trace_.set_steps(names);
  }
  // Streaming thread, every sink event before the element handles it
  // (SEGMENT for QoS, FLUSH_STOP for the counters).
  void sink_event(GstEvent* event);
  // Any thread, every src pad event (QOS).
  void src_event(GstEvent* event) { qos_.src_event(event); }
  // Src pad task, after a frame's push returned: statistics, trace and a
  // LATENCY message when the measured latency changed.
  void pushed(GstElement* element, const FrameTiming& timing, const TimeSpan& push, int device = 0,
              uint64_t downloaded = 0);
  // Any thread, src pad LATENCY query already answered upstream: adds the
  // element's own. Min: the measured stay of a frame (LatencyEstimate),
  // `estimate` until measured. Max: ring-size frames can wait in the
  // element.
  void add_own_latency(GstElement* element, GstQuery* query, gint fps_n, gint fps_d, int ring_size,
                       GstClockTime estimate) const;

 private:
  // Posts the trace writer's failure, if any, as a warning (once).
  void warn_trace_failure(GstElement* element);

  // Settings; guarded by settings_mutex_ (lock order: the element's object
  // lock, then settings_mutex_; nothing is called with it held).
  mutable std::mutex settings_mutex_;
  guint stats_interval_ms_ = 0;
  std::string trace_file_;

  ElementStats stats_;
  StatsTicker ticker_;
  LatencyEstimate latency_;
  QosTracker qos_;
  TraceWriter trace_;
  uint64_t pushed_ = 0;            // src pad task: frame number in the trace
  int64_t last_push_end_ns_ = -1;  // src pad task: when the previous push returned
};

}  // namespace cudaoverlap
