// Shared helpers of the element tests: making the element on the backend
// under test, building frames, the tests' own CPU oracle for the kernels,
// recording what leaves the src pad, and timeouts that turn a deadlock into
// a failure instead of a hung test run.
//
// The backend comes from CUDAOVERLAP_TEST_BACKEND (cpu when unset; cuda or
// auto on a GPU machine), the devices from CUDAOVERLAP_TEST_DEVICES (one
// when unset). Tests that need a backend call SKIP_WITHOUT_BACKEND() first.
#pragma once

#include <gst/check/gstharness.h>
#include <gst/gst.h>
#include <gst/video/video.h>
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace cudaoverlap_test {

// "cpu", "cuda" or "auto".
std::string test_backend();
// CUDAOVERLAP_TEST_DEVICES: the element's `devices` under test ("0,1", or
// "all" on a GPU machine; on the cpu backend as many stand-ins as numbers
// listed, and `all` is one), so every suite runs over several devices too;
// empty when unset: one device.
std::string test_devices();
// "backend=B" and, when test_devices() is set, " devices=D": the element
// under test in a launch line.
std::string backend_properties();
// False when the backend under test is cuda and no CUDA device exists.
bool backend_available();

#define SKIP_WITHOUT_BACKEND()                                                      \
  do {                                                                              \
    if (!::cudaoverlap_test::backend_available())                                   \
      GTEST_SKIP() << "CUDAOVERLAP_TEST_BACKEND=cuda but this machine has no CUDA " \
                      "device";                                                     \
  } while (0)

// A cudaoverlap element on the backend under test, with `properties` given
// as name/value strings ("kernel", "invert", "ring-size", "2", ...).
GstElement* make_cudaoverlap(
    const std::vector<std::pair<std::string, std::string>>& properties = {});

// Sets an environment variable for the scope of the object (the element
// reads its cpu-backend debugging aids when it starts).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value);
  ~ScopedEnv();
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
  std::string old_;
  bool had_old_;
};

GstVideoInfo video_info(GstVideoFormat format, int width, int height, int fps_n = 30,
                        int fps_d = 1);
GstCaps* caps_of(const GstVideoInfo& info);  // transfer full

// A frame in GStreamer's default layout filled with bytes from `seed`,
// padding included, with PTS = index * frame duration.
GstBuffer* make_frame(const GstVideoInfo& info, uint32_t seed, uint64_t index = 0);

// The same picture in a non-default layout: each plane's stride widened by
// `extra_stride` bytes and planes spaced apart, described by a GstVideoMeta.
GstBuffer* make_padded_frame(const GstVideoInfo& info, uint32_t seed, size_t extra_stride,
                             uint64_t index = 0);

enum class Kernel { kCopy, kInvert };
const char* kernel_nick(Kernel kernel);

// Compares the pixel bytes (not row or plane padding) of `output` with the
// tests' own computation of `kernel` on `input`. Both may carry a
// GstVideoMeta. Returns an empty string on success, else what differs.
std::string compare_frames(const GstVideoInfo& info, GstBuffer* input, GstBuffer* output,
                           Kernel kernel);

// Every buffer and event that leaves a pad, in order (a pad probe).
class PadRecorder {
 public:
  explicit PadRecorder(GstPad* pad);
  ~PadRecorder();
  PadRecorder(const PadRecorder&) = delete;
  PadRecorder& operator=(const PadRecorder&) = delete;

  // "buffer <pts in ms>" or "event <type>" / "event <structure name>" for
  // custom events. Sticky startup events (stream-start, caps, segment) are
  // included.
  std::vector<std::string> items() const;
  std::vector<GstBuffer*> buffers() const;  // owned by the recorder
  // Waits until an item equal to `item` was seen; false after `timeout`.
  bool wait_for(const std::string& item, std::chrono::milliseconds timeout);

 private:
  static GstPadProbeReturn probe(GstPad* pad, GstPadProbeInfo* info, gpointer user_data);
  GstPad* pad_;
  gulong probe_id_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<std::string> items_;
  std::vector<GstBuffer*> buffers_;
};

// Collects the element's messages through a bus of its own (elements
// outside a pipeline have none).
class BusWatch {
 public:
  explicit BusWatch(GstElement* element);
  ~BusWatch();
  BusWatch(const BusWatch&) = delete;
  BusWatch& operator=(const BusWatch&) = delete;
  // Text of the first message of `type` (ERROR or WARNING) within `timeout`,
  // or empty.
  std::string wait_message(GstMessageType type, std::chrono::milliseconds timeout);

 private:
  GstElement* element_;
  GstBus* bus_;
};

// A fixture with the element under test in a GstHarness, PLAYING, torn
// down after the test, and a bus watch on it.
class ElementHarness : public ::testing::Test {
 protected:
  using Properties = std::vector<std::pair<std::string, std::string>>;
  void SetUp() override;
  void TearDown() override;
  // The element with `properties` in a harness, with caps `info` unless
  // null.
  GstHarness* start(const Properties& properties, const GstVideoInfo* info = nullptr);
  GstPad* element_pad(const char* name);  // transfer none: the element keeps it

  GstElement* element_ = nullptr;
  GstHarness* h_ = nullptr;
  std::unique_ptr<BusWatch> bus_;
};

// Runs `description` (gst_parse_launch) to EOS or ERROR, 10 s at most, and
// returns the message type seen (GST_MESSAGE_UNKNOWN for none), with the
// first error's text in `error` and every warning's in `warnings`, those
// posted while the pipeline goes back to READY included.
GstMessageType run_pipeline(const std::string& description, std::string* error = nullptr,
                            std::vector<std::string>* warnings = nullptr);

// What `overlap` (a cudaoverlap in a pipeline) adds to the LATENCY query's
// min now: its src pad's answer less its upstream's; GST_CLOCK_TIME_NONE
// when either query fails.
GstClockTime own_latency(GstElement* overlap);

// Runs `work` on a thread; fails the test and ends the process when it does
// not return within `timeout`, since a deadlocked thread cannot be undone.
void run_or_die(const char* what, std::chrono::milliseconds timeout,
                const std::function<void()>& work);

}  // namespace cudaoverlap_test
