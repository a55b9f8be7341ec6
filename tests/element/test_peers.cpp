// The element among real upstreams and downstreams: what GStreamer's own
// elements (queue, videoconvert, videoflip) get right and a first user of
// cudaoverlap found broken. Each test failed before the fix it guards:
// downstream's EOS, memory mapped only while mapped, caps without a
// framerate, RECONFIGURE, colorimetry-only caps changes, metas and
// navigation through flip, a pinned pool that cannot be allocated, two
// writers of one trace file, and interlaced input.
#include <gst/allocators/gstfdmemory.h>
#include <gst/app/gstappsink.h>
#include <gst/app/gstappsrc.h>
#include <gst/check/gstharness.h>
#include <gst/video/navigation.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <future>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "element_test_util.h"

namespace cudaoverlap_test {
namespace {

using namespace std::chrono_literals;
using Properties = std::vector<std::pair<std::string, std::string>>;

class PeerHarness : public ElementHarness {};

std::string backend_property() { return " " + backend_properties() + " "; }

// A test name for a video-direction value ("ul-lr" -> "ul_lr").
std::string direction_name(const char* direction) {
  std::string name = direction;
  for (char& c : name)
    if (c == '-') c = '_';
  return name;
}

// ---------------------------------------------------------------------------
// 1. Downstream returns EOS

TEST(PeersPipeline, APipelineWhoseDownstreamStopsEarlyWithEosStillEnds) {
  SKIP_WITHOUT_BACKEND();
  // `queue` in the element's place ends at once; the element used to drop
  // upstream's EOS and hang.
  EXPECT_EQ(run_pipeline("videotestsrc num-buffers=100 ! video/x-raw,width=64,height=48 ! "
                         "cudaoverlap" +
                         backend_property() + "! identity eos-after=5 ! fakesink"),
            GST_MESSAGE_EOS);
}

// Makes every buffer reaching `pad` answer `flow` while installed.
class FlowAnswer {
 public:
  FlowAnswer(GstPad* pad, GstFlowReturn flow) : pad_(pad), flow_(flow) {
    id_ = gst_pad_add_probe(pad, GST_PAD_PROBE_TYPE_BUFFER, answer, this, nullptr);
  }
  ~FlowAnswer() { gst_pad_remove_probe(pad_, id_); }

 private:
  static GstPadProbeReturn answer(GstPad*, GstPadProbeInfo* info, gpointer self) {
    GST_PAD_PROBE_INFO_FLOW_RETURN(info) = static_cast<FlowAnswer*>(self)->flow_;
    gst_buffer_unref(GST_PAD_PROBE_INFO_BUFFER(info));
    GST_PAD_PROBE_INFO_DATA(info) = nullptr;
    return GST_PAD_PROBE_HANDLED;
  }
  GstPad* pad_;
  GstFlowReturn flow_;
  gulong id_;
};

// Events the harness's sink got within `timeout`, up to and including one
// of `type`; empty when none of that type came.
bool harness_got_event(GstHarness* h, GstEventType type, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    while (GstEvent* event = gst_harness_try_pull_event(h)) {
      const bool match = GST_EVENT_TYPE(event) == type;
      gst_event_unref(event);
      if (match) return true;
    }
    std::this_thread::sleep_for(5ms);
  }
  return false;
}

// Pushes frames while downstream answers EOS: the answer must reach
// upstream within a few frames.
void push_until_downstream_eos(GstHarness* h, const GstVideoInfo& info) {
  FlowAnswer eos(h->sinkpad, GST_FLOW_EOS);
  GstFlowReturn flow = GST_FLOW_OK;
  for (uint64_t i = 0; i < 20 && flow == GST_FLOW_OK; ++i)
    flow = gst_harness_push(h, make_frame(info, 3, i));
  EXPECT_EQ(flow, GST_FLOW_EOS) << "downstream's EOS did not reach upstream";
  while (GstEvent* event = gst_harness_try_pull_event(h)) gst_event_unref(event);
}

// One frame in, the same frame out.
void expect_flowing(GstHarness* h, const GstVideoInfo& info, const char* when) {
  GstBuffer* input = make_frame(info, 9, 50);
  ASSERT_EQ(gst_harness_push(h, gst_buffer_ref(input)), GST_FLOW_OK) << when;
  GstBuffer* output = gst_harness_pull(h);
  ASSERT_NE(output, nullptr) << when;
  EXPECT_EQ(compare_frames(info, input, output, Kernel::kCopy), "") << when;
  gst_buffer_unref(output);
  gst_buffer_unref(input);
}

// Downstream keeps the first frame and answers EOS to the second, late:
// by then upstream has filled every slot and waits for one (ring 2 on one
// device: one slot held downstream, a third frame in flight and a fourth
// waiting; with several devices, ring 2 each, more frames go in first).
// The task pauses, so the frames in flight must still be dropped, or the
// waiting one waits for its slot forever.
TEST_F(PeerHarness, DownstreamEosWhileUpstreamWaitsForASlotDoesNotHang) {
  start({{"ring-size", "2"}});
  const GstVideoInfo info = video_info(GST_VIDEO_FORMAT_RGBA, 32, 16);
  gst_harness_set_src_caps(h_, caps_of(info));
  struct Downstream {
    std::mutex mutex;
    std::vector<GstBuffer*> kept;
    int seen = 0;
  } downstream;
  const gulong probe = gst_pad_add_probe(
      h_->sinkpad, GST_PAD_PROBE_TYPE_BUFFER,
      [](GstPad*, GstPadProbeInfo* probe_info, gpointer data) {
        auto* d = static_cast<Downstream*>(data);
        GstBuffer* buffer = GST_PAD_PROBE_INFO_BUFFER(probe_info);
        GST_PAD_PROBE_INFO_DATA(probe_info) = nullptr;
        int seen;
        {
          std::lock_guard<std::mutex> lock(d->mutex);
          seen = ++d->seen;
          d->kept.push_back(buffer);  // held, as a sink's last sample is
        }
        // The second answer comes late: upstream fills the ring meanwhile.
        if (seen == 2) std::this_thread::sleep_for(300ms);
        GST_PAD_PROBE_INFO_FLOW_RETURN(probe_info) = seen == 1 ? GST_FLOW_OK : GST_FLOW_EOS;
        return GST_PAD_PROBE_HANDLED;
      },
      &downstream, nullptr);
  std::vector<GstFlowReturn> flows;
  run_or_die("pushing while downstream answers EOS", 20s, [&] {
    // Enough frames to fill the slots of as many devices as a test runs
    // over (CUDAOVERLAP_TEST_DEVICES) and wait: the loop ends at the EOS.
    for (uint64_t i = 0; i < 64; ++i) {
      flows.push_back(gst_harness_push(h_, make_frame(info, 3, i)));
      if (flows.back() != GST_FLOW_OK) break;
    }
  });
  EXPECT_EQ(flows.back(), GST_FLOW_EOS) << "downstream's EOS did not reach upstream";
  gst_pad_remove_probe(h_->sinkpad, probe);
  for (GstBuffer* buffer : downstream.kept) gst_buffer_unref(buffer);
}

// A frame whose submit() was under way while downstream answered EOS
// (ring 1: the second frame waits for the first one's slot, which comes
// back as downstream drops the first and returns EOS) is let go of, rather
// than kept in flight, with upstream's buffer, until the next flush or stop.
TEST_F(PeerHarness, AFrameSubmittedAsDownstreamAnswersEosIsLetGoAtOnce) {
  start({{"ring-size", "1"}});
  const GstVideoInfo info = video_info(GST_VIDEO_FORMAT_RGBA, 32, 16);
  gst_harness_set_src_caps(h_, caps_of(info));
  const gulong probe = gst_pad_add_probe(
      h_->sinkpad, GST_PAD_PROBE_TYPE_BUFFER,
      [](GstPad*, GstPadProbeInfo* probe_info, gpointer) {
        // Dropping the buffer gives the slot back to the second chain(),
        // which is waiting for it (or, when this came first, about to).
        gst_buffer_unref(GST_PAD_PROBE_INFO_BUFFER(probe_info));
        GST_PAD_PROBE_INFO_DATA(probe_info) = nullptr;
        GST_PAD_PROBE_INFO_FLOW_RETURN(probe_info) = GST_FLOW_EOS;
        return GST_PAD_PROBE_HANDLED;
      },
      nullptr, nullptr);
  std::atomic<bool> second_gone{false};
  GstFlowReturn first = GST_FLOW_ERROR, second = GST_FLOW_ERROR;
  run_or_die("pushing while downstream answers EOS", 20s, [&] {
    first = gst_harness_push(h_, make_frame(info, 3, 0));
    GstBuffer* buffer = make_frame(info, 3, 1);
    gst_mini_object_weak_ref(
        GST_MINI_OBJECT_CAST(buffer),
        [](gpointer gone, GstMiniObject*) { static_cast<std::atomic<bool>*>(gone)->store(true); },
        &second_gone);
    second = gst_harness_push(h_, buffer);
  });
  // Each EOS or OK, depending on who was first: the first chain() or the
  // task taking in downstream's answer; the second chain() or the task
  // (over several devices the second frame goes to another device's free
  // slot without waiting). A chain() that came after the answer submitted
  // nothing.
  for (GstFlowReturn flow : {first, second})
    EXPECT_TRUE(flow == GST_FLOW_EOS || flow == GST_FLOW_OK) << gst_flow_get_name(flow);
  // Fetched by the task, handed out by the second chain() itself, or over
  // several devices dropped by an engine's worker a moment later.
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (!second_gone.load() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(1ms);
  EXPECT_TRUE(second_gone.load()) << "the second frame was kept in flight after downstream's EOS";
  gst_pad_remove_probe(h_->sinkpad, probe);
}

TEST_F(PeerHarness, AfterDownstreamEosUpstreamsEosStillGoesDown) {
  start({});
  const GstVideoInfo info = video_info(GST_VIDEO_FORMAT_RGBA, 32, 16);
  gst_harness_set_src_caps(h_, caps_of(info));
  push_until_downstream_eos(h_, info);
  // Upstream finishes: its EOS must still reach downstream (the element
  // used to drop it, and the pipeline never ended).
  EXPECT_TRUE(gst_harness_push_event(h_, gst_event_new_eos()));
  EXPECT_TRUE(harness_got_event(h_, GST_EVENT_EOS, 5s)) << "upstream's EOS was dropped";
  // A new stream starts clean.
  EXPECT_TRUE(gst_harness_push_event(h_, gst_event_new_stream_start("again")));
  gst_harness_set_src_caps(h_, caps_of(info));
  expect_flowing(h_, info, "after a new stream-start");
}

TEST_F(PeerHarness, AfterDownstreamEosANewSegmentFlowsAgain) {
  start({});
  const GstVideoInfo info = video_info(GST_VIDEO_FORMAT_RGBA, 32, 16);
  gst_harness_set_src_caps(h_, caps_of(info));
  push_until_downstream_eos(h_, info);
  // Upstream carries on with a new segment (a non-flushing seek, a playlist's
  // next item): as with GStreamer's queue, downstream's EOS is forgotten.
  GstSegment segment;
  gst_segment_init(&segment, GST_FORMAT_TIME);
  EXPECT_TRUE(gst_harness_push_event(h_, gst_event_new_segment(&segment)));
  expect_flowing(h_, info, "after a new segment");
}

TEST_F(PeerHarness, ANotLinkedDownstreamAfterUpstreamsEosIsAnErrorAndEosStillGoesDown) {
  start({{"ring-size", "4"}});
  const GstVideoInfo info = video_info(GST_VIDEO_FORMAT_RGBA, 32, 16);
  gst_harness_set_src_caps(h_, caps_of(info));
  {
    // Held until upstream's EOS is queued, then every push is refused.
    FlowAnswer refused(h_->sinkpad, GST_FLOW_NOT_LINKED);
    for (uint64_t i = 0; i < 3; ++i) gst_harness_push(h_, make_frame(info, 3, i));
    EXPECT_TRUE(gst_harness_push_event(h_, gst_event_new_eos()));
    EXPECT_TRUE(harness_got_event(h_, GST_EVENT_EOS, 5s));
  }
  const std::string error = bus_->wait_message(GST_MESSAGE_ERROR, 5s);
  EXPECT_NE(error, "") << "a not-linked downstream after EOS must be an error (as queue says)";
}

// ---------------------------------------------------------------------------
// 2. Memory that is mapped only while someone maps it

// A buffer of GstFdMemory over a memfd holding `frame`'s bytes. Without
// KEEP_MAPPED each unmap munmaps it, as dmabuf exporters' memory does.
GstBuffer* fd_buffer(GstAllocator* allocator, GstBuffer* frame, GstFdMemoryFlags flags) {
  const gsize size = gst_buffer_get_size(frame);
  const int fd = memfd_create("cudaoverlap-test", 0);
  if (fd < 0 || ftruncate(fd, static_cast<off_t>(size)) != 0) return nullptr;
  GstMapInfo map;
  gst_buffer_map(frame, &map, GST_MAP_READ);
  const bool written = pwrite(fd, map.data, size, 0) == static_cast<ssize_t>(size);
  gst_buffer_unmap(frame, &map);
  if (!written) return nullptr;
  GstBuffer* buffer = gst_buffer_new();
  gst_buffer_append_memory(buffer, gst_fd_allocator_alloc(allocator, fd, size, flags));
  gst_buffer_copy_into(buffer, frame, GST_BUFFER_COPY_TIMESTAMPS, 0, -1);
  return buffer;  // the memory owns fd
}

void check_fd_memory_frames(GstHarness* h, GstFdMemoryFlags flags) {
  const GstVideoInfo info = video_info(GST_VIDEO_FORMAT_RGBA, 320, 240);
  gst_harness_set_src_caps(h, caps_of(info));
  GstAllocator* allocator = gst_fd_allocator_new();
  // Three blocks that come back again and again, like a capture pool's.
  std::vector<GstBuffer*> frames, blocks;
  for (uint32_t b = 0; b < 3; ++b) {
    frames.push_back(make_frame(info, 11 + b, b));
    blocks.push_back(fd_buffer(allocator, frames.back(), flags));
    ASSERT_NE(blocks.back(), nullptr) << "memfd: " << std::strerror(errno);
  }
  constexpr int kFrames = 30;
  auto pusher = std::async(std::launch::async, [&] {
    for (int i = 0; i < kFrames; ++i)
      if (gst_harness_push(h, gst_buffer_ref(blocks[i % 3])) != GST_FLOW_OK) return false;
    return true;
  });
  for (int i = 0; i < kFrames; ++i) {
    GstBuffer* out = gst_harness_pull(h);
    ASSERT_NE(out, nullptr) << "frame " << i;
    EXPECT_EQ(compare_frames(info, frames[i % 3], out, Kernel::kCopy), "") << "frame " << i;
    gst_buffer_unref(out);
  }
  EXPECT_TRUE(pusher.get());
  for (GstBuffer* b : blocks) gst_buffer_unref(b);
  for (GstBuffer* f : frames) gst_buffer_unref(f);
  gst_object_unref(allocator);
}

TEST_F(PeerHarness, FdMemoryUnmappedBetweenUsesIsReadWhileMappedAndNeverPinned) {
  // Uploads run late (random delays) so that a frame read after chain()
  // returned would show: it used to be pinned at an address munmap'ed by
  // then, and the upload crashed the process.
  ScopedEnv delays("CUDAOVERLAP_CPU_MAX_DELAY_US", "2000");
  start({{"ring-size", "3"}});
  check_fd_memory_frames(h_, GST_FD_MEMORY_FLAG_NONE);
}

TEST_F(PeerHarness, FdMemoryKeptMappedIsPinnedAndStaysExact) {
  ScopedEnv delays("CUDAOVERLAP_CPU_MAX_DELAY_US", "2000");
  start({{"ring-size", "3"}});
  check_fd_memory_frames(h_, GST_FD_MEMORY_FLAG_KEEP_MAPPED);
}

// ---------------------------------------------------------------------------
// 3. Caps without a framerate

TEST_F(PeerHarness, CapsWithoutAFramerateAreTaken) {
  start({{"kernel", "invert"}});
  gst_harness_set_src_caps_str(h_, "video/x-raw,format=RGBA,width=64,height=48");
  const GstVideoInfo info = video_info(GST_VIDEO_FORMAT_RGBA, 64, 48, 0, 1);
  GstBuffer* input = make_frame(info, 5);
  ASSERT_EQ(gst_harness_push(h_, gst_buffer_ref(input)), GST_FLOW_OK);
  GstBuffer* output = gst_harness_pull(h_);
  ASSERT_NE(output, nullptr);
  EXPECT_EQ(compare_frames(info, input, output, Kernel::kInvert), "");
  gst_buffer_unref(output);
  gst_buffer_unref(input);
  // The LATENCY query copes too (one frame of unknown duration).
  GstQuery* latency = gst_query_new_latency();
  EXPECT_TRUE(gst_pad_peer_query(h_->sinkpad, latency));
  gst_query_unref(latency);
}

// ---------------------------------------------------------------------------
// 4. Downstream changes its mind (RECONFIGURE)

// The RGBA output of `kernel=convert` for one NV12 frame, and then the same
// after a capsfilter downstream asked for BGRA while PLAYING.
TEST(PeersPipeline, ConvertFollowsACapsfilterChangedWhilePlaying) {
  SKIP_WITHOUT_BACKEND();
  const std::string description =
      "appsrc name=src format=time ! cudaoverlap kernel=convert" + backend_property() +
      "! capsfilter name=filter caps=video/x-raw,format=RGBA ! appsink name=sink sync=false";
  GstElement* pipeline = gst_parse_launch(description.c_str(), nullptr);
  ASSERT_NE(pipeline, nullptr);
  GstElement* src = gst_bin_get_by_name(GST_BIN(pipeline), "src");
  GstElement* filter = gst_bin_get_by_name(GST_BIN(pipeline), "filter");
  GstElement* sink = gst_bin_get_by_name(GST_BIN(pipeline), "sink");
  const GstVideoInfo info = video_info(GST_VIDEO_FORMAT_NV12, 64, 48);
  GstCaps* caps = caps_of(info);
  g_object_set(src, "caps", caps, nullptr);
  gst_caps_unref(caps);
  gst_element_set_state(pipeline, GST_STATE_PLAYING);

  auto convert = [&](uint64_t index, std::string* format) -> std::vector<uint8_t> {
    EXPECT_EQ(gst_app_src_push_buffer(GST_APP_SRC(src), make_frame(info, 77, index)), GST_FLOW_OK);
    GstSample* sample = gst_app_sink_try_pull_sample(GST_APP_SINK(sink), 10 * GST_SECOND);
    if (sample == nullptr) return {};
    GstVideoInfo out;
    gst_video_info_from_caps(&out, gst_sample_get_caps(sample));
    *format = GST_VIDEO_INFO_NAME(&out);
    GstMapInfo map;
    gst_buffer_map(gst_sample_get_buffer(sample), &map, GST_MAP_READ);
    std::vector<uint8_t> bytes(map.data, map.data + map.size);
    gst_buffer_unmap(gst_sample_get_buffer(sample), &map);
    gst_sample_unref(sample);
    return bytes;
  };
  std::string first_format, second_format;
  const std::vector<uint8_t> rgba = convert(0, &first_format);
  GstCaps* bgra = gst_caps_from_string("video/x-raw,format=BGRA");
  g_object_set(filter, "caps", bgra, nullptr);
  gst_caps_unref(bgra);
  const std::vector<uint8_t> second = convert(1, &second_format);
  EXPECT_EQ(first_format, "RGBA");
  EXPECT_EQ(second_format, "BGRA") << "downstream's RECONFIGURE was ignored";
  ASSERT_EQ(rgba.size(), second.size());
  ASSERT_FALSE(rgba.empty());
  size_t wrong = 0;
  for (size_t i = 0; i < rgba.size(); i += 4)
    wrong += rgba[i] != second[i + 2] || rgba[i + 1] != second[i + 1] || rgba[i + 2] != second[i] ||
             rgba[i + 3] != second[i + 3];
  EXPECT_EQ(wrong, 0u) << "the BGRA frame is not the RGBA one with red and blue swapped";

  run_or_die("pipeline to NULL", 10s, [&] { gst_element_set_state(pipeline, GST_STATE_NULL); });
  gst_object_unref(sink);
  gst_object_unref(filter);
  gst_object_unref(src);
  gst_object_unref(pipeline);
}

// ---------------------------------------------------------------------------
// 5. A caps change of colorimetry or range only

// `element` (a launch-line fragment) on `frame` with caps `in`, giving RGBA.
std::vector<uint8_t> to_rgba(const std::string& element, const GstVideoInfo& in, GstBuffer* frame,
                             GstHarness* reuse = nullptr) {
  GstHarness* h = reuse ? reuse : gst_harness_new_parse(element.c_str());
  if (!reuse) gst_harness_set_sink_caps_str(h, "video/x-raw,format=RGBA");
  gst_harness_set_src_caps(h, caps_of(in));
  std::vector<uint8_t> bytes;
  if (gst_harness_push(h, gst_buffer_ref(frame)) == GST_FLOW_OK) {
    GstBuffer* out = gst_harness_pull(h);
    GstMapInfo map;
    if (out && gst_buffer_map(out, &map, GST_MAP_READ)) {
      bytes.assign(map.data, map.data + map.size);
      gst_buffer_unmap(out, &map);
    }
    if (out) gst_buffer_unref(out);
  }
  if (!reuse) gst_harness_teardown(h);
  return bytes;
}

int max_difference(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  if (a.size() != b.size() || a.empty()) return 256;
  int worst = 0;
  for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(a[i] - b[i]));
  return worst;
}

TEST(PeersCaps, AColorimetryOrRangeChangeAloneChangesTheConversion) {
  SKIP_WITHOUT_BACKEND();
  GstVideoInfo bt601 = video_info(GST_VIDEO_FORMAT_NV12, 64, 48);
  gst_video_colorimetry_from_string(&bt601.colorimetry, GST_VIDEO_COLORIMETRY_BT601);
  GstVideoInfo bt709 = bt601;
  gst_video_colorimetry_from_string(&bt709.colorimetry, GST_VIDEO_COLORIMETRY_BT709);
  GstVideoInfo full = bt709;
  full.colorimetry.range = GST_VIDEO_COLOR_RANGE_0_255;
  // Strong chroma everywhere, so the matrices differ by far more than 2.
  GstBuffer* frame = make_frame(bt601, 21);

  GstHarness* h = gst_harness_new_parse(
      ("cudaoverlap kernel=convert ring-size=2" + backend_property()).c_str());
  gst_harness_set_sink_caps_str(h, "video/x-raw,format=RGBA");
  std::vector<std::vector<uint8_t>> ours;
  for (const GstVideoInfo* in : {&bt601, &bt709, &full}) ours.push_back(to_rgba("", *in, frame, h));
  gst_harness_teardown(h);
  const char* names[] = {"bt601", "bt709", "bt709 full range"};
  for (int i = 0; i < 3; ++i) {
    const GstVideoInfo* in = i == 0 ? &bt601 : i == 1 ? &bt709 : &full;
    const std::vector<uint8_t> reference = to_rgba("videoconvert dither=none", *in, frame);
    EXPECT_LE(max_difference(ours[i], reference), 2) << names[i] << " against videoconvert";
  }
  EXPECT_GT(max_difference(ours[0], ours[1]), 2) << "bt601 then bt709: the matrix stayed";
  EXPECT_GT(max_difference(ours[1], ours[2]), 2) << "limited then full range: the range stayed";
  gst_buffer_unref(frame);
}

// ---------------------------------------------------------------------------
// 6. Positions through flip: metas and navigation

// Where the region (4, 6, 10, 8) of a 64x48 `format` frame comes out of the
// element in `h`: x, y, w, h, or nothing when it was dropped.
std::vector<guint> region_after(GstHarness* h, GstVideoFormat format) {
  const GstVideoInfo info = video_info(format, 64, 48);
  gst_harness_set_src_caps(h, caps_of(info));
  GstBuffer* input = make_frame(info, 3);
  gst_buffer_add_video_region_of_interest_meta(input, "face", 4, 6, 10, 8);
  if (gst_harness_push(h, input) != GST_FLOW_OK) return {};
  GstBuffer* output = gst_harness_pull(h);
  if (output == nullptr) return {};
  std::vector<guint> rect;
  if (const auto* roi = gst_buffer_get_video_region_of_interest_meta(output)) {
    EXPECT_EQ(roi->roi_type, g_quark_from_string("face"));
    rect = {roi->x, roi->y, roi->w, roi->h};
  }
  gst_buffer_unref(output);
  return rect;
}

struct RoiCase {
  const char* direction;
  guint x, y, w, h;  // where (4, 6, 10, 8) on a 64x48 input lands
};

class RegionOfInterest : public PeerHarness, public ::testing::WithParamInterface<RoiCase> {};

TEST_P(RegionOfInterest, MovesWithThePixelsThroughAFlip) {
  const RoiCase& c = GetParam();
  start({{"kernel", "flip"}, {"video-direction", c.direction}});
  EXPECT_EQ(region_after(h_, GST_VIDEO_FORMAT_RGBA), (std::vector<guint>{c.x, c.y, c.w, c.h}));
}

// The rectangle x in [4, 14), y in [6, 14) mapped as the pixels are, e.g.
// clockwise: x' = 48 - y, y' = x.
INSTANTIATE_TEST_SUITE_P(
    Flip, RegionOfInterest,
    ::testing::Values(RoiCase{"identity", 4, 6, 10, 8}, RoiCase{"90r", 34, 4, 8, 10},
                      RoiCase{"180", 50, 34, 10, 8}, RoiCase{"90l", 6, 50, 8, 10},
                      RoiCase{"horiz", 50, 6, 10, 8}, RoiCase{"vert", 4, 34, 10, 8},
                      RoiCase{"ul-lr", 6, 4, 8, 10}, RoiCase{"ur-ll", 34, 50, 8, 10}),
    [](const auto& info) { return direction_name(info.param.direction); });

TEST_F(PeerHarness, ARegionOfInterestIsKeptWhereTheKernelMovesNoPixels) {
  start({{"kernel", "invert"}});
  EXPECT_EQ(region_after(h_, GST_VIDEO_FORMAT_NV12), (std::vector<guint>{4, 6, 10, 8}));
}

// A meta of the tests' own, with the given tags: what happens to a meta
// GStreamer describes only by its tags.
struct TaggedMeta {
  GstMeta meta;
};

const GstMetaInfo* tagged_meta_info(const char* name, const gchar** tags) {
  const GType api = gst_meta_api_type_register((std::string(name) + "API").c_str(), tags);
  // Copies are plain: the meta carries no data.
  return gst_meta_register(
      api, name, sizeof(TaggedMeta),
      [](GstMeta*, gpointer, GstBuffer*) -> gboolean { return TRUE; }, nullptr,
      [](GstBuffer* to, GstMeta* meta, GstBuffer*, GQuark, gpointer) -> gboolean {
        return gst_buffer_add_meta(to, meta->info, nullptr) != nullptr;
      });
}

// Whether a meta of `info` on an RGBA frame comes out of the element in `h`.
bool tagged_meta_survives(GstHarness* h, const GstMetaInfo* info) {
  const GstVideoInfo in = video_info(GST_VIDEO_FORMAT_RGBA, 64, 48);
  gst_harness_set_src_caps(h, caps_of(in));
  GstBuffer* input = make_frame(in, 3);
  gst_buffer_add_meta(input, info, nullptr);
  if (gst_harness_push(h, input) != GST_FLOW_OK) return false;
  GstBuffer* output = gst_harness_pull(h);
  const bool survives = output && gst_buffer_get_meta(output, info->api) != nullptr;
  if (output) gst_buffer_unref(output);
  return survives;
}

const GstMetaInfo* size_meta() {
  static const gchar* tags[] = {GST_META_TAG_VIDEO_STR, GST_META_TAG_VIDEO_SIZE_STR, nullptr};
  static const GstMetaInfo* info = tagged_meta_info("CudaOverlapTestSizeMeta", tags);
  return info;
}

const GstMetaInfo* colorspace_meta() {
  static const gchar* tags[] = {GST_META_TAG_VIDEO_STR, GST_META_TAG_VIDEO_COLORSPACE_STR, nullptr};
  static const GstMetaInfo* info = tagged_meta_info("CudaOverlapTestColorspaceMeta", tags);
  return info;
}

TEST_F(PeerHarness, AMetaTaggedWithSizeIsDroppedWhereThePixelsMove) {
  start({{"kernel", "flip"}, {"video-direction", "90r"}});
  EXPECT_FALSE(tagged_meta_survives(h_, size_meta()));
}

TEST_F(PeerHarness, AMetaTaggedWithSizeIsKeptWhereThePixelsStay) {
  start({{"kernel", "invert"}});
  EXPECT_TRUE(tagged_meta_survives(h_, size_meta()));
}

TEST_F(PeerHarness, AMetaTaggedWithColorspaceIsDroppedWhenTheFormatChanges) {
  start({{"kernel", "convert"}});
  gst_harness_set_sink_caps_str(h_, "video/x-raw,format=BGRA");
  EXPECT_FALSE(tagged_meta_survives(h_, colorspace_meta()));
}

TEST_F(PeerHarness, AMetaTaggedWithColorspaceIsKeptThroughAFlip) {
  start({{"kernel", "flip"}, {"video-direction", "horiz"}});
  EXPECT_TRUE(tagged_meta_survives(h_, colorspace_meta()));
}

struct NavigationCase {
  const char* direction;
  double x, y;                    // on the output
  double expected_x, expected_y;  // on the input, as videoflip maps it
};

class Navigation : public PeerHarness, public ::testing::WithParamInterface<NavigationCase> {};

TEST_P(Navigation, APointerPositionIsMappedBackToTheInputPixel) {
  const NavigationCase& c = GetParam();
  start({{"kernel", "flip"}, {"video-direction", c.direction}});
  gst_harness_set_src_caps(h_, caps_of(video_info(GST_VIDEO_FORMAT_RGBA, 64, 48)));
  ASSERT_EQ(gst_harness_push(h_, make_frame(video_info(GST_VIDEO_FORMAT_RGBA, 64, 48), 1)),
            GST_FLOW_OK);
  gst_buffer_unref(gst_harness_pull(h_));
  ASSERT_TRUE(gst_harness_push_upstream_event(
      h_, gst_navigation_event_new_mouse_button_press(1, c.x, c.y, GST_NAVIGATION_MODIFIER_NONE)));
  GstEvent* event = nullptr;
  while ((event = gst_harness_try_pull_upstream_event(h_)) != nullptr &&
         GST_EVENT_TYPE(event) != GST_EVENT_NAVIGATION)
    gst_event_unref(event);
  ASSERT_NE(event, nullptr) << "the navigation event did not reach upstream";
  double x = -1, y = -1;
  ASSERT_TRUE(gst_navigation_event_get_coordinates(event, &x, &y));
  EXPECT_DOUBLE_EQ(x, c.expected_x);
  EXPECT_DOUBLE_EQ(y, c.expected_y);
  gst_event_unref(event);
}

// A 64x48 input; 90r and 90l give a 48x64 output.
INSTANTIATE_TEST_SUITE_P(
    Flip, Navigation,
    ::testing::Values(NavigationCase{"identity", 40, 2, 40, 2},
                      NavigationCase{"horiz", 40, 2, 24, 2}, NavigationCase{"vert", 40, 2, 40, 46},
                      NavigationCase{"180", 40, 2, 24, 46}, NavigationCase{"90r", 40, 2, 2, 8},
                      NavigationCase{"90l", 40, 2, 62, 40}, NavigationCase{"ul-lr", 40, 2, 2, 40},
                      NavigationCase{"ur-ll", 40, 2, 62, 8}),
    [](const auto& info) { return direction_name(info.param.direction); });

// ---------------------------------------------------------------------------
// 7. The pinned pool for upstream cannot be allocated

TEST(PeersPipeline, APinnedPoolThatDoesNotFitIsLeftOutWithAWarningAndFramesFlow) {
  SKIP_WITHOUT_BACKEND();
  if (test_backend() != "cpu") GTEST_SKIP() << "the memory limit is the cpu backend's";
  // 320x240 RGBA: the ring of one slot takes 4 frames (1.23 MB) and fits;
  // the pool of ring-size + 2 = 3 frames more does not.
  ScopedEnv limit("CUDAOVERLAP_CPU_MEMORY_LIMIT", "1500000");
  std::vector<std::string> warnings;
  std::string error;
  EXPECT_EQ(run_pipeline("videotestsrc num-buffers=20 ! "
                         "video/x-raw,format=RGBA,width=320,height=240 ! cudaoverlap ring-size=1"
                         " backend=cpu ! fakesink",
                         &error, &warnings),
            GST_MESSAGE_EOS)
      << error;
  bool said = false;
  for (const std::string& w : warnings)
    said = said || (w.find("pinned") != std::string::npos && w.find("bytes") != std::string::npos);
  EXPECT_TRUE(said) << "no warning naming the pinned memory asked for";
}

// ---------------------------------------------------------------------------
// 8. Two elements, one trace file

TEST(PeersPipeline, TwoElementsGivenOneTraceFileAreRefusedWithASentence) {
  SKIP_WITHOUT_BACKEND();
  char path[] = "/tmp/cudaoverlap-trace-XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  const std::string element = "cudaoverlap trace-file=" + std::string(path) + backend_property();
  std::string error;
  const GstMessageType end = run_pipeline(
      "videotestsrc num-buffers=10 ! video/x-raw,width=64,height=48 ! tee name=t "
      "t. ! queue ! " +
          element + "! fakesink t. ! queue ! " + element + "! fakesink",
      &error);
  EXPECT_EQ(end, GST_MESSAGE_ERROR) << "two writers of one file were let run";
  EXPECT_NE(error.find(path), std::string::npos) << error;
  EXPECT_NE(error.find("already"), std::string::npos) << error;
  // Whatever was written is one JSON document, not two interleaved.
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  const std::string json = text.str();
  if (!json.empty()) {
    EXPECT_EQ(json.front(), '{');
    EXPECT_EQ(json.find("traceEvents"), json.rfind("traceEvents")) << "two documents in one file";
    EXPECT_EQ(json.substr(json.size() - 4), "\n]}\n");
  }
  std::remove(path);
}

// ---------------------------------------------------------------------------
// 9. Interlaced input

class Interlaced : public PeerHarness, public ::testing::WithParamInterface<Properties> {};

TEST_P(Interlaced, KernelsThatMixRowsRefuseItWithASentence) {
  start(GetParam());
  gst_harness_set_src_caps_str(
      h_, "video/x-raw,format=RGBA,width=64,height=48,framerate=30/1,interlace-mode=interleaved");
  const std::string error = bus_->wait_message(GST_MESSAGE_ERROR, 5s);
  EXPECT_NE(error.find("interlace"), std::string::npos) << "error: " << error;
}

INSTANTIATE_TEST_SUITE_P(
    Kernels, Interlaced,
    ::testing::Values(Properties{{"kernel", "blur"}}, Properties{{"kernel", "edge"}},
                      Properties{{"kernel", "flip"}, {"video-direction", "vert"}},
                      Properties{{"kernel", "flip"}, {"video-direction", "90r"}}),
    [](const auto& info) {
      std::string name = info.param[0].second;
      if (info.param.size() > 1) name += "_" + info.param[1].second;
      return name;
    });

TEST_F(PeerHarness, KernelsThatKeepEachRowTakeInterlacedInput) {
  start({{"kernel", "invert"}});
  gst_harness_set_src_caps_str(
      h_, "video/x-raw,format=NV12,width=64,height=48,framerate=30/1,interlace-mode=interleaved");
  GstVideoInfo info;
  GstCaps* caps = gst_caps_from_string(
      "video/x-raw,format=NV12,width=64,height=48,framerate=30/1,interlace-mode=interleaved");
  gst_video_info_from_caps(&info, caps);
  gst_caps_unref(caps);
  GstBuffer* input = make_frame(info, 8);
  ASSERT_EQ(gst_harness_push(h_, gst_buffer_ref(input)), GST_FLOW_OK);
  GstBuffer* output = gst_harness_pull(h_);
  ASSERT_NE(output, nullptr);
  EXPECT_EQ(compare_frames(info, input, output, Kernel::kInvert), "");
  gst_buffer_unref(output);
  gst_buffer_unref(input);
}

}  // namespace
}  // namespace cudaoverlap_test
