// End-to-end pipelines built with gst_parse_launch: every format and odd
// sizes through appsrc ! cudaoverlap ! appsink, checked byte for byte
// against the tests' own CPU computation; padded input strides; and
// videotestsrc pipelines stopped while running.
#include <gst/app/gstappsink.h>
#include <gst/app/gstappsrc.h>
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>
#include <tuple>

#include "app_pipeline.h"
#include "cudaoverlap/cudaoverlap.h"
#include "element_test_util.h"

namespace cudaoverlap_test {
namespace {

using namespace std::chrono_literals;

// Pushes `inputs` (kept by the caller) and checks what comes out.
void run_and_check(const GstVideoInfo& info, const std::vector<GstBuffer*>& inputs, Kernel kernel,
                   const std::string& properties = "") {
  AppPipeline pipeline(info, std::string("kernel=") + kernel_nick(kernel) + " " + properties);
  ASSERT_TRUE(pipeline.ok());
  for (GstBuffer* input : inputs) pipeline.push(gst_buffer_ref(input));
  pipeline.end();
  for (size_t i = 0; i < inputs.size(); ++i) {
    GstSample* sample = pipeline.pull();
    ASSERT_NE(sample, nullptr) << "frame " << i << " missing; error: " << pipeline.error();
    GstBuffer* out = gst_sample_get_buffer(sample);
    EXPECT_EQ(GST_BUFFER_PTS(out), GST_BUFFER_PTS(inputs[i]));
    // Downstream is given GStreamer's default layout, with no meta needed.
    EXPECT_EQ(gst_buffer_get_video_meta(out), nullptr);
    EXPECT_EQ(gst_buffer_get_size(out), GST_VIDEO_INFO_SIZE(&info));
    EXPECT_EQ(compare_frames(info, inputs[i], out, kernel), "") << "frame " << i;
    gst_sample_unref(sample);
  }
  GstSample* extra = pipeline.pull();
  EXPECT_EQ(extra, nullptr);
  if (extra) gst_sample_unref(extra);
  EXPECT_TRUE(pipeline.eos());
  EXPECT_EQ(pipeline.error(), "");
}

using Case = std::tuple<GstVideoFormat, std::pair<int, int>, Kernel>;

std::string case_name(const ::testing::TestParamInfo<Case>& param) {
  const std::pair<int, int> size = std::get<1>(param.param);
  return std::string(gst_video_format_to_string(std::get<0>(param.param))) + "_" +
         std::to_string(size.first) + "x" + std::to_string(size.second) + "_" +
         kernel_nick(std::get<2>(param.param));
}

class EndToEnd : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override { SKIP_WITHOUT_BACKEND(); }
};

TEST_P(EndToEnd, OutputEqualsTheCpuComputation) {
  const GstVideoFormat format = std::get<0>(GetParam());
  const std::pair<int, int> size = std::get<1>(GetParam());
  const Kernel kernel = std::get<2>(GetParam());
  const GstVideoInfo info = video_info(format, size.first, size.second);
  std::vector<GstBuffer*> inputs;
  for (uint64_t i = 0; i < 3; ++i) inputs.push_back(make_frame(info, 17 * (i + 1), i));
  run_and_check(info, inputs, kernel);
  for (GstBuffer* input : inputs) gst_buffer_unref(input);
}

INSTANTIATE_TEST_SUITE_P(
    AllFormats, EndToEnd,
    ::testing::Combine(
        ::testing::Values(GST_VIDEO_FORMAT_RGBA, GST_VIDEO_FORMAT_BGRA, GST_VIDEO_FORMAT_RGBx,
                          GST_VIDEO_FORMAT_BGRx, GST_VIDEO_FORMAT_ARGB, GST_VIDEO_FORMAT_ABGR,
                          GST_VIDEO_FORMAT_NV12, GST_VIDEO_FORMAT_I420, GST_VIDEO_FORMAT_GRAY8,
                          GST_VIDEO_FORMAT_YUY2, GST_VIDEO_FORMAT_UYVY, GST_VIDEO_FORMAT_RGB,
                          GST_VIDEO_FORMAT_BGR, GST_VIDEO_FORMAT_NV21, GST_VIDEO_FORMAT_NV16,
                          GST_VIDEO_FORMAT_Y42B, GST_VIDEO_FORMAT_Y444, GST_VIDEO_FORMAT_P010_10LE,
                          GST_VIDEO_FORMAT_I420_10LE, GST_VIDEO_FORMAT_GRAY16_LE),
        ::testing::Values(std::make_pair(1, 1), std::make_pair(3, 5), std::make_pair(641, 479),
                          std::make_pair(64, 48)),
        ::testing::Values(Kernel::kCopy, Kernel::kInvert)),
    case_name);

class PaddedStrides : public ::testing::TestWithParam<GstVideoFormat> {
 protected:
  void SetUp() override { SKIP_WITHOUT_BACKEND(); }
};

TEST_P(PaddedStrides, InputWithVideoMetaComesOutInTheDefaultLayout) {
  const GstVideoInfo info = video_info(GetParam(), 641, 479);
  std::vector<GstBuffer*> inputs;
  for (uint64_t i = 0; i < 3; ++i) inputs.push_back(make_padded_frame(info, 5 + i, 8 + 64 * i, i));
  run_and_check(info, inputs, Kernel::kInvert, "ring-size=2");
  for (GstBuffer* input : inputs) gst_buffer_unref(input);
}

INSTANTIATE_TEST_SUITE_P(Formats, PaddedStrides,
                         ::testing::Values(GST_VIDEO_FORMAT_RGBA, GST_VIDEO_FORMAT_NV12,
                                           GST_VIDEO_FORMAT_I420, GST_VIDEO_FORMAT_GRAY8,
                                           GST_VIDEO_FORMAT_YUY2, GST_VIDEO_FORMAT_RGB,
                                           GST_VIDEO_FORMAT_NV16, GST_VIDEO_FORMAT_Y444,
                                           GST_VIDEO_FORMAT_P010_10LE, GST_VIDEO_FORMAT_I420_10LE),
                         [](const ::testing::TestParamInfo<GstVideoFormat>& param) {
                           return std::string(gst_video_format_to_string(param.param));
                         });

TEST(Pipelines, SerialModeGivesTheSameFrames) {
  SKIP_WITHOUT_BACKEND();
  const GstVideoInfo info = video_info(GST_VIDEO_FORMAT_ABGR, 65, 33);
  std::vector<GstBuffer*> inputs;
  for (uint64_t i = 0; i < 6; ++i) inputs.push_back(make_frame(info, 90 + i, i));
  run_and_check(info, inputs, Kernel::kInvert, "mode=serial ring-size=1");
  for (GstBuffer* input : inputs) gst_buffer_unref(input);
}

// Frames split into bands (bands=4) come out as whole frames do, in formats
// with one, two and three planes, 4:2:0 with an odd height, and input rows
// padded beyond their pixels.
TEST(Pipelines, FramesSplitIntoBandsComeOutExact) {
  SKIP_WITHOUT_BACKEND();
  for (GstVideoFormat format : {GST_VIDEO_FORMAT_RGBA, GST_VIDEO_FORMAT_NV12, GST_VIDEO_FORMAT_I420,
                                GST_VIDEO_FORMAT_YUY2, GST_VIDEO_FORMAT_P010_10LE}) {
    const GstVideoInfo info = video_info(format, 641, 479);
    std::vector<GstBuffer*> inputs;
    for (uint64_t i = 0; i < 4; ++i)
      inputs.push_back(i % 2 ? make_padded_frame(info, 30 + i, 24, i)
                             : make_frame(info, 30 + i, i));
    run_and_check(info, inputs, Kernel::kInvert, "bands=4");
    run_and_check(info, inputs, Kernel::kCopy, "bands=16 ring-size=2");
    for (GstBuffer* input : inputs) gst_buffer_unref(input);
  }
}

// Every buffer an appsink named "sink" at the end of `description` got, up
// to EOS (transfer full); fails the test on an error or after 10 s.
std::vector<GstBuffer*> run_launch_line(const std::string& description) {
  std::vector<GstBuffer*> buffers;
  GError* error = nullptr;
  GstElement* pipeline = gst_parse_launch(description.c_str(), &error);
  if (error != nullptr) {
    ADD_FAILURE() << description << ": " << error->message;
    g_error_free(error);
    return buffers;
  }
  GstElement* sink = gst_bin_get_by_name(GST_BIN(pipeline), "sink");
  EXPECT_NE(gst_element_set_state(pipeline, GST_STATE_PLAYING), GST_STATE_CHANGE_FAILURE);
  while (GstSample* sample = gst_app_sink_try_pull_sample(GST_APP_SINK(sink), 10 * GST_SECOND)) {
    buffers.push_back(gst_buffer_ref(gst_sample_get_buffer(sample)));
    gst_sample_unref(sample);
  }
  EXPECT_TRUE(gst_app_sink_is_eos(GST_APP_SINK(sink))) << description << ": no EOS within 10 s";
  GstBus* bus = gst_element_get_bus(pipeline);
  GstMessage* message = gst_bus_pop_filtered(bus, GST_MESSAGE_ERROR);
  EXPECT_EQ(message, nullptr) << description << ": an error was posted";
  if (message) gst_message_unref(message);
  gst_object_unref(bus);
  gst_element_set_state(pipeline, GST_STATE_NULL);
  gst_object_unref(sink);
  gst_object_unref(pipeline);
  return buffers;
}

// Operations that read rows around their own split into bands too: blur
// and edge read their halo rows of the whole frame; convert, where 4:2:0
// chroma or a Bayer mosaic mixes rows, runs on each band's view (the band
// and its halo) into a scratch image. Either way the output is the
// whole-frame output, byte for byte (a band clamped at its own edges
// would differ on the rows next to each cut).
TEST(Pipelines, KernelsOnBandsEqualWholeFrames) {
  SKIP_WITHOUT_BACKEND();
  // Under a sanitizer the CPU references run many times slower, and over
  // two stand-ins (element-two-devices) they share the cores with another
  // suite in CI: the first blurred frame took more than the 10 s a pull
  // may wait under ThreadSanitizer there. A quarter of the pixels, still
  // 34 rows a band, several times the blur's halo.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  constexpr int kWidth = 322, kHeight = 238;
#else
  constexpr int kWidth = 642, kHeight = 478;
#endif
  struct Case {
    const char* in;
    const char* kernel;
    const char* out;
  };
  for (const Case& c :
       {Case{"RGBA", "blur sigma=2.5", "RGBA"}, Case{"NV12", "blur sigma=2.5", "NV12"},
        Case{"YUY2", "blur sigma=2.5", "YUY2"}, Case{"RGBA", "edge", "RGBA"},
        Case{"NV12", "edge", "NV12"}, Case{"YUY2", "edge", "YUY2"}, Case{"NV12", "convert", "RGBA"},
        Case{"I420", "convert", "BGRx"}, Case{"RGBA", "convert", "NV12"},
        Case{"YUY2", "convert", "I420"}, Case{"YUY2", "convert", "RGBA"}}) {
    SCOPED_TRACE(std::string(c.in) + " -> " + c.out + ", kernel=" + c.kernel);
    // A colour cube: chroma changes down every column, so a band cut
    // without its halo shows.
    const std::string source =
        std::string("videotestsrc num-buffers=3 pattern=colors ! video/x-raw,format=") + c.in +
        ",width=" + std::to_string(kWidth) + ",height=" + std::to_string(kHeight) +
        " ! cudaoverlap " + backend_properties() + " kernel=" + c.kernel;
    const std::string sink =
        std::string(" ! video/x-raw,format=") + c.out + " ! appsink name=sink sync=false";
    const std::vector<GstBuffer*> whole = run_launch_line(source + " bands=1" + sink);
    const std::vector<GstBuffer*> banded = run_launch_line(source + " bands=7" + sink);
    ASSERT_EQ(whole.size(), 3u);
    ASSERT_EQ(banded.size(), whole.size());
    // Pixel bytes only: nothing writes the rows' padding. An even width:
    // videotestsrc leaves the phantom luma of an odd YUY2 row's last pair
    // as it finds it, which then differs from run to run.
    const GstVideoInfo info = video_info(gst_video_format_from_string(c.out), kWidth, kHeight);
    for (size_t i = 0; i < whole.size(); ++i)
      EXPECT_EQ(compare_frames(info, whole[i], banded[i], Kernel::kCopy), "") << "frame " << i;
    for (GstBuffer* buffer : whole) gst_buffer_unref(buffer);
    for (GstBuffer* buffer : banded) gst_buffer_unref(buffer);
  }
}

// n-threads cuts the cpu backend's frames into bands computed at once
// (tests/engine/test_cpu_threads.cpp shows the cut); the frames are those
// of one thread. Its default is videoconvert's, 1.
TEST(Pipelines, CpuThreadsGiveTheFramesOfOne) {
  GstElement* element = gst_element_factory_make("cudaoverlap", nullptr);
  ASSERT_NE(element, nullptr);
  guint threads = 0;
  g_object_get(element, "n-threads", &threads, nullptr);
  EXPECT_EQ(threads, 1u);
  gst_object_unref(element);
  // Large enough for three bands of at least 64 K pixels (the fast paths
  // keep it quick under the sanitizers too).
  constexpr int kWidth = 642, kHeight = 478;
  struct Case {
    const char* in;
    const char* properties;
    const char* out;
    int width, height;  // the output's
  };
  for (const Case& c :
       {Case{"RGBA", "kernel=blur sigma=2.5", "RGBA", kWidth, kHeight},
        Case{"YUY2", "kernel=convert", "RGBA", kWidth, kHeight},
        Case{"NV12", "kernel=convert", "RGBA", kWidth, kHeight},
        Case{"I420", "kernel=balance contrast=1.2 saturation=0.7", "I420", kWidth, kHeight},
        Case{"RGBA", "kernel=scale method=lanczos", "RGBA", 900, 700},
        Case{"RGBA", "chain=\"blur sigma=2 ! invert ! blur sigma=2\"", "RGBA", kWidth, kHeight}}) {
    SCOPED_TRACE(std::string(c.in) + " -> " + c.out + ", " + c.properties);
    const std::string source =
        std::string("videotestsrc num-buffers=3 pattern=ball ! video/x-raw,format=") + c.in +
        ",width=" + std::to_string(kWidth) + ",height=" + std::to_string(kHeight) +
        " ! cudaoverlap backend=cpu " + c.properties;
    const std::string sink =
        std::string(" ! video/x-raw,format=") + c.out + ",width=" + std::to_string(c.width) +
        ",height=" + std::to_string(c.height) + " ! appsink name=sink sync=false";
    const std::vector<GstBuffer*> one = run_launch_line(source + " n-threads=1" + sink);
    const std::vector<GstBuffer*> three = run_launch_line(source + " n-threads=3" + sink);
    ASSERT_EQ(one.size(), 3u);
    ASSERT_EQ(three.size(), one.size());
    const GstVideoInfo info = video_info(gst_video_format_from_string(c.out), c.width, c.height);
    for (size_t i = 0; i < one.size(); ++i)
      EXPECT_EQ(compare_frames(info, one[i], three[i], Kernel::kCopy), "") << "frame " << i;
    for (GstBuffer* buffer : one) gst_buffer_unref(buffer);
    for (GstBuffer* buffer : three) gst_buffer_unref(buffer);
  }
}

// Scaling splits into bands of output rows, each from the input rows its
// taps reach: down, up, with a crop, and letterboxed (border rows read
// nothing), the output equals whole frames' byte for byte. A moving ball,
// so that a band reading a slot's previous frame would show
// (Stats.SayHowManyBandsRun checks that scaling runs the bands asked for).
TEST(Pipelines, ScalingOnBandsEqualsWholeFrames) {
  SKIP_WITHOUT_BACKEND();
  // Under a sanitizer, as above: a quarter of the pixels.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  constexpr int kWidth = 322, kHeight = 238, kShrink = 2;
#else
  constexpr int kWidth = 642, kHeight = 478, kShrink = 1;
#endif
  struct Case {
    const char* format;
    const char* kernel;
    int out_width, out_height;
  };
  for (const Case& c :
       {Case{"NV12", "scale", 320, 240}, Case{"RGBA", "scale method=lanczos", 800, 700},
        Case{"I420", "scale crop-top=10 crop-bottom=20 crop-left=6", 322, 238},
        Case{"YUY2", "scale method=bicubic", 640, 640}}) {
    SCOPED_TRACE(std::string(c.format) + ", kernel=" + c.kernel);
    const int out_width = c.out_width / kShrink / 2 * 2;
    const int out_height = c.out_height / kShrink / 2 * 2;
    const std::string source =
        std::string("videotestsrc num-buffers=3 pattern=ball ! video/x-raw,format=") + c.format +
        ",width=" + std::to_string(kWidth) + ",height=" + std::to_string(kHeight) +
        " ! cudaoverlap " + backend_properties() + " kernel=" + c.kernel;
    const std::string sink = " ! video/x-raw,width=" + std::to_string(out_width) +
                             ",height=" + std::to_string(out_height) +
                             " ! appsink name=sink sync=false";
    const std::vector<GstBuffer*> whole = run_launch_line(source + " bands=1" + sink);
    const std::vector<GstBuffer*> banded = run_launch_line(source + " bands=7" + sink);
    ASSERT_EQ(whole.size(), 3u);
    ASSERT_EQ(banded.size(), whole.size());
    const GstVideoInfo info =
        video_info(gst_video_format_from_string(c.format), out_width, out_height);
    for (size_t i = 0; i < whole.size(); ++i)
      EXPECT_EQ(compare_frames(info, whole[i], banded[i], Kernel::kCopy), "") << "frame " << i;
    for (GstBuffer* buffer : whole) gst_buffer_unref(buffer);
    for (GstBuffer* buffer : banded) gst_buffer_unref(buffer);
  }
}

class LaunchLine : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override { SKIP_WITHOUT_BACKEND(); }
};

// Also from a live source, whose frames the element splits into bands
// (bands=0, automatic; Stats.SayHowManyBandsRun checks how many).
TEST_P(LaunchLine, RunsToEosWithEveryFrameInverted) {
  const bool live = GetParam();
  const std::string source =
      std::string("videotestsrc num-buffers=30 pattern=smpte is-live=") +
      (live ? "true" : "false") +
      " ! video/x-raw,format=NV12,width=64,height=48,framerate=" + (live ? "120" : "30") + "/1 ! ";
  const std::vector<GstBuffer*> inputs = run_launch_line(source + "appsink name=sink sync=false");
  const std::vector<GstBuffer*> outputs =
      run_launch_line(source + "cudaoverlap kernel=invert " + backend_properties() +
                      " ! appsink name=sink sync=false");
  ASSERT_EQ(inputs.size(), 30u);
  ASSERT_EQ(outputs.size(), inputs.size());
  const GstVideoInfo info = video_info(GST_VIDEO_FORMAT_NV12, 64, 48);
  for (size_t i = 0; i < inputs.size(); ++i) {
    // A live source stamps each run's frames with its own clock times.
    if (!live) {
      EXPECT_EQ(GST_BUFFER_PTS(outputs[i]), GST_BUFFER_PTS(inputs[i])) << "frame " << i;
    }
    EXPECT_EQ(compare_frames(info, inputs[i], outputs[i], Kernel::kInvert), "") << "frame " << i;
  }
  for (GstBuffer* buffer : inputs) gst_buffer_unref(buffer);
  for (GstBuffer* buffer : outputs) gst_buffer_unref(buffer);
}

INSTANTIATE_TEST_SUITE_P(Pipelines, LaunchLine, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return std::string(info.param ? "live" : "not_live");
                         });

TEST(Pipelines, PlayingToNullWhileFramesFlowNeverDeadlocks) {
  SKIP_WITHOUT_BACKEND();
  std::mt19937 random(7);
  for (int round = 0; round < 24; ++round) {
    SCOPED_TRACE(round);
    const int ring = round % 3 == 0 ? 1 : round % 3 == 1 ? 3 : 8;
    const std::string description =
        "videotestsrc ! video/x-raw,format=RGBA,width=160,height=120 ! cudaoverlap " +
        backend_properties() + " ring-size=" + std::to_string(ring) +
        (round % 2 ? " ! queue max-size-buffers=2" : "") + " ! fakesink sync=false";
    GstElement* pipeline = gst_parse_launch(description.c_str(), nullptr);
    ASSERT_NE(pipeline, nullptr);
    run_or_die("pipeline to PLAYING", 10s, [&] {
      EXPECT_NE(gst_element_set_state(pipeline, GST_STATE_PLAYING), GST_STATE_CHANGE_FAILURE);
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(random() % 30));
    if (round % 4 == 3) {
      run_or_die("PLAYING -> PAUSED -> PLAYING", 10s, [&] {
        gst_element_set_state(pipeline, GST_STATE_PAUSED);
        gst_element_set_state(pipeline, GST_STATE_PLAYING);
      });
      std::this_thread::sleep_for(std::chrono::milliseconds(random() % 10));
    }
    run_or_die("PLAYING -> NULL", 10s, [&] {
      EXPECT_EQ(gst_element_set_state(pipeline, GST_STATE_NULL), GST_STATE_CHANGE_SUCCESS);
    });
    gst_object_unref(pipeline);
  }
}

// Downstream (an appsink the application reads slowly, a queue) may hold
// output buffers for as long as it likes. A held buffer is the ring's
// pinned memory, or a copy once downstream holds ring-size - 1 of them; in
// neither case may the ring write into it while it is held. Holding more
// than the ring has slots must not stall the stream either.
TEST(Pipelines, HeldOutputBuffersNeverChange) {
  SKIP_WITHOUT_BACKEND();
  const GstVideoInfo info = video_info(GST_VIDEO_FORMAT_RGBA, 64, 48);
  AppPipeline pipeline(info, "kernel=invert ring-size=3");
  ASSERT_TRUE(pipeline.ok());
  constexpr int kHeld = 8;
  constexpr int kMore = 24;
  std::vector<GstBuffer*> inputs;
  for (int i = 0; i < kHeld + kMore; ++i)
    inputs.push_back(make_frame(info, 100u + static_cast<uint32_t>(i), i));
  std::vector<GstSample*> held;
  for (int i = 0; i < kHeld; ++i) {
    pipeline.push(gst_buffer_ref(inputs[i]));
    GstSample* sample = pipeline.pull();
    ASSERT_NE(sample, nullptr) << "frame " << i << " stalled; error: " << pipeline.error();
    held.push_back(sample);
  }
  // More frames through every slot of the ring, while all of the above are held.
  for (int i = kHeld; i < kHeld + kMore; ++i) {
    pipeline.push(gst_buffer_ref(inputs[i]));
    GstSample* sample = pipeline.pull();
    ASSERT_NE(sample, nullptr) << "frame " << i << " stalled; error: " << pipeline.error();
    EXPECT_EQ(compare_frames(info, inputs[i], gst_sample_get_buffer(sample), Kernel::kInvert), "")
        << "frame " << i;
    gst_sample_unref(sample);
  }
  for (int i = 0; i < kHeld; ++i) {
    EXPECT_EQ(compare_frames(info, inputs[i], gst_sample_get_buffer(held[i]), Kernel::kInvert), "")
        << "held frame " << i << " was overwritten";
    gst_sample_unref(held[i]);
  }
  pipeline.end();
  for (GstBuffer* b : inputs) gst_buffer_unref(b);
}

// The copy path is taken in live pipelines too (a syncing sink holds its last
// sample and the one waiting for the clock): it copies into buffers of a
// pool, which come back when downstream drops them, rather than into new
// memory that faults its pages in while written (20-28 ms a 4K frame on a
// GPU machine), and spreads the copy over threads. A size that is no
// multiple of the copy's rows (642x481 RGBA) has its tail copied too. The
// first copy stays held while the others come and go: it must not change.
TEST(Pipelines, CopiedOutputComesFromAPoolAndStaysExact) {
  SKIP_WITHOUT_BACKEND();
  const GstVideoInfo info = video_info(GST_VIDEO_FORMAT_RGBA, 642, 481);
  AppPipeline pipeline(info, "kernel=invert ring-size=3");
  ASSERT_TRUE(pipeline.ok());
  constexpr int kHeld = 2;     // ring-size - 1: every later frame is copied
  constexpr int kCopied = 10;  // over twice the pool's 4 (OutputBuffers::kPooledCopies)
  std::vector<GstBuffer*> inputs;
  for (int i = 0; i < kHeld + kCopied; ++i)
    inputs.push_back(make_frame(info, 300u + static_cast<uint32_t>(i), i));
  std::vector<GstSample*> held;
  for (int i = 0; i < kHeld + kCopied; ++i) {
    pipeline.push(gst_buffer_ref(inputs[i]));
    GstSample* sample = pipeline.pull();
    ASSERT_NE(sample, nullptr) << "frame " << i << " stalled; error: " << pipeline.error();
    GstBuffer* out = gst_sample_get_buffer(sample);
    EXPECT_EQ(compare_frames(info, inputs[i], out, Kernel::kInvert), "") << "frame " << i;
    if (i < kHeld) {
      held.push_back(sample);  // wrapped: the ring's own memory
      continue;
    }
    // More copies than the pool keeps, so its buffers come back and serve again.
    EXPECT_NE(out->pool, nullptr) << "frame " << i << ": a copy not from a pool";
    if (i == kHeld) {
      held.push_back(sample);  // the first copy, held to the end
      continue;
    }
    EXPECT_EQ(out->pool, gst_sample_get_buffer(held[kHeld])->pool) << "frame " << i;
    gst_sample_unref(sample);
  }
  for (size_t i = 0; i < held.size(); ++i) {
    EXPECT_EQ(compare_frames(info, inputs[i], gst_sample_get_buffer(held[i]), Kernel::kInvert), "")
        << "held frame " << i << " was overwritten";
    gst_sample_unref(held[i]);
  }
  pipeline.end();
  for (GstBuffer* b : inputs) gst_buffer_unref(b);
}

// A copy after the output size changed (a resolution change in a stream
// whose sink holds ring-size - 1 buffers) used the copy threads that the
// pool's renewal had just let go, and crashed.
TEST(Pipelines, CopiedOutputFollowsASizeChange) {
  SKIP_WITHOUT_BACKEND();
  // Each over the 64 kB from which a copy is spread over threads.
  const GstVideoInfo sizes[] = {video_info(GST_VIDEO_FORMAT_RGBA, 320, 240),
                                video_info(GST_VIDEO_FORMAT_RGBA, 256, 192),
                                video_info(GST_VIDEO_FORMAT_RGBA, 320, 200)};
  AppPipeline pipeline(sizes[0], "kernel=invert ring-size=2");
  ASSERT_TRUE(pipeline.ok());
  GstSample* held = nullptr;  // ring-size - 1: every later frame is copied
  int index = 0;
  for (const GstVideoInfo& info : sizes) {
    pipeline.set_caps(info);
    for (int i = 0; i < 3; ++i, ++index) {
      GstBuffer* input = make_frame(info, 900u + static_cast<uint32_t>(index), index);
      pipeline.push(gst_buffer_ref(input));
      GstSample* sample = pipeline.pull();
      ASSERT_NE(sample, nullptr) << "frame " << index << "; error: " << pipeline.error();
      EXPECT_EQ(compare_frames(info, input, gst_sample_get_buffer(sample), Kernel::kInvert), "")
          << GST_VIDEO_INFO_WIDTH(&info) << "x" << GST_VIDEO_INFO_HEIGHT(&info) << " frame " << i;
      gst_buffer_unref(input);
      if (held == nullptr)
        held = sample;
      else
        gst_sample_unref(sample);
    }
  }
  gst_sample_unref(held);
  pipeline.end();
}

// The same through playbin, whose sink is after a queue: a stream whose
// resolution changes, with the element as the video filter, plays to its
// end as videoflip does there.
TEST(Pipelines, PlaybinWithTheElementAsFilterFollowsAResolutionChange) {
  SKIP_WITHOUT_BACKEND();
  for (const char* filter : {"videoflip", "cudaoverlap"}) {
    GstElement* playbin = gst_element_factory_make("playbin", nullptr);
    ASSERT_NE(playbin, nullptr);
    GstElement* element = std::string(filter) == "cudaoverlap"
                              ? make_cudaoverlap({{"kernel", "invert"}, {"ring-size", "2"}})
                              : gst_element_factory_make(filter, nullptr);
    GstElement* sink = gst_element_factory_make("fakesink", nullptr);
    g_object_set(sink, "sync", TRUE, nullptr);
    g_object_set(playbin, "uri", "appsrc://", "video-filter", element, "video-sink", sink, nullptr);
    // Two sizes, 20 frames each at 200/s, from appsrc as a demuxer would.
    auto setup = +[](GstElement*, GstElement* source, gpointer) {
      g_object_set(source, "format", GST_FORMAT_TIME, nullptr);
      int index = 0;
      for (const auto& [w, h] : {std::pair<int, int>{320, 240}, {160, 120}}) {
        const GstVideoInfo info = video_info(GST_VIDEO_FORMAT_RGBA, w, h, 200, 1);
        GstCaps* caps = caps_of(info);
        for (int i = 0; i < 20; ++i, ++index) {
          GstBuffer* frame = make_frame(info, static_cast<uint32_t>(index), index);
          GstSample* sample = gst_sample_new(frame, caps, nullptr, nullptr);
          gst_app_src_push_sample(GST_APP_SRC(source), sample);
          gst_sample_unref(sample);
          gst_buffer_unref(frame);
        }
        gst_caps_unref(caps);
      }
      gst_app_src_end_of_stream(GST_APP_SRC(source));
    };
    g_signal_connect(playbin, "source-setup", G_CALLBACK(setup), nullptr);
    gst_element_set_state(playbin, GST_STATE_PLAYING);
    GstBus* bus = gst_element_get_bus(playbin);
    GstMessage* end = gst_bus_timed_pop_filtered(
        bus, 20 * GST_SECOND, static_cast<GstMessageType>(GST_MESSAGE_EOS | GST_MESSAGE_ERROR));
    ASSERT_NE(end, nullptr) << filter << ": no EOS";
    std::string error;
    if (GST_MESSAGE_TYPE(end) == GST_MESSAGE_ERROR) {
      GError* e = nullptr;
      gst_message_parse_error(end, &e, nullptr);
      error = e->message;
      g_error_free(e);
    }
    EXPECT_EQ(GST_MESSAGE_TYPE(end), GST_MESSAGE_EOS) << filter << ": " << error;
    gst_message_unref(end);
    gst_object_unref(bus);
    run_or_die("playbin to NULL", 10s, [&] { gst_element_set_state(playbin, GST_STATE_NULL); });
    gst_object_unref(playbin);
  }
}

// An upstream pool in miniature: three memory blocks of its own, refilled
// with a new frame each time the element has let go of them. From the second
// round on they are pinned and uploaded where they are, without staging; the
// output must still be each frame's own content (the element holds a block
// until its upload is done, so a refill never races the upload). Halfway,
// the blocks are freed (their pages unmapped) and three new ones mapped at
// the same addresses: with cuda-graphs, a graph kept for a freed block must
// never run for the new one at its address (its upload would read pages
// that are gone, which kills the CUDA context), so each block is known by
// its registration (InputFrame::memory_id); frames fed one at a time, as a
// live source's are, run as graphs from the pinned blocks too.
#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000  // Linux 4.17, where a C library lacks it
#endif
struct MappedBlock {
  void* data;
  size_t bytes;
  std::atomic<int>* unmapped;
  static GstBuffer* wrap(void* want, size_t bytes, gsize size, std::atomic<int>* unmapped) {
    void* data = mmap(want, bytes, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | (want ? MAP_FIXED_NOREPLACE : 0), -1, 0);
    if (data == MAP_FAILED && want)
      data = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (data == MAP_FAILED) return nullptr;
    return gst_buffer_new_wrapped_full(static_cast<GstMemoryFlags>(0), data, bytes, 0, size,
                                       new MappedBlock{data, bytes, unmapped}, unmap);
  }
  static void unmap(gpointer p) {
    auto* block = static_cast<MappedBlock*>(p);
    munmap(block->data, block->bytes);
    block->unmapped->fetch_add(1);
    delete block;
  }
};

TEST(Pipelines, RecycledUpstreamMemoryIsPinnedOnceAndFramesStayExact) {
  SKIP_WITHOUT_BACKEND();
  struct Case {
    bool pin;
    bool graphs;  // and frames one at a time
  };
  for (const Case c : {Case{true, false}, Case{false, false}, Case{true, true}}) {
    SCOPED_TRACE(std::string("pin-upstream-memory=") + (c.pin ? "true" : "false") +
                 " cuda-graphs=" + (c.graphs ? "true" : "false"));
    const GstVideoInfo info = video_info(GST_VIDEO_FORMAT_NV12, 66, 34);
    std::atomic<int> unmapped{0};  // blocks freed; outlives the pipeline
    AppPipeline pipeline(info, std::string("kernel=invert pin-upstream-memory=") +
                                   (c.pin ? "true" : "false") +
                                   " cuda-graphs=" + (c.graphs ? "true" : "false"));
    ASSERT_TRUE(pipeline.ok());
    constexpr int kBlocks = 3;
    constexpr int kGenerations = 2;
    constexpr int kFrames = 30;  // kFrames / kGenerations from each set of blocks
    // Pages of their own, as large frames have: blocks that share a page
    // with another registered block stay staged (the device refuses the
    // overlap), which upstream_pinning.h describes and the unit tests cover.
    std::vector<GstBuffer*> blocks;
    const size_t bytes = (GST_VIDEO_INFO_SIZE(&info) + 4095) / 4096 * 4096;
    std::vector<void*> addresses;
    int reused = 0;  // blocks of the second set at an address of the first
    std::vector<GstBuffer*> expected;
    int pulled = 0;
    std::chrono::steady_clock::duration took{};  // the last frame's, pushed to pulled
    // The next frame out against its input; false (and a failure) when
    // none came within 10 s or at an error, which ends the test.
    const auto pull_and_check = [&] {
      GstSample* sample = pipeline.pull();
      if (sample == nullptr) {
        ADD_FAILURE() << "frame " << pulled << " missing; error: " << pipeline.error();
        return false;
      }
      EXPECT_EQ(
          compare_frames(info, expected[pulled], gst_sample_get_buffer(sample), Kernel::kInvert),
          "")
          << "frame " << pulled;
      gst_sample_unref(sample);
      ++pulled;
      return true;
    };
    for (int i = 0; i < kFrames; ++i) {
      if (i % (kFrames / kGenerations) == 0 && !blocks.empty()) {
        // The old set freed once the element has let go of it.
        const int before = unmapped.load();
        for (GstBuffer* b : blocks) gst_buffer_unref(b);
        blocks.clear();
        const auto deadline = std::chrono::steady_clock::now() + 10s;
        while (unmapped.load() < before + kBlocks && std::chrono::steady_clock::now() < deadline)
          std::this_thread::sleep_for(1ms);
        ASSERT_EQ(unmapped.load(), before + kBlocks) << "the element still holds a freed block";
      }
      if (blocks.empty()) {
        for (int b = 0; b < kBlocks; ++b) {
          void* want = addresses.size() == kBlocks ? addresses[b] : nullptr;
          GstBuffer* block = MappedBlock::wrap(want, bytes, GST_VIDEO_INFO_SIZE(&info), &unmapped);
          ASSERT_NE(block, nullptr);
          GstMapInfo map;
          ASSERT_TRUE(gst_buffer_map(block, &map, GST_MAP_READ));
          if (want == nullptr) addresses.push_back(map.data);
          reused += want != nullptr && map.data == want;
          gst_buffer_unmap(block, &map);
          blocks.push_back(block);
        }
      }
      GstBuffer* block = blocks[i % kBlocks];
      // Wait until nothing downstream holds the block, as a pool would: not
      // the buffer, nor the memory (appsrc may push a shallow copy).
      const auto free = [&] {
        return GST_MINI_OBJECT_REFCOUNT_VALUE(block) == 1 &&
               gst_buffer_is_all_memory_writable(block);
      };
      const auto deadline = std::chrono::steady_clock::now() + 10s;
      while (!free() && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(1ms);
      ASSERT_TRUE(free()) << "frame " << i << " still held";
      expected.push_back(make_frame(info, 31u * static_cast<uint32_t>(i + 1), i));
      GstMapInfo src;
      ASSERT_TRUE(gst_buffer_map(expected.back(), &src, GST_MAP_READ));
      ASSERT_EQ(gst_buffer_fill(block, 0, src.data, src.size), src.size);
      gst_buffer_unmap(expected.back(), &src);
      GST_BUFFER_PTS(block) = GST_BUFFER_PTS(expected.back());
      GST_BUFFER_DURATION(block) = GST_BUFFER_DURATION(expected.back());
      // One at a time, each after a pause of more than twice what the one
      // before took, as a camera's: the engine runs a frame alone as a
      // graph only after such a pause (EngineConfig::graphs_idle).
      if (c.graphs) std::this_thread::sleep_for(2 * took + 1ms);
      const auto pushed = std::chrono::steady_clock::now();
      pipeline.push(gst_buffer_ref(block));
      if (c.graphs && !pull_and_check()) return;
      took = std::chrono::steady_clock::now() - pushed;
    }
    pipeline.end();
    while (pulled < kFrames)
      if (!pull_and_check()) return;
    std::printf("[   info   ] %d of %d blocks of the second set at an address of the first\n",
                reused, kBlocks);
    // Pinned: only each block's first frame is staged; none on the cpu
    // backend, which reads frames where they lie. The last frame's count
    // may land just after appsink handed it over: give it a moment.
    const guint64 want = test_backend() == "cpu" ? 0
                         : c.pin                 ? static_cast<guint64>(kBlocks * kGenerations)
                                                 : static_cast<guint64>(kFrames);
    guint64 staged = 0, as_graphs = 0;
    for (int wait = 0; wait < 200 && staged != want; ++wait) {
      if (wait > 0) std::this_thread::sleep_for(10ms);
      GstStructure* s = pipeline.stats();
      ASSERT_TRUE(gst_structure_get_uint64(s, "frames-staged", &staged));
      ASSERT_TRUE(gst_structure_get_uint64(s, "frames-as-graphs", &as_graphs));
      gst_structure_free(s);
    }
    EXPECT_EQ(staged, want);
    // Fed one at a time, most frames run as graphs on cuda, pinned ones
    // among them (the staged are only kBlocks * kGenerations).
    if (c.graphs && test_backend() == "cuda")
      EXPECT_GE(as_graphs, static_cast<guint64>(kFrames / 2)) << reused << " addresses reused";
    else
      EXPECT_EQ(as_graphs, 0u);
    // The case this is for: a new block where a freed one was. The
    // addresses are free once unmapped, unless another thread maps there
    // first, which would be rare; all three taken at once, rarer still.
    EXPECT_GT(reused, 0) << "no block of the second set came back at a freed one's address";
    for (GstBuffer* b : expected) gst_buffer_unref(b);
    for (GstBuffer* b : blocks) gst_buffer_unref(b);
  }
}

}  // namespace
}  // namespace cudaoverlap_test
