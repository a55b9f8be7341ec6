// Stress: many rounds of play, flushing seeks at random moments, pause and
// play, and stop, with ring sizes 1, 3 and 8 and random delays on every
// cpu-backend operation. A deadlock fails through a timeout; after the last
// seek every frame of the requested segment must arrive, and each must be
// the inverse of the frame that went in (taken from a tee before the
// element). The appsinks are not asynchronous: seeks go straight to the
// source, and GStreamer can otherwise leave a prerolled sink waiting in
// PAUSED for a PLAYING that the bin never commits, which would look like a
// stall of the element.
#include <gst/app/gstappsink.h>
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <thread>

#include "element_test_util.h"

namespace cudaoverlap_test {
namespace {

using namespace std::chrono_literals;

constexpr GstClockTime kFrame = 10 * GST_MSECOND;  // 100 frames/s
constexpr uint64_t kLastSegmentFrames = 40;

GstSeekFlags seek_flags() {
  return static_cast<GstSeekFlags>(GST_SEEK_FLAG_FLUSH | GST_SEEK_FLAG_ACCURATE);
}

// Pulls until EOS; false when a pull times out (a stall).
bool pull_all(GstElement* sink, std::map<GstClockTime, GstBuffer*>* frames) {
  while (!gst_app_sink_is_eos(GST_APP_SINK(sink))) {
    GstSample* sample = gst_app_sink_try_pull_sample(GST_APP_SINK(sink), 10 * GST_SECOND);
    if (sample == nullptr) return gst_app_sink_is_eos(GST_APP_SINK(sink));
    GstBuffer* buffer = gst_sample_get_buffer(sample);
    auto [it, inserted] = frames->emplace(GST_BUFFER_PTS(buffer), gst_buffer_ref(buffer));
    if (!inserted) {
      ADD_FAILURE() << "frame " << GST_BUFFER_PTS(buffer) / kFrame << " arrived twice";
      gst_buffer_unref(buffer);
    }
    gst_sample_unref(sample);
  }
  return true;
}

void free_frames(std::map<GstClockTime, GstBuffer*>* frames) {
  for (auto& [pts, buffer] : *frames) gst_buffer_unref(buffer);
  frames->clear();
}

TEST(Stress, RandomFlushingSeeksNeverDeadlockAndTheLastSegmentIsComplete) {
  SKIP_WITHOUT_BACKEND();
  ScopedEnv delays("CUDAOVERLAP_CPU_MAX_DELAY_US", "200");
  const GstVideoInfo info = video_info(GST_VIDEO_FORMAT_RGBA, 64, 48, 100, 1);
  std::mt19937 random(20240601);
  for (int round = 0; round < 12; ++round) {
    const int ring = round % 3 == 0 ? 1 : round % 3 == 1 ? 3 : 8;
    SCOPED_TRACE("round " + std::to_string(round) + ", ring-size " + std::to_string(ring));
    const std::string description =
        "videotestsrc name=src pattern=snow ! video/x-raw,format=RGBA,width=64,height=48,"
        "framerate=100/1 ! tee name=t t. ! queue ! appsink name=ref sync=false async=false t. ! "
        "queue ! "
        "cudaoverlap kernel=invert " +
        backend_properties() + " ring-size=" + std::to_string(ring) +
        " ! appsink name=out sync=false async=false";
    GstElement* pipeline = gst_parse_launch(description.c_str(), nullptr);
    ASSERT_NE(pipeline, nullptr);
    GstElement* src = gst_bin_get_by_name(GST_BIN(pipeline), "src");
    GstElement* ref = gst_bin_get_by_name(GST_BIN(pipeline), "ref");
    GstElement* out = gst_bin_get_by_name(GST_BIN(pipeline), "out");

    run_or_die("pipeline to PLAYING", 10s, [&] {
      ASSERT_NE(gst_element_set_state(pipeline, GST_STATE_PLAYING), GST_STATE_CHANGE_FAILURE);
      gst_element_get_state(pipeline, nullptr, nullptr, 5 * GST_SECOND);
    });
    const int seeks = 1 + static_cast<int>(random() % 4);
    for (int s = 0; s < seeks; ++s) {
      std::this_thread::sleep_for(std::chrono::microseconds(random() % 15000));
      const GstClockTime position = (random() % 500) * kFrame;
      run_or_die("flushing seek", 10s, [&] {
        EXPECT_TRUE(gst_element_send_event(
            src, gst_event_new_seek(1.0, GST_FORMAT_TIME, seek_flags(), GST_SEEK_TYPE_SET, position,
                                    GST_SEEK_TYPE_NONE, GST_CLOCK_TIME_NONE)));
      });
      if (random() % 3 == 0) {
        // Each state change is let finish: a seek racing an unfinished
        // asynchronous PAUSED can leave the sinks prerolled in PAUSED, which
        // is GStreamer's behaviour, not the element's.
        run_or_die("PLAYING -> PAUSED -> PLAYING", 10s, [&] {
          gst_element_set_state(pipeline, GST_STATE_PAUSED);
          gst_element_get_state(pipeline, nullptr, nullptr, 5 * GST_SECOND);
          gst_element_set_state(pipeline, GST_STATE_PLAYING);
          gst_element_get_state(pipeline, nullptr, nullptr, 5 * GST_SECOND);
        });
      }
    }
    // The last seek asks for a bounded segment; all of it must come out.
    const uint64_t first = random() % 500;
    run_or_die("last flushing seek", 10s, [&] {
      EXPECT_TRUE(gst_element_send_event(
          src,
          gst_event_new_seek(1.0, GST_FORMAT_TIME, seek_flags(), GST_SEEK_TYPE_SET, first * kFrame,
                             GST_SEEK_TYPE_SET, (first + kLastSegmentFrames) * kFrame)));
    });
    std::map<GstClockTime, GstBuffer*> inputs, outputs;
    GstState state = GST_STATE_VOID_PENDING, pending = GST_STATE_VOID_PENDING;
    gst_element_get_state(pipeline, &state, &pending, 5 * GST_SECOND);
    EXPECT_EQ(state, GST_STATE_PLAYING) << "pending " << gst_element_state_get_name(pending);
    EXPECT_TRUE(pull_all(ref, &inputs)) << "the reference branch stalled";
    EXPECT_TRUE(pull_all(out, &outputs)) << "the cudaoverlap branch stalled";
    EXPECT_EQ(inputs.size(), kLastSegmentFrames);
    EXPECT_EQ(outputs.size(), inputs.size());
    for (const auto& [pts, input] : inputs) {
      auto it = outputs.find(pts);
      if (it == outputs.end()) {
        ADD_FAILURE() << "frame " << pts / kFrame << " is missing";
        continue;
      }
      const std::string problem = compare_frames(info, input, it->second, Kernel::kInvert);
      EXPECT_EQ(problem, "") << "frame " << pts / kFrame;
    }
    for (const auto& [pts, output] : outputs) {
      const bool in_segment = pts >= first * kFrame && pts < (first + kLastSegmentFrames) * kFrame;
      EXPECT_TRUE(in_segment) << "frame " << pts / kFrame << " from before the last seek";
    }
    free_frames(&inputs);
    free_frames(&outputs);

    run_or_die("pipeline to NULL", 10s, [&] {
      EXPECT_EQ(gst_element_set_state(pipeline, GST_STATE_NULL), GST_STATE_CHANGE_SUCCESS);
    });
    gst_object_unref(src);
    gst_object_unref(ref);
    gst_object_unref(out);
    gst_object_unref(pipeline);
  }
}

}  // namespace
}  // namespace cudaoverlap_test
