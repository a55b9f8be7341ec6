// What real clients and hostile input found wrong, each through a real
// pipeline, next to what GStreamer's own elements do there: YUV matrices
// the kernels do not use (BT.2020, BT.2100, SMPTE 240M), a GstVideoMeta
// larger than the caps (a decoder's coded size), a trace file that cannot
// be written, caps refused as a CAPS event, the colorimetry convert gives
// its output, kernel-launch numbers past an int, and a blocking `process`
// handler while the element stops. Each test failed before its fix.
#include <gst/app/gstappsink.h>
#include <gst/app/gstappsrc.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "cudaoverlap/cudaoverlap.h"
#include "element_test_util.h"

namespace cudaoverlap_test {
namespace {

using namespace std::chrono_literals;

std::string element() { return " cudaoverlap " + backend_properties() + " "; }

// ---------------------------------------------------------------------------
// Matrices the kernels do not use

struct MatrixCase {
  const char* kernel;
  const char* colorimetry;
};

class UnknownMatrix : public ::testing::TestWithParam<MatrixCase> {};

// Every HDR or UHD stream carries bt2020 or bt2100; only an operation that
// uses the matrix may refuse it.
TEST_P(UnknownMatrix, KernelsThatDoNotUseTheMatrixTakeTheStream) {
  SKIP_WITHOUT_BACKEND();
  const MatrixCase c = GetParam();
  std::string error;
  EXPECT_EQ(run_pipeline(std::string("videotestsrc num-buffers=5 ! "
                                     "video/x-raw,format=I420,width=64,height=48,colorimetry=") +
                             c.colorimetry + " !" + element() + "kernel=" + c.kernel +
                             " ! video/x-raw,colorimetry=" + c.colorimetry + " ! fakesink",
                         &error),
            GST_MESSAGE_EOS)
      << c.kernel << " on " << c.colorimetry << ": " << error;
}

std::vector<MatrixCase> matrix_cases() {
  std::vector<MatrixCase> cases;
  for (const char* kernel : {"copy", "invert", "flip", "blur", "edge", "balance", "convert"})
    for (const char* colorimetry : {"bt2020", "bt2100-pq", "smpte240m"})
      cases.push_back({kernel, colorimetry});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Kernels, UnknownMatrix, ::testing::ValuesIn(matrix_cases()),
                         [](const ::testing::TestParamInfo<MatrixCase>& info) {
                           std::string name =
                               std::string(info.param.kernel) + "_" + info.param.colorimetry;
                           for (char& ch : name)
                             if (ch == '-') ch = '_';
                           return name;
                         });

// 10-bit HEVC's and AV1's BT.2020 (and BT.2100, its matrix) to and from RGB:
// converted, where it once was refused. (tests/kernels compares the
// samples with videoconvert's.)
TEST(UnknownMatrixConvert, Bt2020ToAndFromRgbIsConverted) {
  SKIP_WITHOUT_BACKEND();
  for (const char* colorimetry : {"bt2020", "bt2100-pq"}) {
    std::string error;
    EXPECT_EQ(run_pipeline(std::string("videotestsrc num-buffers=5 ! "
                                       "video/x-raw,format=P010_10LE,width=64,height=48,"
                                       "colorimetry=") +
                               colorimetry + " !" + element() +
                               "kernel=convert ! video/x-raw,format=RGBA !" + element() +
                               "kernel=convert ! video/x-raw,format=I420,colorimetry=" +
                               colorimetry + " ! fakesink",
                           &error),
              GST_MESSAGE_EOS)
        << colorimetry << ": " << error;
  }
}

// YUV to YUV keeps the samples: a change of range (or matrix) the kernels
// cannot make is refused with an unknown matrix as with a known one.
TEST(UnknownMatrixConvert, ARangeChangeBetweenYuvFormatsIsRefused) {
  SKIP_WITHOUT_BACKEND();
  GstVideoColorimetry full;
  ASSERT_TRUE(gst_video_colorimetry_from_string(&full, "bt2020"));
  full.range = GST_VIDEO_COLOR_RANGE_0_255;
  gchar* full_text = gst_video_colorimetry_to_string(&full);
  const std::string full_caps = full_text;
  g_free(full_text);
  std::string error;
  EXPECT_EQ(
      run_pipeline("videotestsrc num-buffers=5 ! "
                   "video/x-raw,format=I420,width=64,height=48,colorimetry=" +
                       full_caps + " !" + element() +
                       "kernel=convert ! video/x-raw,format=NV12,colorimetry=bt2020 ! fakesink",
                   &error),
      GST_MESSAGE_ERROR)
      << "full range passed as limited";
  EXPECT_NE(error.find("range"), std::string::npos) << error;
}

// ---------------------------------------------------------------------------
// A GstVideoMeta larger than the caps

// A frame at the coded size `coded`, described by a GstVideoMeta of that
// size, for caps of a smaller size.
GstBuffer* coded_frame(const GstVideoInfo& coded, uint32_t seed, uint64_t index) {
  GstBuffer* buffer = make_frame(coded, seed, index);
  gsize offsets[GST_VIDEO_MAX_PLANES] = {};
  gint strides[GST_VIDEO_MAX_PLANES] = {};
  for (guint p = 0; p < GST_VIDEO_INFO_N_PLANES(&coded); ++p) {
    offsets[p] = GST_VIDEO_INFO_PLANE_OFFSET(&coded, p);
    strides[p] = GST_VIDEO_INFO_PLANE_STRIDE(&coded, p);
  }
  gst_buffer_add_video_meta_full(buffer, GST_VIDEO_FRAME_FLAG_NONE, GST_VIDEO_INFO_FORMAT(&coded),
                                 GST_VIDEO_INFO_WIDTH(&coded), GST_VIDEO_INFO_HEIGHT(&coded),
                                 GST_VIDEO_INFO_N_PLANES(&coded), offsets, strides);
  return buffer;
}

// The caps-sized top-left part is the frame, as videoconvert and videoflip
// take it.
TEST(CodedSize, AVideoMetaLargerThanTheCapsGivesItsTopLeftPart) {
  SKIP_WITHOUT_BACKEND();
  for (GstVideoFormat format :
       {GST_VIDEO_FORMAT_RGBA, GST_VIDEO_FORMAT_NV12, GST_VIDEO_FORMAT_I420}) {
    const GstVideoInfo info = video_info(format, 60, 34);
    const GstVideoInfo coded = video_info(format, 64, 48);
    GError* parse_error = nullptr;
    GstElement* pipeline = gst_parse_launch(
        ("appsrc name=src format=time !" + element() + "kernel=invert ! appsink name=sink").c_str(),
        &parse_error);
    ASSERT_EQ(parse_error, nullptr) << parse_error->message;
    GstElement* src = gst_bin_get_by_name(GST_BIN(pipeline), "src");
    GstElement* sink = gst_bin_get_by_name(GST_BIN(pipeline), "sink");
    GstCaps* caps = caps_of(info);
    g_object_set(src, "caps", caps, nullptr);
    gst_caps_unref(caps);
    gst_element_set_state(pipeline, GST_STATE_PLAYING);
    std::vector<GstBuffer*> inputs;
    for (int i = 0; i < 4; ++i) inputs.push_back(coded_frame(coded, 40u + i, i));
    for (GstBuffer* b : inputs)
      EXPECT_EQ(gst_app_src_push_buffer(GST_APP_SRC(src), gst_buffer_ref(b)), GST_FLOW_OK);
    gst_app_src_end_of_stream(GST_APP_SRC(src));
    for (size_t i = 0; i < inputs.size(); ++i) {
      GstSample* sample = gst_app_sink_try_pull_sample(GST_APP_SINK(sink), 10 * GST_SECOND);
      ASSERT_NE(sample, nullptr) << gst_video_format_to_string(format) << " frame " << i;
      GstBuffer* out = gst_sample_get_buffer(sample);
      EXPECT_EQ(compare_frames(info, inputs[i], out, Kernel::kInvert), "")
          << gst_video_format_to_string(format) << " frame " << i;
      const GstVideoMeta* meta = gst_buffer_get_video_meta(out);
      if (meta != nullptr) {
        EXPECT_EQ(static_cast<gint>(meta->width), GST_VIDEO_INFO_WIDTH(&info));
        EXPECT_EQ(static_cast<gint>(meta->height), GST_VIDEO_INFO_HEIGHT(&info));
      }
      gst_sample_unref(sample);
    }
    run_or_die("pipeline to NULL", 10s, [&] { gst_element_set_state(pipeline, GST_STATE_NULL); });
    for (GstBuffer* b : inputs) gst_buffer_unref(b);
    gst_object_unref(src);
    gst_object_unref(sink);
    gst_object_unref(pipeline);
  }
}

// ---------------------------------------------------------------------------
// A trace file that cannot be written

// Long enough that the trace's buffer is written out mid-stream, and short.
TEST(TraceFile, WriteErrorsAreOneWarningNamingTheFileAndTheStreamGoesOn) {
  SKIP_WITHOUT_BACKEND();
  for (int frames : {10, 3000}) {
    std::vector<std::string> warnings;
    std::string error;
    EXPECT_EQ(run_pipeline("videotestsrc num-buffers=" + std::to_string(frames) +
                               " ! video/x-raw,width=16,height=16 !" + element() +
                               "trace-file=/dev/full ! fakesink",
                           &error, &warnings),
              GST_MESSAGE_EOS)
        << error;
    int about_trace = 0;
    for (const std::string& w : warnings)
      if (w.find("/dev/full") != std::string::npos) ++about_trace;
    EXPECT_EQ(about_trace, 1) << frames << " frames: warnings about the trace file";
  }
}

// ---------------------------------------------------------------------------
// Caps refused as a CAPS event

// appsrc sends its caps as an event, with no query first, as decodebin's
// pads and dynamic links do: the refusal must still say what is taken.
TEST(RefusedCaps, ACapsEventWithAFormatNotTakenIsAnErrorListingWhatIs) {
  SKIP_WITHOUT_BACKEND();
  std::string error;
  EXPECT_EQ(run_pipeline("appsrc num-buffers=2 caps=\"video/x-raw,format=Y444_10LE,width=64,"
                         "height=48,framerate=30/1\" format=time ! " +
                             element() + "kernel=flip ! fakesink",
                         &error),
            GST_MESSAGE_ERROR);
  // appsrc here runs dry (no buffer is ever pushed): the error must come at
  // the caps.
  EXPECT_NE(error.find("Y444_10LE"), std::string::npos) << error;
  EXPECT_NE(error.find("kernel=flip takes"), std::string::npos) << error;
}

// Caps the kernel takes but downstream does not are downstream's refusal:
// the kernel is not blamed (upstream may negotiate again; if not, its own
// not-negotiated is the error).
TEST(RefusedCaps, ACapsEventDownstreamRefusesDoesNotBlameTheKernel) {
  SKIP_WITHOUT_BACKEND();
  GError* parse_error = nullptr;
  GstElement* pipeline = gst_parse_launch(("appsrc name=src format=time !" + element() +
                                           "kernel=copy ! video/x-raw,format=NV12 ! fakesink")
                                              .c_str(),
                                          &parse_error);
  ASSERT_EQ(parse_error, nullptr) << parse_error->message;
  GstElement* src = gst_bin_get_by_name(GST_BIN(pipeline), "src");
  const GstVideoInfo info = video_info(GST_VIDEO_FORMAT_RGBA, 32, 16);
  GstCaps* caps = caps_of(info);
  g_object_set(src, "caps", caps, nullptr);
  gst_caps_unref(caps);
  gst_element_set_state(pipeline, GST_STATE_PLAYING);
  gst_app_src_push_buffer(GST_APP_SRC(src), make_frame(info, 1, 0));
  GstBus* bus = gst_element_get_bus(pipeline);
  GstMessage* message = gst_bus_timed_pop_filtered(bus, 10 * GST_SECOND, GST_MESSAGE_ERROR);
  ASSERT_NE(message, nullptr) << "appsrc's not-negotiated never came";
  GError* e = nullptr;
  gst_message_parse_error(message, &e, nullptr);
  const std::string text = e->message;
  g_error_free(e);
  gst_message_unref(message);
  EXPECT_EQ(text.find("cudaoverlap cannot process caps"), std::string::npos) << text;
  gst_object_unref(bus);
  run_or_die("pipeline to NULL", 10s, [&] { gst_element_set_state(pipeline, GST_STATE_NULL); });
  gst_object_unref(src);
  gst_object_unref(pipeline);
}

TEST(RefusedCaps, CapsChangedMidStreamToAFormatNotTakenAreAnErrorListingWhatIs) {
  SKIP_WITHOUT_BACKEND();
  GError* parse_error = nullptr;
  GstElement* pipeline = gst_parse_launch(
      ("appsrc name=src format=time !" + element() + "kernel=balance ! fakesink").c_str(),
      &parse_error);
  ASSERT_EQ(parse_error, nullptr) << parse_error->message;
  GstElement* src = gst_bin_get_by_name(GST_BIN(pipeline), "src");
  const GstVideoInfo first = video_info(GST_VIDEO_FORMAT_RGBA, 32, 16);
  GstCaps* caps = caps_of(first);
  g_object_set(src, "caps", caps, nullptr);
  gst_caps_unref(caps);
  gst_element_set_state(pipeline, GST_STATE_PLAYING);
  EXPECT_EQ(gst_app_src_push_buffer(GST_APP_SRC(src), make_frame(first, 1, 0)), GST_FLOW_OK);
  const GstVideoInfo second = video_info(GST_VIDEO_FORMAT_P010_10LE, 32, 16);
  caps = caps_of(second);
  g_object_set(src, "caps", caps, nullptr);
  gst_caps_unref(caps);
  gst_app_src_push_buffer(GST_APP_SRC(src), make_frame(second, 2, 1));
  GstBus* bus = gst_element_get_bus(pipeline);
  GstMessage* message = gst_bus_timed_pop_filtered(bus, 10 * GST_SECOND, GST_MESSAGE_ERROR);
  ASSERT_NE(message, nullptr);
  GError* e = nullptr;
  gst_message_parse_error(message, &e, nullptr);
  const std::string text = e->message;
  g_error_free(e);
  gst_message_unref(message);
  EXPECT_NE(text.find("P010_10LE"), std::string::npos) << text;
  EXPECT_NE(text.find("kernel=balance takes"), std::string::npos) << text;
  gst_object_unref(bus);
  run_or_die("pipeline to NULL", 10s, [&] { gst_element_set_state(pipeline, GST_STATE_NULL); });
  gst_object_unref(src);
  gst_object_unref(pipeline);
}

// ---------------------------------------------------------------------------
// The colorimetry convert gives its output

// The colorimetry the sink's caps mean (a missing field read as its
// default), after preroll.
std::string prerolled_colorimetry(const std::string& description) {
  GError* parse_error = nullptr;
  GstElement* pipeline = gst_parse_launch(description.c_str(), &parse_error);
  if (parse_error != nullptr) {
    ADD_FAILURE() << description << ": " << parse_error->message;
    g_error_free(parse_error);
    return {};
  }
  gst_element_set_state(pipeline, GST_STATE_PAUSED);
  std::string colorimetry = "(no preroll)";
  if (gst_element_get_state(pipeline, nullptr, nullptr, 10 * GST_SECOND) ==
      GST_STATE_CHANGE_SUCCESS) {
    GstElement* sink = gst_bin_get_by_name(GST_BIN(pipeline), "sink");
    GstPad* pad = gst_element_get_static_pad(sink, "sink");
    GstCaps* caps = gst_pad_get_current_caps(pad);
    GstVideoInfo info;
    if (caps != nullptr && gst_video_info_from_caps(&info, caps)) {
      gchar* text = gst_video_colorimetry_to_string(&info.colorimetry);
      colorimetry = text ? text : "(none)";
      g_free(text);
    }
    if (caps) gst_caps_unref(caps);
    gst_object_unref(pad);
    gst_object_unref(sink);
  }
  run_or_die("pipeline to NULL", 10s, [&] { gst_element_set_state(pipeline, GST_STATE_NULL); });
  gst_object_unref(pipeline);
  return colorimetry;
}

// Across YUV and RGB videoconvert keeps the input's transfer and primaries
// (the pixels are not re-graded); within YUV the whole colorimetry.
TEST(ConvertColorimetry, TheOutputIsLabelledAsVideoconvertLabelsIt) {
  SKIP_WITHOUT_BACKEND();
  const std::pair<const char*, const char*> cases[] = {
      {"format=NV12,colorimetry=bt709", "format=RGBA"},
      {"format=NV12,colorimetry=bt601", "format=BGRx"},
      {"format=I420,colorimetry=bt709", "format=NV12"},
      {"format=RGBA", "format=I420"},
  };
  for (const auto& [in, out] : cases) {
    const std::string head =
        std::string("videotestsrc num-buffers=1 ! video/x-raw,width=64,height=48,") + in + " ! ";
    const std::string tail = std::string(" ! video/x-raw,") + out + " ! fakesink name=sink";
    const std::string theirs = prerolled_colorimetry(head + "videoconvert" + tail);
    const std::string ours = prerolled_colorimetry(head + element() + "kernel=convert" + tail);
    EXPECT_EQ(ours, theirs) << in << " -> " << out;
  }
}

// ---------------------------------------------------------------------------
// kernel-launch numbers past an int

TEST(KernelLaunch, NumbersPastAnIntAreRefusedNotWrappedAround) {
  // 4294967297 read as an int wrapped to 1: a 1x1 block nobody asked for.
  for (const char* launch : {"4294967297x1", "99999999999x1", "32x8/4294967297x1", "-1x8"}) {
    std::string error;
    EXPECT_EQ(run_pipeline(std::string("videotestsrc num-buffers=2 ! cudaoverlap kernel=custom "
                                       "kernel-source=x kernel-launch=") +
                               launch + " ! fakesink",
                           &error),
              GST_MESSAGE_ERROR)
        << launch;
    EXPECT_NE(error.find("not a launch shape"), std::string::npos) << launch << ": " << error;
  }
}

// ---------------------------------------------------------------------------
// A blocking `process` handler while the element stops

struct SlowHandler {
  std::atomic<bool> stopping{false};
  std::atomic<int> calls{0};
  std::atomic<int> calls_while_stopping{0};
  static gboolean process(GstElement*, const CudaOverlapImage*, const CudaOverlapImage*, gpointer,
                          gpointer self) {
    auto* h = static_cast<SlowHandler*>(self);
    ++h->calls;
    if (h->stopping) ++h->calls_while_stopping;
    std::this_thread::sleep_for(200ms);
    return TRUE;
  }
};

// Frames still in flight when the element stops are thrown away: the
// handler is not called ring-size more times first.
TEST(ApplicationStop, GoingToNullDoesNotCallTheHandlerForFramesInFlight) {
  if (test_backend() != "cpu") GTEST_SKIP() << "the handler here works on host planes";
  GError* parse_error = nullptr;
  GstElement* pipeline =
      gst_parse_launch(("videotestsrc ! video/x-raw,format=RGBA,width=32,height=16 !" + element() +
                        "name=overlap kernel=application ring-size=4 ! fakesink sync=false")
                           .c_str(),
                       &parse_error);
  ASSERT_EQ(parse_error, nullptr) << parse_error->message;
  GstElement* overlap = gst_bin_get_by_name(GST_BIN(pipeline), "overlap");
  SlowHandler handler;
  g_signal_connect(overlap, "process", G_CALLBACK(SlowHandler::process), &handler);
  gst_element_set_state(pipeline, GST_STATE_PLAYING);
  for (int i = 0; i < 500 && handler.calls < 2; ++i) std::this_thread::sleep_for(10ms);
  ASSERT_GE(handler.calls.load(), 2) << "the handler never ran";
  std::this_thread::sleep_for(50ms);  // the ring is full behind the handler
  handler.stopping = true;
  run_or_die("pipeline to NULL", 10s, [&] { gst_element_set_state(pipeline, GST_STATE_NULL); });
  // The call under way may end; none starts for the frames left.
  EXPECT_LE(handler.calls_while_stopping.load(), 1);
  gst_object_unref(overlap);
  gst_object_unref(pipeline);
}

}  // namespace
}  // namespace cudaoverlap_test
