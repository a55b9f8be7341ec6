// GStreamer's leaks tracer, asked whether any object created while
// pipelines with cudaoverlap ran, flushed and stopped is still alive after
// they are gone. Runs only with GST_TRACERS=leaks (the element-leaks test
// does that); skipped otherwise.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <thread>

#include "element_test_util.h"

namespace cudaoverlap_test {
namespace {

using namespace std::chrono_literals;

GstTracer* find_leaks_tracer() {
  GstTracer* found = nullptr;
  GList* tracers = gst_tracing_get_active_tracers();
  for (GList* l = tracers; l != nullptr; l = l->next) {
    if (found == nullptr && g_strcmp0(G_OBJECT_TYPE_NAME(l->data), "GstLeaksTracer") == 0)
      found = GST_TRACER(gst_object_ref(l->data));
  }
  g_list_free_full(tracers, gst_object_unref);
  return found;
}

void run_to_eos(const std::string& description) {
  GstElement* pipeline = gst_parse_launch(description.c_str(), nullptr);
  ASSERT_NE(pipeline, nullptr);
  ASSERT_NE(gst_element_set_state(pipeline, GST_STATE_PLAYING), GST_STATE_CHANGE_FAILURE);
  GstBus* bus = gst_element_get_bus(pipeline);
  GstMessage* message = gst_bus_timed_pop_filtered(
      bus, 10 * GST_SECOND, static_cast<GstMessageType>(GST_MESSAGE_EOS | GST_MESSAGE_ERROR));
  ASSERT_NE(message, nullptr);
  EXPECT_EQ(GST_MESSAGE_TYPE(message), GST_MESSAGE_EOS);
  gst_message_unref(message);
  gst_object_unref(bus);
  gst_element_set_state(pipeline, GST_STATE_NULL);
  gst_object_unref(pipeline);
}

void stop_while_running(const std::string& description, bool seek) {
  GstElement* pipeline = gst_parse_launch(description.c_str(), nullptr);
  ASSERT_NE(pipeline, nullptr);
  ASSERT_NE(gst_element_set_state(pipeline, GST_STATE_PLAYING), GST_STATE_CHANGE_FAILURE);
  gst_element_get_state(pipeline, nullptr, nullptr, 5 * GST_SECOND);
  std::this_thread::sleep_for(20ms);
  if (seek)
    gst_element_seek_simple(pipeline, GST_FORMAT_TIME, GST_SEEK_FLAG_FLUSH, 100 * GST_MSECOND);
  std::this_thread::sleep_for(10ms);
  gst_element_set_state(pipeline, GST_STATE_NULL);
  gst_object_unref(pipeline);
}

// Whether GStreamer's CUDA memory can be run here: the cuda backend on a
// GPU machine with nvcodec's cudaupload and cudadownload.
bool cuda_memory_here() {
  if (test_backend() != "cuda") return false;
  for (const char* name : {"cudaupload", "cudadownload"}) {
    GstElementFactory* factory = gst_element_factory_find(name);
    if (!factory) return false;
    gst_object_unref(factory);
  }
  return true;
}

void run_pipelines() {
  const std::string backend = " " + backend_properties();
  if (cuda_memory_here()) {
    // GStreamer's CUDA memory in and out: its pools, the shared context.
    const std::string cuda = " ! video/x-raw(memory:CUDAMemory) ! ";
    run_to_eos("videotestsrc num-buffers=20 ! video/x-raw,format=NV12,width=64,height=48 ! "
               "cudaupload" + cuda + "cudaoverlap kernel=invert" + backend + cuda +
               "cudadownload ! fakesink");
    stop_while_running("videotestsrc ! video/x-raw,format=RGBA,width=64,height=48 ! cudaupload" +
                           cuda + "cudaoverlap ring-size=3" + backend + cuda +
                           "queue ! cudadownload ! fakesink sync=false",
                       true);
  }
  run_to_eos(
      "videotestsrc num-buffers=20 ! video/x-raw,format=I420,width=65,height=47 ! "
      "cudaoverlap kernel=invert ring-size=3" +
      backend + " ! fakesink");
  run_to_eos(
      "videotestsrc num-buffers=10 ! video/x-raw,format=RGBA,width=64,height=48 ! "
      "cudaoverlap ring-size=1" +
      backend + " ! fakesink");
  stop_while_running(
      "videotestsrc ! video/x-raw,format=NV12,width=64,height=48 ! cudaoverlap "
      "ring-size=8" +
          backend + " ! fakesink sync=false",
      false);
  stop_while_running(
      "videotestsrc ! video/x-raw,format=BGRx,width=64,height=48 ! cudaoverlap "
      "ring-size=3" +
          backend + " ! queue ! fakesink sync=false",
      true);
}

TEST(Leaks, NothingCreatedWhilePipelinesRanIsAliveAfterTheyStop) {
  SKIP_WITHOUT_BACKEND();
  GstTracer* tracer = find_leaks_tracer();
  if (tracer == nullptr) {
    // Asked for but absent (a GStreamer without its core tracers) is a
    // failure: this run exists to check for leaks.
    const char* tracers = g_getenv("GST_TRACERS");
    if (tracers != nullptr && std::string(tracers).find("leaks") != std::string::npos)
      FAIL() << "GST_TRACERS=leaks is set but the leaks tracer is not loaded (is "
                "libgstcoretracers.so installed?)";
    GTEST_SKIP() << "needs GST_TRACERS=leaks (the element-leaks test)";
  }

  // Objects made once per process (classes' pad templates, the system
  // clock, task pools) are created by a first run, before tracking.
  run_pipelines();
  g_signal_emit_by_name(tracer, "activity-start-tracking");
  run_pipelines();
  // Created minus destroyed, per address (addresses are reused). A pool
  // thread drops its last reference to a finished GstTask just after
  // gst_task_join() returns, so a short wait for stragglers is allowed.
  std::map<std::string, std::pair<int, std::string>> alive;
  const auto still_alive = [&] {
    for (const auto& [address, entry] : alive)
      if (entry.first > 0) return true;
    return false;
  };
  for (int attempt = 0; attempt < 20 && (attempt == 0 || still_alive()); ++attempt) {
    if (attempt > 0) std::this_thread::sleep_for(50ms);
    GstStructure* checkpoint = nullptr;
    g_signal_emit_by_name(tracer, "activity-get-checkpoint", &checkpoint);
    ASSERT_NE(checkpoint, nullptr);
    const auto count = [&](const char* field, int delta) {
      const GValue* list = gst_structure_get_value(checkpoint, field);
      ASSERT_NE(list, nullptr) << field;
      for (guint i = 0; i < gst_value_list_get_size(list); ++i) {
        const GstStructure* s = gst_value_get_structure(gst_value_list_get_value(list, i));
        auto& entry = alive[gst_structure_get_string(s, "address")];
        entry.first += delta;
        entry.second = gst_structure_get_string(s, "type-name");
      }
    };
    count("objects-created-list", +1);
    count("objects-removed-list", -1);
    gst_structure_free(checkpoint);
  }
  g_signal_emit_by_name(tracer, "activity-stop-tracking");

  std::string leaked;
  size_t created = 0;
  for (const auto& [address, entry] : alive) {
    if (entry.first > 0) leaked += entry.second + " at " + address + "\n";
    created += entry.first >= 0 ? 1 : 0;
  }
  EXPECT_EQ(leaked, "");
  EXPECT_GT(created, 0u) << "the tracer saw nothing: is it tracking?";
  gst_object_unref(tracer);
}

}  // namespace
}  // namespace cudaoverlap_test
