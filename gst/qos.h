// QoS for the element: when downstream says it is late (a QOS event on the
// src pad), frames whose running time is already past the point downstream
// can still show are dropped in chain(), before their staging copy and
// upload, which would cost host and PCIe time for nothing. Works like
// GstBaseTransform's QoS: earliest time = event timestamp + jitter, a frame
// at or before it is dropped, and a QoS message (with processed/dropped
// counts) is posted for each drop.
#pragma once

#include <gst/gst.h>

#include <cstdint>
#include <mutex>

namespace cudaoverlap {

class QosTracker {
 public:
  // set_property / start: whether to drop at all (the `qos` property).
  void set_enabled(bool enabled);
  bool enabled() const;

  // Any thread: a QOS event travelling upstream through the src pad.
  void src_event(GstEvent* event);
  // Streaming thread: SEGMENT (running times) and FLUSH_STOP (forget).
  void sink_event(GstEvent* event);
  // Streaming thread: true when `buffer` is late; then a QoS message is
  // posted from `element`. Counts processed and dropped frames.
  bool drop(GstElement* element, GstBuffer* buffer);
  // Streaming thread: `buffer`'s stream time in the current TIME segment;
  // GST_CLOCK_TIME_NONE without one or without a timestamp.
  GstClockTime stream_time(GstBuffer* buffer) const;
  // Owner thread.
  void reset();

 private:
  // Lock order: a leaf; the message is posted after it is let go.
  mutable std::mutex mutex_;
  // Guarded by mutex_.
  bool enabled_ = true;
  GstSegment segment_{};
  bool have_segment_ = false;
  double proportion_ = 1.0;
  GstClockTime earliest_ = GST_CLOCK_TIME_NONE;  // running time
  uint64_t processed_ = 0;
  uint64_t dropped_ = 0;
};

}  // namespace cudaoverlap
