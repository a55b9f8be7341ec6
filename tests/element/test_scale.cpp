// kernel=scale in pipelines: the size it negotiates against GStreamer's own
// videoscale, every output frame against the CPU reference byte for byte
// (formats, methods, odd sizes, a size change mid-stream), a copy at one
// size, region-of-interest metas and navigation events mapped through the
// scaling, and interlaced input.
#include <gst/app/gstappsink.h>
#include <gst/app/gstappsrc.h>
#include <gst/video/gstvideometa.h>
#include <gst/video/navigation.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "app_pipeline.h"
#include "element_test_util.h"
#include "frame_layout.h"
#include "kernels/operation_registry.h"
#include "kernels/run_reference.h"
#include "video_frames.h"

namespace cudaoverlap_test {
namespace {

using cudaoverlap::FrameLayout;
using cudaoverlap::ImageRef;
using cudaoverlap::PixelFormat;

const char* const kMethods[] = {"nearest", "bilinear", "bicubic", "lanczos"};

// "kernel=scale method=M ! video/x-raw,width=W,height=H": an AppPipeline's
// element properties that also put a capsfilter after the element.
std::string scaled_to(int method, int w, int h) {
  return std::string("kernel=scale method=") + kMethods[method] +
         " ! video/x-raw,width=" + std::to_string(w) + ",height=" + std::to_string(h);
}

// Empty when the pixel bytes of `output` (of `out`) are those of the CPU
// reference of `kernel` (scale, or convert with the caps' default
// colorimetry) with `method` on `input` (of `in`), else the first that
// differs.
std::string compare_scaled(GstVideoInfo in, GstBuffer* input, GstVideoInfo out, GstBuffer* output,
                           int method, const char* kernel = "scale") {
  cudaoverlap::KernelParams params;
  params.set("method", method);
  params.sizes = {GST_VIDEO_INFO_WIDTH(&in), GST_VIDEO_INFO_HEIGHT(&in), GST_VIDEO_INFO_WIDTH(&out),
                  GST_VIDEO_INFO_HEIGHT(&out)};
  const FrameLayout layout =
      FrameLayout::packed(engine_format(GST_VIDEO_INFO_FORMAT(&out)), GST_VIDEO_INFO_WIDTH(&out),
                          GST_VIDEO_INFO_HEIGHT(&out));
  std::vector<uint8_t> expected(layout.size);
  GstVideoFrame a, b;
  if (!gst_video_frame_map(&a, &in, input, GST_MAP_READ)) return "cannot map the input";
  cudaoverlap::run_reference(*cudaoverlap::make_operation(kernel, params), image_of(&a),
                             layout.at(expected.data()));
  gst_video_frame_unmap(&a);
  if (!gst_video_frame_map(&b, &out, output, GST_MAP_READ)) return "cannot map the output";
  const ImageRef got = image_of(&b);
  std::string problem;
  for (int p = 0; p < layout.n_planes() && problem.empty(); ++p)
    for (size_t y = 0; y < layout.rows(p) && problem.empty(); ++y)
      for (size_t x = 0; x < layout.row_bytes(p); ++x) {
        const uint8_t want = expected[layout.offset[p] + y * layout.stride[p] + x];
        const uint8_t have = got.planes[p].data[y * got.planes[p].stride + x];
        if (want != have) {
          problem = "plane " + std::to_string(p) + " row " + std::to_string(y) + " byte " +
                    std::to_string(x) + ": got " + std::to_string(have) + ", expected " +
                    std::to_string(want);
          break;
        }
      }
  gst_video_frame_unmap(&b);
  return problem;
}

// The next frame from `pipeline`: checks it is `w`x`h` and the reference
// of `method` on `input` (of `in`). False when none came. `memory`, where
// given, gets the output's first memory (for comparing, not held).
bool pull_and_check(AppPipeline& pipeline, const GstVideoInfo& in, GstBuffer* input, int method,
                    int w, int h, GstMemory** memory = nullptr) {
  GstSample* sample = pipeline.pull();
  if (sample == nullptr) {
    ADD_FAILURE() << "no frame; error: " << pipeline.error();
    return false;
  }
  GstVideoInfo out;
  EXPECT_TRUE(gst_video_info_from_caps(&out, gst_sample_get_caps(sample)));
  EXPECT_EQ(size_text(GST_VIDEO_INFO_WIDTH(&out), GST_VIDEO_INFO_HEIGHT(&out)), size_text(w, h));
  EXPECT_EQ(GST_VIDEO_INFO_FORMAT(&out), GST_VIDEO_INFO_FORMAT(&in));
  GstBuffer* output = gst_sample_get_buffer(sample);
  if (memory) *memory = gst_buffer_peek_memory(output, 0);
  EXPECT_EQ(GST_BUFFER_PTS(output), GST_BUFFER_PTS(input));
  EXPECT_EQ(compare_scaled(in, input, out, output, method), "");
  gst_sample_unref(sample);
  return true;
}

// --- Negotiation ---------------------------------------------------------

// "WxH PAR n/d" on the fakesink of `videotestsrc ! <input> ! <element> !
// <filter> ! fakesink`, or what went wrong.
std::string negotiated(const std::string& input, const std::string& element,
                       const std::string& filter) {
  const std::string description = "videotestsrc num-buffers=1 ! " + input + " ! " + element +
                                  " ! " + filter + " ! fakesink name=sink";
  GstElement* pipeline = gst_parse_launch(description.c_str(), nullptr);
  if (pipeline == nullptr) return "cannot parse " + description;
  gst_element_set_state(pipeline, GST_STATE_PLAYING);
  GstBus* bus = gst_element_get_bus(pipeline);
  GstMessage* end = gst_bus_timed_pop_filtered(
      bus, 10 * GST_SECOND, static_cast<GstMessageType>(GST_MESSAGE_EOS | GST_MESSAGE_ERROR));
  std::string result = end == nullptr ? "no EOS within 10 s" : "error";
  if (end && GST_MESSAGE_TYPE(end) == GST_MESSAGE_EOS) {
    GstElement* sink = gst_bin_get_by_name(GST_BIN(pipeline), "sink");
    GstPad* pad = gst_element_get_static_pad(sink, "sink");
    GstCaps* caps = gst_pad_get_current_caps(pad);
    GstVideoInfo info;
    if (caps && gst_video_info_from_caps(&info, caps))
      result = size_text(GST_VIDEO_INFO_WIDTH(&info), GST_VIDEO_INFO_HEIGHT(&info)) + " PAR " +
               std::to_string(GST_VIDEO_INFO_PAR_N(&info)) + "/" +
               std::to_string(GST_VIDEO_INFO_PAR_D(&info));
    if (caps) gst_caps_unref(caps);
    gst_object_unref(pad);
    gst_object_unref(sink);
  }
  if (end) gst_message_unref(end);
  gst_object_unref(bus);
  gst_element_set_state(pipeline, GST_STATE_NULL);
  gst_object_unref(pipeline);
  return result;
}

std::string scale_element() { return "cudaoverlap " + backend_properties() + " kernel=scale"; }

// The size and pixel-aspect-ratio fixated for each downstream constraint
// are videoscale's: the display aspect ratio kept through whichever of
// width, height and PAR downstream leaves free, from square and from
// non-square pixels.
TEST(Scale, NegotiatesTheSizeVideoscaleDoes) {
  SKIP_WITHOUT_BACKEND();
  for (const char* input :
       {"video/x-raw,format=RGBA,width=640,height=480,pixel-aspect-ratio=1/1",
        "video/x-raw,format=I420,width=720,height=576,pixel-aspect-ratio=16/15"}) {
    for (const char* filter :
         {"video/x-raw,width=320", "video/x-raw,height=240", "video/x-raw,width=320,height=100",
          "video/x-raw,width=320,pixel-aspect-ratio=1/1",
          "video/x-raw,height=100,pixel-aspect-ratio=1/1",
          "video/x-raw,width=[100,200],height=[100,150]", "video/x-raw,pixel-aspect-ratio=1/1",
          "video/x-raw,width=320,height=240"}) {
      SCOPED_TRACE(std::string(input) + " -> " + filter);
      const std::string theirs = negotiated(input, "videoscale", filter);
      ASSERT_NE(theirs.find(" PAR "), std::string::npos) << theirs;
      EXPECT_EQ(negotiated(input, scale_element(), filter), theirs);
    }
  }
}

// With only the PAR fixed downstream, videoscale (1.22) keeps the height
// and multiplies the width by the PAR (853x480 at 4/3, a wider picture);
// ours keeps the display aspect ratio, as the other cases do: 480x480.
TEST(Scale, OnlyAParDownstreamKeepsTheDisplayAspectRatio) {
  SKIP_WITHOUT_BACKEND();
  EXPECT_EQ(negotiated("video/x-raw,format=RGBA,width=640,height=480,pixel-aspect-ratio=1/1",
                       scale_element(), "video/x-raw,pixel-aspect-ratio=4/3"),
            "480x480 PAR 4/3");
}

// --- Output content ------------------------------------------------------

using ContentCase = std::tuple<GstVideoFormat, int>;

class ScaleContent : public ::testing::TestWithParam<ContentCase> {
 protected:
  void SetUp() override { SKIP_WITHOUT_BACKEND(); }
};

// Random frames shrunk and enlarged to odd sizes (YUY2 33 pixels wide on
// one side or the other) come out as the reference makes them, every
// byte of every plane, the phantom luma of an odd YUY2 row included.
TEST_P(ScaleContent, EveryFrameIsTheReference) {
  const auto [format, method] = GetParam();
  struct Sizes {
    int in_w, in_h, out_w, out_h;
  };
  for (const Sizes s : {Sizes{67, 45, 33, 21}, Sizes{33, 21, 70, 47}, Sizes{64, 48, 64, 17}}) {
    SCOPED_TRACE(size_text(s.in_w, s.in_h) + " -> " + size_text(s.out_w, s.out_h));
    const GstVideoInfo info = video_info(format, s.in_w, s.in_h);
    AppPipeline pipeline(info, scaled_to(method, s.out_w, s.out_h));
    ASSERT_TRUE(pipeline.ok());
    std::vector<GstBuffer*> inputs;
    for (uint64_t i = 0; i < 3; ++i) {
      inputs.push_back(make_frame(info, 41 * static_cast<uint32_t>(i + 1) + method, i));
      pipeline.push(gst_buffer_ref(inputs.back()));
    }
    pipeline.end();
    for (GstBuffer* input : inputs)
      if (!pull_and_check(pipeline, info, input, method, s.out_w, s.out_h)) break;
    for (GstBuffer* input : inputs) gst_buffer_unref(input);
    EXPECT_EQ(pipeline.error(), "");
  }
}

INSTANTIATE_TEST_SUITE_P(
    FormatsAndMethods, ScaleContent,
    ::testing::Combine(::testing::Values(GST_VIDEO_FORMAT_RGBA, GST_VIDEO_FORMAT_NV12,
                                         GST_VIDEO_FORMAT_I420, GST_VIDEO_FORMAT_YUY2,
                                         GST_VIDEO_FORMAT_P010_10LE, GST_VIDEO_FORMAT_GRAY8),
                       ::testing::Range(0, 4)),
    [](const ::testing::TestParamInfo<ContentCase>& param) {
      return std::string(gst_video_format_to_string(std::get<0>(param.param))) + "_" +
             kMethods[std::get<1>(param.param)];
    });

// The same from videotestsrc through a launch line, its frames taken as
// they reach the element: a zone plate (fine detail that a wrong tap
// shows), a moving ball and colour bars.
TEST(Scale, VideotestsrcFramesAreTheReference) {
  SKIP_WITHOUT_BACKEND();
  struct Case {
    const char* pattern;
    const char* format;
    int method;
  };
  for (const Case c :
       {Case{"zone-plate", "NV12", 3}, Case{"ball", "RGBA", 2}, Case{"smpte", "I420", 0}}) {
    SCOPED_TRACE(std::string(c.pattern) + " " + c.format + " " + kMethods[c.method]);
    const std::string description = std::string("videotestsrc num-buffers=3 pattern=") + c.pattern +
                                    " ! video/x-raw,format=" + c.format +
                                    ",width=320,height=240 ! cudaoverlap name=overlap " +
                                    backend_properties() + " " + scaled_to(c.method, 200, 150) +
                                    " ! appsink name=sink sync=false";
    GstElement* pipeline = gst_parse_launch(description.c_str(), nullptr);
    ASSERT_NE(pipeline, nullptr);
    GstElement* overlap = gst_bin_get_by_name(GST_BIN(pipeline), "overlap");
    GstElement* sink = gst_bin_get_by_name(GST_BIN(pipeline), "sink");
    GstPad* sinkpad = gst_element_get_static_pad(overlap, "sink");
    {
      PadRecorder inputs(sinkpad);
      gst_element_set_state(pipeline, GST_STATE_PLAYING);
      size_t n = 0;
      const GstVideoInfo in = video_info(gst_video_format_from_string(c.format), 320, 240);
      while (GstSample* sample =
                 gst_app_sink_try_pull_sample(GST_APP_SINK(sink), 10 * GST_SECOND)) {
        GstVideoInfo out;
        const bool have_input = n < inputs.buffers().size();
        EXPECT_TRUE(have_input) << "frame " << n << " was never seen on the sink pad";
        if (gst_video_info_from_caps(&out, gst_sample_get_caps(sample)) && have_input) {
          EXPECT_EQ(size_text(GST_VIDEO_INFO_WIDTH(&out), GST_VIDEO_INFO_HEIGHT(&out)), "200x150");
          EXPECT_EQ(
              compare_scaled(in, inputs.buffers()[n], out, gst_sample_get_buffer(sample), c.method),
              "")
              << "frame " << n;
        }
        gst_sample_unref(sample);
        ++n;
      }
      EXPECT_EQ(n, 3u);
      gst_element_set_state(pipeline, GST_STATE_NULL);
    }
    gst_object_unref(sinkpad);
    gst_object_unref(sink);
    gst_object_unref(overlap);
    gst_object_unref(pipeline);
  }
}

// kernel=convert takes the size from downstream too: converted and scaled
// in one element, each frame the reference's (shrinking scales in the
// input's format first, growing converts first).
TEST(Scale, ConvertChangesFormatAndSizeAtOnce) {
  SKIP_WITHOUT_BACKEND();
  struct Case {
    GstVideoFormat from;
    const char* to;
    int in_w, in_h, out_w, out_h, method;
  };
  for (const Case c : {Case{GST_VIDEO_FORMAT_I420, "RGBA", 64, 48, 40, 30, 1},
                       Case{GST_VIDEO_FORMAT_NV12, "BGRx", 33, 21, 70, 47, 3},
                       Case{GST_VIDEO_FORMAT_RGBA, "YUY2", 50, 40, 33, 20, 2}}) {
    SCOPED_TRACE(std::string(gst_video_format_to_string(c.from)) + " -> " + c.to);
    const GstVideoInfo info = video_info(c.from, c.in_w, c.in_h);
    AppPipeline pipeline(info, std::string("kernel=convert method=") + kMethods[c.method] +
                                   " ! video/x-raw,format=" + c.to + ",width=" +
                                   std::to_string(c.out_w) + ",height=" + std::to_string(c.out_h));
    ASSERT_TRUE(pipeline.ok());
    GstBuffer* input = make_frame(info, 5);
    pipeline.push(gst_buffer_ref(input));
    pipeline.end();
    GstSample* sample = pipeline.pull();
    ASSERT_NE(sample, nullptr) << pipeline.error();
    GstVideoInfo out;
    ASSERT_TRUE(gst_video_info_from_caps(&out, gst_sample_get_caps(sample)));
    EXPECT_EQ(std::string(gst_video_format_to_string(GST_VIDEO_INFO_FORMAT(&out))), c.to);
    EXPECT_EQ(size_text(GST_VIDEO_INFO_WIDTH(&out), GST_VIDEO_INFO_HEIGHT(&out)),
              size_text(c.out_w, c.out_h));
    EXPECT_EQ(compare_scaled(info, input, out, gst_sample_get_buffer(sample), c.method, "convert"),
              "");
    gst_sample_unref(sample);
    gst_buffer_unref(input);
  }
}

// At the input's size, downstream fixing it or leaving it free, the caps
// keep the input's size and aspect ratio, and with nothing else asked the
// buffers pass through untouched (their memory is the input's), as
// videoconvertscale passes them.
TEST(Scale, AtTheSameCapsBuffersPassThrough) {
  SKIP_WITHOUT_BACKEND();
  for (GstVideoFormat format :
       {GST_VIDEO_FORMAT_RGBA, GST_VIDEO_FORMAT_NV12, GST_VIDEO_FORMAT_YUY2}) {
    for (const std::string properties :
         {"kernel=scale method=bicubic", "kernel=scale method=lanczos ! video/x-raw,width=33",
          "kernel=convert", "kernel=convert method=nearest ! video/x-raw,height=25"}) {
      SCOPED_TRACE(std::string(gst_video_format_to_string(format)) + ": " + properties);
      GstVideoInfo info = video_info(format, 33, 25);
      GST_VIDEO_INFO_PAR_N(&info) = 16;
      GST_VIDEO_INFO_PAR_D(&info) = 15;
      AppPipeline pipeline(info, properties);
      ASSERT_TRUE(pipeline.ok());
      GstBuffer* input = make_frame(info, 77);
      pipeline.push(gst_buffer_ref(input));
      GstSample* sample = pipeline.pull();
      ASSERT_NE(sample, nullptr) << pipeline.error();
      GstVideoInfo out;
      ASSERT_TRUE(gst_video_info_from_caps(&out, gst_sample_get_caps(sample)));
      EXPECT_EQ(GST_VIDEO_INFO_FORMAT(&out), format);
      EXPECT_EQ(size_text(GST_VIDEO_INFO_WIDTH(&out), GST_VIDEO_INFO_HEIGHT(&out)), "33x25");
      EXPECT_EQ(GST_VIDEO_INFO_PAR_N(&out), 16);
      EXPECT_EQ(GST_VIDEO_INFO_PAR_D(&out), 15);
      GstBuffer* output = gst_sample_get_buffer(sample);
      EXPECT_EQ(compare_frames(info, input, output, Kernel::kCopy), "");
      EXPECT_EQ(gst_buffer_peek_memory(output, 0), gst_buffer_peek_memory(input, 0))
          << "the frame was copied, not passed through";
      gst_sample_unref(sample);
      gst_buffer_unref(input);
    }
  }
}

// Passing through keeps upstream held back as the ring would: with
// ring-size=2 and appsink taking nothing, only a few of 20 frames get
// into the element; all come out, in order, once appsink takes them.
TEST(Passthrough, HoldsUpstreamBackLikeARing) {
  SKIP_WITHOUT_BACKEND();
  const GstVideoInfo info = video_info(GST_VIDEO_FORMAT_RGBA, 32, 24);
  AppPipeline pipeline(info, "kernel=convert ring-size=2");
  ASSERT_TRUE(pipeline.ok());
  GstElement* overlap = pipeline.overlap();
  GstPad* pad = gst_element_get_static_pad(overlap, "sink");
  static std::atomic<int> entered;
  entered = 0;
  gst_pad_add_probe(
      pad, GST_PAD_PROBE_TYPE_BUFFER,
      [](GstPad*, GstPadProbeInfo*, gpointer) {
        ++entered;
        return GST_PAD_PROBE_OK;
      },
      nullptr, nullptr);
  GstElement* sink = gst_bin_get_by_name(GST_BIN(GST_ELEMENT_PARENT(overlap)), "sink");
  g_object_set(sink, "max-buffers", 1u, nullptr);
  for (uint64_t i = 0; i < 20; ++i) pipeline.push(make_frame(info, 3, i));
  pipeline.end();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_LE(entered.load(), 6) << "frames passed through without a bound";
  for (uint64_t i = 0; i < 20; ++i) {
    GstSample* sample = pipeline.pull();
    ASSERT_NE(sample, nullptr) << "frame " << i << ": " << pipeline.error();
    EXPECT_EQ(GST_BUFFER_PTS(gst_sample_get_buffer(sample)), i * (GST_SECOND / 30));
    gst_sample_unref(sample);
  }
  gst_object_unref(sink);
  gst_object_unref(pad);
  gst_object_unref(overlap);
}

// While passing through, ALLOCATION is downstream's to answer (appsink
// proposes nothing, so the query fails, as it would with no element
// between); converting, it is ours (a pool, and crop meta taken).
TEST(Passthrough, AllocationIsDownstreamsAnswer) {
  SKIP_WITHOUT_BACKEND();
  for (const char* format : {"RGBA", "BGRx"}) {
    SCOPED_TRACE(format);
    const std::string description =
        "appsrc name=src format=time caps=video/x-raw,format=RGBA,width=32,height=24,"
        "framerate=30/1 ! cudaoverlap " +
        backend_properties() + " kernel=convert ! video/x-raw,format=" + format +
        " ! appsink name=sink sync=false";
    GstElement* pipeline = gst_parse_launch(description.c_str(), nullptr);
    ASSERT_NE(pipeline, nullptr);
    GstElement* src = gst_bin_get_by_name(GST_BIN(pipeline), "src");
    GstElement* sink = gst_bin_get_by_name(GST_BIN(pipeline), "sink");
    gst_element_set_state(pipeline, GST_STATE_PLAYING);
    const GstVideoInfo info = video_info(GST_VIDEO_FORMAT_RGBA, 32, 24);
    gst_app_src_push_buffer(GST_APP_SRC(src), make_frame(info, 1));
    // A frame out: the element has taken the caps.
    GstSample* sample = gst_app_sink_try_pull_sample(GST_APP_SINK(sink), 10 * GST_SECOND);
    ASSERT_NE(sample, nullptr);
    gst_sample_unref(sample);
    GstPad* pad = gst_element_get_static_pad(src, "src");
    GstCaps* caps = caps_of(info);
    GstQuery* query = gst_query_new_allocation(caps, TRUE);
    const bool answered = gst_pad_peer_query(pad, query);
    const bool ours = std::string(format) == "BGRx";
    EXPECT_EQ(answered, ours);
    EXPECT_EQ(gst_query_find_allocation_meta(query, GST_VIDEO_CROP_META_API_TYPE, nullptr), ours);
    EXPECT_EQ(gst_query_get_n_allocation_pools(query) > 0, ours);
    gst_query_unref(query);
    gst_caps_unref(caps);
    gst_object_unref(pad);
    gst_element_set_state(pipeline, GST_STATE_NULL);
    gst_object_unref(src);
    gst_object_unref(sink);
    gst_object_unref(pipeline);
  }
}

// Input caps going between downstream's size (passed through) and another
// (scaled), three frames each pushed before any is pulled: every frame
// comes out in order, the reference of its own input, those at the same
// caps in their own memory.
TEST(Scale, PassesThroughAndScalesInTurnInOrder) {
  SKIP_WITHOUT_BACKEND();
  const GstVideoInfo sizes[] = {video_info(GST_VIDEO_FORMAT_NV12, 160, 120),
                                video_info(GST_VIDEO_FORMAT_NV12, 320, 240),
                                video_info(GST_VIDEO_FORMAT_NV12, 160, 120)};
  AppPipeline pipeline(sizes[0], scaled_to(1, 160, 120));
  ASSERT_TRUE(pipeline.ok());
  std::vector<std::pair<const GstVideoInfo*, GstBuffer*>> pushed;
  for (const GstVideoInfo& info : sizes) {
    pipeline.set_caps(info);
    for (int i = 0; i < 3; ++i) {
      const uint64_t index = pushed.size();
      GstBuffer* input = make_frame(info, 900 + static_cast<uint32_t>(index), index);
      pipeline.push(gst_buffer_ref(input));
      pushed.emplace_back(&info, input);
    }
  }
  pipeline.end();
  for (size_t i = 0; i < pushed.size(); ++i) {
    const GstVideoInfo& info = *pushed[i].first;
    SCOPED_TRACE("frame " + std::to_string(i) + ", " +
                 size_text(GST_VIDEO_INFO_WIDTH(&info), GST_VIDEO_INFO_HEIGHT(&info)));
    GstSample* sample = pipeline.pull();
    ASSERT_NE(sample, nullptr) << pipeline.error();
    GstBuffer* output = gst_sample_get_buffer(sample);
    GstVideoInfo out;
    EXPECT_TRUE(gst_video_info_from_caps(&out, gst_sample_get_caps(sample)));
    EXPECT_EQ(size_text(GST_VIDEO_INFO_WIDTH(&out), GST_VIDEO_INFO_HEIGHT(&out)), "160x120");
    EXPECT_EQ(GST_BUFFER_PTS(output), GST_BUFFER_PTS(pushed[i].second));
    EXPECT_EQ(compare_scaled(info, pushed[i].second, out, output, 1), "");
    const bool same_memory =
        gst_buffer_peek_memory(output, 0) == gst_buffer_peek_memory(pushed[i].second, 0);
    EXPECT_EQ(same_memory, GST_VIDEO_INFO_WIDTH(&info) == 160);
    gst_sample_unref(sample);
  }
  for (auto& frame : pushed) gst_buffer_unref(frame.second);
}

// Input caps going from 640x480 to 320x240 while downstream stays at
// 160x120: the scaling is made again for the new input, and every frame
// on either side of the change is the reference of its own input.
TEST(Scale, FollowsAnInputSizeChange) {
  SKIP_WITHOUT_BACKEND();
  const GstVideoInfo sizes[] = {video_info(GST_VIDEO_FORMAT_NV12, 640, 480),
                                video_info(GST_VIDEO_FORMAT_NV12, 320, 240),
                                video_info(GST_VIDEO_FORMAT_NV12, 640, 480)};
  AppPipeline pipeline(sizes[0], scaled_to(1, 160, 120));
  ASSERT_TRUE(pipeline.ok());
  uint64_t index = 0;
  for (const GstVideoInfo& info : sizes) {
    SCOPED_TRACE(size_text(GST_VIDEO_INFO_WIDTH(&info), GST_VIDEO_INFO_HEIGHT(&info)));
    pipeline.set_caps(info);
    for (int i = 0; i < 2; ++i, ++index) {
      GstBuffer* input = make_frame(info, 500 + static_cast<uint32_t>(index), index);
      pipeline.push(gst_buffer_ref(input));
      const bool pulled = pull_and_check(pipeline, info, input, 1, 160, 120);
      gst_buffer_unref(input);
      ASSERT_TRUE(pulled);
    }
  }
  pipeline.end();
}

// Downstream asking for another size mid-stream (a capsfilter's new caps,
// which send RECONFIGURE): the frames after come out at the new size, each
// the reference of its own input, and passed through once the size is the
// input's.
TEST(Scale, FollowsDownstreamsNewSize) {
  SKIP_WITHOUT_BACKEND();
  const GstVideoInfo info = video_info(GST_VIDEO_FORMAT_NV12, 320, 240);
  AppPipeline pipeline(info,
                       "kernel=scale ! capsfilter name=filter "
                       "caps=video/x-raw,width=160,height=120");
  ASSERT_TRUE(pipeline.ok());
  GstElement* filter = pipeline.element("filter");
  ASSERT_NE(filter, nullptr);
  uint64_t index = 0;
  GstMemory* memory = nullptr;  // the last output's first memory (not held)
  for (auto [w, h] : {std::pair{160, 120}, {80, 60}, {320, 240}, {160, 120}}) {
    SCOPED_TRACE(size_text(w, h));
    GstCaps* caps = gst_caps_new_simple("video/x-raw", "width", G_TYPE_INT, w, "height", G_TYPE_INT,
                                        h, nullptr);
    g_object_set(filter, "caps", caps, nullptr);
    gst_caps_unref(caps);
    for (int i = 0; i < 2; ++i, ++index) {
      GstBuffer* input = make_frame(info, 700 + static_cast<uint32_t>(index), index);
      pipeline.push(gst_buffer_ref(input));
      const bool pulled = pull_and_check(pipeline, info, input, 1, w, h, &memory);
      const bool same = memory == gst_buffer_peek_memory(input, 0);
      gst_buffer_unref(input);
      ASSERT_TRUE(pulled);
      EXPECT_EQ(same, w == 320) << "passed through only at the input's size";
    }
  }
  gst_object_unref(filter);
  pipeline.end();
}

// --- Metas and navigation ------------------------------------------------

// A region of interest comes out on the scaled frame covering the output
// pixels its rectangle touches, with its type and id; and a navigation
// event's point on the output goes upstream as the input's point under it.
TEST(Scale, RegionsAndNavigationFollowTheScaling) {
  SKIP_WITHOUT_BACKEND();
  struct Case {
    int out_w, out_h;
    guint x, y, w, h;  // the region (100,50,200,100) on the output
    double click_x, click_y;
  };
  for (const Case c :
       {Case{320, 240, 50, 25, 100, 50, 160, 120}, Case{300, 200, 46, 20, 95, 43, 150, 100}}) {
    SCOPED_TRACE(size_text(c.out_w, c.out_h));
    const GstVideoInfo info = video_info(GST_VIDEO_FORMAT_RGBA, 640, 480);
    AppPipeline pipeline(info, scaled_to(1, c.out_w, c.out_h));
    ASSERT_TRUE(pipeline.ok());
    GstBuffer* input = make_frame(info, 3);
    GstVideoRegionOfInterestMeta* roi =
        gst_buffer_add_video_region_of_interest_meta(input, "face", 100, 50, 200, 100);
    roi->id = 7;
    pipeline.push(input);
    GstSample* sample = pipeline.pull();
    ASSERT_NE(sample, nullptr) << pipeline.error();
    const GstVideoRegionOfInterestMeta* out =
        gst_buffer_get_video_region_of_interest_meta(gst_sample_get_buffer(sample));
    ASSERT_NE(out, nullptr);
    EXPECT_STREQ(g_quark_to_string(out->roi_type), "face");
    EXPECT_EQ(out->id, 7);
    EXPECT_EQ(std::vector<guint>({out->x, out->y, out->w, out->h}),
              std::vector<guint>({c.x, c.y, c.w, c.h}));
    gst_sample_unref(sample);

    // A click at the output's centre, seen where appsrc's src pad gets it.
    GstElement* overlap = pipeline.overlap();
    GstPad* src = gst_element_get_static_pad(overlap, "src");
    GstPad* sinkpad = gst_element_get_static_pad(overlap, "sink");
    GstPad* upstream = gst_pad_get_peer(sinkpad);
    std::vector<double> seen;
    const gulong probe = gst_pad_add_probe(
        upstream, GST_PAD_PROBE_TYPE_EVENT_UPSTREAM,
        [](GstPad*, GstPadProbeInfo* i, gpointer data) {
          double x, y;
          if (gst_navigation_event_get_coordinates(GST_PAD_PROBE_INFO_EVENT(i), &x, &y))
            *static_cast<std::vector<double>*>(data) = {x, y};
          return GST_PAD_PROBE_OK;
        },
        &seen, nullptr);
    gst_pad_send_event(src, gst_navigation_event_new_mouse_button_press(
                                1, c.click_x, c.click_y, GST_NAVIGATION_MODIFIER_NONE));
    ASSERT_EQ(seen.size(), 2u) << "no navigation event reached upstream";
    EXPECT_DOUBLE_EQ(seen[0], 320.0);
    EXPECT_DOUBLE_EQ(seen[1], 240.0);
    gst_pad_remove_probe(upstream, probe);
    gst_object_unref(upstream);
    gst_object_unref(sinkpad);
    gst_object_unref(src);
    gst_object_unref(overlap);
    pipeline.end();
  }
}

// --- Turning ---------------------------------------------------------------

// video-direction on scale and convert: a quarter turn negotiates the
// turned size (and pixel aspect ratio), as videoflip does, and each frame
// is the scaled frame turned as flip turns it, byte for byte, in every
// direction, RGB and 4:2:0, with and without a change of size; 4:2:2
// planes cannot take a quarter turn.
TEST(Turn, NegotiatesTheTurnedSize) {
  SKIP_WITHOUT_BACKEND();
  const std::string input = "video/x-raw,format=RGBA,width=320,height=240,pixel-aspect-ratio=4/3";
  EXPECT_EQ(negotiated(input, scale_element() + " video-direction=90r", "video/x-raw"),
            "240x320 PAR 3/4");
  EXPECT_EQ(negotiated(input, scale_element() + " video-direction=180", "video/x-raw"),
            "320x240 PAR 4/3");
  EXPECT_EQ(negotiated(input, scale_element() + " video-direction=ul-lr",
                       "video/x-raw,width=120,pixel-aspect-ratio=3/4"),
            "120x160 PAR 3/4");
}

TEST(Turn, IsTheScaledFrameFlipped) {
  SKIP_WITHOUT_BACKEND();
  const char* const directions[] = {"90r", "180", "90l", "horiz", "vert", "ul-lr", "ur-ll"};
  for (GstVideoFormat format : {GST_VIDEO_FORMAT_RGBA, GST_VIDEO_FORMAT_NV12}) {
    for (const char* direction : directions) {
      const bool swaps = std::string(direction) == "90r" || std::string(direction) == "90l" ||
                         std::string(direction) == "ul-lr" || std::string(direction) == "ur-ll";
      for (auto [w, h] : {std::pair{64, 48}, {32, 20}}) {
        SCOPED_TRACE(std::string(gst_video_format_to_string(format)) + " " + direction + " to " +
                     size_text(w, h));
        const GstVideoInfo info = video_info(format, 64, 48);
        const std::string turned_size = "video/x-raw,width=" + std::to_string(swaps ? h : w) +
                                        ",height=" + std::to_string(swaps ? w : h);
        auto [a, b] =
            run_both(info,
                     std::string("kernel=scale method=bicubic video-direction=") + direction +
                         " ! " + turned_size,
                     "kernel=scale method=bicubic ! video/x-raw,width=" + std::to_string(w) +
                         ",height=" + std::to_string(h) + " ! cudaoverlap " + backend_properties() +
                         " kernel=flip video-direction=" + direction,
                     make_frame(info, 61));
        ASSERT_TRUE(a && b);
        EXPECT_EQ(compare_samples(a, b), "");
        gst_sample_unref(a);
        gst_sample_unref(b);
      }
    }
  }
}

// convert turns and converts in one element: RGBA to BGRx (no chroma to
// resample, so the order does not matter) equals flip then convert.
TEST(Turn, ConvertTurnsAsFlipThenConvert) {
  SKIP_WITHOUT_BACKEND();
  const GstVideoInfo info = video_info(GST_VIDEO_FORMAT_RGBA, 40, 30);
  auto [a, b] = run_both(info, "kernel=convert video-direction=90l ! video/x-raw,format=BGRx",
                         "kernel=flip video-direction=90l ! cudaoverlap " + backend_properties() +
                             " kernel=convert ! video/x-raw,format=BGRx",
                         make_frame(info, 62));
  ASSERT_TRUE(a && b);
  EXPECT_EQ(compare_samples(a, b), "");
  gst_sample_unref(a);
  gst_sample_unref(b);
}

TEST(Turn, NV16CannotTakeAQuarterTurn) {
  SKIP_WITHOUT_BACKEND();
  const GstVideoInfo info = video_info(GST_VIDEO_FORMAT_NV16, 40, 30);
  const std::string error = refusal(info, "kernel=scale video-direction=90r", make_frame(info, 1));
  // Refused at caps time: the formats it takes, turning, leave NV16 out.
  const size_t takes = error.find("kernel=scale takes");
  ASSERT_NE(takes, std::string::npos) << error;
  EXPECT_EQ(error.find("NV16", takes), std::string::npos) << error;
}

// --- Interlaced input ----------------------------------------------------

GstVideoInfo interlaced(GstVideoFormat format, int width, int height) {
  GstVideoInfo info = video_info(format, width, height);
  GST_VIDEO_INFO_INTERLACE_MODE(&info) = GST_VIDEO_INTERLACE_MODE_INTERLEAVED;
  return info;
}

// A new height would mix the two fields of interlaced video: the element
// refuses it with an error saying so, and no frame comes out.
TEST(Scale, InterlacedInputToAnotherHeightIsAnError) {
  SKIP_WITHOUT_BACKEND();
  const GstVideoInfo info = interlaced(GST_VIDEO_FORMAT_RGBA, 640, 480);
  AppPipeline pipeline(info, scaled_to(1, 320, 240));
  ASSERT_TRUE(pipeline.ok());
  pipeline.push(make_frame(info, 1));
  GstSample* sample = pipeline.pull();
  EXPECT_EQ(sample, nullptr);
  if (sample) gst_sample_unref(sample);
  const std::string error = pipeline.error();
  EXPECT_NE(error.find("would mix the two fields of interlaced video"), std::string::npos)
      << "error: " << error;
}

class ScaleInterlaced : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override { SKIP_WITHOUT_BACKEND(); }
};

// Only the width changed, interlaced input is taken and each output row is
// made from its own input row alone: with every input row one flat value
// (the two fields far apart), each output row is that value throughout. A
// vertical filter that is not the identity at one size would blend the
// other field's rows in.
TEST_P(ScaleInterlaced, OnlyTheWidthChangedKeepsEachRowToItself) {
  const int method = GetParam();
  const GstVideoInfo info = interlaced(GST_VIDEO_FORMAT_RGBA, 64, 48);
  AppPipeline pipeline(info, scaled_to(method, 40, 48));
  ASSERT_TRUE(pipeline.ok());
  GstBuffer* input = make_frame(info, 9);
  const auto row_value = [](int y) { return static_cast<uint8_t>(y % 2 ? 200 + y : 10 + y); };
  {
    GstMapInfo map;
    ASSERT_TRUE(gst_buffer_map(input, &map, GST_MAP_WRITE));
    for (int y = 0; y < 48; ++y)
      std::memset(map.data + y * GST_VIDEO_INFO_PLANE_STRIDE(&info, 0), row_value(y), 64 * 4);
    gst_buffer_unmap(input, &map);
  }
  pipeline.push(gst_buffer_ref(input));
  GstSample* sample = pipeline.pull();
  ASSERT_NE(sample, nullptr) << pipeline.error();
  GstVideoInfo out;
  ASSERT_TRUE(gst_video_info_from_caps(&out, gst_sample_get_caps(sample)));
  EXPECT_TRUE(GST_VIDEO_INFO_IS_INTERLACED(&out));
  GstBuffer* output = gst_sample_get_buffer(sample);
  EXPECT_EQ(compare_scaled(info, input, out, output, method), "");
  GstVideoFrame frame;
  ASSERT_TRUE(gst_video_frame_map(&frame, &out, output, GST_MAP_READ));
  std::string problem;
  for (int y = 0; y < 48 && problem.empty(); ++y) {
    const auto* row = static_cast<const uint8_t*>(GST_VIDEO_FRAME_PLANE_DATA(&frame, 0)) +
                      y * GST_VIDEO_FRAME_PLANE_STRIDE(&frame, 0);
    for (int x = 0; x < 40 * 4; ++x)
      if (row[x] != row_value(y)) {
        problem = "row " + std::to_string(y) + " byte " + std::to_string(x) + ": got " +
                  std::to_string(row[x]) + ", the row's input value is " +
                  std::to_string(row_value(y));
        break;
      }
  }
  gst_video_frame_unmap(&frame);
  EXPECT_EQ(problem, "");
  gst_sample_unref(sample);
  gst_buffer_unref(input);
  pipeline.end();
}

INSTANTIATE_TEST_SUITE_P(Methods, ScaleInterlaced, ::testing::Range(0, 4),
                         [](const ::testing::TestParamInfo<int>& param) {
                           return std::string(kMethods[param.param]);
                         });

}  // namespace
}  // namespace cudaoverlap_test
