// See element_test_util.h. Also initialises GStreamer once for the
// whole executable.
#include "element_test_util.h"

#include <gst/check/gstharness.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <future>
#include <random>
#include <thread>

#include "cuda_device.h"

namespace cudaoverlap_test {
namespace {

class GstEnvironment : public ::testing::Environment {
 public:
  void SetUp() override { gst_init(nullptr, nullptr); }
};

[[maybe_unused]] ::testing::Environment* const gst_environment =
    ::testing::AddGlobalTestEnvironment(new GstEnvironment);

// The tests' own plane geometry, from GStreamer's description of the
// format (GstVideoFormatInfo), not from the engine's table: a row holds
// bytes up to the end of the last sample of any component in the plane.
struct PlaneGeometry {
  size_t row_bytes;
  size_t rows;
  // The bits of byte x % 12 of a row that invert flips: every bit of a
  // colour (not alpha) component's value.
  uint8_t invert_bits[12];
};

std::vector<PlaneGeometry> planes_of(const GstVideoInfo& info) {
  const GstVideoFormatInfo* f = info.finfo;
  std::vector<PlaneGeometry> planes(GST_VIDEO_FORMAT_INFO_N_PLANES(f), PlaneGeometry{0, 0, {}});
  for (guint c = 0; c < GST_VIDEO_FORMAT_INFO_N_COMPONENTS(f); ++c) {
    PlaneGeometry& plane = planes[GST_VIDEO_FORMAT_INFO_PLANE(f, c)];
    const size_t samples =
        static_cast<size_t>(GST_VIDEO_FORMAT_INFO_SCALE_WIDTH(f, c, GST_VIDEO_INFO_WIDTH(&info)));
    const size_t stride = static_cast<size_t>(GST_VIDEO_FORMAT_INFO_PSTRIDE(f, c));
    const int depth = GST_VIDEO_FORMAT_INFO_DEPTH(f, c);
    const size_t sample_bytes = depth > 8 ? 2 : 1;
    // GStreamer 1.22 gives P010's V an offset of 1 although its pack and
    // unpack functions keep V at byte 2; 2-byte samples start on even bytes.
    const size_t offset =
        (GST_VIDEO_FORMAT_INFO_POFFSET(f, c) + sample_bytes - 1) / sample_bytes * sample_bytes;
    plane.row_bytes = std::max(plane.row_bytes, offset + (samples - 1) * stride + sample_bytes);
    plane.rows = std::max(plane.rows, static_cast<size_t>(GST_VIDEO_FORMAT_INFO_SCALE_HEIGHT(
                                          f, c, GST_VIDEO_INFO_HEIGHT(&info))));
    if (GST_VIDEO_FORMAT_INFO_HAS_ALPHA(f) && c == GST_VIDEO_COMP_A) continue;
    const uint32_t bits = ((1u << depth) - 1) << GST_VIDEO_FORMAT_INFO_SHIFT(f, c);
    for (size_t x = offset; x < 12; ++x)
      if ((x - offset) % stride < sample_bytes)
        plane.invert_bits[x] |= static_cast<uint8_t>(bits >> (8 * ((x - offset) % stride)));
  }
  return planes;
}

void fill_random(uint8_t* data, size_t size, uint32_t seed) {
  std::mt19937 random(seed);
  for (size_t i = 0; i < size; ++i) data[i] = static_cast<uint8_t>(random() >> 24);
}

void set_timestamps(GstBuffer* buffer, const GstVideoInfo& info, uint64_t index) {
  const GstClockTime duration =
      GST_VIDEO_INFO_FPS_N(&info) > 0
          ? gst_util_uint64_scale_int(GST_SECOND, GST_VIDEO_INFO_FPS_D(&info),
                                      GST_VIDEO_INFO_FPS_N(&info))
          : GST_MSECOND;
  GST_BUFFER_PTS(buffer) = index * duration;
  GST_BUFFER_DURATION(buffer) = duration;
}

}  // namespace

std::string test_backend() {
  const char* backend = g_getenv("CUDAOVERLAP_TEST_BACKEND");
  return backend != nullptr && *backend != '\0' ? backend : "cpu";
}

std::string test_devices() {
  const char* devices = g_getenv("CUDAOVERLAP_TEST_DEVICES");
  return devices != nullptr ? devices : "";
}

std::string backend_properties() {
  const std::string devices = test_devices();
  return "backend=" + test_backend() + (devices.empty() ? "" : " devices=\"" + devices + "\"");
}

bool backend_available() {
  return test_backend() != "cuda" || cudaoverlap::cuda_device_count() > 0;
}

GstElement* make_cudaoverlap(const std::vector<std::pair<std::string, std::string>>& properties) {
  GstElement* element = gst_element_factory_make("cudaoverlap", nullptr);
  if (element == nullptr) {
    ADD_FAILURE() << "cudaoverlap not found: is GST_PLUGIN_PATH set to the build's gst/?";
    return nullptr;
  }
  gst_util_set_object_arg(G_OBJECT(element), "backend", test_backend().c_str());
  if (!test_devices().empty())
    gst_util_set_object_arg(G_OBJECT(element), "devices", test_devices().c_str());
  for (const auto& [name, value] : properties)
    gst_util_set_object_arg(G_OBJECT(element), name.c_str(), value.c_str());
  return element;
}

ScopedEnv::ScopedEnv(const char* name, const std::string& value) : name_(name) {
  const char* old = g_getenv(name);
  had_old_ = old != nullptr;
  if (had_old_) old_ = old;
  g_setenv(name, value.c_str(), TRUE);
}

ScopedEnv::~ScopedEnv() {
  if (had_old_)
    g_setenv(name_.c_str(), old_.c_str(), TRUE);
  else
    g_unsetenv(name_.c_str());
}

GstVideoInfo video_info(GstVideoFormat format, int width, int height, int fps_n, int fps_d) {
  GstVideoInfo info;
  gst_video_info_set_format(&info, format, width, height);
  GST_VIDEO_INFO_FPS_N(&info) = fps_n;
  GST_VIDEO_INFO_FPS_D(&info) = fps_d;
  return info;
}

GstCaps* caps_of(const GstVideoInfo& info) { return gst_video_info_to_caps(&info); }

GstBuffer* make_frame(const GstVideoInfo& info, uint32_t seed, uint64_t index) {
  GstBuffer* buffer = gst_buffer_new_allocate(nullptr, GST_VIDEO_INFO_SIZE(&info), nullptr);
  GstMapInfo map;
  gst_buffer_map(buffer, &map, GST_MAP_WRITE);
  fill_random(map.data, map.size, seed);
  gst_buffer_unmap(buffer, &map);
  set_timestamps(buffer, info, index);
  return buffer;
}

GstBuffer* make_padded_frame(const GstVideoInfo& info, uint32_t seed, size_t extra_stride,
                             uint64_t index) {
  const std::vector<PlaneGeometry> planes = planes_of(info);
  gsize offsets[GST_VIDEO_MAX_PLANES] = {};
  gint strides[GST_VIDEO_MAX_PLANES] = {};
  size_t at = 64;  // a gap before the first plane too
  for (size_t p = 0; p < planes.size(); ++p) {
    offsets[p] = at;
    strides[p] = static_cast<gint>(GST_VIDEO_INFO_PLANE_STRIDE(&info, p) + extra_stride);
    at += static_cast<size_t>(strides[p]) * planes[p].rows + 128;
  }
  GstBuffer* buffer = gst_buffer_new_allocate(nullptr, at, nullptr);
  GstMapInfo map;
  gst_buffer_map(buffer, &map, GST_MAP_WRITE);
  fill_random(map.data, map.size, seed);
  gst_buffer_unmap(buffer, &map);
  gst_buffer_add_video_meta_full(buffer, GST_VIDEO_FRAME_FLAG_NONE, GST_VIDEO_INFO_FORMAT(&info),
                                 GST_VIDEO_INFO_WIDTH(&info), GST_VIDEO_INFO_HEIGHT(&info),
                                 GST_VIDEO_INFO_N_PLANES(&info), offsets, strides);
  set_timestamps(buffer, info, index);
  return buffer;
}

const char* kernel_nick(Kernel kernel) { return kernel == Kernel::kCopy ? "copy" : "invert"; }

std::string compare_frames(const GstVideoInfo& info, GstBuffer* input, GstBuffer* output,
                           Kernel kernel) {
  GstVideoInfo copy = info;
  GstVideoFrame in, out;
  if (!gst_video_frame_map(&in, &copy, input, GST_MAP_READ)) return "cannot map the input";
  if (!gst_video_frame_map(&out, &copy, output, GST_MAP_READ)) {
    gst_video_frame_unmap(&in);
    return "cannot map the output (" + std::to_string(gst_buffer_get_size(output)) + " bytes)";
  }
  const std::vector<PlaneGeometry> planes = planes_of(info);
  std::string problem;
  for (size_t p = 0; p < planes.size() && problem.empty(); ++p) {
    for (size_t y = 0; y < planes[p].rows && problem.empty(); ++y) {
      const auto* a = static_cast<const uint8_t*>(GST_VIDEO_FRAME_PLANE_DATA(&in, p)) +
                      y * GST_VIDEO_FRAME_PLANE_STRIDE(&in, p);
      const auto* b = static_cast<const uint8_t*>(GST_VIDEO_FRAME_PLANE_DATA(&out, p)) +
                      y * GST_VIDEO_FRAME_PLANE_STRIDE(&out, p);
      for (size_t x = 0; x < planes[p].row_bytes; ++x) {
        const uint8_t flip = kernel == Kernel::kCopy ? 0 : planes[p].invert_bits[x % 12];
        const uint8_t expected = static_cast<uint8_t>(a[x] ^ flip);
        if (b[x] != expected) {
          char text[160];
          std::snprintf(text, sizeof text, "plane %zu row %zu byte %zu: got %u, expected %u", p, y,
                        x, b[x], expected);
          problem = text;
          break;
        }
      }
    }
  }
  gst_video_frame_unmap(&out);
  gst_video_frame_unmap(&in);
  return problem;
}

PadRecorder::PadRecorder(GstPad* pad) : pad_(GST_PAD(gst_object_ref(pad))) {
  probe_id_ = gst_pad_add_probe(pad_, GST_PAD_PROBE_TYPE_DATA_DOWNSTREAM, probe, this, nullptr);
}

PadRecorder::~PadRecorder() {
  gst_pad_remove_probe(pad_, probe_id_);
  gst_object_unref(pad_);
  for (GstBuffer* buffer : buffers_) gst_buffer_unref(buffer);
}

GstPadProbeReturn PadRecorder::probe(GstPad*, GstPadProbeInfo* info, gpointer user_data) {
  auto* self = static_cast<PadRecorder*>(user_data);
  std::string item;
  GstBuffer* buffer = nullptr;
  if (GstBuffer* b = GST_PAD_PROBE_INFO_BUFFER(info);
      (GST_PAD_PROBE_INFO_TYPE(info) & GST_PAD_PROBE_TYPE_BUFFER) && b != nullptr) {
    item = "buffer " + std::to_string(GST_BUFFER_PTS(b) / GST_MSECOND);
    buffer = gst_buffer_ref(b);
  } else if (GST_PAD_PROBE_INFO_TYPE(info) & GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM) {
    GstEvent* event = GST_PAD_PROBE_INFO_EVENT(info);
    const GstStructure* s = gst_event_get_structure(event);
    if (GST_EVENT_TYPE(event) == GST_EVENT_CUSTOM_DOWNSTREAM && s != nullptr)
      item = std::string("event ") + gst_structure_get_name(s);
    else
      item = std::string("event ") + GST_EVENT_TYPE_NAME(event);
  } else {
    return GST_PAD_PROBE_OK;
  }
  {
    std::lock_guard<std::mutex> lock(self->mutex_);
    self->items_.push_back(item);
    if (buffer) self->buffers_.push_back(buffer);
  }
  self->changed_.notify_all();
  return GST_PAD_PROBE_OK;
}

std::vector<std::string> PadRecorder::items() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return items_;
}

std::vector<GstBuffer*> PadRecorder::buffers() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return buffers_;
}

bool PadRecorder::wait_for(const std::string& item, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  return changed_.wait_for(lock, timeout, [&] {
    for (const std::string& seen : items_)
      if (seen == item) return true;
    return false;
  });
}

BusWatch::BusWatch(GstElement* element)
    : element_(GST_ELEMENT(gst_object_ref(element))), bus_(gst_bus_new()) {
  gst_element_set_bus(element_, bus_);
}

BusWatch::~BusWatch() {
  gst_element_set_bus(element_, nullptr);
  gst_object_unref(bus_);
  gst_object_unref(element_);
}

std::string BusWatch::wait_message(GstMessageType type, std::chrono::milliseconds timeout) {
  GstMessage* message = gst_bus_timed_pop_filtered(
      bus_, static_cast<GstClockTime>(timeout.count()) * GST_MSECOND, type);
  if (message == nullptr) return {};
  GError* error = nullptr;
  gchar* debug = nullptr;
  if (type == GST_MESSAGE_ERROR)
    gst_message_parse_error(message, &error, &debug);
  else
    gst_message_parse_warning(message, &error, &debug);
  std::string text = error != nullptr ? error->message : "";
  g_clear_error(&error);
  g_free(debug);
  gst_message_unref(message);
  return text;
}

void run_or_die(const char* what, std::chrono::milliseconds timeout,
                const std::function<void()>& work) {
  std::packaged_task<void()> task(work);
  std::future<void> done = task.get_future();
  std::thread thread(std::move(task));
  if (done.wait_for(timeout) != std::future_status::ready) {
    std::fprintf(stderr, "DEADLOCK: %s did not finish within %lld ms\n", what,
                 static_cast<long long>(timeout.count()));
    std::fflush(stderr);
    std::_Exit(3);
  }
  thread.join();
  done.get();
}

void ElementHarness::SetUp() { SKIP_WITHOUT_BACKEND(); }

void ElementHarness::TearDown() {
  if (h_) gst_harness_teardown(h_);
  bus_.reset();
  if (element_) gst_object_unref(element_);
}

GstHarness* ElementHarness::start(const Properties& properties, const GstVideoInfo* info) {
  element_ = make_cudaoverlap(properties);
  bus_ = std::make_unique<BusWatch>(element_);
  h_ = gst_harness_new_with_element(element_, "sink", "src");
  if (info) gst_harness_set_src_caps(h_, caps_of(*info));
  return h_;
}

GstPad* ElementHarness::element_pad(const char* name) {
  GstPad* pad = gst_element_get_static_pad(element_, name);
  gst_object_unref(pad);
  return pad;
}

namespace {

// Moves the warnings (and the first error) waiting on `bus` into the lists;
// returns the type of an EOS or ERROR among them, else GST_MESSAGE_UNKNOWN.
GstMessageType pop_messages(GstBus* bus, GstClockTime timeout, std::string* error,
                            std::vector<std::string>* warnings) {
  GstMessage* message = gst_bus_timed_pop_filtered(
      bus, timeout,
      static_cast<GstMessageType>(GST_MESSAGE_EOS | GST_MESSAGE_ERROR | GST_MESSAGE_WARNING));
  if (message == nullptr) return GST_MESSAGE_UNKNOWN;
  GstMessageType seen = GST_MESSAGE_UNKNOWN;
  GError* e = nullptr;
  if (GST_MESSAGE_TYPE(message) == GST_MESSAGE_WARNING) {
    gst_message_parse_warning(message, &e, nullptr);
    if (warnings) warnings->push_back(e->message);
  } else {
    seen = GST_MESSAGE_TYPE(message);
    if (seen == GST_MESSAGE_ERROR) {
      gst_message_parse_error(message, &e, nullptr);
      if (error && error->empty()) *error = e->message;
    }
  }
  if (e) g_error_free(e);
  gst_message_unref(message);
  return seen;
}

}  // namespace

GstMessageType run_pipeline(const std::string& description, std::string* error,
                            std::vector<std::string>* warnings) {
  using namespace std::chrono_literals;
  GError* parse_error = nullptr;
  GstElement* pipeline = gst_parse_launch(description.c_str(), &parse_error);
  if (parse_error != nullptr) {
    ADD_FAILURE() << description << ": " << parse_error->message;
    g_error_free(parse_error);
    return GST_MESSAGE_UNKNOWN;
  }
  gst_element_set_state(pipeline, GST_STATE_PLAYING);
  GstBus* bus = gst_element_get_bus(pipeline);
  GstMessageType seen = GST_MESSAGE_UNKNOWN;
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (seen == GST_MESSAGE_UNKNOWN && std::chrono::steady_clock::now() < deadline)
    seen = pop_messages(bus, 100 * GST_MSECOND, error, warnings);
  // READY first: what the elements post while they stop is still read (the
  // bus is flushed at NULL).
  run_or_die("pipeline to READY", 10s, [&] { gst_element_set_state(pipeline, GST_STATE_READY); });
  while (gst_bus_have_pending(bus)) pop_messages(bus, 0, error, warnings);
  gst_object_unref(bus);
  run_or_die("pipeline to NULL", 10s, [&] { gst_element_set_state(pipeline, GST_STATE_NULL); });
  gst_object_unref(pipeline);
  return seen;
}

// What the element adds to the LATENCY query's min now.
GstClockTime own_latency(GstElement* overlap) {
  GstPad* src = gst_element_get_static_pad(overlap, "src");
  GstPad* sink = gst_element_get_static_pad(overlap, "sink");
  GstQuery* upstream = gst_query_new_latency();
  GstQuery* query = gst_query_new_latency();
  GstClockTime up_min = 0, min = 0;
  const bool answered = gst_pad_peer_query(sink, upstream) && gst_pad_query(src, query);
  if (answered) {
    gst_query_parse_latency(upstream, nullptr, &up_min, nullptr);
    gst_query_parse_latency(query, nullptr, &min, nullptr);
  }
  gst_query_unref(upstream);
  gst_query_unref(query);
  gst_object_unref(src);
  gst_object_unref(sink);
  return answered && min >= up_min ? min - up_min : GST_CLOCK_TIME_NONE;
}

}  // namespace cudaoverlap_test
