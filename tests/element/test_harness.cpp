// GstHarness tests of the cudaoverlap element's contract with GStreamer:
// event order, flush, EOS drain, caps changes, queries, state changes,
// flow returns, metadata, and the errors a user sees.
#include <gst/check/gstharness.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <functional>
#include <future>
#include <memory>
#include <thread>

#include "cuda_device.h"
#include "element_test_util.h"
#include "kernels/operation_registry.h"
#include "kernels/run_reference.h"

namespace cudaoverlap_test {
namespace {

using namespace std::chrono_literals;
using Properties = std::vector<std::pair<std::string, std::string>>;

class Harness : public ElementHarness {};

// Only the items after the initial sticky events, for order checks.
std::vector<std::string> without_startup(std::vector<std::string> items) {
  std::vector<std::string> rest;
  for (const std::string& item : items)
    if (item != "event stream-start" && item != "event caps" && item != "event segment")
      rest.push_back(item);
  return rest;
}

// `info` with another format and size, its colorimetry, rate and aspect kept.
GstVideoInfo video_info_like(const GstVideoInfo& info, GstVideoFormat format, int width,
                             int height) {
  GstVideoInfo like =
      video_info(format, width, height, GST_VIDEO_INFO_FPS_N(&info), GST_VIDEO_INFO_FPS_D(&info));
  like.colorimetry = info.colorimetry;
  like.chroma_site = info.chroma_site;
  GST_VIDEO_INFO_PAR_N(&like) = GST_VIDEO_INFO_PAR_N(&info);
  GST_VIDEO_INFO_PAR_D(&like) = GST_VIDEO_INFO_PAR_D(&info);
  return like;
}

void push_segment(GstHarness* h) {
  GstSegment segment;
  gst_segment_init(&segment, GST_FORMAT_TIME);
  EXPECT_TRUE(gst_harness_push_event(h, gst_event_new_segment(&segment)));
}

GstEvent* marker(const char* name) {
  return gst_event_new_custom(GST_EVENT_CUSTOM_DOWNSTREAM, gst_structure_new_empty(name));
}

// Holds buffers at a pad until destroyed (or the pad flushes).
class BlockedPad {
 public:
  explicit BlockedPad(GstPad* pad) : pad_(pad) {
    id_ = gst_pad_add_probe(
        pad, static_cast<GstPadProbeType>(GST_PAD_PROBE_TYPE_BLOCK | GST_PAD_PROBE_TYPE_BUFFER),
        [](GstPad*, GstPadProbeInfo*, gpointer) { return GST_PAD_PROBE_OK; }, nullptr, nullptr);
  }
  ~BlockedPad() { release(); }
  void release() {
    if (id_) gst_pad_remove_probe(pad_, id_);
    id_ = 0;
  }

 private:
  GstPad* pad_;
  gulong id_ = 0;
};

// Pushes frames from its own thread until a push fails (like an upstream
// streaming thread); the failing flow is the future's value.
std::future<GstFlowReturn> push_until_refused(GstHarness* h, const GstVideoInfo& info) {
  return std::async(std::launch::async, [h, info] {
    for (uint64_t i = 0;; ++i) {
      const GstFlowReturn flow = gst_harness_push(h, make_frame(info, 1000 + i, i));
      if (flow != GST_FLOW_OK) return flow;
    }
  });
}

TEST_F(Harness, CopiesFramesInOrderWithTheirTimestamps) {
  const GstVideoInfo info = video_info(GST_VIDEO_FORMAT_RGBA, 64, 48);
  start({{"ring-size", "3"}}, &info);
  std::vector<GstBuffer*> inputs;
  for (uint64_t i = 0; i < 20; ++i) {
    inputs.push_back(make_frame(info, 7 + i, i));
    ASSERT_EQ(gst_harness_push(h_, gst_buffer_ref(inputs.back())), GST_FLOW_OK);
  }
  for (uint64_t i = 0; i < 20; ++i) {
    GstBuffer* out = gst_harness_pull(h_);
    ASSERT_NE(out, nullptr) << "frame " << i << " did not come out";
    EXPECT_EQ(GST_BUFFER_PTS(out), GST_BUFFER_PTS(inputs[i]));
    EXPECT_EQ(compare_frames(info, inputs[i], out, Kernel::kCopy), "") << "frame " << i;
    gst_buffer_unref(out);
  }
  for (GstBuffer* input : inputs) gst_buffer_unref(input);
}

TEST_F(Harness, SerializedEventsKeepTheirPlaceAmongBuffers) {
  // Random delays on every engine operation make late frames likely, so an
  // event that overtook its buffer would show.
  ScopedEnv delays("CUDAOVERLAP_CPU_MAX_DELAY_US", "300");
  const GstVideoInfo info = video_info(GST_VIDEO_FORMAT_NV12, 33, 17, 1000, 1);
  start({{"ring-size", "4"}}, &info);
  PadRecorder recorder(element_pad("src"));

  ASSERT_EQ(gst_harness_push(h_, make_frame(info, 1, 0)), GST_FLOW_OK);
  ASSERT_TRUE(gst_harness_push_event(h_, marker("after-0")));
  ASSERT_EQ(gst_harness_push(h_, make_frame(info, 2, 1)), GST_FLOW_OK);
  ASSERT_EQ(gst_harness_push(h_, make_frame(info, 3, 2)), GST_FLOW_OK);
  GstTagList* tags = gst_tag_list_new(GST_TAG_TITLE, "cudaoverlap", nullptr);
  ASSERT_TRUE(gst_harness_push_event(h_, gst_event_new_tag(tags)));
  ASSERT_TRUE(gst_harness_push_event(h_, marker("after-2")));
  ASSERT_EQ(gst_harness_push(h_, make_frame(info, 4, 3)), GST_FLOW_OK);
  ASSERT_TRUE(gst_harness_push_event(h_, gst_event_new_gap(4 * GST_MSECOND, GST_MSECOND)));
  ASSERT_EQ(gst_harness_push(h_, make_frame(info, 5, 5)), GST_FLOW_OK);
  ASSERT_TRUE(gst_harness_push_event(h_, gst_event_new_eos()));
  ASSERT_TRUE(recorder.wait_for("event eos", 10s));

  const std::vector<std::string> expected = {"buffer 0",  "event after-0", "buffer 1", "buffer 2",
                                             "event tag", "event after-2", "buffer 3", "event gap",
                                             "buffer 5",  "event eos"};
  EXPECT_EQ(without_startup(recorder.items()), expected);
}

TEST_F(Harness, EosDrainsEveryFrameInFlightInOrder) {
  ScopedEnv delays("CUDAOVERLAP_CPU_MAX_DELAY_US", "500");
  const GstVideoInfo info = video_info(GST_VIDEO_FORMAT_I420, 65, 49, 1000, 1);
  start({{"ring-size", "8"}}, &info);
  PadRecorder recorder(element_pad("src"));
  std::vector<std::string> expected;
  for (uint64_t i = 0; i < 12; ++i) {
    ASSERT_EQ(gst_harness_push(h_, make_frame(info, 40 + i, i)), GST_FLOW_OK);
    expected.push_back("buffer " + std::to_string(i));
  }
  ASSERT_TRUE(gst_harness_push_event(h_, gst_event_new_eos()));
  expected.push_back("event eos");
  ASSERT_TRUE(recorder.wait_for("event eos", 10s));
  EXPECT_EQ(without_startup(recorder.items()), expected);
}

TEST_F(Harness, FlushStartUnblocksASubmitWaitingForASlotAndFlushStopRestarts) {
  const GstVideoInfo info = video_info(GST_VIDEO_FORMAT_RGBA, 32, 16, 1000, 1);
  start({{"ring-size", "2"}}, &info);
  auto blocked = std::make_unique<BlockedPad>(element_pad("src"));
  std::future<GstFlowReturn> pusher = push_until_refused(h_, info);
  // Downstream holds one frame, the ring fills, and the pusher's submit()
  // waits for a slot.
  EXPECT_EQ(pusher.wait_for(300ms), std::future_status::timeout) << "backpressure did not block";

  run_or_die("FLUSH_START", 10s,
             [&] { EXPECT_TRUE(gst_harness_push_event(h_, gst_event_new_flush_start())); });
  ASSERT_EQ(pusher.wait_for(10s), std::future_status::ready) << "FLUSH_START left submit blocked";
  EXPECT_EQ(pusher.get(), GST_FLOW_FLUSHING);
  blocked.reset();

  run_or_die("FLUSH_STOP", 10s,
             [&] { EXPECT_TRUE(gst_harness_push_event(h_, gst_event_new_flush_stop(TRUE))); });
  // Whatever was in flight was dropped: only the frames after the flush
  // come out (the harness may still hold none of the old ones).
  while (GstBuffer* old = gst_harness_try_pull(h_)) gst_buffer_unref(old);
  GstSegment segment;
  gst_segment_init(&segment, GST_FORMAT_TIME);
  ASSERT_TRUE(gst_harness_push_event(h_, gst_event_new_segment(&segment)));
  for (uint64_t i = 100; i < 105; ++i)
    ASSERT_EQ(gst_harness_push(h_, make_frame(info, 5, i)), GST_FLOW_OK);
  for (uint64_t i = 100; i < 105; ++i) {
    GstBuffer* out = gst_harness_pull(h_);
    ASSERT_NE(out, nullptr);
    EXPECT_EQ(GST_BUFFER_PTS(out), i * GST_MSECOND);
    gst_buffer_unref(out);
  }
  EXPECT_EQ(gst_harness_try_pull(h_), nullptr);
}

TEST_F(Harness, CapsChangeDrainsThenRenegotiates) {
  ScopedEnv delays("CUDAOVERLAP_CPU_MAX_DELAY_US", "300");
  const GstVideoInfo first = video_info(GST_VIDEO_FORMAT_RGBA, 64, 48, 1000, 1);
  const GstVideoInfo second = video_info(GST_VIDEO_FORMAT_NV12, 33, 17, 1000, 1);
  start({{"ring-size", "4"}, {"kernel", "invert"}}, &first);
  PadRecorder recorder(element_pad("src"));
  std::vector<GstBuffer*> inputs;
  for (uint64_t i = 0; i < 5; ++i) {
    inputs.push_back(make_frame(first, i, i));
    ASSERT_EQ(gst_harness_push(h_, gst_buffer_ref(inputs.back())), GST_FLOW_OK);
  }
  ASSERT_TRUE(gst_harness_push_event(h_, gst_event_new_caps(caps_of(second))));
  for (uint64_t i = 5; i < 10; ++i) {
    inputs.push_back(make_frame(second, i, i));
    ASSERT_EQ(gst_harness_push(h_, gst_buffer_ref(inputs.back())), GST_FLOW_OK);
  }
  ASSERT_TRUE(gst_harness_push_event(h_, gst_event_new_eos()));
  ASSERT_TRUE(recorder.wait_for("event eos", 10s));

  const std::vector<std::string> expected = {"buffer 0", "buffer 1",   "buffer 2", "buffer 3",
                                             "buffer 4", "event caps", "buffer 5", "buffer 6",
                                             "buffer 7", "buffer 8",   "buffer 9", "event eos"};
  // Drop the startup events only (the second caps event stays); the
  // recorder may have been attached after some of them went out.
  std::vector<std::string> items = recorder.items();
  while (!items.empty() && items.front().rfind("event ", 0) == 0) items.erase(items.begin());
  EXPECT_EQ(items, expected);
  const std::vector<GstBuffer*> outputs = recorder.buffers();
  ASSERT_EQ(outputs.size(), 10u);
  for (size_t i = 0; i < outputs.size(); ++i) {
    const GstVideoInfo& info = i < 5 ? first : second;
    EXPECT_EQ(gst_buffer_get_size(outputs[i]), GST_VIDEO_INFO_SIZE(&info)) << "frame " << i;
    EXPECT_EQ(compare_frames(info, inputs[i], outputs[i], Kernel::kInvert), "") << "frame " << i;
  }
  GstCaps* current = gst_pad_get_current_caps(element_pad("src"));
  GstCaps* expected_caps = caps_of(second);
  EXPECT_TRUE(gst_caps_is_equal(current, expected_caps));
  gst_caps_unref(expected_caps);
  gst_caps_unref(current);
  for (GstBuffer* input : inputs) gst_buffer_unref(input);
}

// Each caps change touches one field; each must reach downstream, and the
// frames after it must be processed as the new caps say (an engine kept for
// a change it cannot ignore, or caps not forwarded, shows here).
TEST_F(Harness, CapsChangesOfOneFieldAtATimeAreEachFollowed) {
  GstVideoInfo info = video_info(GST_VIDEO_FORMAT_NV12, 64, 48, 30, 1);
  gst_video_colorimetry_from_string(&info.colorimetry, GST_VIDEO_COLORIMETRY_BT601);
  start({{"ring-size", "2"}, {"kernel", "invert"}}, &info);
  struct Step {
    const char* what;
    std::function<void(GstVideoInfo*)> change;
  };
  const std::vector<Step> steps = {
      {"colorimetry",
       [](GstVideoInfo* i) {
         gst_video_colorimetry_from_string(&i->colorimetry, GST_VIDEO_COLORIMETRY_BT709);
       }},
      {"range", [](GstVideoInfo* i) { i->colorimetry.range = GST_VIDEO_COLOR_RANGE_0_255; }},
      {"chroma-site", [](GstVideoInfo* i) { i->chroma_site = GST_VIDEO_CHROMA_SITE_DV; }},
      {"width", [](GstVideoInfo* i) { *i = video_info_like(*i, GST_VIDEO_FORMAT_NV12, 66, 48); }},
      {"height", [](GstVideoInfo* i) { *i = video_info_like(*i, GST_VIDEO_FORMAT_NV12, 66, 50); }},
      {"framerate", [](GstVideoInfo* i) { GST_VIDEO_INFO_FPS_N(i) = 25; }},
      {"pixel-aspect-ratio",
       [](GstVideoInfo* i) {
         GST_VIDEO_INFO_PAR_N(i) = 4;
         GST_VIDEO_INFO_PAR_D(i) = 3;
       }},
      {"format", [](GstVideoInfo* i) { *i = video_info_like(*i, GST_VIDEO_FORMAT_I420, 66, 50); }},
  };
  uint64_t index = 0;
  for (const Step& step : steps) {
    step.change(&info);
    GstCaps* caps = caps_of(info);
    ASSERT_TRUE(gst_harness_push_event(h_, gst_event_new_caps(gst_caps_ref(caps)))) << step.what;
    GstBuffer* input = make_frame(info, 70 + index, index);
    ASSERT_EQ(gst_harness_push(h_, gst_buffer_ref(input)), GST_FLOW_OK) << step.what;
    GstBuffer* output = gst_harness_pull(h_);
    ASSERT_NE(output, nullptr) << step.what;
    EXPECT_EQ(compare_frames(info, input, output, Kernel::kInvert), "") << step.what;
    GstCaps* current = gst_pad_get_current_caps(element_pad("src"));
    EXPECT_TRUE(current && gst_caps_is_equal(current, caps))
        << step.what << ": downstream has " << (current ? gst_caps_to_string(current) : "none");
    if (current) gst_caps_unref(current);
    gst_caps_unref(caps);
    gst_buffer_unref(output);
    gst_buffer_unref(input);
    ++index;
  }
}

// Before any frame was measured: an estimate for the caps (a 16x16 frame's
// is far below its 40 ms interval, which the element once reported and a
// syncing sink then held every frame for), and ring-size frames to max.
TEST_F(Harness, LatencyAddsAnEstimateForTheCapsToMinAndRingSizeFramesToMax) {
  const GstVideoInfo info = video_info(GST_VIDEO_FORMAT_RGBA, 16, 16, 25, 1);
  start({{"ring-size", "5"}}, &info);
  gst_harness_set_upstream_latency(h_, 10 * GST_MSECOND);

  GstQuery* upstream = gst_query_new_latency();
  ASSERT_TRUE(gst_pad_query(h_->srcpad, upstream));
  gboolean up_live;
  GstClockTime up_min, up_max;
  gst_query_parse_latency(upstream, &up_live, &up_min, &up_max);
  gst_query_unref(upstream);

  GstQuery* query = gst_query_new_latency();
  ASSERT_TRUE(gst_pad_peer_query(h_->sinkpad, query));
  gboolean live;
  GstClockTime min, max;
  gst_query_parse_latency(query, &live, &min, &max);
  gst_query_unref(query);
  const GstClockTime frame = 40 * GST_MSECOND;
  EXPECT_EQ(live, up_live);
  EXPECT_GT(min, up_min);
  EXPECT_LT(min, up_min + frame / 10);
  if (GST_CLOCK_TIME_IS_VALID(up_max))
    EXPECT_EQ(max, up_max + 5 * frame);
  else
    EXPECT_FALSE(GST_CLOCK_TIME_IS_VALID(max));
}

TEST_F(Harness, AllocationQueryIsAnsweredWithAVideoPoolAndVideoMeta) {
  const GstVideoInfo info = video_info(GST_VIDEO_FORMAT_I420, 641, 479);
  start({{"ring-size", "4"}}, &info);
  GstCaps* caps = caps_of(info);
  GstQuery* query = gst_query_new_allocation(caps, TRUE);
  gst_caps_unref(caps);
  ASSERT_TRUE(gst_pad_peer_query(h_->srcpad, query));
  ASSERT_GE(gst_query_get_n_allocation_pools(query), 1u);
  GstBufferPool* pool = nullptr;
  guint size = 0, min = 0, max = 0;
  gst_query_parse_nth_allocation_pool(query, 0, &pool, &size, &min, &max);
  ASSERT_NE(pool, nullptr);
  EXPECT_TRUE(GST_IS_VIDEO_BUFFER_POOL(pool));
  EXPECT_EQ(size, GST_VIDEO_INFO_SIZE(&info));
  EXPECT_GE(min, 4u);
  EXPECT_TRUE(gst_query_find_allocation_meta(query, GST_VIDEO_META_API_TYPE, nullptr));
  // The pool works and its buffers go through the element.
  ASSERT_TRUE(gst_buffer_pool_set_active(pool, TRUE));
  GstBuffer* buffer = nullptr;
  ASSERT_EQ(gst_buffer_pool_acquire_buffer(pool, &buffer, nullptr), GST_FLOW_OK);
  GST_BUFFER_PTS(buffer) = 0;
  ASSERT_EQ(gst_harness_push(h_, buffer), GST_FLOW_OK);
  GstBuffer* out = gst_harness_pull(h_);
  ASSERT_NE(out, nullptr);
  gst_buffer_unref(out);
  gst_buffer_pool_set_active(pool, FALSE);
  gst_object_unref(pool);
  gst_query_unref(query);
}

TEST_F(Harness, AcceptCapsAndCapsQueryFollowTheKernel) {
  for (const char* kernel : {"copy", "invert"}) {
    SCOPED_TRACE(kernel);
    start({{"kernel", kernel}}, nullptr);
    GstPad* sink = element_pad("sink");
    GstPad* src = element_pad("src");
    for (const char* format :
         {"RGBA", "BGRA",  "RGBx", "BGRx",      "ARGB",      "ABGR",     "NV12",
          "I420", "GRAY8", "YUY2", "UYVY",      "RGB",       "BGR",      "NV21",
          "NV16", "Y42B",  "Y444", "P010_10LE", "I420_10LE", "GRAY16_LE"}) {
      GstCaps* caps = gst_caps_new_simple("video/x-raw", "format", G_TYPE_STRING, format, "width",
                                          G_TYPE_INT, 3, "height", G_TYPE_INT, 5, "framerate",
                                          GST_TYPE_FRACTION, 30, 1, nullptr);
      EXPECT_TRUE(gst_pad_query_accept_caps(sink, caps)) << format;
      EXPECT_TRUE(gst_pad_query_accept_caps(src, caps)) << format;
      gst_caps_unref(caps);
    }
    for (const char* refused : {"video/x-raw,format=v210,width=64,height=48,framerate=30/1",
                                "audio/x-raw,format=S16LE,rate=48000,channels=2"}) {
      GstCaps* caps = gst_caps_from_string(refused);
      EXPECT_FALSE(gst_pad_query_accept_caps(sink, caps)) << refused;
      gst_caps_unref(caps);
    }
    // GStreamer's CUDA memory: in and out where the element shares the
    // pipeline's CUDA context (a build with it, on a GPU); else neither.
    GstCaps* templ = gst_pad_get_pad_template_caps(sink);
    bool cuda_template = false;
    for (guint i = 0; i < gst_caps_get_size(templ); ++i)
      cuda_template |= gst_caps_features_contains(gst_caps_get_features(templ, i),
                                                  "memory:CUDAMemory") != FALSE;
    const bool cuda_in =
        cuda_template && test_backend() != "cpu" && cudaoverlap::cuda_device_count() > 0;
    {
      GstCaps* caps = gst_caps_from_string(
          "video/x-raw(memory:CUDAMemory),format=RGBA,width=64,height=48,framerate=30/1");
      EXPECT_EQ(gst_pad_query_accept_caps(sink, caps), cuda_in);
      EXPECT_EQ(gst_pad_query_accept_caps(src, caps), cuda_in);
      gst_caps_unref(caps);
    }
    // Copy and invert give the same caps out as in: the caps query on one
    // side is what the other side's peer allows, limited to our formats.
    // (Its raw video part: Bayer mosaics are convert's alone, and CUDA
    // memory goes only as above.)
    GstCaps* caps = gst_pad_query_caps(sink, nullptr);
    GstCaps* raw = gst_caps_new_empty();
    for (guint i = 0; i < gst_caps_get_size(templ); ++i) {
      const bool cuda = !gst_caps_features_is_equal(gst_caps_get_features(templ, i),
                                                    GST_CAPS_FEATURES_MEMORY_SYSTEM_MEMORY);
      if (gst_structure_has_name(gst_caps_get_structure(templ, i), "video/x-raw") &&
          (!cuda || cuda_in))
        raw = gst_caps_merge(raw, gst_caps_copy_nth(templ, i));
    }
    EXPECT_TRUE(gst_caps_is_equal(caps, raw)) << "harness downstream takes anything";
    gst_caps_unref(raw);
    gst_caps_unref(templ);
    gst_caps_unref(caps);
    GstCaps* filter = gst_caps_from_string("video/x-raw,format=NV12");
    caps = gst_pad_query_caps(src, filter);
    GstCaps* only_nv12 = gst_caps_from_string(
        "video/x-raw,format=NV12,width=[1,2147483647],height=[1,2147483647],framerate=[0/"
        "1,2147483647/1]");
    EXPECT_TRUE(gst_caps_is_equal(caps, only_nv12));
    gst_caps_unref(only_nv12);
    gst_caps_unref(caps);
    gst_caps_unref(filter);
    TearDown();
    h_ = nullptr;
    element_ = nullptr;
  }
}

// A kernel that takes fewer formats than the table offers only those,
// on both pads.
TEST_F(Harness, AcceptCapsAndCapsQueryOfferOnlyWhatTheKernelTakes) {
  start({{"kernel", "balance"}}, nullptr);
  for (const char* pad : {"sink", "src"}) {
    GstCaps* p010 = gst_caps_from_string("video/x-raw,format=P010_10LE,width=64,height=48");
    GstCaps* nv12 = gst_caps_from_string("video/x-raw,format=NV12,width=64,height=48");
    EXPECT_FALSE(gst_pad_query_accept_caps(element_pad(pad), p010)) << pad;
    EXPECT_TRUE(gst_pad_query_accept_caps(element_pad(pad), nv12)) << pad;
    GstCaps* offered = gst_pad_query_caps(element_pad(pad), nullptr);
    EXPECT_FALSE(gst_caps_can_intersect(offered, p010)) << pad;
    gst_caps_unref(offered);
    gst_caps_unref(nv12);
    gst_caps_unref(p010);
  }
}

GstCaps* bayer_caps(const char* format, int width, int height) {
  return gst_caps_new_simple("video/x-bayer", "format", G_TYPE_STRING, format, "width", G_TYPE_INT,
                             width, "height", G_TYPE_INT, height, "framerate", GST_TYPE_FRACTION,
                             30, 1, nullptr);
}

// Bayer mosaics are convert's input alone: other kernels neither offer nor
// accept them, and no kernel makes one.
TEST_F(Harness, OnlyConvertTakesBayerMosaics) {
  start({{"kernel", "invert"}}, nullptr);
  GstCaps* mosaic = bayer_caps("rggb", 64, 48);
  EXPECT_FALSE(gst_pad_query_accept_caps(element_pad("sink"), mosaic));
  GstCaps* offered = gst_pad_query_caps(element_pad("sink"), nullptr);
  EXPECT_FALSE(gst_caps_can_intersect(offered, mosaic));
  gst_caps_unref(offered);
  gst_caps_unref(mosaic);
}

// A mosaic through kernel=convert: upstream's pool is a plain one (a video
// pool parses raw video caps only) of bayer2rgb's frame size, and the frame
// comes out as RGB equal to the reference.
TEST_F(Harness, BayerMosaicGoesThroughConvertsPoolAndComesOutAsRgb) {
  start({{"kernel", "convert"}}, nullptr);
  const int width = 66, height = 48, stride = 68;  // GST_ROUND_UP_4(width)
  GstCaps* mosaic = bayer_caps("grbg", width, height);
  EXPECT_TRUE(gst_pad_query_accept_caps(element_pad("sink"), mosaic));
  EXPECT_FALSE(gst_pad_query_accept_caps(element_pad("src"), mosaic));
  GstCaps* rgba = gst_caps_from_string("video/x-raw,format=RGBA");
  GstCaps* offered = gst_pad_query_caps(element_pad("sink"), nullptr);
  EXPECT_TRUE(gst_caps_can_intersect(offered, mosaic));
  gst_caps_unref(offered);
  // What the src pad can give from a mosaic: RGB only.
  offered = gst_pad_query_caps(element_pad("src"), nullptr);
  EXPECT_TRUE(gst_caps_can_intersect(offered, rgba));
  gst_caps_unref(offered);
  gst_caps_unref(rgba);

  gst_harness_set_src_caps(h_, gst_caps_ref(mosaic));
  GstQuery* query = gst_query_new_allocation(mosaic, TRUE);
  ASSERT_TRUE(gst_pad_peer_query(h_->srcpad, query));
  ASSERT_GE(gst_query_get_n_allocation_pools(query), 1u);
  GstBufferPool* pool = nullptr;
  guint size = 0, min = 0, max = 0;
  gst_query_parse_nth_allocation_pool(query, 0, &pool, &size, &min, &max);
  ASSERT_NE(pool, nullptr);
  EXPECT_FALSE(GST_IS_VIDEO_BUFFER_POOL(pool));
  EXPECT_EQ(size, static_cast<guint>(stride * height));
  EXPECT_FALSE(gst_query_find_allocation_meta(query, GST_VIDEO_META_API_TYPE, nullptr));
  ASSERT_TRUE(gst_buffer_pool_set_active(pool, TRUE));
  GstBuffer* buffer = nullptr;
  ASSERT_EQ(gst_buffer_pool_acquire_buffer(pool, &buffer, nullptr), GST_FLOW_OK);
  std::vector<uint8_t> pixels(static_cast<size_t>(stride) * height);
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<uint8_t>(i * 37 + i / 68);
  gst_buffer_fill(buffer, 0, pixels.data(), pixels.size());
  GST_BUFFER_PTS(buffer) = 0;
  ASSERT_EQ(gst_harness_push(h_, buffer), GST_FLOW_OK);
  GstBuffer* out = gst_harness_pull(h_);
  ASSERT_NE(out, nullptr);

  GstCaps* out_caps = gst_pad_get_current_caps(element_pad("src"));
  GstVideoInfo info;
  ASSERT_TRUE(gst_video_info_from_caps(&info, out_caps));
  gst_caps_unref(out_caps);
  EXPECT_EQ(GST_VIDEO_INFO_FORMAT(&info), GST_VIDEO_FORMAT_RGBA) << "the first format it makes";
  EXPECT_EQ(GST_VIDEO_INFO_WIDTH(&info), width);
  EXPECT_EQ(GST_VIDEO_INFO_HEIGHT(&info), height);
  using cudaoverlap::ImageRef;
  using cudaoverlap::PixelFormat;
  ImageRef in;
  in.format = PixelFormat::kBayerGRBG;
  in.width = width;
  in.height = height;
  in.planes[0] = {pixels.data(), static_cast<size_t>(stride)};
  std::vector<uint8_t> want(static_cast<size_t>(width) * 4 * height);
  ImageRef expected = in;
  expected.format = PixelFormat::kRGBA;
  expected.planes[0] = {want.data(), static_cast<size_t>(width) * 4};
  cudaoverlap::run_reference(*cudaoverlap::make_operation("convert"), in, expected);
  GstMapInfo map;
  ASSERT_TRUE(gst_buffer_map(out, &map, GST_MAP_READ));
  ASSERT_EQ(map.size, want.size());
  EXPECT_EQ(memcmp(map.data, want.data(), want.size()), 0);
  gst_buffer_unmap(out, &map);
  gst_buffer_unref(out);
  gst_buffer_pool_set_active(pool, FALSE);
  gst_object_unref(pool);
  gst_query_unref(query);
  gst_caps_unref(mosaic);
}

TEST_F(Harness, StateChangesWithFramesInFlightNeverDeadlock) {
  const GstVideoInfo info = video_info(GST_VIDEO_FORMAT_BGRx, 48, 32, 1000, 1);
  start({{"ring-size", "2"}}, &info);
  GstCaps* caps = caps_of(info);
  for (int round = 0; round < 25; ++round) {
    SCOPED_TRACE(round);
    if (round > 0) {
      // Coming back from NULL: the sink pad forgot its sticky events.
      ASSERT_EQ(gst_element_set_state(element_, GST_STATE_PLAYING), GST_STATE_CHANGE_SUCCESS);
      ASSERT_TRUE(gst_harness_push_event(h_, gst_event_new_stream_start("cycle")));
      gst_harness_set_src_caps(h_, gst_caps_ref(caps));
      push_segment(h_);
    }
    // Downstream holds frames every other round, so the ring is full and a
    // submit() waits when the state change comes.
    auto blocked = round % 2 == 0 ? std::make_unique<BlockedPad>(element_pad("src")) : nullptr;
    std::future<GstFlowReturn> pusher = push_until_refused(h_, info);
    std::this_thread::sleep_for(std::chrono::milliseconds(5 + round % 4 * 5));
    const GstState target = round % 3 == 0 ? GST_STATE_NULL : GST_STATE_READY;
    run_or_die("PLAYING -> NULL/READY with frames in flight", 10s, [&] {
      EXPECT_EQ(gst_element_set_state(element_, target), GST_STATE_CHANGE_SUCCESS);
    });
    ASSERT_EQ(pusher.wait_for(10s), std::future_status::ready);
    EXPECT_EQ(pusher.get(), GST_FLOW_FLUSHING);
    blocked.reset();
    while (GstBuffer* out = gst_harness_try_pull(h_)) gst_buffer_unref(out);
  }
  gst_caps_unref(caps);
  // And the element still works afterwards.
  ASSERT_EQ(gst_element_set_state(element_, GST_STATE_PLAYING), GST_STATE_CHANGE_SUCCESS);
  ASSERT_TRUE(gst_harness_push_event(h_, gst_event_new_stream_start("last")));
  gst_harness_set_src_caps(h_, caps_of(info));
  push_segment(h_);
  GstBuffer* input = make_frame(info, 99, 0);
  ASSERT_EQ(gst_harness_push(h_, gst_buffer_ref(input)), GST_FLOW_OK);
  GstBuffer* out = gst_harness_pull(h_);
  ASSERT_NE(out, nullptr);
  EXPECT_EQ(compare_frames(info, input, out, Kernel::kCopy), "");
  gst_buffer_unref(out);
  gst_buffer_unref(input);
}

class FlowReturn : public Harness, public ::testing::WithParamInterface<GstFlowReturn> {};

// What the harness's sink pad answers while a test replaces its chain.
std::atomic<GstFlowReturn> downstream_answer{GST_FLOW_OK};

GstFlowReturn refusing_chain(GstPad*, GstObject*, GstBuffer* buffer) {
  gst_buffer_unref(buffer);
  return downstream_answer.load();
}

TEST_P(FlowReturn, ReachesUpstreamOnALaterChain) {
  const GstFlowReturn answer = GetParam();
  const GstVideoInfo info = video_info(GST_VIDEO_FORMAT_GRAY8, 17, 9, 1000, 1);
  start({{"ring-size", "3"}}, &info);
  const GstPadChainFunction harness_chain = GST_PAD_CHAINFUNC(h_->sinkpad);
  downstream_answer = answer;
  gst_pad_set_chain_function(h_->sinkpad, refusing_chain);

  GstFlowReturn flow = GST_FLOW_OK;
  for (uint64_t i = 0; i < 200 && flow == GST_FLOW_OK; ++i) {
    flow = gst_harness_push(h_, make_frame(info, 3, i));
    if (flow == GST_FLOW_OK) std::this_thread::sleep_for(2ms);
  }
  EXPECT_EQ(flow, answer) << gst_flow_get_name(flow);
  // It stays until a flush.
  EXPECT_EQ(gst_harness_push(h_, make_frame(info, 3, 500)), answer);

  ASSERT_TRUE(gst_harness_push_event(h_, gst_event_new_flush_start()));
  gst_pad_set_chain_function(h_->sinkpad, harness_chain);
  ASSERT_TRUE(gst_harness_push_event(h_, gst_event_new_flush_stop(TRUE)));
  GstSegment segment;
  gst_segment_init(&segment, GST_FORMAT_TIME);
  ASSERT_TRUE(gst_harness_push_event(h_, gst_event_new_segment(&segment)));
  while (GstBuffer* old = gst_harness_try_pull(h_)) gst_buffer_unref(old);
  EXPECT_EQ(gst_harness_push(h_, make_frame(info, 4, 600)), GST_FLOW_OK);
  GstBuffer* out = gst_harness_pull(h_);
  ASSERT_NE(out, nullptr);
  EXPECT_EQ(GST_BUFFER_PTS(out), 600 * GST_MSECOND);
  gst_buffer_unref(out);
}

INSTANTIATE_TEST_SUITE_P(Downstream, FlowReturn,
                         ::testing::Values(GST_FLOW_NOT_LINKED, GST_FLOW_EOS, GST_FLOW_ERROR),
                         [](const ::testing::TestParamInfo<GstFlowReturn>& param) {
                           std::string name = gst_flow_get_name(param.param);
                           for (char& c : name)
                             if (c == '-') c = '_';
                           return name;
                         });

TEST_F(Harness, TimestampsFlagsOffsetsAndMetasCarryOver) {
  const GstVideoInfo info = video_info(GST_VIDEO_FORMAT_I420, 63, 31, 25, 1);
  start({{"kernel", "invert"}}, &info);
  // Padded strides in: the output must still be in the default layout.
  GstBuffer* input = make_padded_frame(info, 11, 32);
  GST_BUFFER_PTS(input) = GST_SECOND;
  GST_BUFFER_DTS(input) = 900 * GST_MSECOND;
  GST_BUFFER_DURATION(input) = 40 * GST_MSECOND;
  GST_BUFFER_OFFSET(input) = 7;
  GST_BUFFER_OFFSET_END(input) = 8;
  GST_BUFFER_FLAG_SET(
      input, GST_BUFFER_FLAG_DISCONT | GST_BUFFER_FLAG_DELTA_UNIT | GST_BUFFER_FLAG_MARKER);
  GstCaps* reference = gst_caps_new_empty_simple("timestamp/x-test");
  gst_buffer_add_reference_timestamp_meta(input, reference, 123 * GST_SECOND, 5 * GST_MSECOND);
  gst_caps_unref(reference);
  ASSERT_EQ(gst_harness_push(h_, gst_buffer_ref(input)), GST_FLOW_OK);

  GstBuffer* out = gst_harness_pull(h_);
  ASSERT_NE(out, nullptr);
  EXPECT_EQ(GST_BUFFER_PTS(out), GST_SECOND);
  EXPECT_EQ(GST_BUFFER_DTS(out), 900 * GST_MSECOND);
  EXPECT_EQ(GST_BUFFER_DURATION(out), 40 * GST_MSECOND);
  EXPECT_EQ(GST_BUFFER_OFFSET(out), 7u);
  EXPECT_EQ(GST_BUFFER_OFFSET_END(out), 8u);
  EXPECT_TRUE(GST_BUFFER_FLAG_IS_SET(out, GST_BUFFER_FLAG_DISCONT));
  EXPECT_TRUE(GST_BUFFER_FLAG_IS_SET(out, GST_BUFFER_FLAG_DELTA_UNIT));
  EXPECT_TRUE(GST_BUFFER_FLAG_IS_SET(out, GST_BUFFER_FLAG_MARKER));
  GstReferenceTimestampMeta* meta = gst_buffer_get_reference_timestamp_meta(out, nullptr);
  ASSERT_NE(meta, nullptr);
  EXPECT_EQ(meta->timestamp, 123 * GST_SECOND);
  EXPECT_EQ(meta->duration, 5 * GST_MSECOND);
  EXPECT_EQ(gst_buffer_get_video_meta(out), nullptr) << "the input's strides must not carry over";
  EXPECT_EQ(gst_buffer_get_size(out), GST_VIDEO_INFO_SIZE(&info));
  EXPECT_EQ(compare_frames(info, input, out, Kernel::kInvert), "");
  gst_buffer_unref(out);
  gst_buffer_unref(input);
}

// ---------------------------------------------------------------------------
// Errors a user can act on

// An upstream that pushes caps the element refused, then a buffer anyway,
// gets an error naming the refused caps, what the kernel takes and the fix.
std::string error_after_refused_caps(GstHarness* h, GstPad* sink, BusWatch& bus,
                                     const char* caps_text, size_t bytes) {
  GstCaps* caps = gst_caps_from_string(caps_text);
  // Sent straight to the element's pad: a sticky push reports success once
  // the event is stored on the harness side, whatever the element said.
  EXPECT_FALSE(gst_pad_send_event(sink, gst_event_new_caps(caps)));
  EXPECT_FALSE(gst_harness_push_event(h, gst_event_new_caps(gst_caps_ref(caps))) &&
               gst_pad_has_current_caps(sink));
  gst_caps_unref(caps);
  // GStreamer's core refuses the caps event through ACCEPT_CAPS before the
  // element sees it, and upstream's push fails as not-negotiated.
  GstBuffer* buffer = gst_buffer_new_allocate(nullptr, bytes, nullptr);
  EXPECT_EQ(gst_harness_push(h, gst_buffer_ref(buffer)), GST_FLOW_NOT_NEGOTIATED);
  EXPECT_EQ(gst_pad_chain(sink, buffer), GST_FLOW_NOT_NEGOTIATED);
  return bus.wait_message(GST_MESSAGE_ERROR, 5s);
}

TEST_F(Harness, UnsupportedCapsAreRefusedAndTheErrorNamesTheFix) {
  start({}, nullptr);
  const std::string error = error_after_refused_caps(
      h_, element_pad("sink"), *bus_, "video/x-raw,format=v210,width=64,height=48,framerate=30/1",
      64 * 48 * 3);
  EXPECT_NE(error.find("v210"), std::string::npos) << error;
  EXPECT_NE(error.find("videoconvert"), std::string::npos) << error;
}

// A format the table has but the kernel does not take: the sentence lists
// what that kernel takes.
TEST_F(Harness, AFormatTheKernelDoesNotTakeIsRefusedWithTheFormatsItTakes) {
  start({{"kernel", "balance"}}, nullptr);
  const std::string error = error_after_refused_caps(
      h_, element_pad("sink"), *bus_,
      "video/x-raw,format=P010_10LE,width=64,height=48,framerate=30/1", 64 * 48 * 3);
  EXPECT_NE(error.find("P010_10LE"), std::string::npos) << error;
  EXPECT_NE(error.find("kernel=balance takes"), std::string::npos) << error;
  EXPECT_NE(error.find("YUY2, UYVY, RGB"), std::string::npos) << error;
  EXPECT_EQ(error.find("GRAY16_LE"), std::string::npos) << error;
}

TEST_F(Harness, ABufferSmallerThanItsCapsIsAnError) {
  const GstVideoInfo info = video_info(GST_VIDEO_FORMAT_RGBA, 64, 48);
  start({}, &info);
  EXPECT_EQ(gst_harness_push(h_, gst_buffer_new_allocate(nullptr, 100, nullptr)), GST_FLOW_ERROR);
  const std::string error = bus_->wait_message(GST_MESSAGE_ERROR, 5s);
  EXPECT_NE(error.find("100 bytes"), std::string::npos) << error;
  EXPECT_NE(error.find(std::to_string(64 * 48 * 4)), std::string::npos) << error;
}

TEST_F(Harness, RingTooLargeForTheMemoryIsAnErrorNamingRingSize) {
  if (test_backend() == "cuda") GTEST_SKIP() << "only the cpu backend can be given a memory limit";
  if (cudaoverlap::cuda_device_count() > 0 && test_backend() == "auto")
    GTEST_SKIP() << "auto picks CUDA here";
  // 640x480 RGBA: 16 slots need ~4 x 16 x 1.2 MB, far above 10 MB.
  ScopedEnv limit("CUDAOVERLAP_CPU_MEMORY_LIMIT", "10000000");
  start({{"ring-size", "16"}}, nullptr);
  const GstVideoInfo info = video_info(GST_VIDEO_FORMAT_RGBA, 640, 480);
  EXPECT_FALSE(gst_pad_send_event(element_pad("sink"), gst_event_new_caps(caps_of(info))));
  const std::string error = bus_->wait_message(GST_MESSAGE_ERROR, 5s);
  EXPECT_NE(error.find("ring-size 16"), std::string::npos) << error;
  EXPECT_NE(error.find("lower ring-size"), std::string::npos) << error;
}

TEST(Errors, CudaBackendWithoutADeviceFailsToStartWithAnError) {
  if (cudaoverlap::cuda_device_count() > 0) GTEST_SKIP() << "this machine has a CUDA device";
  GstElement* element = gst_element_factory_make("cudaoverlap", nullptr);
  ASSERT_NE(element, nullptr);
  gst_util_set_object_arg(G_OBJECT(element), "backend", "cuda");
  {
    BusWatch bus(element);
    EXPECT_EQ(gst_element_set_state(element, GST_STATE_PAUSED), GST_STATE_CHANGE_FAILURE);
    const std::string error = bus.wait_message(GST_MESSAGE_ERROR, 5s);
    EXPECT_NE(error.find("no CUDA device"), std::string::npos) << error;
    EXPECT_NE(error.find("backend=cpu"), std::string::npos) << error;
    gst_element_set_state(element, GST_STATE_NULL);
  }
  gst_object_unref(element);
}

TEST(Errors, DeviceIdOutOfRangeFailsToStartWithAnError) {
  const int devices = cudaoverlap::cuda_device_count();
  if (devices == 0) GTEST_SKIP() << "needs a CUDA device";
  GstElement* element = gst_element_factory_make("cudaoverlap", nullptr);
  ASSERT_NE(element, nullptr);
  gst_util_set_object_arg(G_OBJECT(element), "backend", "cuda");
  g_object_set(element, "device-id", devices + 3, nullptr);
  {
    BusWatch bus(element);
    EXPECT_EQ(gst_element_set_state(element, GST_STATE_PAUSED), GST_STATE_CHANGE_FAILURE);
    const std::string error = bus.wait_message(GST_MESSAGE_ERROR, 5s);
    EXPECT_NE(error.find(std::to_string(devices + 3)), std::string::npos) << error;
    gst_element_set_state(element, GST_STATE_NULL);
  }
  gst_object_unref(element);
}

TEST(Errors, AutoWithoutAGpuWarnsAndRunsOnTheCpuBackend) {
  if (cudaoverlap::cuda_device_count() > 0) GTEST_SKIP() << "this machine has a CUDA device";
  GstElement* element = gst_element_factory_make("cudaoverlap", nullptr);
  ASSERT_NE(element, nullptr);
  {
    BusWatch bus(element);
    EXPECT_EQ(gst_element_set_state(element, GST_STATE_PAUSED), GST_STATE_CHANGE_SUCCESS);
    const std::string warning = bus.wait_message(GST_MESSAGE_WARNING, 5s);
    EXPECT_NE(warning.find("cpu backend"), std::string::npos) << warning;
    gst_element_set_state(element, GST_STATE_NULL);
  }
  gst_object_unref(element);
}

TEST(Properties, RingSizeIsOnlyChangeableInNullAndReady) {
  GstElement* element = gst_element_factory_make("cudaoverlap", nullptr);
  ASSERT_NE(element, nullptr);
  GParamSpec* spec = g_object_class_find_property(G_OBJECT_GET_CLASS(element), "ring-size");
  ASSERT_NE(spec, nullptr);
  EXPECT_TRUE(spec->flags & GST_PARAM_MUTABLE_READY);
  EXPECT_EQ(G_PARAM_SPEC_INT(spec)->minimum, 1);
  EXPECT_EQ(G_PARAM_SPEC_INT(spec)->maximum, 16);
  EXPECT_EQ(G_PARAM_SPEC_INT(spec)->default_value, 4);
  g_object_set(element, "ring-size", 5, nullptr);
  gint ring = 0;
  g_object_get(element, "ring-size", &ring, nullptr);
  EXPECT_EQ(ring, 5);
  // In PLAYING the engine's ring is allocated: a change is refused, and the
  // value read back says so.
  g_object_set(element, "backend", "cpu", nullptr);
  GstHarness* h = gst_harness_new_with_element(element, "sink", "src");
  gst_harness_set_src_caps(h, caps_of(video_info(GST_VIDEO_FORMAT_RGBA, 16, 16)));
  ASSERT_EQ(GST_STATE(element), GST_STATE_PLAYING);
  g_object_set(element, "ring-size", 9, nullptr);
  g_object_get(element, "ring-size", &ring, nullptr);
  EXPECT_EQ(ring, 5);
  ASSERT_EQ(gst_harness_push(h, make_frame(video_info(GST_VIDEO_FORMAT_RGBA, 16, 16), 1)),
            GST_FLOW_OK);
  GstBuffer* out = gst_harness_pull(h);
  EXPECT_NE(out, nullptr);
  if (out) gst_buffer_unref(out);
  gst_harness_teardown(h);
  gst_object_unref(element);
}

}  // namespace
}  // namespace cudaoverlap_test
