// The kernels users bring, through pipelines: kernel=custom (a CUDA source
// compiled at run time: refused on the cpu backend, its parameters, every
// format on CUDA, compile errors, a source swapped while playing) and
// kernel=application (the application's own handler on host planes).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <tuple>

#include "app_pipeline.h"
#include "cudaoverlap/cudaoverlap.h"
#include "element_test_util.h"
#include "pipeline_outcome.h"

namespace cudaoverlap_test {
namespace {

using namespace std::chrono_literals;

// --- kernel=custom ----------------------------------------------------------

// A file of the test's own, removed with it.
struct TemporaryFile {
  TemporaryFile(const std::string& name, const std::string& text) {
    char dir[] = "/tmp/cudaoverlap-custom-XXXXXX";
    path = std::string(mkdtemp(dir)) + "/" + name;
    FILE* f = std::fopen(path.c_str(), "w");
    std::fputs(text.c_str(), f);
    std::fclose(f);
  }
  ~TemporaryFile() {
    std::remove(path.c_str());
    std::remove(path.substr(0, path.rfind('/')).c_str());
  }
  std::string path;
};

constexpr char kInvertSource[] = R"(#include <cudaoverlap/pixel.cuh>
co::Pixel process(co::Pixel px, int x, int y, const Params& params) {
  for (int c = 0; c < 3; ++c) px.c[c] = params.on ? 1.f - px.c[c] : px.c[c];
  return px;
}
)";

bool cuda_under_test() { return test_backend() != "cpu" && backend_available(); }

// The error a launch line's pipeline posts when it cannot go to PAUSED
// (empty, with a test failure, when it does go).
std::string error_at_start(const std::string& description) {
  GstElement* pipeline = gst_parse_launch(description.c_str(), nullptr);
  if (pipeline == nullptr) {
    ADD_FAILURE() << description << " does not parse";
    return {};
  }
  EXPECT_EQ(gst_element_set_state(pipeline, GST_STATE_PAUSED), GST_STATE_CHANGE_FAILURE);
  GstBus* bus = gst_element_get_bus(pipeline);
  GstMessage* message = gst_bus_pop_filtered(bus, GST_MESSAGE_ERROR);
  std::string text;
  if (message != nullptr) {
    GError* error = nullptr;
    gst_message_parse_error(message, &error, nullptr);
    text = error->message;
    g_error_free(error);
    gst_message_unref(message);
  }
  gst_object_unref(bus);
  gst_element_set_state(pipeline, GST_STATE_NULL);
  gst_object_unref(pipeline);
  return text;
}

TEST(CustomKernel, OnTheCpuBackendItIsRefusedAtStartWithASentence) {
  TemporaryFile file("invert.cu", kInvertSource);
  const std::string error = error_at_start(
      "videotestsrc num-buffers=2 ! cudaoverlap backend=cpu kernel=custom kernel-file=" +
      file.path + " ! fakesink");
  EXPECT_NE(error.find("needs the cuda backend"), std::string::npos) << error;
}

// A custom step of a chain: loaded at start like kernel=custom (its errors
// name the step), refused on the cpu backend, and on CUDA the same frames
// as an element of its own after the chain's other steps.
TEST(CustomKernel, InAChainItIsAStep) {
  TemporaryFile file("invert.cu", kInvertSource);
  const std::string src =
      "videotestsrc num-buffers=3 pattern=smpte ! video/x-raw,format=RGBA,width=70,height=40 ! ";
  std::string error = error_at_start(src + "cudaoverlap backend=cpu chain=\"invert ! custom " +
                                     "kernel-file=" + file.path + "\" ! fakesink");
  EXPECT_NE(error.find("the chain's custom step runs CUDA source, which needs the cuda backend"),
            std::string::npos)
      << error;
  error = error_at_start(src +
                         "cudaoverlap chain=\"invert ! custom kernel-file=/nonexistent.cu\" ! "
                         "fakesink");
  EXPECT_NE(error.find("chain step 2 (custom): kernel-file '/nonexistent.cu' cannot be read"),
            std::string::npos)
      << error;
  error = error_at_start(src +
                         "cudaoverlap chain=\"custom kernel-source=x kernel-launch=32by8\" ! "
                         "fakesink");
  EXPECT_NE(error.find("chain step 1 (custom): kernel-launch '32by8' is not a launch shape"),
            std::string::npos)
      << error;
  if (!cuda_under_test()) GTEST_SKIP() << "the frames need the cuda backend";
  const std::string params = " kernel-params=\\\"p, on=(boolean)true\\\"";
  const std::string after = " ! appsink name=out sync=false";
  const PipelineOutcome chain =
      run_to_frames(src + "cudaoverlap name=o " + backend_properties() +
                    " chain=\"balance saturation=1.5 ! custom kernel-file=" + file.path + params +
                    " ! blur sigma=1\"" + after);
  const PipelineOutcome steps = run_to_frames(
      src + "cudaoverlap name=o " + backend_properties() + " kernel=balance saturation=1.5 ! " +
      "cudaoverlap " + backend_properties() + " kernel=custom kernel-file=" + file.path +
      " kernel-params=\"p, on=(boolean)true\" ! cudaoverlap " + backend_properties() +
      " kernel=blur sigma=1" + after);
  ASSERT_EQ(chain.error, "");
  ASSERT_EQ(steps.error, "");
  ASSERT_EQ(chain.frames.size(), 3u);
  ASSERT_EQ(steps.frames.size(), 3u);
  for (size_t i = 0; i < chain.frames.size(); ++i)
    EXPECT_TRUE(chain.frames[i] == steps.frames[i]) << "frame " << i << " differs";
}

TEST(CustomKernel, ParametersThatCannotBeTakenFailTheStart) {
  const std::pair<const char*, const char*> cases[] = {
      {"kernel=custom", "set kernel-file or kernel-source"},
      {"kernel=custom kernel-source=x kernel-file=/nonexistent.cu", "both set"},
      {"kernel=custom kernel-file=/nonexistent.cu", "cannot be read"},
      {"kernel=custom kernel-source=x kernel-params=\"p, name=(string)x\"", "field 'name'"},
      {"kernel=custom kernel-source=x kernel-launch=32by8", "not a launch shape"},
      {"kernel=custom kernel-source=x kernel-entry=\"a b\"", "kernel-entry"}};
  for (const auto& [properties, says] : cases) {
    const std::string error = error_at_start(
        std::string("videotestsrc num-buffers=2 ! cudaoverlap ") + properties + " ! fakesink");
    EXPECT_NE(error.find(says), std::string::npos) << properties << ": " << error;
  }
}

class CustomKernelOnCuda : public ::testing::TestWithParam<std::tuple<GstVideoFormat, int, int>> {
 protected:
  void SetUp() override {
    if (!cuda_under_test()) GTEST_SKIP() << "kernel=custom runs on the cuda backend only";
  }
};

TEST_P(CustomKernelOnCuda, AFileInvertingFramesMatchesTheCpuComputation) {
  const auto [format, width, height] = GetParam();
  TemporaryFile file("invert.cu", kInvertSource);
  const GstVideoInfo info = video_info(format, width, height);
  std::vector<GstBuffer*> inputs;
  for (int i = 0; i < 6; ++i) inputs.push_back(make_frame(info, 40 + i, i));
  AppPipeline pipeline(
      info, "kernel=custom kernel-file=" + file.path + " kernel-params=\"p, on=(boolean)true\"");
  ASSERT_TRUE(pipeline.ok());
  for (GstBuffer* input : inputs) pipeline.push(gst_buffer_ref(input));
  pipeline.end();
  for (size_t i = 0; i < inputs.size(); ++i) {
    GstSample* sample = pipeline.pull();
    ASSERT_NE(sample, nullptr) << "frame " << i << " missing; error: " << pipeline.error();
    EXPECT_EQ(compare_frames(info, inputs[i], gst_sample_get_buffer(sample), Kernel::kInvert), "")
        << "frame " << i;
    gst_sample_unref(sample);
  }
  EXPECT_EQ(pipeline.error(), "");
  for (GstBuffer* input : inputs) gst_buffer_unref(input);
}

INSTANTIATE_TEST_SUITE_P(SomeFormats, CustomKernelOnCuda,
                         ::testing::Values(std::tuple{GST_VIDEO_FORMAT_RGBA, 64, 48},
                                           std::tuple{GST_VIDEO_FORMAT_NV12, 64, 48},
                                           std::tuple{GST_VIDEO_FORMAT_I420, 33, 17},
                                           std::tuple{GST_VIDEO_FORMAT_YUY2, 35, 9},
                                           std::tuple{GST_VIDEO_FORMAT_BGR, 17, 5},
                                           std::tuple{GST_VIDEO_FORMAT_GRAY8, 640, 480}));

TEST(CustomKernel, ACompileErrorIsAnElementErrorWithNvrtcsLine) {
  if (!cuda_under_test()) GTEST_SKIP() << "kernel=custom runs on the cuda backend only";
  TemporaryFile file("broken.cu",
                     "co::Pixel process(co::Pixel px, int x, int y, const Params& params) {\n"
                     "  return px + params.missing;\n"
                     "}\n");
  const GstVideoInfo info = video_info(GST_VIDEO_FORMAT_NV12, 64, 48);
  AppPipeline pipeline(info, "kernel=custom kernel-file=" + file.path);
  ASSERT_TRUE(pipeline.ok());
  pipeline.push(make_frame(info, 1, 0));
  pipeline.end();
  GstSample* sample = pipeline.pull();
  EXPECT_EQ(sample, nullptr);
  if (sample) gst_sample_unref(sample);
  const std::string error = pipeline.error();
  EXPECT_NE(error.find("broken.cu(2)"), std::string::npos) << error;
}

// While playing, a new source is compiled aside and swapped in between two
// frames: every frame comes out whole, either inverted (old) or copied
// (new), none lost, and once the new kernel has run the old one never runs
// again. A source that does not compile then is a warning, and the running
// kernel stays.
TEST(CustomKernel, ASourceChangedWhilePlayingIsSwappedInBetweenTwoFrames) {
  if (!cuda_under_test()) GTEST_SKIP() << "kernel=custom runs on the cuda backend only";
  // A cache of its own: every compile here is a real one.
  char cache[] = "/tmp/cudaoverlap-swap-cache-XXXXXX";
  ScopedEnv cache_env("CUDAOVERLAP_KERNEL_CACHE", mkdtemp(cache));
  TemporaryFile invert("invert.cu", kInvertSource);
  TemporaryFile copy(
      "copy.cu", "co::Pixel process(co::Pixel px, int x, int y, const Params&) { return px; }\n");
  TemporaryFile broken("broken.cu", "co::Pixel process(co::Pixel px) { return nonsense; }\n");
  GstVideoInfo info = video_info(GST_VIDEO_FORMAT_NV12, 64, 48);
  AppPipeline pipeline(
      info, "kernel=custom kernel-file=" + invert.path + " kernel-params=\"p, on=(boolean)true\"");
  ASSERT_TRUE(pipeline.ok());
  GstElement* overlap = pipeline.overlap();
  int frames = 0;
  std::string problems, last;
  // One frame through; which kernel made it ("copy" or "invert").
  auto one_frame = [&] {
    GstBuffer* input = make_frame(info, 500 + frames, frames);
    ++frames;
    pipeline.push(gst_buffer_ref(input));
    GstSample* sample = pipeline.pull();
    last = "";
    if (sample == nullptr) {
      problems += "frame " + std::to_string(frames - 1) + " missing; ";
    } else {
      GstBuffer* out = gst_sample_get_buffer(sample);
      if (compare_frames(info, input, out, Kernel::kCopy).empty())
        last = "copy";
      else if (compare_frames(info, input, out, Kernel::kInvert).empty())
        last = "invert";
      else
        problems += "frame " + std::to_string(frames - 1) + " neither kernel's; ";
      gst_sample_unref(sample);
    }
    gst_buffer_unref(input);
    return last;
  };
  // Frames until `kernel` made one (within 20 s); then it must go on.
  auto until = [&](const std::string& kernel) {
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    std::string was = last;
    while (one_frame() != kernel && std::chrono::steady_clock::now() < deadline) {
      if (!was.empty() && last != was)
        problems += "frame " + std::to_string(frames - 1) + " went back; ";
      std::this_thread::sleep_for(2ms);
    }
    for (int i = 0; i < 3; ++i)
      if (one_frame() != kernel)
        problems += "frame " + std::to_string(frames - 1) + " not " + kernel + "; ";
  };
  for (int i = 0; i < 3; ++i) EXPECT_EQ(one_frame(), "invert");
  g_object_set(overlap, "kernel-file", copy.path.c_str(), nullptr);
  until("copy");
  EXPECT_EQ(problems, "");
  // Back to the first source: a replacement compiled for the change before
  // must not stay behind.
  g_object_set(overlap, "kernel-file", invert.path.c_str(), nullptr);
  until("invert");
  EXPECT_EQ(problems, "");

  // A change made and then undone while no frame flows: the replacement
  // compiled for the first must not be swapped in after the second.
  g_object_set(overlap, "kernel-file", copy.path.c_str(), nullptr);
  std::this_thread::sleep_for(3s);  // compiled, waiting for a frame
  g_object_set(overlap, "kernel-file", invert.path.c_str(), nullptr);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(one_frame(), "invert");

  g_object_set(overlap, "kernel-file", broken.path.c_str(), nullptr);
  const std::string warning = pipeline.warning(20 * GST_SECOND);
  EXPECT_NE(warning.find("broken.cu(1)"), std::string::npos) << warning;
  EXPECT_NE(warning.find("running kernel stays"), std::string::npos) << warning;
  for (int i = 0; i < 5; ++i) EXPECT_EQ(one_frame(), "invert");
  // New caps build a new engine: with the kernel that runs, not the refused
  // source the property now names.
  info = video_info(GST_VIDEO_FORMAT_NV12, 32, 16);
  pipeline.set_caps(info);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(one_frame(), "invert");
  EXPECT_EQ(problems, "");
  EXPECT_EQ(pipeline.error(), "");
  gst_object_unref(overlap);
}

// --- kernel=application ------------------------------------------------------

// A process handler on host planes (the cpu backend): 255 - v on every
// byte of the picture, as Kernel::kInvert computes on 8-bit formats without
// alpha. Counts its calls and checks what it is given; atomics, as over
// several devices (CUDAOVERLAP_TEST_DEVICES) it is called from each
// device's compute thread at once.
struct ProcessHandler {
  std::atomic<int> calls{0};
  std::atomic<bool> stream_was_null{true};
  std::atomic<bool> geometry_ok{true};
  static gboolean invert(GstElement*, const CudaOverlapImage* in, const CudaOverlapImage* out,
                         gpointer stream, gpointer user_data) {
    auto* self = static_cast<ProcessHandler*>(user_data);
    ++self->calls;
    if (stream != nullptr) self->stream_was_null = false;
    if (in->width != out->width || in->height != out->height || in->format != out->format)
      self->geometry_ok = false;
    for (int p = 0; p < in->n_planes; ++p)
      for (int y = 0; y < in->rows[p]; ++y)
        for (size_t x = 0; x < in->row_bytes[p]; ++x)
          out->data[p][y * out->stride[p] + x] = 255 - in->data[p][y * in->stride[p] + x];
    return TRUE;
  }
  static gboolean refuse(GstElement*, const CudaOverlapImage*, const CudaOverlapImage*, gpointer,
                         gpointer) {
    return FALSE;
  }
};

TEST(ApplicationKernel, AProcessHandlerOnTheCpuBackendGetsHostPlanesAndItsOutputGoesOut) {
  if (test_backend() != "cpu") GTEST_SKIP() << "the handler here works on host planes";
  for (GstVideoFormat format :
       {GST_VIDEO_FORMAT_NV12, GST_VIDEO_FORMAT_I420, GST_VIDEO_FORMAT_RGB}) {
    const GstVideoInfo info = video_info(format, 33, 17);
    AppPipeline pipeline(info, "kernel=application");
    ASSERT_TRUE(pipeline.ok());
    GstElement* overlap = pipeline.overlap();
    ProcessHandler handler;
    g_signal_connect(overlap, "process", G_CALLBACK(ProcessHandler::invert), &handler);
    std::vector<GstBuffer*> inputs;
    for (int i = 0; i < 8; ++i) inputs.push_back(make_frame(info, 70 + i, i));
    for (GstBuffer* input : inputs) pipeline.push(gst_buffer_ref(input));
    pipeline.end();
    for (size_t i = 0; i < inputs.size(); ++i) {
      GstSample* sample = pipeline.pull();
      ASSERT_NE(sample, nullptr) << "frame " << i << "; error: " << pipeline.error();
      EXPECT_EQ(compare_frames(info, inputs[i], gst_sample_get_buffer(sample), Kernel::kInvert), "")
          << gst_video_format_to_string(format) << " frame " << i;
      gst_sample_unref(sample);
    }
    EXPECT_EQ(handler.calls.load(), 8);
    EXPECT_TRUE(handler.stream_was_null);
    EXPECT_TRUE(handler.geometry_ok);
    EXPECT_EQ(pipeline.error(), "");
    for (GstBuffer* input : inputs) gst_buffer_unref(input);
    gst_object_unref(overlap);
  }
}

// An application step of a chain gets the frame the step before made and
// writes the one the step after reads: invert, then the handler's 255 - v,
// is the input again.
TEST(ApplicationKernel, InAChainItIsAStep) {
  if (test_backend() != "cpu") GTEST_SKIP() << "the handler here works on host planes";
  for (GstVideoFormat format : {GST_VIDEO_FORMAT_NV12, GST_VIDEO_FORMAT_RGB}) {
    const GstVideoInfo info = video_info(format, 33, 17);
    AppPipeline pipeline(info, "chain=\"invert ! application\"");
    ASSERT_TRUE(pipeline.ok());
    GstElement* overlap = pipeline.overlap();
    ProcessHandler handler;
    g_signal_connect(overlap, "process", G_CALLBACK(ProcessHandler::invert), &handler);
    std::vector<GstBuffer*> inputs;
    for (int i = 0; i < 4; ++i) inputs.push_back(make_frame(info, 50 + i, i));
    for (GstBuffer* input : inputs) pipeline.push(gst_buffer_ref(input));
    pipeline.end();
    for (size_t i = 0; i < inputs.size(); ++i) {
      GstSample* sample = pipeline.pull();
      ASSERT_NE(sample, nullptr) << "frame " << i << "; error: " << pipeline.error();
      EXPECT_EQ(compare_frames(info, inputs[i], gst_sample_get_buffer(sample), Kernel::kCopy), "")
          << gst_video_format_to_string(format) << " frame " << i;
      gst_sample_unref(sample);
    }
    EXPECT_EQ(handler.calls.load(), 4);
    EXPECT_TRUE(handler.geometry_ok);
    EXPECT_EQ(pipeline.error(), "");
    for (GstBuffer* input : inputs) gst_buffer_unref(input);
    gst_object_unref(overlap);
  }
}

TEST(ApplicationKernel, AHandlerThatFailsOrNoHandlerIsAnElementError) {
  SKIP_WITHOUT_BACKEND();
  for (bool connect : {true, false}) {
    const GstVideoInfo info = video_info(GST_VIDEO_FORMAT_RGBA, 16, 8);
    AppPipeline pipeline(info, "kernel=application");
    ASSERT_TRUE(pipeline.ok());
    GstElement* overlap = pipeline.overlap();
    if (connect) g_signal_connect(overlap, "process", G_CALLBACK(ProcessHandler::refuse), nullptr);
    pipeline.push(make_frame(info, 1, 0));
    pipeline.end();
    std::string error;
    for (int i = 0; i < 1000 && error.empty(); ++i) {
      error = pipeline.error();
      if (error.empty()) std::this_thread::sleep_for(10ms);
    }
    EXPECT_NE(error.find("process handler did not process the frame"), std::string::npos) << error;
    gst_object_unref(overlap);
  }
}

}  // namespace
}  // namespace cudaoverlap_test
