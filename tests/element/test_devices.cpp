// The element over several devices (`devices`): frames spread over one
// engine per device come out in input order and exact, through flushes, caps
// changes and EOS; a device that fails is left out with a warning while the
// others go on; stats count per device. On the cpu backend each listed
// device is a cpu device of its own (with its own random delays), so frames
// really do finish out of order across devices; on cuda the list is every
// CUDA device, which is one on most machines.
#include <gst/check/gstharness.h>
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "element_test_util.h"

namespace cudaoverlap_test {
namespace {

using namespace std::chrono_literals;

class Devices : public ElementHarness {
 protected:
  // Three stand-ins on the cpu backend; every CUDA device on cuda.
  static std::string device_list() { return test_backend() == "cpu" ? "0,1,2" : "all"; }
  static bool spread() { return test_backend() == "cpu"; }
};

// Only the items after the first startup events.
std::vector<std::string> after_startup(std::vector<std::string> items) {
  while (!items.empty() && items.front().rfind("event ", 0) == 0) items.erase(items.begin());
  return items;
}

// The per-device entries of the `stats` structure.
struct DeviceCount {
  std::string name;
  bool live = true;
  guint64 frames = 0;
};

std::vector<DeviceCount> device_counts(GstElement* element) {
  GstStructure* stats = nullptr;
  g_object_get(element, "stats", &stats, nullptr);
  std::vector<DeviceCount> counts;
  if (!stats) return counts;
  const GValue* devices = gst_structure_get_value(stats, "devices");
  if (devices && GST_VALUE_HOLDS_ARRAY(devices))
    for (guint i = 0; i < gst_value_array_get_size(devices); ++i) {
      const GstStructure* entry = gst_value_get_structure(gst_value_array_get_value(devices, i));
      DeviceCount count;
      const gchar* name = gst_structure_get_string(entry, "name");
      count.name = name ? name : "";
      gboolean live = TRUE;
      gst_structure_get_boolean(entry, "live", &live);
      count.live = live;
      gst_structure_get_uint64(entry, "frames-out", &count.frames);
      counts.push_back(count);
    }
  gst_structure_free(stats);
  return counts;
}

TEST_F(Devices, FramesSpreadOverDevicesComeOutInInputOrderAndExact) {
  SKIP_WITHOUT_BACKEND();
  ScopedEnv delays("CUDAOVERLAP_CPU_MAX_DELAY_US", "400");
  const GstVideoInfo info = video_info(GST_VIDEO_FORMAT_NV12, 66, 34, 1000, 1);
  start({{"devices", device_list()}, {"kernel", "invert"}, {"ring-size", "2"}}, &info);
  PadRecorder recorder(element_pad("src"));
  std::vector<GstBuffer*> inputs;
  std::vector<std::string> expected;
  const uint64_t frames = 60;
  for (uint64_t i = 0; i < frames; ++i) {
    inputs.push_back(make_frame(info, 300 + i, i));
    ASSERT_EQ(gst_harness_push(h_, gst_buffer_ref(inputs.back())), GST_FLOW_OK);
    expected.push_back("buffer " + std::to_string(i));
  }
  ASSERT_TRUE(gst_harness_push_event(h_, gst_event_new_eos()));
  expected.push_back("event eos");
  ASSERT_TRUE(recorder.wait_for("event eos", 20s));
  EXPECT_EQ(after_startup(recorder.items()), expected);
  const std::vector<GstBuffer*> outputs = recorder.buffers();
  ASSERT_EQ(outputs.size(), frames);
  for (size_t i = 0; i < outputs.size(); ++i)
    EXPECT_EQ(compare_frames(info, inputs[i], outputs[i], Kernel::kInvert), "") << "frame " << i;

  const std::vector<DeviceCount> counts = device_counts(element_);
  ASSERT_FALSE(counts.empty()) << "stats has no devices";
  guint64 total = 0;
  int used = 0;
  for (const DeviceCount& count : counts) {
    total += count.frames;
    used += count.frames > 0 ? 1 : 0;
    EXPECT_TRUE(count.live) << count.name;
  }
  EXPECT_EQ(total, frames) << "the devices' frames-out do not add up";
  if (spread()) {
    EXPECT_EQ(counts.size(), 3u);
    EXPECT_EQ(used, 3) << "frames were not spread over the three devices";
  }
  for (GstBuffer* input : inputs) gst_buffer_unref(input);
}

TEST_F(Devices, AFailingDeviceIsLeftOutWithAWarningAndTheOthersGoOn) {
  if (test_backend() != "cpu") GTEST_SKIP() << "the device failure is the cpu backend's";
  ScopedEnv delays("CUDAOVERLAP_CPU_MAX_DELAY_US", "200");
  ScopedEnv which("CUDAOVERLAP_CPU_FAIL_DEVICE", "1");
  ScopedEnv when("CUDAOVERLAP_CPU_FAIL_AFTER", "6");
  const GstVideoInfo info = video_info(GST_VIDEO_FORMAT_RGBA, 40, 30, 1000, 1);
  const int ring = 3;
  start({{"devices", "0,1,2"}, {"kernel", "invert"}, {"ring-size", std::to_string(ring)}}, &info);
  PadRecorder recorder(element_pad("src"));
  std::vector<GstBuffer*> inputs;
  const uint64_t frames = 80;
  for (uint64_t i = 0; i < frames; ++i) {
    inputs.push_back(make_frame(info, 900 + i, i));
    ASSERT_EQ(gst_harness_push(h_, gst_buffer_ref(inputs.back())), GST_FLOW_OK)
        << "frame " << i << " refused: one failed device stopped the stream";
  }
  ASSERT_TRUE(gst_harness_push_event(h_, gst_event_new_eos()));
  ASSERT_TRUE(recorder.wait_for("event eos", 20s)) << "EOS did not come out";
  const std::string warning = bus_->wait_message(GST_MESSAGE_WARNING, 5s);
  EXPECT_NE(warning.find("left a device out"), std::string::npos) << warning;
  EXPECT_NE(warning.find("device 1"), std::string::npos) << warning;
  EXPECT_EQ(bus_->wait_message(GST_MESSAGE_ERROR, 100ms), "");

  // What comes out is in order and exact; only frames in flight on the
  // failed device (at most its ring) are missing.
  const std::vector<GstBuffer*> outputs = recorder.buffers();
  EXPECT_GE(outputs.size(), frames - ring);
  EXPECT_LT(outputs.size(), frames) << "the device did not fail";
  GstClockTime last = GST_CLOCK_TIME_NONE;
  for (GstBuffer* out : outputs) {
    const uint64_t index = GST_BUFFER_PTS(out) / GST_MSECOND;
    ASSERT_LT(index, frames);
    if (GST_CLOCK_TIME_IS_VALID(last)) {
      EXPECT_GT(GST_BUFFER_PTS(out), last) << "out of order";
    }
    last = GST_BUFFER_PTS(out);
    EXPECT_EQ(compare_frames(info, inputs[index], out, Kernel::kInvert), "") << "frame " << index;
  }
  // The frames after the failure all came out.
  EXPECT_EQ(GST_BUFFER_PTS(outputs.back()), (frames - 1) * GST_MSECOND);
  const std::vector<DeviceCount> counts = device_counts(element_);
  ASSERT_EQ(counts.size(), 3u);
  EXPECT_TRUE(counts[0].live);
  EXPECT_FALSE(counts[1].live);
  EXPECT_TRUE(counts[2].live);
  for (GstBuffer* input : inputs) gst_buffer_unref(input);
}

TEST_F(Devices, FlushDropsWhatIsInFlightOnEveryDeviceAndFramesFlowAgain) {
  SKIP_WITHOUT_BACKEND();
  ScopedEnv delays("CUDAOVERLAP_CPU_MAX_DELAY_US", "400");
  const GstVideoInfo info = video_info(GST_VIDEO_FORMAT_RGBA, 32, 16, 1000, 1);
  start({{"devices", device_list()}, {"ring-size", "2"}}, &info);
  for (uint64_t i = 0; i < 9; ++i)
    ASSERT_EQ(gst_harness_push(h_, make_frame(info, 5, i)), GST_FLOW_OK);
  run_or_die("FLUSH_START", 10s,
             [&] { EXPECT_TRUE(gst_harness_push_event(h_, gst_event_new_flush_start())); });
  run_or_die("FLUSH_STOP", 10s,
             [&] { EXPECT_TRUE(gst_harness_push_event(h_, gst_event_new_flush_stop(TRUE))); });
  while (GstBuffer* old = gst_harness_try_pull(h_)) gst_buffer_unref(old);
  GstSegment segment;
  gst_segment_init(&segment, GST_FORMAT_TIME);
  ASSERT_TRUE(gst_harness_push_event(h_, gst_event_new_segment(&segment)));
  std::vector<GstBuffer*> inputs;
  for (uint64_t i = 100; i < 130; ++i) {
    inputs.push_back(make_frame(info, 77 + i, i));
    ASSERT_EQ(gst_harness_push(h_, gst_buffer_ref(inputs.back())), GST_FLOW_OK);
  }
  for (uint64_t i = 100; i < 130; ++i) {
    GstBuffer* out = gst_harness_pull(h_);
    ASSERT_NE(out, nullptr);
    EXPECT_EQ(GST_BUFFER_PTS(out), i * GST_MSECOND)
        << "a frame from before the flush, or out of order";
    EXPECT_EQ(compare_frames(info, inputs[i - 100], out, Kernel::kCopy), "") << "frame " << i;
    gst_buffer_unref(out);
  }
  EXPECT_EQ(gst_harness_try_pull(h_), nullptr);
  for (GstBuffer* input : inputs) gst_buffer_unref(input);
}

TEST_F(Devices, CapsChangeDrainsEveryDeviceThenRenegotiates) {
  SKIP_WITHOUT_BACKEND();
  ScopedEnv delays("CUDAOVERLAP_CPU_MAX_DELAY_US", "300");
  const GstVideoInfo first = video_info(GST_VIDEO_FORMAT_RGBA, 64, 48, 1000, 1);
  const GstVideoInfo second = video_info(GST_VIDEO_FORMAT_I420, 34, 18, 1000, 1);
  start({{"devices", device_list()}, {"ring-size", "2"}, {"kernel", "invert"}}, &first);
  PadRecorder recorder(element_pad("src"));
  std::vector<GstBuffer*> inputs;
  std::vector<std::string> expected;
  for (uint64_t i = 0; i < 8; ++i) {
    inputs.push_back(make_frame(first, i, i));
    ASSERT_EQ(gst_harness_push(h_, gst_buffer_ref(inputs.back())), GST_FLOW_OK);
    expected.push_back("buffer " + std::to_string(i));
  }
  ASSERT_TRUE(gst_harness_push_event(h_, gst_event_new_caps(caps_of(second))));
  expected.push_back("event caps");
  for (uint64_t i = 8; i < 16; ++i) {
    inputs.push_back(make_frame(second, i, i));
    ASSERT_EQ(gst_harness_push(h_, gst_buffer_ref(inputs.back())), GST_FLOW_OK);
    expected.push_back("buffer " + std::to_string(i));
  }
  ASSERT_TRUE(gst_harness_push_event(h_, gst_event_new_eos()));
  expected.push_back("event eos");
  ASSERT_TRUE(recorder.wait_for("event eos", 20s));
  EXPECT_EQ(after_startup(recorder.items()), expected);
  const std::vector<GstBuffer*> outputs = recorder.buffers();
  ASSERT_EQ(outputs.size(), 16u);
  for (size_t i = 0; i < outputs.size(); ++i)
    EXPECT_EQ(compare_frames(i < 8 ? first : second, inputs[i], outputs[i], Kernel::kInvert), "")
        << "frame " << i;
  for (GstBuffer* input : inputs) gst_buffer_unref(input);
}

// A list that names no device, or one twice, or one that does not exist is
// refused when the element starts, with a sentence saying what is wrong.
TEST(DevicesList, MistakesAreRefusedAtStartWithTheReason) {
  SKIP_WITHOUT_BACKEND();
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"0,0", "twice"}, {"1,x", "not a device number"}, {",", "not a device number"}};
  for (const auto& [list, reason] : cases) {
    GstElement* element = make_cudaoverlap({{"devices", list}});
    BusWatch bus(element);
    EXPECT_EQ(gst_element_set_state(element, GST_STATE_PAUSED), GST_STATE_CHANGE_FAILURE) << list;
    const std::string error = bus.wait_message(GST_MESSAGE_ERROR, 2s);
    EXPECT_NE(error.find(reason), std::string::npos) << list << ": " << error;
    gst_element_set_state(element, GST_STATE_NULL);
    gst_object_unref(element);
  }
  if (test_backend() == "cpu") return;
  GstElement* element = make_cudaoverlap({{"devices", "0,64"}});
  BusWatch bus(element);
  EXPECT_EQ(gst_element_set_state(element, GST_STATE_PAUSED), GST_STATE_CHANGE_FAILURE);
  EXPECT_NE(bus.wait_message(GST_MESSAGE_ERROR, 2s).find("CUDA device 64"), std::string::npos);
  gst_element_set_state(element, GST_STATE_NULL);
  gst_object_unref(element);
}

}  // namespace
}  // namespace cudaoverlap_test
