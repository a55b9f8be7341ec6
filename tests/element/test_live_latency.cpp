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

// Holds every buffer 40 ms (longer than the 16.7 ms between frames) whose
// timestamp falls in [1 s, 2 s): a sink slow for a second.
GstPadProbeReturn slow_second(GstPad*, GstPadProbeInfo* info, gpointer) {
  const GstClockTime pts = GST_BUFFER_PTS(GST_PAD_PROBE_INFO_BUFFER(info));
  if (GST_CLOCK_TIME_IS_VALID(pts) && pts >= GST_SECOND && pts < 2 * GST_SECOND)
    std::this_thread::sleep_for(40ms);
  return GST_PAD_PROBE_OK;
}

TEST(LiveLatency, ASinkSlowForASecondDoesNotRaiseWhatTheElementReports) {
  SKIP_WITHOUT_BACKEND();
  GError* error = nullptr;
  GstElement* pipeline = gst_parse_launch(
      ("videotestsrc is-live=true num-buffers=240 pattern=solid-color ! "
       "video/x-raw,format=RGBA,width=320,height=240,framerate=60/1 ! cudaoverlap name=overlap " +
       backend_properties() + " ! fakesink name=sink sync=true")
          .c_str(),
      &error);
  ASSERT_EQ(error, nullptr) << error->message;
  GstElement* overlap = gst_bin_get_by_name(GST_BIN(pipeline), "overlap");
  GstElement* sink = gst_bin_get_by_name(GST_BIN(pipeline), "sink");
  GstPad* sink_pad = gst_element_get_static_pad(sink, "sink");
  gst_pad_add_probe(sink_pad, GST_PAD_PROBE_TYPE_BUFFER, slow_second, nullptr, nullptr);
  ASSERT_NE(gst_element_set_state(pipeline, GST_STATE_PLAYING), GST_STATE_CHANGE_FAILURE);
  const auto started = std::chrono::steady_clock::now();
  const auto at = [&](std::chrono::milliseconds t) {
    std::this_thread::sleep_until(started + t);
    return static_cast<double>(own_latency(overlap)) / 1e6;
  };
  // Before, during (the sink holds every push 40 ms), and a second after.
  const double before = at(900ms);
  const double during = at(1900ms);
  const double after = at(3000ms);
  // The sink's holding adds nothing to the report, during or after.
  const double slack_ms = std::max(5.0, before / 2);
  EXPECT_LE(during, before + slack_ms) << "the sink's holding was counted as the element's";
  EXPECT_LE(after, before + slack_ms) << "the report did not come back down within a second";
  // And the report is the element's own work, a fraction of a millisecond
  // for a 320x240 copy; not under a sanitizer, whose every memory access
  // makes a frame take tens of milliseconds.
  if (!std::getenv("CUDAOVERLAP_SANITIZER_PRELOAD")) {
    EXPECT_LE(before, 3.0);
    EXPECT_LE(during, 3.0);
    EXPECT_LE(after, 3.0);
  }
  run_or_die("pipeline to NULL", 10s, [&] { gst_element_set_state(pipeline, GST_STATE_NULL); });
  gst_object_unref(sink_pad);
  gst_object_unref(sink);
  gst_object_unref(overlap);
  gst_object_unref(pipeline);
}

}  // namespace
}  // namespace cudaoverlap_test
