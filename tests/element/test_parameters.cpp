// The operations' parameters as element properties: installed from the
// registry's declarations, changed while playing (taking effect from the
// next frame, as videobalance's and videoflip's do), and under a
// GstController binding.
#include <gst/check/gstharness.h>
#include <gst/controller/gstdirectcontrolbinding.h>
#include <gst/controller/gstinterpolationcontrolsource.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <string>

#include "element_test_util.h"
#include "kernels/operation_registry.h"

namespace cudaoverlap_test {
namespace {

class Parameters : public ElementHarness {};

// A GRAY8 frame of one value; balance maps grey through its luma table
// alone: 16 + (y - 16) * contrast + brightness * 255, clamped.
GstBuffer* grey_frame(const GstVideoInfo& info, uint8_t value, uint64_t index) {
  GstBuffer* buffer = make_frame(info, 1, index);
  GstMapInfo map;
  gst_buffer_map(buffer, &map, GST_MAP_WRITE);
  std::memset(map.data, value, map.size);
  gst_buffer_unmap(buffer, &map);
  return buffer;
}

// The first pixel of the next frame out.
int pull_first_pixel(GstHarness* h) {
  GstBuffer* out = gst_harness_pull(h);
  if (!out) return -1;
  uint8_t first = 0;
  gst_buffer_extract(out, 0, &first, 1);
  gst_buffer_unref(out);
  return first;
}

TEST(ParameterProperties, EveryDeclaredParameterIsAPropertyWithItsRangeAndDefault) {
  GstElement* element = make_cudaoverlap();
  ASSERT_NE(element, nullptr);
  for (const cudaoverlap::ParamSpec* spec : cudaoverlap::declared_parameters()) {
    GParamSpec* property = g_object_class_find_property(G_OBJECT_GET_CLASS(element), spec->name);
    ASSERT_NE(property, nullptr) << spec->name;
    EXPECT_TRUE(spec->takes(spec->default_value)) << spec->name << ": its default is refused";
    if (spec->type == cudaoverlap::ParamSpec::Type::kDouble) {
      const auto* d = G_PARAM_SPEC_DOUBLE(property);
      EXPECT_EQ(d->minimum, spec->min) << spec->name;
      EXPECT_EQ(d->maximum, spec->max) << spec->name;
      EXPECT_EQ(d->default_value, spec->default_value) << spec->name;
    }
    if (spec->while_playing) {
      EXPECT_TRUE(property->flags & GST_PARAM_CONTROLLABLE) << spec->name;
    }
  }
  gst_object_unref(element);
}

TEST_F(Parameters, BalanceTakesANewBrightnessWhilePlayingFromTheNextFrame) {
  const GstVideoInfo info = video_info(GST_VIDEO_FORMAT_GRAY8, 16, 8);
  start({{"kernel", "balance"}}, &info);
  ASSERT_EQ(gst_harness_push(h_, grey_frame(info, 100, 0)), GST_FLOW_OK);
  EXPECT_EQ(pull_first_pixel(h_), 100);  // the defaults copy

  g_object_set(element_, "brightness", 0.2, nullptr);
  double brightness = 0;
  g_object_get(element_, "brightness", &brightness, nullptr);
  EXPECT_EQ(brightness, 0.2) << "a value set while playing must be kept";
  ASSERT_EQ(gst_harness_push(h_, grey_frame(info, 100, 1)), GST_FLOW_OK);
  EXPECT_EQ(pull_first_pixel(h_), 151);  // 100 + 0.2 * 255

  g_object_set(element_, "contrast", 0.5, "brightness", 0.0, nullptr);
  ASSERT_EQ(gst_harness_push(h_, grey_frame(info, 100, 2)), GST_FLOW_OK);
  EXPECT_EQ(pull_first_pixel(h_), 58);  // 16 + 84 * 0.5
}

TEST_F(Parameters, AVideoDirectionSetWhilePlayingTurnsTheNextFrameAndItsCaps) {
  const GstVideoInfo info = video_info(GST_VIDEO_FORMAT_RGBA, 8, 4);
  start({{"kernel", "flip"}}, &info);
  ASSERT_EQ(gst_harness_push(h_, make_frame(info, 3, 0)), GST_FLOW_OK);
  GstBuffer* out = gst_harness_pull(h_);
  ASSERT_NE(out, nullptr);
  EXPECT_EQ(gst_buffer_get_size(out), 8u * 4 * 4);
  gst_buffer_unref(out);

  gst_util_set_object_arg(G_OBJECT(element_), "video-direction", "90r");
  ASSERT_EQ(gst_harness_push(h_, make_frame(info, 3, 1)), GST_FLOW_OK);
  out = gst_harness_pull(h_);
  ASSERT_NE(out, nullptr);
  gst_buffer_unref(out);
  GstCaps* caps = gst_pad_get_current_caps(h_->sinkpad);
  ASSERT_NE(caps, nullptr);
  GstVideoInfo turned;
  ASSERT_TRUE(gst_video_info_from_caps(&turned, caps));
  gst_caps_unref(caps);
  EXPECT_EQ(GST_VIDEO_INFO_WIDTH(&turned), 4);
  EXPECT_EQ(GST_VIDEO_INFO_HEIGHT(&turned), 8);
}

TEST_F(Parameters, AVideoDirectionTheKernelCannotDoIsAWarningAndTheOldOneStays) {
  const GstVideoInfo info = video_info(GST_VIDEO_FORMAT_RGBA, 8, 4);
  start({{"kernel", "flip"}, {"video-direction", "horiz"}}, &info);
  gst_util_set_object_arg(G_OBJECT(element_), "video-direction", "auto");
  const std::string warning =
      bus_->wait_message(GST_MESSAGE_WARNING, std::chrono::milliseconds(2000));
  EXPECT_NE(warning.find("video-direction=auto is not taken"), std::string::npos) << warning;
  gint direction = -1;
  g_object_get(element_, "video-direction", &direction, nullptr);
  EXPECT_EQ(direction, GST_VIDEO_ORIENTATION_HORIZ);
}

TEST_F(Parameters, AControlBindingDrivesBrightnessByTheFramesStreamTime) {
  const GstVideoInfo info = video_info(GST_VIDEO_FORMAT_GRAY8, 16, 8, 1, 1);  // 1 frame/s
  start({{"kernel", "balance"}}, &info);
  GstControlSource* source = gst_interpolation_control_source_new();
  g_object_set(source, "mode", GST_INTERPOLATION_MODE_NONE, nullptr);
  auto* timed = GST_TIMED_VALUE_CONTROL_SOURCE(source);
  gst_timed_value_control_source_set(timed, 0, 0.0);
  gst_timed_value_control_source_set(timed, GST_SECOND, 0.2);
  ASSERT_TRUE(gst_object_add_control_binding(
      GST_OBJECT(element_),
      gst_direct_control_binding_new_absolute(GST_OBJECT(element_), "brightness", source)));
  gst_object_unref(source);

  ASSERT_EQ(gst_harness_push(h_, grey_frame(info, 100, 0)), GST_FLOW_OK);  // PTS 0
  EXPECT_EQ(pull_first_pixel(h_), 100);
  ASSERT_EQ(gst_harness_push(h_, grey_frame(info, 100, 1)), GST_FLOW_OK);  // PTS 1 s
  EXPECT_EQ(pull_first_pixel(h_), 151);
  double brightness = 0;
  g_object_get(element_, "brightness", &brightness, nullptr);
  EXPECT_DOUBLE_EQ(brightness, 0.2);
}

}  // namespace
}  // namespace cudaoverlap_test
