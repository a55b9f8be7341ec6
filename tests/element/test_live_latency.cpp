// The latency the element reports in a live pipeline, which a syncing sink
// adds to every frame: its own processing, not the time the sink held its
// pushes. (scripts/latency-check.sh compares the source-to-sink figures
// with the peers'; meson runs it at several settings.)
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

#include "element_test_util.h"

namespace cudaoverlap_test {
namespace {

using namespace std::chrono_literals;

// A sink slow for a while: it holds every buffer 40 ms (longer than the
// 16.7 ms between frames) whose timestamp falls in [1 s, 1.5 s), 1.2 s of
// holding in all, and says when that began and ended.
struct SlowSink {
  std::atomic<bool> began{false};
  std::atomic<bool> ended{false};
  static GstPadProbeReturn probe(GstPad*, GstPadProbeInfo* info, gpointer self) {
    auto* s = static_cast<SlowSink*>(self);
    const GstClockTime pts = GST_BUFFER_PTS(GST_PAD_PROBE_INFO_BUFFER(info));
    if (!GST_CLOCK_TIME_IS_VALID(pts) || pts < GST_SECOND) return GST_PAD_PROBE_OK;
    if (pts < GST_SECOND + GST_SECOND / 2) {
      s->began = true;
      std::this_thread::sleep_for(40ms);
    } else {
      s->ended = true;
    }
    return GST_PAD_PROBE_OK;
  }
};

// Waits for `flag` (10 s at most).
bool wait_for(const std::atomic<bool>& flag) {
  for (int i = 0; i < 1000 && !flag; ++i) std::this_thread::sleep_for(10ms);
  return flag;
}

TEST(LiveLatency, ASinkSlowForAWhileDoesNotRaiseWhatTheElementReports) {
  SKIP_WITHOUT_BACKEND();
  GError* error = nullptr;
  GstElement* pipeline = gst_parse_launch(
      ("videotestsrc is-live=true num-buffers=600 pattern=solid-color ! "
       "video/x-raw,format=RGBA,width=320,height=240,framerate=60/1 ! cudaoverlap name=overlap " +
       backend_properties() + " ! fakesink name=sink sync=true")
          .c_str(),
      &error);
  ASSERT_EQ(error, nullptr) << error->message;
  GstElement* overlap = gst_bin_get_by_name(GST_BIN(pipeline), "overlap");
  GstElement* sink = gst_bin_get_by_name(GST_BIN(pipeline), "sink");
  GstPad* sink_pad = gst_element_get_static_pad(sink, "sink");
  SlowSink slow;
  gst_pad_add_probe(sink_pad, GST_PAD_PROBE_TYPE_BUFFER, SlowSink::probe, &slow, nullptr);
  ASSERT_NE(gst_element_set_state(pipeline, GST_STATE_PLAYING), GST_STATE_CHANGE_FAILURE);
  const auto own_ms = [&] {
    const GstClockTime own = own_latency(overlap);
    EXPECT_TRUE(GST_CLOCK_TIME_IS_VALID(own)) << "the LATENCY query failed";
    return GST_CLOCK_TIME_IS_VALID(own) ? static_cast<double>(own) / 1e6 : 1e9;
  };
  // Before, during (0.6 s into the sink's holding), and a second after.
  std::this_thread::sleep_for(900ms);
  const double before = own_ms();
  ASSERT_TRUE(wait_for(slow.began)) << "the sink never became slow";
  std::this_thread::sleep_for(600ms);
  ASSERT_FALSE(slow.ended) << "the slow stretch ended before it was measured";
  const double during = own_ms();
  ASSERT_TRUE(wait_for(slow.ended)) << "the sink never caught up";
  std::this_thread::sleep_for(1000ms);
  const double after = own_ms();
  // The sink's holding (40 ms a frame) adds nothing to the report, during
  // or after. The slack is the cpu backend's scheduling on a small shared
  // machine, where four thread hand-offs a frame have shown p99 stays of
  // up to 6 ms (9 under ThreadSanitizer): below the hold it would count.
  const bool sanitized = std::getenv("CUDAOVERLAP_SANITIZER_PRELOAD") != nullptr;
  const double slack_ms = std::max(sanitized ? 15.0 : 5.0, before);
  EXPECT_LE(during, before + slack_ms) << "the sink's holding was counted as the element's";
  EXPECT_LE(after, before + slack_ms) << "the report did not come back down within a second";
  // And the report is the element's own work, a fraction of a millisecond
  // for a 320x240 copy, its 99th percentile a few on a busy 2-core
  // machine, well under the 16.7 ms frame interval a counted wait would
  // add; not under a sanitizer, whose every memory access makes a frame
  // take tens of milliseconds.
  if (!sanitized) {
    EXPECT_LE(before, 8.0);
    EXPECT_LE(during, 8.0);
    EXPECT_LE(after, 8.0);
  }
  run_or_die("pipeline to NULL", 10s, [&] { gst_element_set_state(pipeline, GST_STATE_NULL); });
  gst_object_unref(sink_pad);
  gst_object_unref(sink);
  gst_object_unref(overlap);
  gst_object_unref(pipeline);
}

}  // namespace
}  // namespace cudaoverlap_test
