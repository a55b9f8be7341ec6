// QoS dropping; see qos.h.
#include "qos.h"

namespace cudaoverlap {

void QosTracker::set_enabled(bool enabled) {
  std::lock_guard<std::mutex> lock(mutex_);
  enabled_ = enabled;
}

bool QosTracker::enabled() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return enabled_;
}

void QosTracker::src_event(GstEvent* event) {
  if (GST_EVENT_TYPE(event) != GST_EVENT_QOS) return;
  GstQOSType type;
  gdouble proportion;
  GstClockTimeDiff diff;
  GstClockTime timestamp;
  gst_event_parse_qos(event, &type, &proportion, &diff, &timestamp);
  std::lock_guard<std::mutex> lock(mutex_);
  proportion_ = proportion;
  // As GstBaseTransform: downstream reached `timestamp` `diff` late, so a
  // frame before timestamp + diff cannot be shown in time.
  if (GST_CLOCK_TIME_IS_VALID(timestamp))
    earliest_ = diff > 0 || static_cast<GstClockTime>(-diff) < timestamp
                    ? static_cast<GstClockTime>(static_cast<GstClockTimeDiff>(timestamp) + diff)
                    : 0;
}

void QosTracker::sink_event(GstEvent* event) {
  switch (GST_EVENT_TYPE(event)) {
    case GST_EVENT_SEGMENT: {
      const GstSegment* segment = nullptr;
      gst_event_parse_segment(event, &segment);
      std::lock_guard<std::mutex> lock(mutex_);
      gst_segment_copy_into(segment, &segment_);
      have_segment_ = true;
      break;
    }
    case GST_EVENT_FLUSH_STOP: {
      std::lock_guard<std::mutex> lock(mutex_);
      earliest_ = GST_CLOCK_TIME_NONE;
      proportion_ = 1.0;
      break;
    }
    default:
      break;
  }
}

bool QosTracker::drop(GstElement* element, GstBuffer* buffer) {
  const GstClockTime timestamp = GST_BUFFER_PTS(buffer);
  GstClockTime running_time = GST_CLOCK_TIME_NONE;
  GstClockTime stream_time = GST_CLOCK_TIME_NONE;
  GstClockTimeDiff jitter = 0;
  double proportion = 1.0;
  uint64_t processed = 0;
  uint64_t dropped = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const bool checkable = enabled_ && have_segment_ && segment_.format == GST_FORMAT_TIME &&
                           GST_CLOCK_TIME_IS_VALID(timestamp) && GST_CLOCK_TIME_IS_VALID(earliest_);
    if (checkable) {
      running_time = gst_segment_to_running_time(&segment_, GST_FORMAT_TIME, timestamp);
      stream_time = gst_segment_to_stream_time(&segment_, GST_FORMAT_TIME, timestamp);
    }
    if (!GST_CLOCK_TIME_IS_VALID(running_time) || running_time > earliest_) {
      ++processed_;
      return false;
    }
    ++dropped_;
    jitter = GST_CLOCK_DIFF(running_time, earliest_);
    proportion = proportion_;
    processed = processed_;
    dropped = dropped_;
  }
  GstMessage* message = gst_message_new_qos(GST_OBJECT_CAST(element), FALSE, running_time,
                                            stream_time, timestamp, GST_BUFFER_DURATION(buffer));
  gst_message_set_qos_values(message, jitter, proportion, 1000000);
  gst_message_set_qos_stats(message, GST_FORMAT_BUFFERS, processed, dropped);
  gst_element_post_message(element, message);
  return true;
}

GstClockTime QosTracker::stream_time(GstBuffer* buffer) const {
  const GstClockTime timestamp = GST_BUFFER_PTS(buffer);
  std::lock_guard<std::mutex> lock(mutex_);
  if (!have_segment_ || segment_.format != GST_FORMAT_TIME || !GST_CLOCK_TIME_IS_VALID(timestamp))
    return GST_CLOCK_TIME_NONE;
  return gst_segment_to_stream_time(&segment_, GST_FORMAT_TIME, timestamp);
}

void QosTracker::reset() {
  std::lock_guard<std::mutex> lock(mutex_);
  gst_segment_init(&segment_, GST_FORMAT_UNDEFINED);
  have_segment_ = false;
  proportion_ = 1.0;
  earliest_ = GST_CLOCK_TIME_NONE;
  processed_ = 0;
  dropped_ = 0;
}

}  // namespace cudaoverlap
