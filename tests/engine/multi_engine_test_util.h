// What the MultiEngine suites share (test_devices.cpp,
// test_device_faults.cpp, test_devices_cuda.cpp): cpu devices standing in
// for GPUs, each with its own random delays, and a consumer that checks
// every frame (bytes, sequence, order, the device named) on arrival and
// again when it releases it after a random hold.
#pragma once

#include <algorithm>
#include <cctype>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <functional>
#include <future>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "engine_test_util.h"
#include "multi_engine.h"

namespace cudaoverlap::test {

using namespace std::chrono_literals;

// Ends the process, naming the test and what it was doing, when a test runs
// past its limit: a hang in the engine fails the suite at once (with the
// stage it hung in) rather than at the runner's timeout. The limit is far
// above what any test here takes, under a sanitizer too.
class Watchdog {
 public:
  explicit Watchdog(std::chrono::seconds limit = 120s)
      : limit_(limit), thread_([this] { run(); }) {}
  ~Watchdog() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      done_ = true;
    }
    changed_.notify_all();
    thread_.join();
  }
  void stage(const std::string& what) {
    std::lock_guard<std::mutex> lock(mutex_);
    stage_ = what;
  }

 private:
  void run() {
    std::unique_lock<std::mutex> lock(mutex_);
    if (changed_.wait_for(lock, limit_, [&] { return done_; })) return;
    const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::fprintf(stderr, "\n%s.%s hung: still %s after %lld s\n",
                 info ? info->test_suite_name() : "?", info ? info->name() : "?", stage_.c_str(),
                 static_cast<long long>(limit_.count()));
    std::fflush(stderr);
    std::abort();
  }

  const std::chrono::seconds limit_;
  std::mutex mutex_;
  std::condition_variable changed_;
  bool done_ = false;               // guarded by mutex_
  std::string stage_ = "starting";  // guarded by mutex_
  std::thread thread_;
};

inline FrameLayout test_layout() { return FrameLayout::packed(PixelFormat::kNV12, 33, 17); }

inline EngineConfig make_config(int ring, const std::string& kernel,
                                const FrameLayout& layout = test_layout()) {
  EngineConfig config;
  config.ring_size = ring;
  config.input = layout;
  config.output = layout;
  config.operation = make_operation(kernel);
  return config;
}

// One cpu device standing in for a GPU, wrapped in a TestDevice (a fault,
// a slow upload).
struct DeviceSpec {
  uint32_t max_delay_us = 100;
  uint64_t seed = 1;
  size_t memory_limit = SIZE_MAX;
  TestDeviceOptions test;
};

inline std::vector<std::shared_ptr<Device>> make_devices(
    std::vector<DeviceSpec> specs, const FrameLayout& layout = test_layout()) {
  std::vector<std::shared_ptr<Device>> devices;
  for (DeviceSpec& spec : specs) {
    CpuDeviceOptions options;
    options.max_delay_us = spec.max_delay_us;
    options.seed = spec.seed;
    options.memory_limit = spec.memory_limit;
    options.stand_in = static_cast<int>(devices.size());  // named in describe()
    spec.test.planes_per_frame = layout.n_planes();
    devices.push_back(std::make_shared<TestDevice>(make_cpu_device(options), spec.test));
  }
  return devices;
}

// `n` equal devices with random delays, each seeded apart.
inline std::vector<DeviceSpec> equal_devices(int n, uint32_t max_delay_us, uint64_t seed) {
  std::vector<DeviceSpec> specs(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    specs[i].max_delay_us = max_delay_us;
    specs[i].seed = seed * 1000 + 17 * static_cast<uint64_t>(i) + 1;
  }
  return specs;
}

struct Delivery {
  uint64_t id;  // the frame's own number (its `user`), which its pattern is made of
  uint64_t sequence;
  int device;
};

// Receives frames on whichever engine worker hands them out, checks each one
// and either releases it from its own thread after a random hold (checking
// its bytes again first: they must not change while held) or keeps it until
// the test lets go. Checks on arrival: the bytes are what the frame's kernel
// makes of its pattern, the device is one of those given, sequences and
// frame numbers only increase, and on_frame is never entered twice at once.
class MultiConsumer {
 public:
  using KernelOf = std::function<std::string(uint64_t id)>;

  MultiConsumer(KernelOf kernel_of, int devices, uint32_t max_hold_us = 30, uint64_t seed = 7,
                FrameLayout layout = test_layout())
      : kernel_of_(std::move(kernel_of)),
        devices_(devices),
        layout_(layout),
        max_hold_us_(max_hold_us),
        random_(seed),
        releaser_([this] { run(); }) {}
  MultiConsumer(const std::string& kernel, int devices, uint32_t max_hold_us = 30,
                uint64_t seed = 7, FrameLayout layout = test_layout())
      : MultiConsumer([kernel](uint64_t) { return kernel; }, devices, max_hold_us, seed, layout) {}
  ~MultiConsumer() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    changed_.notify_all();
    releaser_.join();
  }

  MultiEngineCallbacks callbacks() {
    MultiEngineCallbacks cb;
    cb.on_frame = [this](OutputFrame frame) { take(std::move(frame)); };
    cb.on_warning = [this](int device, const std::string& message) {
      std::lock_guard<std::mutex> lock(mutex_);
      warnings_.push_back(message);
      warned_devices_.push_back(device);
      submits_at_warning_.push_back(submits_begun_.load());
      changed_.notify_all();
    };
    cb.on_error = [this](const std::string& message) {
      std::lock_guard<std::mutex> lock(mutex_);
      errors_.push_back(message);
      changed_.notify_all();
    };
    return cb;
  }

  // Frames arriving from now on are kept (until release_kept()) instead of
  // released after a hold.
  void keep(bool on) {
    std::lock_guard<std::mutex> lock(mutex_);
    keep_ = on;
  }
  std::vector<OutputFrame> take_kept() {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<OutputFrame> kept = std::move(kept_);
    kept_.clear();
    return kept;
  }
  void release_kept() { take_kept().clear(); }

  // The producer notes each submit() before making it, so that a warning
  // tells how many frames had been handed over when it came.
  void note_submit() { ++submits_begun_; }

  bool wait_for(size_t count, std::chrono::milliseconds timeout = 20s) {
    std::unique_lock<std::mutex> lock(mutex_);
    return changed_.wait_for(lock, timeout, [&] { return deliveries_.size() >= count; });
  }
  bool wait_for_warnings(size_t count, std::chrono::milliseconds timeout = 10s) {
    std::unique_lock<std::mutex> lock(mutex_);
    return changed_.wait_for(lock, timeout, [&] { return warnings_.size() >= count; });
  }
  bool wait_for_error(std::chrono::milliseconds timeout = 10s) {
    std::unique_lock<std::mutex> lock(mutex_);
    return changed_.wait_for(lock, timeout, [&] { return !errors_.empty(); });
  }
  // Waits until every frame received so far (and not kept) has been
  // checked again and released.
  bool settle(std::chrono::milliseconds timeout = 20s) {
    std::unique_lock<std::mutex> lock(mutex_);
    return changed_.wait_for(lock, timeout, [&] { return held_.empty() && !releasing_; });
  }

  std::vector<Delivery> deliveries() {
    std::lock_guard<std::mutex> lock(mutex_);
    return deliveries_;
  }
  size_t delivered() {
    std::lock_guard<std::mutex> lock(mutex_);
    return deliveries_.size();
  }
  std::vector<std::string> mismatches() {
    std::lock_guard<std::mutex> lock(mutex_);
    return mismatches_;
  }
  std::vector<std::string> warnings() {
    std::lock_guard<std::mutex> lock(mutex_);
    return warnings_;
  }
  // The device each warning was about.
  std::vector<int> warned_devices() {
    std::lock_guard<std::mutex> lock(mutex_);
    return warned_devices_;
  }
  std::vector<uint64_t> submits_at_warning() {
    std::lock_guard<std::mutex> lock(mutex_);
    return submits_at_warning_;
  }
  std::vector<std::string> errors() {
    std::lock_guard<std::mutex> lock(mutex_);
    return errors_;
  }
  // Frames each device computed, of those delivered.
  std::vector<int> per_device() {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<int> counts(static_cast<size_t>(devices_), 0);
    for (const Delivery& d : deliveries_)
      if (d.device >= 0 && d.device < devices_) ++counts[static_cast<size_t>(d.device)];
    return counts;
  }

 private:
  struct Held {
    OutputFrame frame;
    uint64_t id;
  };

  void note_locked(const std::string& problem) {
    if (mismatches_.size() < 8) mismatches_.push_back(problem);
  }

  void take(OutputFrame frame) {
    if (inside_.fetch_add(1) != 0) {
      std::lock_guard<std::mutex> lock(mutex_);
      note_locked("on_frame entered while another call was running");
    }
    const uint64_t id = frame_id(frame);
    std::string problem;
    if (id == ~0ull)
      problem = "a frame (sequence " + std::to_string(frame.sequence()) + ") without its user";
    else
      problem = check_frame(kernel_of_(id), layout_, frame.image(), id);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!problem.empty())
        note_locked(problem + " (device " + std::to_string(frame.device()) + ")");
      if (frame.device() < 0 || frame.device() >= devices_)
        note_locked("frame " + std::to_string(id) + " names device " +
                    std::to_string(frame.device()) + " of " + std::to_string(devices_));
      if (!deliveries_.empty()) {
        const Delivery& last = deliveries_.back();
        if (id <= last.id)
          note_locked("out of order: frame " + std::to_string(id) + " after frame " +
                      std::to_string(last.id));
        if (frame.sequence() <= last.sequence)
          note_locked("out of order: sequence " + std::to_string(frame.sequence()) +
                      " after sequence " + std::to_string(last.sequence));
      }
      deliveries_.push_back({id, frame.sequence(), frame.device()});
      if (keep_)
        kept_.push_back(std::move(frame));
      else
        held_.push_back({std::move(frame), id});
      changed_.notify_all();
    }
    inside_.fetch_sub(1);
  }

  void run() {
    std::uniform_int_distribution<uint32_t> hold(0, max_hold_us_);
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      changed_.wait(lock, [&] { return stopping_ || !held_.empty(); });
      if (held_.empty()) return;
      Held held = std::move(held_.front());
      held_.pop_front();
      releasing_ = true;
      lock.unlock();
      if (max_hold_us_ > 0) std::this_thread::sleep_for(std::chrono::microseconds(hold(random_)));
      const std::string problem =
          check_frame(kernel_of_(held.id), layout_, held.frame.image(), held.id);
      held.frame.release();
      lock.lock();
      releasing_ = false;
      if (!problem.empty()) note_locked("changed while held: " + problem);
      changed_.notify_all();
    }
  }

  const KernelOf kernel_of_;
  const int devices_;
  const FrameLayout layout_;
  const uint32_t max_hold_us_;
  std::mt19937_64 random_;  // releaser thread only
  std::atomic<int> inside_{0};
  std::atomic<uint64_t> submits_begun_{0};
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Held> held_;                     // guarded by mutex_
  std::vector<OutputFrame> kept_;             // guarded by mutex_
  std::vector<Delivery> deliveries_;          // guarded by mutex_
  std::vector<std::string> mismatches_;       // guarded by mutex_
  std::vector<std::string> warnings_;         // guarded by mutex_
  std::vector<int> warned_devices_;           // guarded by mutex_
  std::vector<uint64_t> submits_at_warning_;  // guarded by mutex_
  std::vector<std::string> errors_;           // guarded by mutex_
  bool keep_ = false;                         // guarded by mutex_
  bool stopping_ = false;                     // guarded by mutex_
  bool releasing_ = false;                    // guarded by mutex_
  std::thread releaser_;
};

// Submits frame `id` (its pattern, in pageable memory scribbled over once
// submit() returned: the frame must have been staged by then).
inline Status submit_frame(MultiEngine& engine, uint64_t id, LiveCounter& users,
                           MultiConsumer* consumer = nullptr) {
  HostFrame host(engine.config().input, id);
  InputFrame in;
  in.image = host.image;
  in.user = users.make(id);
  if (consumer) consumer->note_submit();
  const Status status = engine.submit(std::move(in));
  std::fill(host.bytes.begin(), host.bytes.end(), uint8_t{0xA5});
  return status;
}

inline const char* status_name(Status s) {
  return s == Status::kOk ? "kOk" : s == Status::kFlushing ? "kFlushing" : "kError";
}

// A producer call that may block, made on a thread of its own and waited for
// up to `limit`: past it, flush_start() unblocks it (and the test fails).
// Returns its status, or nothing when it had to be unblocked.
inline std::optional<Status> call_within(MultiEngine& engine, const std::function<Status()>& call,
                                         const std::string& what,
                                         std::chrono::seconds limit = 20s) {
  auto result = std::async(std::launch::async, call);
  if (result.wait_for(limit) == std::future_status::ready) return result.get();
  ADD_FAILURE() << what << " still blocked after " << limit.count() << " s";
  engine.flush_start();
  if (result.wait_for(20s) != std::future_status::ready) {
    std::fprintf(stderr, "%s: blocked even after flush_start()\n", what.c_str());
    std::abort();
  }
  result.get();
  return std::nullopt;
}

inline Status drain_within(MultiEngine& engine, const std::string& what = "drain()") {
  const auto status = call_within(
      engine, [&] { return engine.drain(); }, what);
  return status ? *status : Status::kFlushing;
}

// How many lost frames a warning states ("… with 2 frames in flight, which
// are lost …"): the first number followed by " frame" or " frames"; -1
// when it states none.
inline int stated_lost(const std::string& message) {
  for (size_t at = message.find(" frame"); at != std::string::npos;
       at = message.find(" frame", at + 1)) {
    size_t begin = at;
    while (begin > 0 && std::isdigit(static_cast<unsigned char>(message[begin - 1]))) --begin;
    if (begin < at) return std::stoi(message.substr(begin, at - begin));
  }
  return -1;
}

inline std::string counts_text(const std::vector<int>& counts) {
  std::string text;
  for (size_t i = 0; i < counts.size(); ++i)
    text += (i ? ", " : "") + std::string("device ") + std::to_string(i) + ": " +
            std::to_string(counts[i]);
  return text;
}

// The suites that run over 1, 2 and 3 devices.
class MultiDevicesTest : public ::testing::TestWithParam<int> {};

}  // namespace cudaoverlap::test
