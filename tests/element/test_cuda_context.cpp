// The pipeline's CUDA context ("gst.cuda.context"), shared with GStreamer's
// CUDA elements as they share theirs: made from the device's primary
// context by the first element and posted once, found by the others
// through queries, and taken from the application when it gives one. Runs
// on the cuda backend of a GPU machine; skipped elsewhere.
#include <gst/cuda/gstcudacontext.h>
#include <gst/cuda/gstcudaloader.h>
#include <gst/cuda/gstcudautils.h>
#include <gst/gst.h>
#include <gtest/gtest.h>

#include <mutex>
#include <string>
#include <vector>

#include "cuda_device.h"
#include "element_test_util.h"

namespace cudaoverlap_test {
namespace {

using cudaoverlap::cuda_device_count;
// Device `device`'s primary CUcontext (the handle stays valid while the
// runtime or an element holds it).
void* primary_context(int device) {
  void* context = cudaoverlap::cuda_retain_primary_context(device);
  cudaoverlap::cuda_release_primary_context(device);
  return context;
}

// Skips unless the cuda backend is under test on a machine with a GPU.
#define SKIP_WITHOUT_CUDA()                                                              \
  do {                                                                                   \
    if (test_backend() != "cuda" || cuda_device_count() == 0 || !gst_cuda_load_library()) \
      GTEST_SKIP() << "needs the cuda backend on a GPU machine";                         \
  } while (0)

// What the bus saw of CUDA contexts: who posted have-context, with which
// context's handle; and, where the test gives one, the application's answer
// to need-context.
struct ContextLog {
  std::mutex mutex;
  std::vector<std::string> posted_by;
  std::vector<void*> posted;
  GstCudaContext* give = nullptr;  // the application's, or null
  int asked = 0;

  static GstBusSyncReply on_message(GstBus*, GstMessage* message, gpointer data) {
    auto* log = static_cast<ContextLog*>(data);
    const char* type = nullptr;
    if (GST_MESSAGE_TYPE(message) == GST_MESSAGE_HAVE_CONTEXT) {
      GstContext* context = nullptr;
      gst_message_parse_have_context(message, &context);
      if (g_strcmp0(gst_context_get_context_type(context), GST_CUDA_CONTEXT_TYPE) == 0) {
        GstCudaContext* cuda = nullptr;
        gst_structure_get(gst_context_get_structure(context), GST_CUDA_CONTEXT_TYPE,
                          GST_TYPE_CUDA_CONTEXT, &cuda, nullptr);
        std::lock_guard<std::mutex> lock(log->mutex);
        log->posted_by.push_back(GST_OBJECT_NAME(GST_MESSAGE_SRC(message)));
        log->posted.push_back(cuda ? gst_cuda_context_get_handle(cuda) : nullptr);
        if (cuda) gst_object_unref(cuda);
      }
      gst_context_unref(context);
    } else if (GST_MESSAGE_TYPE(message) == GST_MESSAGE_NEED_CONTEXT &&
               gst_message_parse_context_type(message, &type) &&
               g_strcmp0(type, GST_CUDA_CONTEXT_TYPE) == 0) {
      std::lock_guard<std::mutex> lock(log->mutex);
      ++log->asked;
      if (log->give) {
        GstContext* context = gst_context_new_cuda_context(log->give);
        gst_element_set_context(GST_ELEMENT(GST_MESSAGE_SRC(message)), context);
        gst_context_unref(context);
      }
    }
    return GST_BUS_PASS;
  }
};

// The CUcontext `element`'s pad `pad` answers a context query with; null
// when it does not answer.
void* answered_context(GstElement* element, const char* pad_name) {
  GstPad* pad = gst_element_get_static_pad(element, pad_name);
  GstQuery* query = gst_query_new_context(GST_CUDA_CONTEXT_TYPE);
  void* handle = nullptr;
  if (gst_pad_query(pad, query)) {
    GstContext* context = nullptr;
    gst_query_parse_context(query, &context);
    GstCudaContext* cuda = nullptr;
    if (context &&
        gst_structure_get(gst_context_get_structure(context), GST_CUDA_CONTEXT_TYPE,
                          GST_TYPE_CUDA_CONTEXT, &cuda, nullptr)) {
      handle = gst_cuda_context_get_handle(cuda);
      gst_object_unref(cuda);
    }
  }
  gst_query_unref(query);
  gst_object_unref(pad);
  return handle;
}

// The same for the element named `name` in `bin`.
void* answered_context(GstBin* bin, const char* name, const char* pad_name) {
  GstElement* element = gst_bin_get_by_name(bin, name);
  if (!element) return nullptr;
  void* handle = answered_context(element, pad_name);
  gst_object_unref(element);
  return handle;
}

// Runs `description` to PAUSED (so every element has its context), calls
// `check` there, then plays it to the end: no error.
template <typename Check>
void run(const std::string& description, ContextLog* log, Check check) {
  GError* error = nullptr;
  GstElement* pipeline = gst_parse_launch(description.c_str(), &error);
  ASSERT_NE(pipeline, nullptr) << (error ? error->message : "") << ": " << description;
  GstBus* bus = gst_element_get_bus(pipeline);
  gst_bus_set_sync_handler(bus, ContextLog::on_message, log, nullptr);
  ASSERT_NE(gst_element_set_state(pipeline, GST_STATE_PAUSED), GST_STATE_CHANGE_FAILURE);
  ASSERT_NE(gst_element_get_state(pipeline, nullptr, nullptr, 10 * GST_SECOND),
            GST_STATE_CHANGE_FAILURE);
  check(GST_BIN(pipeline));
  gst_element_set_state(pipeline, GST_STATE_PLAYING);
  GstMessage* end = gst_bus_timed_pop_filtered(
      bus, 20 * GST_SECOND, static_cast<GstMessageType>(GST_MESSAGE_EOS | GST_MESSAGE_ERROR));
  ASSERT_NE(end, nullptr) << "no EOS within 20 s: " << description;
  if (GST_MESSAGE_TYPE(end) == GST_MESSAGE_ERROR) {
    GError* e = nullptr;
    gst_message_parse_error(end, &e, nullptr);
    ADD_FAILURE() << e->message;
    g_error_free(e);
  }
  gst_message_unref(end);
  gst_element_set_state(pipeline, GST_STATE_NULL);
  gst_bus_set_sync_handler(bus, nullptr, nullptr, nullptr);
  gst_object_unref(bus);
  gst_object_unref(pipeline);
}

const char kSource[] =
    "videotestsrc num-buffers=20 ! video/x-raw,format=RGBA,width=320,height=240 ! ";

// The first CUDA element makes the context: the device's primary one,
// which the runtime (and so the engine and applications' CUDA code) uses,
// posted once.
TEST(CudaContextTest, TheFirstElementSharesThePrimaryContext) {
  SKIP_WITHOUT_CUDA();
  ContextLog log;
  void* answered = nullptr;
  run(std::string(kSource) + "cudaoverlap name=a backend=cuda kernel=invert ! fakesink", &log,
      [&](GstBin* bin) { answered = answered_context(bin, "a", "src"); });
  void* primary = primary_context(0);
  ASSERT_EQ(log.posted_by, std::vector<std::string>{"a"});
  EXPECT_EQ(log.posted[0], primary);
  EXPECT_EQ(answered, primary);
}

// Two elements share one context: the second finds the first's, nothing
// else is posted.
TEST(CudaContextTest, TwoElementsShareOneContext) {
  SKIP_WITHOUT_CUDA();
  ContextLog log;
  void* a_answer = nullptr;
  void* b_answer = nullptr;
  run(std::string(kSource) +
          "cudaoverlap name=a backend=cuda kernel=invert ! "
          "cudaoverlap name=b backend=cuda kernel=invert ! fakesink",
      &log, [&](GstBin* bin) {
        a_answer = answered_context(bin, "a", "sink");
        b_answer = answered_context(bin, "b", "sink");
      });
  ASSERT_EQ(log.posted.size(), 1u);
  EXPECT_NE(a_answer, nullptr);
  EXPECT_EQ(a_answer, b_answer);
  EXPECT_EQ(a_answer, log.posted[0]);
}

// A context the application gives (here one GStreamer's CUDA library made,
// not the primary one) is taken: nothing is posted, the element answers
// with it, and frames run through the engine working in it.
TEST(CudaContextTest, TheApplicationsContextIsTaken) {
  SKIP_WITHOUT_CUDA();
  ContextLog log;
  log.give = gst_cuda_context_new(0);
  ASSERT_NE(log.give, nullptr);
  void* mine = gst_cuda_context_get_handle(log.give);
  ASSERT_NE(mine, primary_context(0));
  void* answered = nullptr;
  run(std::string(kSource) + "cudaoverlap name=a backend=cuda kernel=invert ! fakesink", &log,
      [&](GstBin* bin) { answered = answered_context(bin, "a", "src"); });
  EXPECT_GE(log.asked, 1);
  EXPECT_EQ(log.posted.size(), 0u);
  EXPECT_EQ(answered, mine);
  gst_object_unref(log.give);
}

// GStreamer's own CUDA elements find the element's context: cudaupload and
// cudadownload upstream of it end up on the primary context too.
TEST(CudaContextTest, GStreamersCudaElementsFindIt) {
  SKIP_WITHOUT_CUDA();
  GstElementFactory* upload = gst_element_factory_find("cudaupload");
  if (!upload) GTEST_SKIP() << "no cudaupload (nvcodec) here";
  gst_object_unref(upload);
  ContextLog log;
  void* theirs = nullptr;
  run(std::string(kSource) +
          "cudaupload name=up ! cudadownload ! "
          "cudaoverlap name=a backend=cuda kernel=invert ! fakesink",
      &log, [&](GstBin* bin) { theirs = answered_context(bin, "up", "src"); });
  ASSERT_EQ(log.posted_by, std::vector<std::string>{"a"});
  EXPECT_EQ(theirs, primary_context(0));
}

}  // namespace
}  // namespace cudaoverlap_test
