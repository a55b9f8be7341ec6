// See pipeline_outcome.h.
#include "pipeline_outcome.h"

#include <gst/app/gstappsink.h>
#include <gst/video/video.h>

namespace cudaoverlap_test {
namespace {

std::string current_caps(GstElement* element, const char* pad_name) {
  GstPad* pad = gst_element_get_static_pad(element, pad_name);
  GstCaps* caps = gst_pad_get_current_caps(pad);
  std::string text;
  if (caps) {
    gchar* s = gst_caps_to_string(caps);
    text = s;
    g_free(s);
    gst_caps_unref(caps);
  }
  gst_object_unref(pad);
  return text;
}

}  // namespace

PipelineOutcome run_to_frames(const std::string& description) {
  PipelineOutcome result;
  GError* error = nullptr;
  GstElement* pipeline = gst_parse_launch(description.c_str(), &error);
  // A link that fails leaves a pipeline and an error (gst-launch links in
  // NULL, so the caps offered then count).
  if (!pipeline || error) {
    result.error = error ? error->message : "no pipeline";
    if (error) g_error_free(error);
    if (pipeline) gst_object_unref(pipeline);
    return result;
  }
  GstElement* out = gst_bin_get_by_name(GST_BIN(pipeline), "out");
  GstElement* o = gst_bin_get_by_name(GST_BIN(pipeline), "o");
  gst_element_set_state(pipeline, GST_STATE_PLAYING);
  while (GstSample* sample = gst_app_sink_try_pull_sample(GST_APP_SINK(out), 20 * GST_SECOND)) {
    GstVideoInfo info;
    GstVideoFrame frame;
    if (gst_video_info_from_caps(&info, gst_sample_get_caps(sample)) &&
        gst_video_frame_map(&frame, &info, gst_sample_get_buffer(sample), GST_MAP_READ)) {
      std::vector<uint8_t> bytes;
      for (guint p = 0; p < GST_VIDEO_FRAME_N_PLANES(&frame); ++p) {
        const auto* data = static_cast<const uint8_t*>(GST_VIDEO_FRAME_PLANE_DATA(&frame, p));
        const int stride = GST_VIDEO_FRAME_PLANE_STRIDE(&frame, p);
        const int row = GST_VIDEO_FRAME_COMP_WIDTH(&frame, p) *
                        GST_VIDEO_FRAME_COMP_PSTRIDE(&frame, p);
        for (int y = 0; y < GST_VIDEO_FRAME_COMP_HEIGHT(&frame, p); ++y)
          bytes.insert(bytes.end(), data + y * stride, data + y * stride + row);
      }
      result.frames.push_back(std::move(bytes));
      gst_video_frame_unmap(&frame);
    }
    if (o && result.sink_caps.empty()) {
      result.sink_caps = current_caps(o, "sink");
      result.src_caps = current_caps(o, "src");
    }
    gst_sample_unref(sample);
  }
  GstStructure* stats = nullptr;
  if (o) g_object_get(o, "stats", &stats, nullptr);
  if (stats) {
    gst_structure_get_uint64(stats, "bytes-uploaded", &result.uploaded);
    gst_structure_get_uint64(stats, "bytes-downloaded", &result.downloaded);
    gst_structure_free(stats);
  }
  GstBus* bus = gst_element_get_bus(pipeline);
  if (GstMessage* m = gst_bus_pop_filtered(bus, GST_MESSAGE_ERROR)) {
    GError* e = nullptr;
    gchar* debug = nullptr;
    gst_message_parse_error(m, &e, &debug);
    result.error = std::string(GST_OBJECT_NAME(GST_MESSAGE_SRC(m))) + ": " + e->message +
                   (debug ? std::string(" (") + debug + ")" : std::string());
    g_error_free(e);
    g_free(debug);
    gst_message_unref(m);
  }
  gst_object_unref(bus);
  gst_element_set_state(pipeline, GST_STATE_NULL);
  if (o) gst_object_unref(o);
  gst_object_unref(out);
  gst_object_unref(pipeline);
  return result;
}

}  // namespace cudaoverlap_test
