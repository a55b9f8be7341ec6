// Shared helpers of the engine suites: backends by name, frames that carry
// their own pattern, the expected output of each kernel, and a consumer that
// checks every frame and releases it after a random delay.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "cpu_device.h"
#include "cuda_device.h"
#include "engine.h"
#include "frame_layout.h"
#include "kernels/operation_registry.h"
#include "test_device.h"

namespace cudaoverlap::test {

enum class BackendKind { kCpu, kCuda };

inline const char* backend_name(BackendKind kind) {
  return kind == BackendKind::kCpu ? "cpu" : "cuda";
}

// The device for a backend, or nullptr (with the reason) when the cuda
// backend has no device here; tests then GTEST_SKIP.
inline std::shared_ptr<Device> make_backend(std::string* why, BackendKind kind,
                                            uint32_t max_delay_us = 0, uint64_t seed = 1) {
  if (kind == BackendKind::kCpu) {
    CpuDeviceOptions options;
    options.max_delay_us = max_delay_us;
    options.seed = seed;
    return make_cpu_device(options);
  }
  if (cuda_device_count(why) == 0) return nullptr;
  return make_cuda_device(0);
}

#define CO_DEVICE_OR_SKIP(var, ...)                                    \
  std::string var##_why;                                               \
  std::shared_ptr<Device> var = make_backend(&var##_why, __VA_ARGS__); \
  if (!var) GTEST_SKIP() << "no CUDA device: " << var##_why

// CUDAOVERLAP_TEST_DISABLE_BARRIER=uploaded|computed|downloaded|release|
// keep-alive takes that barrier out of the runs the suites make (through a
// TestDevice, or the test's own producer and consumer), to show which tests
// notice.
inline Barrier barrier_to_disable() {
  const char* name = std::getenv("CUDAOVERLAP_TEST_DISABLE_BARRIER");
  if (!name) return Barrier::kNone;
  const std::string n(name);
  if (n == "uploaded") return Barrier::kUploaded;
  if (n == "computed") return Barrier::kComputed;
  if (n == "downloaded") return Barrier::kDownloaded;
  if (n == "release") return Barrier::kRelease;
  if (n == "keep-alive") return Barrier::kKeepAlive;
  return Barrier::kNone;
}

// The byte a frame carries at (plane, y, x): different for every frame and
// position, so a byte from the wrong frame, row or plane is noticed.
inline uint8_t pattern_byte(uint64_t frame, int plane, size_t y, size_t x) {
  uint64_t h = frame * 0x9E3779B97F4A7C15ull ^ (static_cast<uint64_t>(plane) << 56) ^
               (y * 0x100000001B3ull) ^ (x * 0xC2B2AE3D27D4EB4Full);
  h ^= h >> 29;
  h *= 0xBF58476D1CE4E5B9ull;
  h ^= h >> 32;
  return static_cast<uint8_t>(h);
}

inline void fill_pattern(const FrameLayout& layout, const ImageRef& image, uint64_t frame) {
  for (int p = 0; p < layout.n_planes(); ++p)
    for (size_t y = 0; y < layout.rows(p); ++y)
      for (size_t x = 0; x < layout.row_bytes(p); ++x)
        image.planes[p].data[y * image.planes[p].stride + x] = pattern_byte(frame, p, y, x);
}

// The bits invert flips in byte x of a row of `format`, written out by
// format here rather than derived from the format table: 255 - v is v ^ 0xFF,
// and a 10-bit sample's max - v flips its 10 bits of the 16-bit word.
inline uint8_t invert_bits(PixelFormat format, size_t x) {
  switch (format) {
    case PixelFormat::kRGBA:
    case PixelFormat::kBGRA:
    case PixelFormat::kRGBx:
    case PixelFormat::kBGRx:
      return x % 4 == 3 ? 0x00 : 0xFF;  // alpha or padding last
    case PixelFormat::kARGB:
    case PixelFormat::kABGR:
      return x % 4 == 0 ? 0x00 : 0xFF;  // alpha first
    case PixelFormat::kP010_10LE:
      return x % 2 == 0 ? 0xC0 : 0xFF;  // value in bits 6..15
    case PixelFormat::kI420_10LE:
      return x % 2 == 0 ? 0xFF : 0x03;  // value in bits 0..9
    default:
      return 0xFF;  // every byte a sample (GRAY16's two bytes too)
  }
}

// What `kernel` makes of pattern byte v at byte x of a row of `format`.
inline uint8_t expected_byte(const std::string& kernel, PixelFormat format, size_t x, uint8_t v) {
  if (kernel == "copy") return v;
  return static_cast<uint8_t>(v ^ invert_bits(format, x));
}

// Empty when `image` is what `kernel` makes of frame `frame`'s pattern, else
// where the first difference is.
inline std::string check_frame(const std::string& kernel, const FrameLayout& layout,
                               const ImageRef& image, uint64_t frame) {
  for (int p = 0; p < layout.n_planes(); ++p)
    for (size_t y = 0; y < layout.rows(p); ++y)
      for (size_t x = 0; x < layout.row_bytes(p); ++x) {
        const uint8_t want = expected_byte(kernel, layout.format, x, pattern_byte(frame, p, y, x));
        const uint8_t got = image.planes[p].data[y * image.planes[p].stride + x];
        if (got != want)
          return "frame " + std::to_string(frame) + " plane " + std::to_string(p) + " (" +
                 std::to_string(x) + "," + std::to_string(y) + "): got " + std::to_string(got) +
                 ", want " + std::to_string(want);
      }
  return {};
}

// The geometry of `geometry` with every row padded by `pad` bytes beyond its
// pixels, so that staging and copies have to honour strides.
inline FrameLayout padded_layout(const FrameLayout& geometry, size_t pad) {
  FrameLayout layout = geometry;
  size_t at = 0;
  for (int p = 0; p < layout.n_planes(); ++p) {
    layout.offset[p] = at;
    layout.stride[p] = layout.row_bytes(p) + pad;
    at += layout.stride[p] * layout.rows(p);
  }
  layout.size = at;
  return layout;
}

// A pageable host frame holding frame `frame`'s pattern, with padded rows.
struct HostFrame {
  HostFrame(const FrameLayout& geometry, uint64_t frame)
      : layout(padded_layout(geometry, 7)), bytes(layout.size) {
    image = layout.at(bytes.data());
    fill_pattern(layout, image, frame);
  }
  FrameLayout layout;
  std::vector<uint8_t> bytes;
  ImageRef image;
};

// A frame's own number, handed in with it (InputFrame::user); counted in
// `live` while it exists, where given.
struct Numbered final : FrameUser {
  explicit Numbered(uint64_t number, std::atomic<int>* counter = nullptr)
      : id(number), live(counter) {
    if (live) ++*live;
  }
  ~Numbered() override {
    if (live) --*live;
  }
  const uint64_t id;
  std::atomic<int>* const live;
};

inline std::shared_ptr<FrameUser> numbered(uint64_t id) { return std::make_shared<Numbered>(id); }

// The number a frame was handed in with; ~0 for none.
inline uint64_t frame_id(const OutputFrame& frame) {
  const Numbered* n = frame.user_as<Numbered>();
  return n ? n->id : ~uint64_t{0};
}

// Counts live `user` objects so tests can check nothing is leaked.
struct LiveCounter {
  std::atomic<int> live{0};
  std::shared_ptr<FrameUser> make(uint64_t value) {
    return std::make_shared<Numbered>(value, &live);
  }
};

// Receives frames on the engine's worker thread, checks each one, and
// releases it from its own thread after holding it for a random time (so
// the release barrier is exercised). Records sequences and any mismatch.
class CheckingConsumer {
 public:
  // `release_at_once` takes the release barrier out from the consumer's
  // side: each frame is released on arrival but still read afterwards, as
  // an engine that reused slots before release would have it read.
  CheckingConsumer(std::string kernel, FrameLayout layout, uint32_t max_hold_us = 0,
                   uint64_t seed = 7, bool release_at_once = false)
      : kernel_(std::move(kernel)),
        release_at_once_(release_at_once),
        layout_(layout),
        max_hold_us_(max_hold_us),
        random_(seed),
        releaser_([this] { run(); }) {}
  ~CheckingConsumer() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    changed_.notify_all();
    releaser_.join();
  }

  EngineCallbacks callbacks() {
    EngineCallbacks cb;
    cb.on_frame = [this](OutputFrame frame) { take(std::move(frame)); };
    cb.on_error = [this](const std::string& message) {
      std::lock_guard<std::mutex> lock(mutex_);
      errors_.push_back(message);
      changed_.notify_all();
    };
    return cb;
  }

  void take(OutputFrame frame) {
    const uint64_t expected = frame_id(frame);
    std::string problem;
    if (frame.sequence() != expected)
      problem = "frame " + std::to_string(expected) + " arrived with sequence " +
                std::to_string(frame.sequence());
    else
      problem = check_frame(kernel_, layout_, frame.image(), expected);
    std::lock_guard<std::mutex> lock(mutex_);
    if (!problem.empty() && mismatches_.size() < 5) mismatches_.push_back(problem);
    if (!order_.empty() && expected <= order_.back())
      mismatches_.push_back("out of order: " + std::to_string(expected) + " after " +
                            std::to_string(order_.back()));
    order_.push_back(expected);
    if (release_at_once_) frame.release();  // image() stays readable: the engine lives on
    held_.push_back(std::move(frame));
    changed_.notify_all();
  }

  // Waits until `count` frames arrived in total (false on timeout).
  bool wait_for(size_t count, std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
    std::unique_lock<std::mutex> lock(mutex_);
    return changed_.wait_for(lock, timeout, [&] { return order_.size() >= count; });
  }

  // Waits until on_error was called (false on timeout). The engine reports a
  // failure through its state first and through on_error right after.
  bool wait_for_error(std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    std::unique_lock<std::mutex> lock(mutex_);
    return changed_.wait_for(lock, timeout, [&] { return !errors_.empty(); });
  }

  // Waits until every frame received so far has been checked and released.
  void settle() {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [&] { return held_.empty() && !releasing_; });
  }

  std::vector<uint64_t> order() {
    std::lock_guard<std::mutex> lock(mutex_);
    return order_;
  }
  std::vector<std::string> mismatches() {
    std::lock_guard<std::mutex> lock(mutex_);
    return mismatches_;
  }
  std::vector<std::string> errors() {
    std::lock_guard<std::mutex> lock(mutex_);
    return errors_;
  }

 private:
  // Holds each frame for a random time, checks its bytes again (they must
  // not have changed while held), then releases it.
  void run() {
    std::uniform_int_distribution<uint32_t> hold(0, max_hold_us_);
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      changed_.wait(lock, [&] { return stopping_ || !held_.empty(); });
      if (held_.empty()) return;
      OutputFrame frame = std::move(held_.front());
      held_.pop_front();
      releasing_ = true;
      lock.unlock();
      if (max_hold_us_ > 0) std::this_thread::sleep_for(std::chrono::microseconds(hold(random_)));
      // The sequence, not `user`: a frame released early has dropped it (a
      // wrong sequence was reported on arrival).
      const std::string problem = check_frame(kernel_, layout_, frame.image(), frame.sequence());
      frame.release();
      lock.lock();
      releasing_ = false;
      if (!problem.empty() && mismatches_.size() < 5)
        mismatches_.push_back("changed while held: " + problem);
      changed_.notify_all();
    }
  }

  const std::string kernel_;
  const bool release_at_once_;
  const FrameLayout layout_;
  const uint32_t max_hold_us_;
  std::mt19937_64 random_;  // releaser thread only
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<OutputFrame> held_;         // guarded by mutex_
  std::vector<uint64_t> order_;          // guarded by mutex_
  std::vector<std::string> mismatches_;  // guarded by mutex_
  std::vector<std::string> errors_;      // guarded by mutex_
  bool stopping_ = false;                // guarded by mutex_
  bool releasing_ = false;               // guarded by mutex_
  std::thread releaser_;
};

// A pool of pinned input frames the producer writes into and gets back
// through InputFrame::keep_alive, as an upstream buffer pool would.
class PinnedPool {
 public:
  PinnedPool(Device& device, const FrameLayout& layout, int count) : layout_(layout) {
    for (int i = 0; i < count; ++i) {
      buffers_.push_back(device.alloc_pinned(layout.size));
      free_.push_back(i);
    }
  }
  // Blocks until a buffer is back; returns its index.
  int acquire() {
    std::unique_lock<std::mutex> lock(mutex_);
    back_.wait(lock, [&] { return !free_.empty(); });
    const int i = free_.front();
    free_.pop_front();
    return i;
  }
  ImageRef image(int i) { return layout_.at(buffers_[i]->data()); }
  std::shared_ptr<void> lease(int i) {
    return std::shared_ptr<void>(this, [this, i](void*) {
      std::lock_guard<std::mutex> lock(mutex_);
      free_.push_back(i);
      back_.notify_all();
    });
  }

 private:
  FrameLayout layout_;
  std::vector<std::unique_ptr<Buffer>> buffers_;
  std::mutex mutex_;
  std::condition_variable back_;
  std::deque<int> free_;  // guarded by mutex_
};

struct RunSpec {
  BackendKind backend = BackendKind::kCpu;
  Mode mode = Mode::kOverlapped;
  int ring_size = 3;
  FrameLayout layout;
  std::string kernel = "copy";
  int frames = 100;
  bool pinned_input = false;
  uint64_t seed = 1;
  uint32_t max_delay_us = 8;  // cpu backend, per stream operation
  uint32_t max_hold_us = 8;   // consumer, per frame
  Barrier disabled_barrier = Barrier::kNone;
  HostWait host_wait = HostWait::kPoll;  // EngineConfig::host_wait
  int bands = 1;                         // EngineConfig::bands
};

struct RunResult {
  bool skipped = false;
  std::string skipped_why;
  std::string submit_failure;
  std::vector<uint64_t> order;
  std::vector<std::string> mismatches;
  std::vector<std::string> errors;
  int live_users = 0;
};

// Runs spec.frames patterned frames through a fresh engine, checking each
// output on arrival and again when it is released.
inline RunResult run_frames(const RunSpec& spec) {
  RunResult result;
  std::shared_ptr<Device> device =
      make_backend(&result.skipped_why, spec.backend, spec.max_delay_us, spec.seed);
  if (!device) {
    result.skipped = true;
    result.skipped_why = "no CUDA device: " + result.skipped_why;
    return result;
  }
  EngineConfig config;
  config.ring_size = spec.ring_size;
  config.mode = spec.mode;
  config.host_wait = spec.host_wait;
  config.bands = spec.bands;
  config.input = spec.layout;
  config.output = spec.layout;
  config.operation = make_operation(spec.kernel);
  // Device-side barriers come out through the device, host-side ones
  // through this producer and the consumer.
  TestDeviceOptions options;
  options.skipped = spec.disabled_barrier;
  options.planes_per_frame = spec.layout.n_planes();
  device = std::make_shared<TestDevice>(device, options);
  LiveCounter users;
  {
    // The pool outlives the engine, which may hold its buffers.
    std::unique_ptr<PinnedPool> pool;
    if (spec.pinned_input) pool = std::make_unique<PinnedPool>(*device, spec.layout, 2);
    CheckingConsumer consumer(spec.kernel, spec.layout, spec.max_hold_us, spec.seed + 100,
                              spec.disabled_barrier == Barrier::kRelease);
    Engine engine(device, config, consumer.callbacks());
    engine.start();
    for (int i = 0; i < spec.frames && result.submit_failure.empty(); ++i) {
      InputFrame in;
      in.user = users.make(i);
      std::unique_ptr<HostFrame> host;
      std::shared_ptr<void> lease;
      if (pool) {
        const int b = pool->acquire();
        in.image = pool->image(b);
        fill_pattern(spec.layout, in.image, i);
        in.pinned = true;
        lease = pool->lease(b);
        // Without the keep-alive barrier the buffer goes back to the pool
        // as soon as submit() returns, uploaded or not.
        if (spec.disabled_barrier != Barrier::kKeepAlive) in.keep_alive = std::move(lease);
      } else {
        host = std::make_unique<HostFrame>(spec.layout, i);
        in.image = host->image;
      }
      if (engine.submit(std::move(in)) != Status::kOk)
        result.submit_failure = "submit of frame " + std::to_string(i) + ": " + engine.error();
      lease.reset();
      // The producer scribbles over its pageable frame at once: staging
      // must have copied it already.
      if (host) std::fill(host->bytes.begin(), host->bytes.end(), uint8_t{0xA5});
    }
    if (result.submit_failure.empty() && engine.drain() != Status::kOk)
      result.submit_failure = "drain: " + engine.error();
    consumer.wait_for(spec.frames, std::chrono::seconds(5));
    // Every frame checked and released before the engine goes: a consumer
    // that released early (no release barrier) still reads slot memory.
    consumer.settle();
    engine.stop();
    result.order = consumer.order();
    result.mismatches = consumer.mismatches();
    result.errors = consumer.errors();
  }
  result.live_users = users.live.load();
  return result;
}

}  // namespace cudaoverlap::test
