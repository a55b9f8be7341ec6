// GStreamer's CUDA memory into and out of the element (cudaupload before
// it, cudadownload after it, nvh264dec before it): taken where a neighbour
// has it, read and written on the device, and the frames out equal those
// of the same pipeline through system memory, byte for byte, with nothing
// crossing PCIe where both sides are CUDA memory. Runs on the cuda backend
// of a GPU machine with nvcodec's elements; skipped elsewhere.
#include <gst/app/gstappsink.h>
#include <gst/cuda/gstcudacontext.h>
#include <gst/cuda/gstcudaloader.h>
#include <gst/cuda/gstcudautils.h>
#include <gst/gst.h>
#include <gst/video/video.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cuda_device.h"
#include "element_test_util.h"
#include "pipeline_outcome.h"

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

struct Case {
  const char* format;
  const char* properties;  // cudaoverlap's
  const char* out_fields;  // of the caps after it, for kernels whose output is downstream's choice
};

constexpr const char* kCuda = "video/x-raw(memory:CUDAMemory)";

// Whether GStreamer's CUDA elements (cudaupload's CUDA memory) carry
// `format`.
bool cuda_elements_carry(const char* format) {
  GstElementFactory* upload = gst_element_factory_find("cudaupload");
  if (!upload) return false;
  bool carried = false;
  for (const GList* t = gst_element_factory_get_static_pad_templates(upload); t; t = t->next) {
    auto* templ = static_cast<GstStaticPadTemplate*>(t->data);
    if (templ->direction != GST_PAD_SRC) continue;
    GstCaps* caps = gst_static_pad_template_get_caps(templ);
    GstCaps* wanted = gst_caps_from_string(
        (std::string("video/x-raw(memory:CUDAMemory),format=") + format).c_str());
    carried = carried || gst_caps_can_intersect(caps, wanted);
    gst_caps_unref(wanted);
    gst_caps_unref(caps);
  }
  gst_object_unref(upload);
  return carried;
}

class CudaMemory : public ::testing::TestWithParam<Case> {
 protected:
  // The pipeline with frames into the element in CUDA memory or not, and
  // out of it in CUDA memory (then downloaded by cudadownload) or not.
  static std::string pipeline(const Case& c, bool cuda_in, bool cuda_out) {
    std::string p = std::string("videotestsrc num-buffers=6 pattern=smpte ! ") +
                    "video/x-raw,format=" + c.format + ",width=322,height=242 ! ";
    // cudaupload passes system memory through where downstream takes it
    // (as GStreamer's uploaders do): CUDA memory is asked for here.
    if (cuda_in) p += std::string("cudaupload ! ") + kCuda + " ! ";
    p += std::string("cudaoverlap name=o backend=cuda ") + c.properties + " ! ";
    if (cuda_out)
      p += std::string(kCuda) + c.out_fields + " ! cudadownload ! ";
    else if (*c.out_fields)
      p += std::string("video/x-raw") + c.out_fields + " ! ";
    return p + "appsink name=out sync=false";
  }
};

// Every way in and out (CUDA memory in, out, both) makes the frames the
// system memory path makes, takes and sends the memory asked for, and
// moves over PCIe only what crosses it: nothing where both sides are CUDA
// memory.
TEST_P(CudaMemory, EveryPathEqualsTheSystemMemoryPath) {
  SKIP_WITHOUT_CUDA_UPLOAD();
  const Case& c = GetParam();
  if (!cuda_elements_carry(c.format))
    GTEST_SKIP() << "GStreamer's CUDA elements carry no " << c.format << " here";
  const PipelineOutcome system = run_to_frames(pipeline(c, false, false));
  ASSERT_EQ(system.error, "");
  ASSERT_EQ(system.frames.size(), 6u);
  EXPECT_EQ(system.sink_caps.find("memory:CUDAMemory"), std::string::npos) << system.sink_caps;
  EXPECT_EQ(system.src_caps.find("memory:CUDAMemory"), std::string::npos) << system.src_caps;
  EXPECT_GT(system.uploaded, 0u);
  EXPECT_GT(system.downloaded, 0u);
  for (const bool cuda_in : {false, true})
    for (const bool cuda_out : {false, true}) {
      if (!cuda_in && !cuda_out) continue;
      const std::string description = pipeline(c, cuda_in, cuda_out);
      SCOPED_TRACE(description);
      const PipelineOutcome cuda = run_to_frames(description);
      ASSERT_EQ(cuda.error, "");
      EXPECT_EQ(cuda.sink_caps.find("memory:CUDAMemory") != std::string::npos, cuda_in)
          << cuda.sink_caps;
      EXPECT_EQ(cuda.src_caps.find("memory:CUDAMemory") != std::string::npos, cuda_out)
          << cuda.src_caps;
      EXPECT_EQ(cuda.uploaded, cuda_in ? 0u : system.uploaded);
      EXPECT_EQ(cuda.downloaded, cuda_out ? 0u : system.downloaded);
      ASSERT_EQ(cuda.frames.size(), 6u);
      for (size_t i = 0; i < cuda.frames.size(); ++i)
        EXPECT_TRUE(cuda.frames[i] == system.frames[i]) << "frame " << i << " differs";
    }
}

INSTANTIATE_TEST_SUITE_P(
    Formats, CudaMemory,
    ::testing::Values(Case{"RGBA", "kernel=invert", ""}, Case{"BGRA", "kernel=invert", ""},
                      Case{"RGBx", "kernel=invert", ""}, Case{"ARGB", "kernel=invert", ""},
                      Case{"ABGR", "kernel=invert", ""}, Case{"RGB", "kernel=invert", ""},
                      Case{"BGR", "kernel=invert", ""}, Case{"NV12", "kernel=invert", ""},
                      Case{"NV21", "kernel=invert", ""}, Case{"NV16", "kernel=invert", ""},
                      Case{"Y42B", "kernel=invert", ""}, Case{"YUY2", "kernel=invert", ""},
                      Case{"UYVY", "kernel=invert", ""}, Case{"GRAY8", "kernel=invert", ""},
                      Case{"GRAY16_LE", "kernel=invert", ""},
                      Case{"I420_10LE", "kernel=invert", ""},
                      Case{"I420", "kernel=blur", ""}, Case{"P010_10LE", "kernel=invert", ""},
                      Case{"NV12", "kernel=convert", ",format=RGBA,width=160,height=120"},
                      Case{"BGRx", "kernel=flip video-direction=90r", ""},
                      Case{"Y444", "kernel=scale method=lanczos", ",width=500,height=300"}),
    [](const auto& info) {
      std::string name = std::string(info.param.format) + "_" + info.param.properties;
      for (char& ch : name)
        if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
      return name;
    });

// Frames a GPU decoder leaves in CUDA memory go through the element and out
// in CUDA memory without a crossing, equal to the same decoded frames taken
// through system memory.
TEST(CudaMemoryDecoder, DecodedFramesStayOnTheDevice) {
  SKIP_WITHOUT_CUDA_UPLOAD();
  for (const char* name : {"nvh264dec", "openh264enc", "h264parse"}) {
    GstElementFactory* factory = gst_element_factory_find(name);
    if (!factory) GTEST_SKIP() << "no " << name << " here";
    gst_object_unref(factory);
  }
  const std::string source =
      "videotestsrc num-buffers=6 pattern=ball ! video/x-raw,format=I420,width=640,height=360 ! "
      "openh264enc ! h264parse ! nvh264dec ! ";
  const struct {
    const char* properties;
    const char* out_fields;
  } cases[] = {{"kernel=blur", ""}, {"kernel=convert", ",format=RGBA"}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.properties);
    const std::string element =
        std::string("cudaoverlap name=o backend=cuda ") + c.properties + " ! ";
    const std::string sink = "appsink name=out sync=false";
    const PipelineOutcome system = run_to_frames(source + "video/x-raw ! " + element + "video/x-raw" +
                               c.out_fields + " ! " + sink);
    const PipelineOutcome cuda =
        run_to_frames(source + element + kCuda + c.out_fields + " ! cudadownload ! " + sink);
    ASSERT_EQ(system.error, "");
    ASSERT_EQ(cuda.error, "");
    EXPECT_NE(cuda.sink_caps.find("memory:CUDAMemory"), std::string::npos) << cuda.sink_caps;
    EXPECT_NE(cuda.src_caps.find("memory:CUDAMemory"), std::string::npos) << cuda.src_caps;
    EXPECT_EQ(cuda.uploaded, 0u);
    EXPECT_EQ(cuda.downloaded, 0u);
    ASSERT_EQ(cuda.frames.size(), 6u);
    ASSERT_EQ(system.frames.size(), 6u);
    for (size_t i = 0; i < cuda.frames.size(); ++i)
      EXPECT_TRUE(cuda.frames[i] == system.frames[i]) << "frame " << i << " differs";
  }
}

// CUDA memory of a context other than the one the element works in (two
// elements given different contexts of one device) cannot be read by its
// kernels: refused with an error that says so, not read.
TEST(CudaMemoryContexts, MemoryOfAnotherContextIsRefusedWithASentence) {
  SKIP_WITHOUT_CUDA_UPLOAD();
  GstCudaContext* theirs = gst_cuda_context_new(0);
  GstCudaContext* ours = gst_cuda_context_new(0);
  ASSERT_NE(theirs, nullptr);
  ASSERT_NE(ours, nullptr);
  GError* error = nullptr;
  GstElement* pipeline = gst_parse_launch(
      (std::string("videotestsrc num-buffers=3 ! video/x-raw,format=RGBA,width=64,height=48 ! "
                   "cudaupload name=up ! ") +
       kCuda + " ! cudaoverlap name=o backend=cuda kernel=invert ! fakesink")
          .c_str(),
      &error);
  ASSERT_EQ(error, nullptr) << error->message;
  const auto give = [&](const char* name, GstCudaContext* context) {
    GstElement* element = gst_bin_get_by_name(GST_BIN(pipeline), name);
    GstContext* c = gst_context_new_cuda_context(context);
    gst_element_set_context(element, c);
    gst_context_unref(c);
    gst_object_unref(element);
  };
  give("up", theirs);
  give("o", ours);
  gst_element_set_state(pipeline, GST_STATE_PLAYING);
  GstBus* bus = gst_element_get_bus(pipeline);
  GstMessage* m = gst_bus_timed_pop_filtered(
      bus, 20 * GST_SECOND, static_cast<GstMessageType>(GST_MESSAGE_EOS | GST_MESSAGE_ERROR));
  ASSERT_NE(m, nullptr);
  ASSERT_EQ(GST_MESSAGE_TYPE(m), GST_MESSAGE_ERROR) << "frames of another context were taken";
  GError* e = nullptr;
  gst_message_parse_error(m, &e, nullptr);
  EXPECT_NE(std::string(e->message).find("CUDA context of device 0 other than the one"),
            std::string::npos)
      << e->message;
  g_error_free(e);
  gst_message_unref(m);
  gst_object_unref(bus);
  gst_element_set_state(pipeline, GST_STATE_NULL);
  gst_object_unref(pipeline);
  gst_object_unref(ours);
  gst_object_unref(theirs);
}

// Flushing seeks and state changes while CUDA memory is in flight both
// ways: each finishes, nothing fails, and the stream still runs to its end
// afterwards (use of freed memory shows under compute-sanitizer).
TEST(CudaMemoryLifecycle, SeeksAndStateChangesWithFramesInFlight) {
  SKIP_WITHOUT_CUDA_UPLOAD();
  const std::string description =
      std::string("videotestsrc num-buffers=300 ! video/x-raw,format=NV12,width=640,height=360 ! "
                  "cudaupload ! ") +
      kCuda + " ! cudaoverlap backend=cuda kernel=blur ring-size=3 ! " + kCuda +
      " ! queue max-size-buffers=2 ! cudadownload ! fakesink sync=false";
  for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE(round);
    GError* error = nullptr;
    GstElement* pipeline = gst_parse_launch(description.c_str(), &error);
    ASSERT_EQ(error, nullptr) << error->message;
    GstBus* bus = gst_element_get_bus(pipeline);
    ASSERT_NE(gst_element_set_state(pipeline, GST_STATE_PLAYING), GST_STATE_CHANGE_FAILURE);
    ASSERT_EQ(gst_element_get_state(pipeline, nullptr, nullptr, 10 * GST_SECOND),
              GST_STATE_CHANGE_SUCCESS);
    for (int i = 0; i < 4; ++i) {
      EXPECT_TRUE(gst_element_seek_simple(pipeline, GST_FORMAT_TIME,
                                          static_cast<GstSeekFlags>(GST_SEEK_FLAG_FLUSH),
                                          (i + 1) * GST_SECOND / 2));
      gst_element_set_state(pipeline, GST_STATE_PAUSED);
      EXPECT_NE(gst_element_get_state(pipeline, nullptr, nullptr, 10 * GST_SECOND),
                GST_STATE_CHANGE_FAILURE);
      gst_element_set_state(pipeline, GST_STATE_PLAYING);
    }
    if (round < 2) {
      // Stopped with frames in flight.
      gst_element_set_state(pipeline, GST_STATE_READY);
    } else {
      GstMessage* m = gst_bus_timed_pop_filtered(
          bus, 20 * GST_SECOND, static_cast<GstMessageType>(GST_MESSAGE_EOS | GST_MESSAGE_ERROR));
      ASSERT_NE(m, nullptr) << "no EOS within 20 s";
      EXPECT_EQ(GST_MESSAGE_TYPE(m), GST_MESSAGE_EOS);
      gst_message_unref(m);
    }
    GstMessage* error_message = gst_bus_pop_filtered(bus, GST_MESSAGE_ERROR);
    EXPECT_EQ(error_message, nullptr);
    if (error_message) gst_message_unref(error_message);
    gst_element_set_state(pipeline, GST_STATE_NULL);
    gst_object_unref(bus);
    gst_object_unref(pipeline);
  }
}

}  // namespace
}  // namespace cudaoverlap_test
