// What the suites that hold the references to GStreamer's own elements
// share: the GStreamer name of a format, whether an element takes it, a
// buffer mapped as an ImageRef, a frame of random bytes, and one frame run
// through "appsrc ! <element> ! appsink".
#pragma once

#include <gst/app/gstappsink.h>
#include <gst/app/gstappsrc.h>
#include <gst/gst.h>
#include <gst/video/video.h>

#include <random>
#include <string>

#include "kernel_test_util.h"

namespace cudaoverlap::test {

inline GstVideoFormat gst_format(PixelFormat f) {
  return gst_video_format_from_string(format_info(f).name);
}

// Whether GStreamer's element `factory` takes raw video in `format` (its
// sink pad template).
inline bool element_takes(const char* factory, PixelFormat format) {
  gst_init(nullptr, nullptr);
  GstElement* element = gst_element_factory_make(factory, nullptr);
  if (element == nullptr) return false;
  GstPad* sink = gst_element_get_static_pad(element, "sink");
  GstCaps* templ = gst_pad_get_pad_template_caps(sink);
  GstCaps* caps = gst_caps_new_simple("video/x-raw", "format", G_TYPE_STRING,
                                      format_info(format).name, nullptr);
  // Structures with ANY features (videobalance's, for passthrough) say
  // nothing about what the element computes on.
  bool takes = false;
  for (guint i = 0; i < gst_caps_get_size(templ); ++i) {
    GstCapsFeatures* features = gst_caps_get_features(templ, i);
    if (features != nullptr && gst_caps_features_is_any(features)) continue;
    GstCaps* one = gst_caps_copy_nth(templ, i);
    takes = takes || gst_caps_can_intersect(one, caps);
    gst_caps_unref(one);
  }
  gst_caps_unref(caps);
  gst_caps_unref(templ);
  gst_object_unref(sink);
  gst_object_unref(element);
  return takes;
}

// A mapped frame of a buffer, seen as an ImageRef. Unmaps on destruction.
class MappedFrame {
 public:
  MappedFrame(GstBuffer* buffer, const GstVideoInfo& info, PixelFormat format) {
    mapped_ = gst_video_frame_map(&frame_, const_cast<GstVideoInfo*>(&info), buffer, GST_MAP_READ);
    if (!mapped_) return;
    image_.format = format;
    image_.width = GST_VIDEO_FRAME_WIDTH(&frame_);
    image_.height = GST_VIDEO_FRAME_HEIGHT(&frame_);
    for (guint p = 0; p < GST_VIDEO_FRAME_N_PLANES(&frame_); ++p) {
      image_.planes[p].data = static_cast<uint8_t*>(GST_VIDEO_FRAME_PLANE_DATA(&frame_, p));
      image_.planes[p].stride = static_cast<size_t>(GST_VIDEO_FRAME_PLANE_STRIDE(&frame_, p));
    }
  }
  ~MappedFrame() {
    if (mapped_) gst_video_frame_unmap(&frame_);
  }
  MappedFrame(const MappedFrame&) = delete;
  MappedFrame& operator=(const MappedFrame&) = delete;
  bool ok() const { return mapped_; }
  const ImageRef& image() const { return image_; }

 private:
  GstVideoFrame frame_;
  bool mapped_ = false;
  ImageRef image_;
};

// A frame of random bytes: each in [low, low + span), or every one `flat`
// when that is 0 or more.
inline GstBuffer* random_frame(const GstVideoInfo& info, uint32_t seed, int low = 0, int span = 256,
                               int flat = -1) {
  GstBuffer* buffer = gst_buffer_new_allocate(nullptr, GST_VIDEO_INFO_SIZE(&info), nullptr);
  GstMapInfo map;
  gst_buffer_map(buffer, &map, GST_MAP_WRITE);
  std::mt19937 random(seed);
  for (gsize i = 0; i < map.size; ++i)
    map.data[i] = static_cast<uint8_t>(flat >= 0 ? flat : low + random() % span);
  gst_buffer_unmap(buffer, &map);
  GST_BUFFER_PTS(buffer) = 0;
  GST_BUFFER_DURATION(buffer) = GST_SECOND / 30;
  return buffer;
}

// Runs one frame through "appsrc ! `element` ! appsink" and returns the
// output sample (transfer full), or nullptr with the reason in `why`.
inline GstSample* run_element_caps(const std::string& element, GstCaps* caps, GstBuffer* frame,
                                   std::string* why) {
  gst_init(nullptr, nullptr);
  GError* error = nullptr;
  const std::string description =
      "appsrc name=src format=time ! " + element + " ! appsink name=sink sync=false";
  // A missing element (the plugin not on GST_PLUGIN_PATH) fails here at
  // once, rather than as a pipeline that never gives a sample.
  GstElement* pipeline =
      gst_parse_launch_full(description.c_str(), nullptr, GST_PARSE_FLAG_FATAL_ERRORS, &error);
  if (!pipeline || error) {
    *why = std::string("cannot build '") + description + "': " + (error ? error->message : "?");
    g_clear_error(&error);
    if (pipeline) gst_object_unref(pipeline);
    return nullptr;
  }
  GstElement* src = gst_bin_get_by_name(GST_BIN(pipeline), "src");
  GstElement* sink = gst_bin_get_by_name(GST_BIN(pipeline), "sink");
  gst_app_src_set_caps(GST_APP_SRC(src), caps);
  gst_element_set_state(pipeline, GST_STATE_PLAYING);
  gst_app_src_push_buffer(GST_APP_SRC(src), gst_buffer_ref(frame));
  gst_app_src_end_of_stream(GST_APP_SRC(src));
  GstSample* sample = gst_app_sink_try_pull_sample(GST_APP_SINK(sink), 20 * GST_SECOND);
  if (!sample) {
    GstBus* bus = gst_element_get_bus(pipeline);
    GstMessage* message = gst_bus_pop_filtered(bus, GST_MESSAGE_ERROR);
    *why = "no output from '" + description + "'";
    if (message) {
      GError* e = nullptr;
      gst_message_parse_error(message, &e, nullptr);
      *why += std::string(": ") + e->message;
      g_error_free(e);
      gst_message_unref(message);
    }
    gst_object_unref(bus);
  }
  gst_element_set_state(pipeline, GST_STATE_NULL);
  gst_object_unref(sink);
  gst_object_unref(src);
  gst_object_unref(pipeline);
  return sample;
}

}  // namespace cudaoverlap::test
