// The latency the element reports in a live pipeline, which a syncing sink
// adds to every frame: its own processing, not the time the sink held its
// pushes. (scripts/latency-check.sh compares the source-to-sink figures
// with the peers'; meson runs it at several settings.)
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
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

// What the element reported before, during and after the sink's slow
// stretch, in milliseconds.
struct Reports {
  double before = 0, during = 0, after = 0;
};

// Runs the pipeline once and reads the element's report three times.
Reports measure() {
  Reports r;
  GError* error = nullptr;
  GstElement* pipeline = gst_parse_launch(
      ("videotestsrc is-live=true num-buffers=600 pattern=solid-color ! "
       "video/x-raw,format=RGBA,width=320,height=240,framerate=60/1 ! cudaoverlap name=overlap " +
       backend_properties() + " ! fakesink name=sink sync=true")
          .c_str(),
      &error);
  EXPECT_EQ(error, nullptr) << error->message;
  if (pipeline == nullptr) return r;
  GstElement* overlap = gst_bin_get_by_name(GST_BIN(pipeline), "overlap");
  GstElement* sink = gst_bin_get_by_name(GST_BIN(pipeline), "sink");
  GstPad* sink_pad = gst_element_get_static_pad(sink, "sink");
  SlowSink slow;
  gst_pad_add_probe(sink_pad, GST_PAD_PROBE_TYPE_BUFFER, SlowSink::probe, &slow, nullptr);
  EXPECT_NE(gst_element_set_state(pipeline, GST_STATE_PLAYING), GST_STATE_CHANGE_FAILURE);
  const auto own_ms = [&] {
    const GstClockTime own = own_latency(overlap);
    EXPECT_TRUE(GST_CLOCK_TIME_IS_VALID(own)) << "the LATENCY query failed";
    return GST_CLOCK_TIME_IS_VALID(own) ? static_cast<double>(own) / 1e6 : 1e9;
  };
  // Before, during (0.6 s into the sink's holding), and a second after.
  std::this_thread::sleep_for(900ms);
  r.before = own_ms();
  EXPECT_TRUE(wait_for(slow.began)) << "the sink never became slow";
  std::this_thread::sleep_for(600ms);
  EXPECT_FALSE(slow.ended) << "the slow stretch ended before it was measured";
  r.during = own_ms();
  EXPECT_TRUE(wait_for(slow.ended)) << "the sink never caught up";
  std::this_thread::sleep_for(1000ms);
  r.after = own_ms();
  run_or_die("pipeline to NULL", 10s, [&] { gst_element_set_state(pipeline, GST_STATE_NULL); });
  gst_object_unref(sink_pad);
  gst_object_unref(sink);
  gst_object_unref(overlap);
  gst_object_unref(pipeline);
  return r;
}

// The sink's holding (40 ms a frame) adds nothing to the report, during
// or after, and the report is the element's own work: a fraction of a
// millisecond for a 320x240 copy, its 99th percentile a few on a busy
// 2-core machine, well under the 16.7 ms frame interval a counted wait
// would add (not checked under a sanitizer, whose every memory access
// makes a frame take tens of milliseconds). The slack is the cpu
// backend's scheduling on a small shared machine, where four thread
// hand-offs a frame have shown p99 stays of up to 6 ms (9 under
// ThreadSanitizer).
bool holds_up(const Reports& r, bool sanitized) {
  const double slack_ms = std::max(sanitized ? 15.0 : 5.0, r.before);
  const bool relative = r.during <= r.before + slack_ms && r.after <= r.before + slack_ms;
  const bool absolute = sanitized || (r.before <= 8.0 && r.during <= 8.0 && r.after <= 8.0);
  return relative && absolute;
}

// A shared machine can stall a process for a hundred milliseconds and
// more (seen once: 136 ms before the slow stretch), which the element
// rightly reports; such a run is repeated, up to three in all. Counting
// the sink's holding would fail every run alike.
TEST(LiveLatency, ASinkSlowForAWhileDoesNotRaiseWhatTheElementReports) {
  SKIP_WITHOUT_BACKEND();
  const bool sanitized = std::getenv("CUDAOVERLAP_SANITIZER_PRELOAD") != nullptr;
  std::string seen;
  for (int run = 0; run < 3; ++run) {
    const Reports r = measure();
    if (::testing::Test::HasFatalFailure() || ::testing::Test::HasNonfatalFailure()) return;
    seen += "  run " + std::to_string(run + 1) + ": before " + std::to_string(r.before) +
            " ms, during " + std::to_string(r.during) + ", after " + std::to_string(r.after) + "\n";
    if (holds_up(r, sanitized)) {
      std::printf("%s", seen.c_str());
      return;
    }
  }
  ADD_FAILURE() << "the sink's holding was counted as the element's, or the report stayed high, "
                   "in every run:\n"
                << seen;
}

}  // namespace
}  // namespace cudaoverlap_test
