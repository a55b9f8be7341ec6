// GStreamer's generic checks and gst-validate's scenarios, written as tests
// (Debian 12 packages neither gst-validate nor the generic check suite):
//
// - States: what gstreamer's tests/check/generic/states.c does for every
//   element — each transition in every order, alone and in a pipeline, up
//   and down — and random transitions while frames flow.
// - Scenarios, after gst-validate's: seek_forward, seek_backward,
//   scrub_forward_seeking (flushing accurate seeks while PAUSED, each
//   prerolling), change_state_intensive (PLAYING/PAUSED/READY toggles), and
//   flushing seeks that change the rate (2.0, 0.5), on
//   `videotestsrc ! cudaoverlap ! fakesink` and through playbin's
//   video-filter.
//
// Each seek is checked at the sink: the first buffer after it has a
// timestamp at or just after the target, in a segment of the rate asked for.
#include <gst/gst.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "element_test_util.h"

namespace cudaoverlap_test {
namespace {

using namespace std::chrono_literals;

const GstState kStates[] = {GST_STATE_NULL, GST_STATE_READY, GST_STATE_PAUSED, GST_STATE_PLAYING};

// Sets `element` to `state` and waits for it to settle; false on failure
// or after 10 s. A live pipeline in PAUSED answers NO_PREROLL, fine here.
bool settle(GstElement* element, GstState state) {
  bool ok = false;
  run_or_die("a state change", 20s, [&] {
    if (gst_element_set_state(element, state) == GST_STATE_CHANGE_FAILURE) return;
    GstState now;
    const GstStateChangeReturn ret = gst_element_get_state(element, &now, nullptr, 10 * GST_SECOND);
    ok = (ret == GST_STATE_CHANGE_SUCCESS || ret == GST_STATE_CHANGE_NO_PREROLL) && now == state;
  });
  return ok;
}

// The first error on `element`'s bus since the last call, or empty.
std::string bus_error(GstElement* element) {
  GstBus* bus = gst_element_get_bus(element);
  std::string text;
  while (GstMessage* message = gst_bus_pop_filtered(bus, GST_MESSAGE_ERROR)) {
    if (text.empty()) {
      GError* error = nullptr;
      gst_message_parse_error(message, &error, nullptr);
      text = error->message;
      g_error_free(error);
    }
    gst_message_unref(message);
  }
  gst_object_unref(bus);
  return text;
}

GstElement* launch(const std::string& description) {
  GError* error = nullptr;
  GstElement* pipeline = gst_parse_launch(description.c_str(), &error);
  if (error != nullptr) {
    ADD_FAILURE() << description << ": " << error->message;
    g_error_free(error);
    if (pipeline) gst_object_unref(pipeline);
    return nullptr;
  }
  return pipeline;
}

std::string element_description() { return "cudaoverlap " + backend_properties(); }

// ---------------------------------------------------------------------------
// States

TEST(States, TheElementAloneTakesEveryTransitionInEveryOrder) {
  SKIP_WITHOUT_BACKEND();
  GstElement* element = make_cudaoverlap();
  ASSERT_NE(element, nullptr);
  for (GstState from : kStates)
    for (GstState to : kStates) {
      if (from == to) continue;
      ASSERT_TRUE(settle(element, from)) << gst_element_state_get_name(from);
      EXPECT_TRUE(settle(element, to))
          << gst_element_state_get_name(from) << " -> " << gst_element_state_get_name(to);
      ASSERT_TRUE(settle(element, GST_STATE_NULL));
    }
  // states.c's sequences: up one at a time and down, and up and down again
  // from each level.
  for (int top = 1; top < 4; ++top) {
    for (int s = 0; s <= top; ++s) EXPECT_TRUE(settle(element, kStates[s]));
    for (int s = top; s >= 0; --s) EXPECT_TRUE(settle(element, kStates[s]));
  }
  for (int bottom = 0; bottom < 3; ++bottom) {
    EXPECT_TRUE(settle(element, GST_STATE_PLAYING));
    EXPECT_TRUE(settle(element, kStates[bottom]));
    EXPECT_TRUE(settle(element, GST_STATE_PLAYING));
  }
  EXPECT_TRUE(settle(element, GST_STATE_NULL));
  EXPECT_EQ(bus_error(element), "");
  gst_object_unref(element);
}

class PipelineStates : public ::testing::TestWithParam<bool> {};

TEST_P(PipelineStates, EveryTransitionInEveryOrderWhileFramesFlow) {
  SKIP_WITHOUT_BACKEND();
  const bool live = GetParam();
  GstElement* pipeline =
      launch(std::string("videotestsrc is-live=") + (live ? "true" : "false") +
             " ! video/x-raw,format=NV12,width=64,height=48,framerate=120/1 ! " +
             element_description() + " ring-size=2 ! fakesink sync=" + (live ? "true" : "false"));
  ASSERT_NE(pipeline, nullptr);
  for (GstState from : kStates)
    for (GstState to : kStates) {
      if (from == to) continue;
      ASSERT_TRUE(settle(pipeline, from)) << gst_element_state_get_name(from);
      if (from >= GST_STATE_PAUSED) std::this_thread::sleep_for(10ms);  // frames in flight
      EXPECT_TRUE(settle(pipeline, to))
          << gst_element_state_get_name(from) << " -> " << gst_element_state_get_name(to);
      ASSERT_TRUE(settle(pipeline, GST_STATE_NULL));
    }
  // Random transitions, many of them, while frames flow.
  std::mt19937 random(live ? 7 : 8);
  for (int i = 0; i < 60; ++i) {
    const GstState to = kStates[random() % 4];
    EXPECT_TRUE(settle(pipeline, to)) << "step " << i << " to " << gst_element_state_get_name(to);
    if (random() % 2) std::this_thread::sleep_for(std::chrono::milliseconds(random() % 20));
  }
  EXPECT_TRUE(settle(pipeline, GST_STATE_NULL));
  EXPECT_EQ(bus_error(pipeline), "");
  gst_object_unref(pipeline);
}

INSTANTIATE_TEST_SUITE_P(Sources, PipelineStates, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "live" : "not_live"; });

// ---------------------------------------------------------------------------
// Scenarios

// What reaches the sink after each flush: the segment's rate and the first
// buffer's timestamp.
class SinkWatch {
 public:
  explicit SinkWatch(GstElement* sink) {
    pad_ = gst_element_get_static_pad(sink, "sink");
    id_ = gst_pad_add_probe(pad_,
                            static_cast<GstPadProbeType>(GST_PAD_PROBE_TYPE_BUFFER |
                                                         GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM |
                                                         GST_PAD_PROBE_TYPE_EVENT_FLUSH),
                            probe, this, nullptr);
  }
  ~SinkWatch() {
    gst_pad_remove_probe(pad_, id_);
    gst_object_unref(pad_);
  }
  // Forgets what was seen; the next flush-stop starts a new record.
  void expect_flush() {
    std::lock_guard<std::mutex> lock(mutex_);
    flushed_ = false;
    first_pts_ = GST_CLOCK_TIME_NONE;
  }
  // The first buffer's PTS after the flush, in stream time, or NONE after
  // `timeout`.
  GstClockTime first_after_flush(std::chrono::milliseconds timeout, double* rate) {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait_for(lock, timeout, [&] { return GST_CLOCK_TIME_IS_VALID(first_pts_); });
    *rate = rate_;
    return first_pts_;
  }
  uint64_t buffers() {
    std::lock_guard<std::mutex> lock(mutex_);
    return buffers_;
  }

 private:
  static GstPadProbeReturn probe(GstPad*, GstPadProbeInfo* info, gpointer data) {
    auto* self = static_cast<SinkWatch*>(data);
    std::lock_guard<std::mutex> lock(self->mutex_);
    if (info->type & GST_PAD_PROBE_TYPE_BUFFER) {
      ++self->buffers_;
      if (self->flushed_ && !GST_CLOCK_TIME_IS_VALID(self->first_pts_)) {
        self->first_pts_ = gst_segment_to_stream_time(
            &self->segment_, GST_FORMAT_TIME, GST_BUFFER_PTS(GST_PAD_PROBE_INFO_BUFFER(info)));
        self->changed_.notify_all();
      }
    } else {
      GstEvent* event = GST_PAD_PROBE_INFO_EVENT(info);
      if (GST_EVENT_TYPE(event) == GST_EVENT_FLUSH_STOP) self->flushed_ = true;
      if (GST_EVENT_TYPE(event) == GST_EVENT_SEGMENT) {
        gst_event_copy_segment(event, &self->segment_);
        self->rate_ = self->segment_.rate;
      }
    }
    return GST_PAD_PROBE_OK;
  }
  GstPad* pad_;
  gulong id_;
  std::mutex mutex_;
  std::condition_variable changed_;
  bool flushed_ = false;
  GstClockTime first_pts_ = GST_CLOCK_TIME_NONE;
  GstSegment segment_{};
  double rate_ = 1.0;
  uint64_t buffers_ = 0;
};

// One pipeline under test with a fakesink named "sink".
class Scenario : public ::testing::Test {
 protected:
  void SetUp() override {
    SKIP_WITHOUT_BACKEND();
    pipeline_ = launch(
        "videotestsrc ! video/x-raw,format=RGBA,width=64,height=48,"
        "framerate=30/1 ! " +
        element_description() + " ! fakesink name=sink sync=false");
    ASSERT_NE(pipeline_, nullptr);
    GstElement* sink = gst_bin_get_by_name(GST_BIN(pipeline_), "sink");
    watch_ = std::make_unique<SinkWatch>(sink);
    gst_object_unref(sink);
  }
  void TearDown() override {
    if (!pipeline_) return;
    EXPECT_TRUE(settle(pipeline_, GST_STATE_NULL));
    EXPECT_EQ(bus_error(pipeline_), "");
    watch_.reset();
    gst_object_unref(pipeline_);
  }

  // A flushing accurate seek to `target` at `rate`; the first buffer after
  // it must be at the target (within a frame) in a segment of that rate.
  void seek_and_check(GstClockTime target, double rate = 1.0) {
    watch_->expect_flush();
    bool sent = false;
    run_or_die("a seek", 20s, [&] {
      sent = gst_element_seek(
          pipeline_, rate, GST_FORMAT_TIME,
          static_cast<GstSeekFlags>(GST_SEEK_FLAG_FLUSH | GST_SEEK_FLAG_ACCURATE),
          GST_SEEK_TYPE_SET, static_cast<gint64>(target), GST_SEEK_TYPE_NONE, GST_CLOCK_TIME_NONE);
    });
    ASSERT_TRUE(sent) << "seek to " << GST_TIME_AS_MSECONDS(target) << " ms refused";
    double seen_rate = 0;
    const GstClockTime first = watch_->first_after_flush(10s, &seen_rate);
    ASSERT_TRUE(GST_CLOCK_TIME_IS_VALID(first))
        << "no frame after the seek to " << GST_TIME_AS_MSECONDS(target) << " ms";
    EXPECT_GE(first + GST_MSECOND, target) << "a frame from before the seek came out after it";
    EXPECT_LT(first, target + 40 * GST_MSECOND) << "the first frame is not at the seek target";
    EXPECT_DOUBLE_EQ(seen_rate, rate);
  }

  GstElement* pipeline_ = nullptr;
  std::unique_ptr<SinkWatch> watch_;
};

TEST_F(Scenario, SeekForward) {
  ASSERT_TRUE(settle(pipeline_, GST_STATE_PLAYING));
  for (int s = 1; s <= 5; ++s) seek_and_check(s * GST_SECOND);
}

TEST_F(Scenario, SeekBackward) {
  ASSERT_TRUE(settle(pipeline_, GST_STATE_PLAYING));
  seek_and_check(10 * GST_SECOND);
  for (int s = 8; s >= 0; s -= 2) seek_and_check(s * GST_SECOND);
}

TEST_F(Scenario, ScrubForwardSeekingWhilePaused) {
  ASSERT_TRUE(settle(pipeline_, GST_STATE_PAUSED));
  for (int i = 1; i <= 20; ++i) {
    seek_and_check(i * 100 * GST_MSECOND);
    // Each seek prerolls again: the pipeline settles in PAUSED.
    GstState state;
    EXPECT_EQ(gst_element_get_state(pipeline_, &state, nullptr, 10 * GST_SECOND),
              GST_STATE_CHANGE_SUCCESS)
        << "no preroll after seek " << i;
  }
}

TEST_F(Scenario, ChangeStateIntensive) {
  const GstState cycle[] = {GST_STATE_PLAYING, GST_STATE_PAUSED, GST_STATE_READY,
                            GST_STATE_PLAYING, GST_STATE_READY,  GST_STATE_PAUSED};
  for (int round = 0; round < 10; ++round)
    for (GstState state : cycle)
      ASSERT_TRUE(settle(pipeline_, state))
          << "round " << round << " to " << gst_element_state_get_name(state);
  ASSERT_TRUE(settle(pipeline_, GST_STATE_PLAYING));
  const uint64_t before = watch_->buffers();
  std::this_thread::sleep_for(100ms);
  EXPECT_GT(watch_->buffers(), before) << "no frames flow after the state changes";
}

TEST_F(Scenario, FlushingSeeksThatChangeTheRate) {
  ASSERT_TRUE(settle(pipeline_, GST_STATE_PLAYING));
  seek_and_check(GST_SECOND, 2.0);
  seek_and_check(3 * GST_SECOND, 0.5);
  seek_and_check(2 * GST_SECOND, 1.0);
}

// playbin with cudaoverlap as its video filter, on a short file made here.
TEST(PlaybinScenario, SeeksThroughTheVideoFilterAndPlaysToTheEnd) {
  SKIP_WITHOUT_BACKEND();
  for (const char* factory : {"jpegenc", "avimux", "playbin"}) {
    GstElementFactory* f = gst_element_factory_find(factory);
    if (f == nullptr) GTEST_SKIP() << "no " << factory << " on this machine";
    gst_object_unref(f);
  }
  char path[] = "/tmp/cudaoverlap-scenario-XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  GstElement* writer =
      launch(std::string("videotestsrc num-buffers=90 ! video/x-raw,format=I420,width=64,height=48,"
                         "framerate=30/1 ! jpegenc ! avimux ! filesink location=") +
             path);
  ASSERT_NE(writer, nullptr);
  gst_element_set_state(writer, GST_STATE_PLAYING);
  GstBus* writer_bus = gst_element_get_bus(writer);
  GstMessage* done =
      gst_bus_timed_pop_filtered(writer_bus, 20 * GST_SECOND,
                                 static_cast<GstMessageType>(GST_MESSAGE_EOS | GST_MESSAGE_ERROR));
  ASSERT_NE(done, nullptr);
  ASSERT_EQ(GST_MESSAGE_TYPE(done), GST_MESSAGE_EOS);
  gst_message_unref(done);
  gst_object_unref(writer_bus);
  gst_element_set_state(writer, GST_STATE_NULL);
  gst_object_unref(writer);

  GstElement* playbin = gst_element_factory_make("playbin", nullptr);
  GstElement* filter = make_cudaoverlap({{"kernel", "invert"}});
  GstElement* video_sink = gst_element_factory_make("fakesink", nullptr);
  GstElement* audio_sink = gst_element_factory_make("fakesink", nullptr);
  g_object_set(video_sink, "sync", FALSE, nullptr);
  const std::string uri = std::string("file://") + path;
  g_object_set(playbin, "uri", uri.c_str(), "video-filter", filter, "video-sink", video_sink,
               "audio-sink", audio_sink, nullptr);
  SinkWatch watch(video_sink);
  ASSERT_TRUE(settle(playbin, GST_STATE_PAUSED));
  for (GstClockTime target : {2 * GST_SECOND, GST_SECOND / 2, 1 * GST_SECOND}) {
    watch.expect_flush();
    ASSERT_TRUE(gst_element_seek_simple(
        playbin, GST_FORMAT_TIME,
        static_cast<GstSeekFlags>(GST_SEEK_FLAG_FLUSH | GST_SEEK_FLAG_ACCURATE), target));
    double rate = 0;
    const GstClockTime first = watch.first_after_flush(10s, &rate);
    ASSERT_TRUE(GST_CLOCK_TIME_IS_VALID(first)) << GST_TIME_AS_MSECONDS(target) << " ms";
    EXPECT_GE(first + GST_MSECOND, target);
    EXPECT_LT(first, target + 40 * GST_MSECOND);
  }
  ASSERT_TRUE(settle(playbin, GST_STATE_PLAYING));
  GstBus* bus = gst_element_get_bus(playbin);
  GstMessage* end = gst_bus_timed_pop_filtered(
      bus, 20 * GST_SECOND, static_cast<GstMessageType>(GST_MESSAGE_EOS | GST_MESSAGE_ERROR));
  ASSERT_NE(end, nullptr) << "playbin did not reach the end";
  EXPECT_EQ(GST_MESSAGE_TYPE(end), GST_MESSAGE_EOS) << bus_error(playbin);
  gst_message_unref(end);
  gst_object_unref(bus);
  EXPECT_TRUE(settle(playbin, GST_STATE_NULL));
  gst_object_unref(playbin);
  std::remove(path);
}

}  // namespace
}  // namespace cudaoverlap_test
