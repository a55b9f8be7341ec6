// GStreamer's CUDA memory into the element (cudaupload before it): taken
// where upstream offers it, read on the device, and the frames out equal
// those of the same pipeline through system memory, byte for byte. Runs on
// the cuda backend of a GPU machine with nvcodec's cudaupload; skipped
// elsewhere.
#include <gst/app/gstappsink.h>
#include <gst/cuda/gstcudaloader.h>
#include <gst/gst.h>
#include <gst/video/video.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cuda_device.h"
#include "element_test_util.h"

namespace cudaoverlap_test {
namespace {

// Skips unless the cuda backend is under test and cudaupload exists.
#define SKIP_WITHOUT_CUDA_UPLOAD()                                                  \
  do {                                                                              \
    if (test_backend() != "cuda" || cudaoverlap::cuda_device_count() == 0 ||        \
        !gst_cuda_load_library())                                                   \
      GTEST_SKIP() << "needs the cuda backend on a GPU machine";                    \
    GstElementFactory* upload = gst_element_factory_find("cudaupload");             \
    if (!upload) GTEST_SKIP() << "no cudaupload (nvcodec) here";                    \
    gst_object_unref(upload);                                                       \
  } while (0)

// What a pipeline ending in `appsink name=out` made: each frame's pixels
// (rows without padding, plane after plane), and the caps the element
// named `o` took on its sink pad.
struct Outcome {
  std::vector<std::vector<uint8_t>> frames;
  std::string sink_caps;
  std::string error;
};

Outcome run(const std::string& description) {
  Outcome result;
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
    if (result.sink_caps.empty()) {
      GstPad* pad = gst_element_get_static_pad(o, "sink");
      GstCaps* caps = gst_pad_get_current_caps(pad);
      if (caps) {
        gchar* text = gst_caps_to_string(caps);
        result.sink_caps = text;
        g_free(text);
        gst_caps_unref(caps);
      }
      gst_object_unref(pad);
    }
    gst_sample_unref(sample);
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
  gst_object_unref(o);
  gst_object_unref(out);
  gst_object_unref(pipeline);
  return result;
}

struct Case {
  const char* format;
  const char* element;  // cudaoverlap's properties, then what follows it
};

class CudaMemoryIn : public ::testing::TestWithParam<Case> {};

// The same frames through CUDA memory as through system memory, and CUDA
// memory taken where cudaupload offers it.
TEST_P(CudaMemoryIn, EqualsTheSystemMemoryPath) {
  SKIP_WITHOUT_CUDA_UPLOAD();
  const Case& c = GetParam();
  const std::string source = std::string("videotestsrc num-buffers=6 pattern=smpte ! ") +
                             "video/x-raw,format=" + c.format + ",width=322,height=242 ! ";
  const std::string element =
      std::string("cudaoverlap name=o backend=cuda ") + c.element + " ! appsink name=out sync=false";
  // cudaupload passes system memory through where downstream takes it
  // (as GStreamer's uploaders do): CUDA memory is asked for here.
  const Outcome cuda = run(source + "cudaupload ! video/x-raw(memory:CUDAMemory) ! " + element);
  const Outcome system = run(source + element);
  ASSERT_EQ(cuda.error, "");
  ASSERT_EQ(system.error, "");
  EXPECT_NE(cuda.sink_caps.find("memory:CUDAMemory"), std::string::npos) << cuda.sink_caps;
  EXPECT_EQ(system.sink_caps.find("memory:CUDAMemory"), std::string::npos) << system.sink_caps;
  ASSERT_EQ(cuda.frames.size(), 6u);
  ASSERT_EQ(system.frames.size(), 6u);
  for (size_t i = 0; i < cuda.frames.size(); ++i)
    EXPECT_TRUE(cuda.frames[i] == system.frames[i]) << "frame " << i << " differs";
}

INSTANTIATE_TEST_SUITE_P(
    Formats, CudaMemoryIn,
    ::testing::Values(Case{"RGBA", "kernel=invert"}, Case{"NV12", "kernel=invert"},
                      Case{"I420", "kernel=blur"}, Case{"P010_10LE", "kernel=invert"},
                      Case{"NV12", "kernel=convert ! video/x-raw,format=RGBA,width=160,height=120"},
                      Case{"BGRx", "kernel=flip video-direction=90r"}),
    [](const auto& info) {
      std::string name = std::string(info.param.format) + "_" + info.param.element;
      for (char& ch : name)
        if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
      return name;
    });

}  // namespace
}  // namespace cudaoverlap_test
