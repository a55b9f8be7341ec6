// The element's instruments in whole pipelines on the backend under test:
// exact frame counters and per-stage times in the `stats` property, the
// periodic stats messages (also while no frame flows), QoS drops with a slow sink (and none without
// one or with qos=false), the measured latency in the LATENCY query, and a trace-file that cannot
// be written. The trace file's contents are checked by test_trace_file.py, with a real JSON parser.
#include <gst/gst.h>
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "element_test_util.h"
#include "tests/sanitized.h"

namespace cudaoverlap_test {
namespace {

using namespace std::chrono_literals;

const char* const kTimedStages[] = {"staging", "upload", "compute", "download", "push", "latency"};

// A gst-launch description with the element named "overlap"; runs it to EOS
// and keeps the messages the element posted.
class StatsPipeline {
 public:
  explicit StatsPipeline(const std::string& description) {
    GError* error = nullptr;
    pipeline_ = gst_parse_launch(description.c_str(), &error);
    if (error != nullptr) {
      ADD_FAILURE() << description << ": " << error->message;
      g_error_free(error);
      pipeline_ = nullptr;
      return;
    }
    overlap_ = gst_bin_get_by_name(GST_BIN(pipeline_), "overlap");
  }
  ~StatsPipeline() {
    for (GstMessage* m : messages_) gst_message_unref(m);
    if (pipeline_ == nullptr) return;
    run_or_die("pipeline to NULL", 10s, [&] { gst_element_set_state(pipeline_, GST_STATE_NULL); });
    gst_object_unref(overlap_);
    gst_object_unref(pipeline_);
  }
  StatsPipeline(const StatsPipeline&) = delete;
  StatsPipeline& operator=(const StatsPipeline&) = delete;

  // Plays to EOS; returns the error text if one came first ("" on EOS).
  // Under a sanitizer a 4K frame takes seconds on the cpu backend.
  std::string run(std::chrono::seconds timeout = cudaoverlap::test::kSanitized ? 300s : 30s) {
    if (pipeline_ == nullptr) return "no pipeline";
    if (gst_element_set_state(pipeline_, GST_STATE_PLAYING) == GST_STATE_CHANGE_FAILURE)
      return "state change to PLAYING failed: " + pop_error();
    GstBus* bus = gst_element_get_bus(pipeline_);
    std::string result = "timed out";
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      GstMessage* m = gst_bus_timed_pop(bus, 100 * GST_MSECOND);
      if (m == nullptr) continue;
      const GstMessageType type = GST_MESSAGE_TYPE(m);
      if (type == GST_MESSAGE_EOS) {
        gst_message_unref(m);
        result.clear();
        break;
      }
      if (type == GST_MESSAGE_ERROR) {
        GError* error = nullptr;
        gst_message_parse_error(m, &error, nullptr);
        result = error->message;
        g_error_free(error);
        gst_message_unref(m);
        break;
      }
      if (GST_MESSAGE_SRC(m) == GST_OBJECT_CAST(overlap_))
        messages_.push_back(m);
      else
        gst_message_unref(m);
    }
    gst_object_unref(bus);
    return result;
  }

  std::string pop_error() {
    GstBus* bus = gst_element_get_bus(pipeline_);
    GstMessage* m = gst_bus_pop_filtered(bus, GST_MESSAGE_ERROR);
    gst_object_unref(bus);
    if (m == nullptr) return {};
    GError* error = nullptr;
    gst_message_parse_error(m, &error, nullptr);
    std::string text = error->message;
    g_error_free(error);
    gst_message_unref(m);
    return text;
  }

  // The `stats` structure now (owned by the caller).
  GstStructure* stats() const {
    GstStructure* s = nullptr;
    g_object_get(overlap_, "stats", &s, nullptr);
    return s;
  }
  std::vector<GstMessage*> messages(GstMessageType type) const {
    std::vector<GstMessage*> out;
    for (GstMessage* m : messages_)
      if (GST_MESSAGE_TYPE(m) == type) out.push_back(m);
    return out;
  }
  GstElement* overlap() const { return overlap_; }

 private:
  GstElement* pipeline_ = nullptr;
  GstElement* overlap_ = nullptr;
  std::vector<GstMessage*> messages_;
};

std::string source(int frames, int fps, const std::string& extra = "") {
  return "videotestsrc num-buffers=" + std::to_string(frames) + " " + extra +
         " ! video/x-raw,format=RGBA,width=64,height=48,framerate=" + std::to_string(fps) +
         "/1 ! cudaoverlap name=overlap " + backend_properties() + " ";
}

// The same, with upstream writing into its own memory: identity drops the
// ALLOCATION query, so our pinned pool is not used, and with pinning of
// upstream memory off every frame is staged.
std::string source_unpinned(int frames, int fps) {
  return "videotestsrc num-buffers=" + std::to_string(frames) +
         " ! video/x-raw,format=RGBA,width=64,height=48,framerate=" + std::to_string(fps) +
         "/1 ! identity drop-allocation=true ! cudaoverlap name=overlap "
         "pin-upstream-memory=false " +
         backend_properties() + " ";
}

guint64 u64(const GstStructure* s, const char* field) {
  guint64 v = G_MAXUINT64;
  EXPECT_TRUE(gst_structure_get_uint64(s, field, &v)) << field;
  return v;
}
double dbl(const GstStructure* s, const char* field) {
  double v = -1.0;
  EXPECT_TRUE(gst_structure_get_double(s, field, &v)) << field;
  return v;
}

// bands=0 (automatic): whole frames from a source that is not live; from a
// live one a band per about 4 MB of the larger of the input and output
// frames, 4 to 8; a number set is what runs. `stats` says which.
TEST(Stats, SayHowManyBandsRun) {
  SKIP_WITHOUT_BACKEND();
  struct Case {
    bool live;
    int width, height;
    const char* format;
    const char* bands_property;
    guint bands;
    const char* out_format = nullptr;  // kernel=convert to this format
    const char* scale_to = nullptr;    // kernel=scale to these caps' size
  };
  for (const Case& c :
       {Case{false, 1920, 1080, "RGBA", "0", 1}, Case{true, 64, 48, "RGBA", "0", 4},
        Case{true, 1920, 1080, "NV12", "0", 4}, Case{true, 64, 48, "RGBA", "3", 3},
        Case{false, 64, 48, "RGBA", "5", 5}, Case{true, 64, 48, "RGBA", "1", 1},
        Case{true, 3840, 2160, "RGBA", "0", 8}, Case{true, 3840, 2160, "NV12", "0", 4},
        Case{true, 3840, 2160, "RGB", "0", 6}, Case{true, 2560, 1440, "RGBA", "0", 4},
        Case{true, 5120, 2880, "RGBA", "0", 8}, Case{true, 3840, 2160, "NV12", "0", 8, "RGBA"},
        Case{false, 3840, 2160, "RGBA", "0", 1}, Case{true, 3840, 2160, "RGBA", "2", 2},
        Case{true, 3840, 2160, "NV12", "0", 4, nullptr, "width=1920,height=1080"},
        Case{false, 1920, 1080, "RGBA", "6", 6, nullptr, "width=640,height=360"}}) {
    const std::string description =
        std::string("videotestsrc num-buffers=2 pattern=black is-live=") +
        (c.live ? "true" : "false") + " ! video/x-raw,format=" + c.format +
        ",width=" + std::to_string(c.width) + ",height=" + std::to_string(c.height) +
        ",framerate=30/1 ! cudaoverlap name=overlap bands=" + c.bands_property + " " +
        (c.out_format ? "kernel=convert " : "") + (c.scale_to ? "kernel=scale " : "") +
        backend_properties() +
        (c.out_format ? std::string(" ! video/x-raw,format=") + c.out_format : std::string()) +
        (c.scale_to ? std::string(" ! video/x-raw,") + c.scale_to : std::string()) +
        " ! fakesink sync=false";
    SCOPED_TRACE(description);
    StatsPipeline pipeline(description);
    ASSERT_EQ(pipeline.run(), "");
    GstStructure* s = pipeline.stats();
    guint bands = 0;
    EXPECT_TRUE(gst_structure_get_uint(s, "bands", &bands));
    EXPECT_EQ(bands, c.bands);
    gst_structure_free(s);
  }
}

// cuda-graphs: a live source's frames find none other in flight, long after
// the one before was done (120/s, frames of 64x48), and on
// cuda all but the timed ones (stats samples one in kStatsTimingInterval)
// run as one graph launch each: staged (upstream's memory, not pinned), or
// uploaded from the element's pinned pool, whose memory is known by its
// identity (InputFrame::memory_id); none with cuda-graphs=false, none on
// the cpu backend.
TEST(Stats, SayHowManyFramesRunAsGraphs) {
  SKIP_WITHOUT_BACKEND();
  const bool cuda = test_backend() == "cuda";
  constexpr guint64 kFrames = 24;
  struct Case {
    const char* before;  // what comes before cudaoverlap
    const char* properties;
    bool staged;  // every frame staged, or none
  };
  for (const Case& c :
       {Case{"identity drop-allocation=true ! ", "pin-upstream-memory=false ", true},
        Case{"", "", false}}) {
    for (const bool graphs : {true, false}) {
      const std::string description =
          "videotestsrc num-buffers=" + std::to_string(kFrames) +
          " is-live=true ! video/x-raw,format=RGBA,width=64,height=48,framerate=120/1 ! " +
          c.before + "cudaoverlap name=overlap " + c.properties +
          "cuda-graphs=" + (graphs ? "true " : "false ") + backend_properties() +
          " ! fakesink sync=false";
      SCOPED_TRACE(description);
      StatsPipeline pipeline(description);
      ASSERT_EQ(pipeline.run(), "");
      GstStructure* s = pipeline.stats();
      ASSERT_NE(s, nullptr);
      guint64 out = 0, as_graphs = 0, staged = 0;
      EXPECT_TRUE(gst_structure_get_uint64(s, "frames-out", &out));
      EXPECT_TRUE(gst_structure_get_uint64(s, "frames-as-graphs", &as_graphs));
      EXPECT_TRUE(gst_structure_get_uint64(s, "frames-staged", &staged));
      EXPECT_EQ(out, kFrames);
      EXPECT_EQ(staged, c.staged && cuda ? kFrames : 0u);  // the cpu backend stages nothing
      if (cuda && graphs)
        EXPECT_GE(as_graphs, kFrames / 2);
      else
        EXPECT_EQ(as_graphs, 0u);
      gst_structure_free(s);
    }
  }
}

TEST(Stats, CountersAreExactAndEveryStageIsTimed) {
  SKIP_WITHOUT_BACKEND();
  for (const char* mode : {"overlapped", "serial"}) {
    SCOPED_TRACE(mode);
    StatsPipeline p(source_unpinned(37, 30) + "mode=" + mode + " ! fakesink sync=false");
    ASSERT_EQ(p.run(), "");
    GstStructure* s = p.stats();
    ASSERT_NE(s, nullptr);
    EXPECT_STREQ(gst_structure_get_name(s), "cudaoverlap-stats");
    EXPECT_EQ(u64(s, "frames-in"), 37u);
    EXPECT_EQ(u64(s, "frames-out"), 37u);
    EXPECT_EQ(u64(s, "frames-dropped"), 0u);
    guint in_flight = 99;
    EXPECT_TRUE(gst_structure_get_uint(s, "frames-in-flight", &in_flight));
    EXPECT_EQ(in_flight, 0u);
    // The cpu backend copies nothing: no staging, and uploads and
    // downloads of no bytes.
    const bool copies = test_backend() != "cpu";
    for (const char* stage : kTimedStages) {
      const std::string name(stage);
      const double mean = dbl(s, (name + "-mean-ms").c_str());
      const double max = dbl(s, (name + "-max-ms").c_str());
      if (copies || name == "compute" || name == "push" || name == "latency") {
        EXPECT_GT(mean, 0.0) << stage;
      } else if (name == "staging") {
        EXPECT_EQ(mean, 0.0) << stage;
      }
      EXPECT_GE(max, mean) << stage;
    }
    EXPECT_GE(dbl(s, "wait-slot-mean-ms"), 0.0);
    EXPECT_GT(dbl(s, "frames-per-second"), 0.0);
    EXPECT_GT(dbl(s, "overlap-efficiency"), 0.0);
    // The element's latency covers its stages.
    EXPECT_GE(dbl(s, "latency-max-ms"), dbl(s, "upload-max-ms"));
    gst_structure_free(s);
  }
}

// A chain's launches are timed one by one (the per-pixel balance and invert
// fused into one, blur its own), inside the compute stage; an element of
// one kernel has no steps.
TEST(Stats, EachLaunchOfAChainIsTimed) {
  SKIP_WITHOUT_BACKEND();
  StatsPipeline p(source(40, 30) + "chain=\"balance contrast=1.2 ! invert ! blur sigma=2\" " +
                  "! fakesink sync=false");
  ASSERT_EQ(p.run(), "");
  GstStructure* s = p.stats();
  ASSERT_NE(s, nullptr);
  const GValue* steps = gst_structure_get_value(s, "steps");
  ASSERT_NE(steps, nullptr);
  ASSERT_TRUE(GST_VALUE_HOLDS_ARRAY(steps));
  ASSERT_EQ(gst_value_array_get_size(steps), 2u);
  const char* const names[] = {"steps 1-2 (balance, invert)", "step 3 (blur)"};
  double sum = 0.0;
  for (guint i = 0; i < 2; ++i) {
    const GstStructure* step = gst_value_get_structure(gst_value_array_get_value(steps, i));
    EXPECT_STREQ(gst_structure_get_string(step, "name"), names[i]);
    EXPECT_GT(u64(step, "frames"), 0u);
    EXPECT_GT(dbl(step, "compute-mean-ms"), 0.0);
    EXPECT_GE(dbl(step, "compute-max-ms"), dbl(step, "compute-mean-ms"));
    sum += dbl(step, "compute-mean-ms");
  }
  // The launches are most of the compute stage, measured on the same frames.
  EXPECT_GE(sum, dbl(s, "compute-mean-ms") * 0.5);
  gst_structure_free(s);

  StatsPipeline one(source(5, 30) + "kernel=invert ! fakesink sync=false");
  ASSERT_EQ(one.run(), "");
  s = one.stats();
  ASSERT_NE(s, nullptr);
  steps = gst_structure_get_value(s, "steps");
  ASSERT_NE(steps, nullptr);
  EXPECT_EQ(gst_value_array_get_size(steps), 0u);
  gst_structure_free(s);
}

// videotestsrc honours the ALLOCATION answer, so it writes into the device's
// pinned memory: no frame is staged, every frame is uploaded.
TEST(Stats, APinnedUpstreamSkipsTheStagingCopy) {
  SKIP_WITHOUT_BACKEND();
  StatsPipeline p(source(23, 30) + "! fakesink sync=false");
  ASSERT_EQ(p.run(), "");
  GstStructure* s = p.stats();
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(u64(s, "frames-out"), 23u);
  EXPECT_EQ(dbl(s, "staging-max-ms"), 0.0) << "a pinned frame was staged";
  EXPECT_GT(dbl(s, "upload-mean-ms"), 0.0);
  gst_structure_free(s);
}

// imagefreeze pushes one buffer again and again. In our pinned pool (it
// passes the ALLOCATION query on) or in its own memory, pinned once at the
// second frame: at most one frame is staged. Without pinning, every frame.
TEST(Stats, ABufferPushedAgainAndAgainIsStagedAtMostOnce) {
  SKIP_WITHOUT_BACKEND();
  const std::string still =
      "videotestsrc num-buffers=1 ! video/x-raw,format=RGBA,width=64,height=48,framerate=30/1 ! ";
  const std::string element =
      "imagefreeze num-buffers=25 ! cudaoverlap name=overlap " + backend_properties();
  const struct {
    std::string description;
    guint64 staged;
  } cases[] = {
      {still + element + " ! fakesink sync=false", 0},
      {still + "identity drop-allocation=true ! " + element + " ! fakesink sync=false", 1},
      {still + "identity drop-allocation=true ! " + element +
           " pin-upstream-memory=false ! fakesink sync=false",
       25},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.description);
    StatsPipeline p(c.description);
    ASSERT_EQ(p.run(), "");
    GstStructure* s = p.stats();
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(u64(s, "frames-out"), 25u);
    // The cpu backend reads every frame where it lies.
    EXPECT_EQ(u64(s, "frames-staged"), test_backend() == "cpu" ? 0 : c.staged);
    gst_structure_free(s);
  }
}

// The pixels copied to the device and back: each frame's, row padding left
// out, in the input's format and size up and the output's down; nothing
// for frames passed through, nor on the cpu backend.
TEST(Stats, BytesCopiedToTheDeviceAndBackAreCounted) {
  SKIP_WITHOUT_BACKEND();
  const std::string source =
      "videotestsrc num-buffers=7 ! video/x-raw,format=NV12,width=64,height=48,framerate=30/1 ! "
      "cudaoverlap name=overlap kernel=convert " +
      backend_properties();
  const struct {
    std::string caps;
    guint64 uploaded, downloaded;
  } cases[] = {
      // NV12 64x48: 64 * 48 + 64 * 24 bytes; RGBA 32x24: 32 * 24 * 4.
      {"video/x-raw,format=RGBA,width=32,height=24", 7 * 4608, 7 * 3072},
      {"video/x-raw,format=NV12,width=64,height=48", 0, 0},  // passed through
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.caps);
    StatsPipeline p(source + " ! " + c.caps + " ! fakesink sync=false");
    ASSERT_EQ(p.run(), "");
    GstStructure* s = p.stats();
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(u64(s, "frames-out"), 7u);
    // The cpu backend copies nothing either way.
    const bool copies = test_backend() != "cpu";
    EXPECT_EQ(u64(s, "bytes-uploaded"), copies ? c.uploaded : 0);
    EXPECT_EQ(u64(s, "bytes-downloaded"), copies ? c.downloaded : 0);
    gst_structure_free(s);
  }
}

TEST(Stats, StartFromZeroOnEveryRun) {
  SKIP_WITHOUT_BACKEND();
  StatsPipeline p(source(5, 30) + "! fakesink sync=false");
  GstStructure* before = p.stats();
  ASSERT_NE(before, nullptr);
  EXPECT_EQ(u64(before, "frames-in"), 0u);
  EXPECT_EQ(dbl(before, "upload-max-ms"), 0.0);
  gst_structure_free(before);
  ASSERT_EQ(p.run(), "");
  GstStructure* after = p.stats();
  EXPECT_EQ(u64(after, "frames-out"), 5u);
  gst_structure_free(after);
}

TEST(Stats, MessagesKeepComingWhileNoFrameFlows) {
  SKIP_WITHOUT_BACKEND();
  GstElement* pipeline = gst_parse_launch(
      ("appsrc name=src format=time caps=video/x-raw,format=RGBA,width=16,height=8,framerate=30/1 "
       "! cudaoverlap name=overlap stats-interval=20 " +
       backend_properties() + " ! fakesink")
          .c_str(),
      nullptr);
  ASSERT_NE(pipeline, nullptr);
  ASSERT_NE(gst_element_set_state(pipeline, GST_STATE_PLAYING), GST_STATE_CHANGE_FAILURE);
  GstBus* bus = gst_element_get_bus(pipeline);
  int stats_messages = 0;
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (stats_messages < 3 && std::chrono::steady_clock::now() < deadline) {
    GstMessage* m = gst_bus_timed_pop_filtered(bus, 100 * GST_MSECOND, GST_MESSAGE_ELEMENT);
    if (m == nullptr) continue;
    const GstStructure* s = gst_message_get_structure(m);
    if (gst_structure_has_name(s, "cudaoverlap-stats")) {
      ++stats_messages;
      EXPECT_EQ(u64(s, "frames-in"), 0u);
    }
    gst_message_unref(m);
  }
  EXPECT_EQ(stats_messages, 3);
  gst_object_unref(bus);
  run_or_die("pipeline to NULL", 10s, [&] { gst_element_set_state(pipeline, GST_STATE_NULL); });
  gst_object_unref(pipeline);
}

TEST(Stats, MessagesArePostedEveryIntervalAndNotByDefault) {
  SKIP_WITHOUT_BACKEND();
  {
    // 40 frames at 100 frames/s against the clock: about 400 ms.
    StatsPipeline p(source(40, 100) + "stats-interval=50 ! fakesink sync=true");
    ASSERT_EQ(p.run(), "");
    std::vector<guint64> outs;
    for (GstMessage* m : p.messages(GST_MESSAGE_ELEMENT)) {
      const GstStructure* s = gst_message_get_structure(m);
      if (gst_structure_has_name(s, "cudaoverlap-stats")) outs.push_back(u64(s, "frames-out"));
    }
    // About 8 in 400 ms; the clock thread may be late on a loaded machine.
    EXPECT_GE(outs.size(), 3u);
    EXPECT_LE(outs.size(), 12u);
    for (size_t i = 1; i < outs.size(); ++i) EXPECT_GE(outs[i], outs[i - 1]);
    ASSERT_FALSE(outs.empty());
    EXPECT_GT(outs.back(), 0u);
  }
  {
    StatsPipeline p(source(20, 100) + "! fakesink sync=true");
    ASSERT_EQ(p.run(), "");
    EXPECT_TRUE(p.messages(GST_MESSAGE_ELEMENT).empty());
  }
}

// Downstream that takes 40 ms per 16.7 ms frame, with a sink that reports
// its lateness upstream.
const char* const kSlowSink = "! identity sleep-time=40000 ! fakesink sync=true qos=true";

TEST(Qos, LateFramesAreDroppedBeforeUploadWithASlowSink) {
  SKIP_WITHOUT_BACKEND();
  StatsPipeline p(source(30, 60) + kSlowSink);
  ASSERT_EQ(p.run(), "");
  GstStructure* s = p.stats();
  const guint64 dropped = u64(s, "frames-dropped");
  EXPECT_GT(dropped, 0u);
  EXPECT_EQ(u64(s, "frames-in"), 30u);
  EXPECT_EQ(u64(s, "frames-out") + dropped, 30u);
  gst_structure_free(s);

  // One QoS message per drop, as GstBaseTransform posts them.
  const std::vector<GstMessage*> qos = p.messages(GST_MESSAGE_QOS);
  EXPECT_EQ(qos.size(), dropped);
  ASSERT_FALSE(qos.empty());
  GstFormat format;
  guint64 processed = 0, qos_dropped = 0;
  gst_message_parse_qos_stats(qos.back(), &format, &processed, &qos_dropped);
  EXPECT_EQ(format, GST_FORMAT_BUFFERS);
  EXPECT_EQ(qos_dropped, dropped);  // the last message counts every drop
  EXPECT_LE(processed + qos_dropped, 30u);
  gint64 jitter = -1;
  gst_message_parse_qos_values(qos.back(), &jitter, nullptr, nullptr);
  EXPECT_GE(jitter, 0);
}

TEST(Qos, NothingIsDroppedWithAFastSinkOrWithQosOff) {
  SKIP_WITHOUT_BACKEND();
  // The fast sink keeps up with 30 frames/s; eight frames in flight give
  // the (non-live) source 250 ms of lead, so that a loaded test machine
  // stalling for a moment does not make a frame late for real.
  const std::pair<int, std::string> cases[] = {
      {30, "ring-size=8 ! fakesink sync=true qos=true"},
      {60, std::string("qos=false ") + kSlowSink},
  };
  for (const auto& [fps, tail] : cases) {
    SCOPED_TRACE(tail);
    StatsPipeline p(source(30, fps) + tail);
    ASSERT_EQ(p.run(), "");
    GstStructure* s = p.stats();
    EXPECT_EQ(u64(s, "frames-dropped"), 0u);
    EXPECT_EQ(u64(s, "frames-out"), 30u);
    gst_structure_free(s);
    EXPECT_TRUE(p.messages(GST_MESSAGE_QOS).empty());
  }
}

TEST(Latency, ReportsWhatItMeasuredOnceWarmedUp) {
  SKIP_WITHOUT_BACKEND();
  StatsPipeline p(source(50, 25) + "! fakesink sync=false");
  ASSERT_EQ(p.run(), "");
  // The first measured report replaces the estimate, and is announced.
  EXPECT_FALSE(p.messages(GST_MESSAGE_LATENCY).empty()) << "no LATENCY message after warm-up";

  const GstClockTime own = own_latency(p.overlap());
  ASSERT_TRUE(GST_CLOCK_TIME_IS_VALID(own)) << "the LATENCY query failed";
  const double own_ms = static_cast<double>(own) / 1e6;
  GstStructure* s = p.stats();
  const double work_ms = dbl(s, "staging-mean-ms") + dbl(s, "upload-mean-ms") +
                         dbl(s, "compute-mean-ms") + dbl(s, "download-mean-ms");
  gst_structure_free(s);
  // Reported is the 99th percentile of the stays, with a margin: never
  // less than the work of an average frame. (Not the average of
  // latency-mean-ms, which also counts waiting for this fast source's next
  // free slot.)
  EXPECT_GE(own_ms, work_ms);
}

TEST(TraceFile, AnUnwritablePathFailsTheStartWithASentence) {
  SKIP_WITHOUT_BACKEND();
  StatsPipeline p(source(5, 30) + "trace-file=/nonexistent-dir/trace.json ! fakesink");
  const std::string error = p.run(5s);
  EXPECT_NE(error.find("/nonexistent-dir/trace.json"), std::string::npos) << error;
}

}  // namespace
}  // namespace cudaoverlap_test
