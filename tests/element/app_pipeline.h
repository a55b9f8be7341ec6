// appsrc ! cudaoverlap ! appsink, for the suites that push frames of their
// own and check what comes out (test_pipelines.cpp, test_user_kernels.cpp).
#pragma once

#include <gst/app/gstappsink.h>
#include <gst/app/gstappsrc.h>
#include <gst/gst.h>
#include <gst/video/video.h>

#include <chrono>
#include <string>
#include <utility>

#include "element_test_util.h"

namespace cudaoverlap_test {

// appsrc ! cudaoverlap ! appsink with the given element properties.
class AppPipeline {
 public:
  AppPipeline(const GstVideoInfo& info, const std::string& element_properties) {
    const std::string description = "appsrc name=src format=time ! cudaoverlap name=overlap " +
                                    backend_properties() + " " + element_properties +
                                    " ! appsink name=sink sync=false";
    GError* error = nullptr;
    pipeline_ = gst_parse_launch(description.c_str(), &error);
    if (error != nullptr) {
      ADD_FAILURE() << description << ": " << error->message;
      g_error_free(error);
      return;
    }
    src_ = gst_bin_get_by_name(GST_BIN(pipeline_), "src");
    sink_ = gst_bin_get_by_name(GST_BIN(pipeline_), "sink");
    GstCaps* caps = caps_of(info);
    g_object_set(src_, "caps", caps, nullptr);
    gst_caps_unref(caps);
    EXPECT_NE(gst_element_set_state(pipeline_, GST_STATE_PLAYING), GST_STATE_CHANGE_FAILURE);
  }

  ~AppPipeline() {
    if (pipeline_) {
      run_or_die("pipeline to NULL", std::chrono::seconds(10),
                 [&] { gst_element_set_state(pipeline_, GST_STATE_NULL); });
      gst_object_unref(src_);
      gst_object_unref(sink_);
      gst_object_unref(pipeline_);
    }
  }

  bool ok() const { return pipeline_ != nullptr; }
  void push(GstBuffer* buffer) {
    EXPECT_EQ(gst_app_src_push_buffer(GST_APP_SRC(src_), buffer), GST_FLOW_OK);
  }
  void end() { gst_app_src_end_of_stream(GST_APP_SRC(src_)); }
  // New caps for the buffers pushed from now on.
  void set_caps(const GstVideoInfo& info) {
    GstCaps* caps = caps_of(info);
    g_object_set(src_, "caps", caps, nullptr);
    gst_caps_unref(caps);
  }
  // Transfer full; null after 10 s or at EOS.
  GstSample* pull() { return gst_app_sink_try_pull_sample(GST_APP_SINK(sink_), 10 * GST_SECOND); }
  bool eos() { return gst_app_sink_is_eos(GST_APP_SINK(sink_)); }
  // The element's `stats` now (owned by the caller).
  GstStructure* stats() {
    GstElement* overlap = gst_bin_get_by_name(GST_BIN(pipeline_), "overlap");
    GstStructure* s = nullptr;
    g_object_get(overlap, "stats", &s, nullptr);
    gst_object_unref(overlap);
    return s;
  }
  // The cudaoverlap element (a new reference).
  GstElement* overlap() { return gst_bin_get_by_name(GST_BIN(pipeline_), "overlap"); }
  // The element named `name` in element_properties' chain (a new reference).
  GstElement* element(const char* name) { return gst_bin_get_by_name(GST_BIN(pipeline_), name); }
  // Text of the first ERROR message, or empty.
  std::string error() { return message_text(GST_MESSAGE_ERROR, 0); }
  // Text of the next WARNING message within `timeout`, or empty.
  std::string warning(GstClockTime timeout) { return message_text(GST_MESSAGE_WARNING, timeout); }

 private:
  std::string message_text(GstMessageType type, GstClockTime timeout) {
    GstBus* bus = gst_element_get_bus(pipeline_);
    GstMessage* message = gst_bus_timed_pop_filtered(bus, timeout, type);
    gst_object_unref(bus);
    if (message == nullptr) return {};
    GError* error = nullptr;
    if (type == GST_MESSAGE_ERROR)
      gst_message_parse_error(message, &error, nullptr);
    else
      gst_message_parse_warning(message, &error, nullptr);
    std::string text = error->message;
    g_error_free(error);
    gst_message_unref(message);
    return text;
  }

  GstElement* pipeline_ = nullptr;
  GstElement* src_ = nullptr;
  GstElement* sink_ = nullptr;
};

// The error one frame, `input` (taken), through an AppPipeline with
// `element_properties` ends in; empty, with a test failure, where a frame
// came out instead.
inline std::string refusal(const GstVideoInfo& info, const std::string& element_properties,
                           GstBuffer* input) {
  AppPipeline pipeline(info, element_properties);
  if (!pipeline.ok()) {
    gst_buffer_unref(input);
    return {};
  }
  pipeline.push(input);
  pipeline.end();
  GstSample* sample = pipeline.pull();
  EXPECT_EQ(sample, nullptr) << element_properties << ": a frame came out";
  if (sample) gst_sample_unref(sample);
  return pipeline.error();
}

// One frame, `input` (taken), through an AppPipeline with each of two
// element properties: both samples (the caller's), null where a pipeline
// made none, with a test failure naming its error.
inline std::pair<GstSample*, GstSample*> run_both(const GstVideoInfo& info, const std::string& ours,
                                                  const std::string& theirs, GstBuffer* input) {
  AppPipeline a(info, ours), b(info, theirs);
  std::pair<GstSample*, GstSample*> samples{nullptr, nullptr};
  if (!a.ok() || !b.ok()) {
    gst_buffer_unref(input);
    return samples;
  }
  a.push(gst_buffer_ref(input));
  b.push(input);
  samples.first = a.pull();
  samples.second = b.pull();
  EXPECT_NE(samples.first, nullptr) << ours << ": " << a.error();
  EXPECT_NE(samples.second, nullptr) << theirs << ": " << b.error();
  a.end();
  b.end();
  return samples;
}

}  // namespace cudaoverlap_test
