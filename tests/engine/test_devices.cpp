// MultiEngine: one stream of frames over several devices. cpu devices stand
// in for GPUs, each with its own random delays, so frames finish out of
// order across devices; every frame carries its own pattern, and the
// consumer checks each one (bytes, sequence, order, the device named) on
// arrival and again when it releases it after a random hold. Then: how
// frames are dealt, drain, flush, stop, a device that fails or cannot
// start, a kernel replaced while running, what a callback may ask, what a
// machine without a GPU is told, and frames through every CUDA device of the
// machine.
#include <dlfcn.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <functional>
#include <future>
#include <optional>
#include <set>
#include <vector>

#include "engine_test_util.h"
#include "kernels/application/application.h"
#include "multi_engine.h"

namespace cudaoverlap::test {
namespace {

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

FrameLayout test_layout() { return FrameLayout::packed(PixelFormat::kNV12, 33, 17); }

EngineConfig make_config(int ring, const std::string& kernel,
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

std::vector<std::shared_ptr<Device>> make_devices(std::vector<DeviceSpec> specs,
                                                  const FrameLayout& layout = test_layout()) {
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
std::vector<DeviceSpec> equal_devices(int n, uint32_t max_delay_us, uint64_t seed) {
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
    const uint64_t id = frame.user() ? *static_cast<const uint64_t*>(frame.user().get()) : ~0ull;
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
Status submit_frame(MultiEngine& engine, uint64_t id, LiveCounter& users,
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

const char* status_name(Status s) {
  return s == Status::kOk ? "kOk" : s == Status::kFlushing ? "kFlushing" : "kError";
}

// A producer call that may block, made on a thread of its own and waited for
// up to `limit`: past it, flush_start() unblocks it (and the test fails).
// Returns its status, or nothing when it had to be unblocked.
std::optional<Status> call_within(MultiEngine& engine, const std::function<Status()>& call,
                                  const std::string& what, std::chrono::seconds limit = 20s) {
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

Status drain_within(MultiEngine& engine, const std::string& what = "drain()") {
  const auto status = call_within(
      engine, [&] { return engine.drain(); }, what);
  return status ? *status : Status::kFlushing;
}

// How many lost frames a warning states ("… with 2 frames in flight, which
// are lost …"): the first number followed by " frame" or " frames"; -1
// when it states none.
int stated_lost(const std::string& message) {
  for (size_t at = message.find(" frame"); at != std::string::npos;
       at = message.find(" frame", at + 1)) {
    size_t begin = at;
    while (begin > 0 && std::isdigit(static_cast<unsigned char>(message[begin - 1]))) --begin;
    if (begin < at) return std::stoi(message.substr(begin, at - begin));
  }
  return -1;
}

std::string counts_text(const std::vector<int>& counts) {
  std::string text;
  for (size_t i = 0; i < counts.size(); ++i)
    text += (i ? ", " : "") + std::string("device ") + std::to_string(i) + ": " +
            std::to_string(counts[i]);
  return text;
}

// ---------------------------------------------------------------------------
// Order and content

struct OrderCase {
  int devices;
  const char* kernel;
};

void PrintTo(const OrderCase& c, std::ostream* os) { *os << c.devices << " devices, " << c.kernel; }

class MultiOrderTest : public ::testing::TestWithParam<OrderCase> {};

TEST_P(MultiOrderTest, EveryFrameArrivesOnceIntactAndInOrderFromEveryDevice) {
  const OrderCase& c = GetParam();
  constexpr int kFrames = 300;
  Watchdog watchdog;
  LiveCounter users;
  {
    MultiConsumer consumer(c.kernel, c.devices, 50, 100 + c.devices);
    MultiEngine engine(make_devices(equal_devices(c.devices, 150, 3 + c.devices)),
                       make_config(3, c.kernel), consumer.callbacks());
    engine.start();
    ASSERT_EQ(engine.devices(), c.devices);
    ASSERT_EQ(engine.live_devices(), c.devices);
    watchdog.stage("submitting");
    for (int i = 0; i < kFrames; ++i)
      ASSERT_EQ(submit_frame(engine, i, users), Status::kOk) << "frame " << i;
    watchdog.stage("draining");
    ASSERT_EQ(drain_within(engine), Status::kOk);
    ASSERT_TRUE(consumer.settle());
    const auto deliveries = consumer.deliveries();
    ASSERT_EQ(deliveries.size(), static_cast<size_t>(kFrames));
    for (int i = 0; i < kFrames; ++i) {
      ASSERT_EQ(deliveries[i].id, static_cast<uint64_t>(i)) << "delivery " << i;
      ASSERT_EQ(deliveries[i].sequence, static_cast<uint64_t>(i)) << "delivery " << i;
    }
    EXPECT_EQ(consumer.mismatches(), std::vector<std::string>{});
    EXPECT_EQ(consumer.warnings(), std::vector<std::string>{});
    EXPECT_EQ(consumer.errors(), std::vector<std::string>{});
    EXPECT_EQ(engine.live_devices(), c.devices);
    EXPECT_EQ(engine.error(), "");
    // Equal devices all take part.
    const auto counts = consumer.per_device();
    for (int d = 0; d < c.devices; ++d) EXPECT_GT(counts[d], 0) << counts_text(counts);
    watchdog.stage("stopping");
    engine.stop();
  }
  EXPECT_EQ(users.live.load(), 0) << "user objects leaked";
}

std::vector<OrderCase> order_cases() {
  std::vector<OrderCase> cases;
  for (int n : {1, 2, 3})
    for (const char* k : {"copy", "invert"}) cases.push_back({n, k});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Devices, MultiOrderTest, ::testing::ValuesIn(order_cases()),
                         [](const auto& info) {
                           return std::to_string(info.param.devices) + "_" + info.param.kernel;
                         });

// With one device much slower than the others, its frames finish long after
// later frames of the other devices: the reorder holds those back, and
// still every frame is right and in order. Each position of the slow device.
TEST(MultiEngineTest, FramesOfAFastDeviceWaitForAnEarlierOneOfASlowDevice) {
  for (int n : {2, 3})
    for (int slow = 0; slow < n; ++slow) {
      SCOPED_TRACE("devices " + std::to_string(n) + ", slow device " + std::to_string(slow));
      Watchdog watchdog;
      LiveCounter users;
      {
        MultiConsumer consumer("invert", n, 20, 5);
        auto specs = equal_devices(n, 30, 40 + slow);
        specs[slow].test.upload_delay_us = 2000;
        MultiEngine engine(make_devices(specs), make_config(3, "invert"), consumer.callbacks());
        engine.start();
        constexpr int kFrames = 40;
        for (int i = 0; i < kFrames; ++i)
          ASSERT_EQ(submit_frame(engine, i, users), Status::kOk) << "frame " << i;
        ASSERT_EQ(drain_within(engine), Status::kOk);
        ASSERT_TRUE(consumer.settle());
        const auto deliveries = consumer.deliveries();
        ASSERT_EQ(deliveries.size(), static_cast<size_t>(kFrames));
        for (int i = 0; i < kFrames; ++i) EXPECT_EQ(deliveries[i].id, static_cast<uint64_t>(i));
        EXPECT_EQ(consumer.mismatches(), std::vector<std::string>{});
      }
      EXPECT_EQ(users.live.load(), 0);
    }
}

// ---------------------------------------------------------------------------
// Dealing

TEST(MultiEngineTest, EqualDevicesShareTheFrames) {
  for (int n : {2, 3}) {
    SCOPED_TRACE("devices " + std::to_string(n));
    Watchdog watchdog;
    LiveCounter users;
    {
      MultiConsumer consumer("copy", n, 20, 9);
      MultiEngine engine(make_devices(equal_devices(n, 100, 77)), make_config(3, "copy"),
                         consumer.callbacks());
      engine.start();
      // Enough frames that a stand-in held up for a while by the machine
      // (its threads descheduled while other suites run beside it, under
      // a sanitizer) still gets its share over the run: with 150, one of
      // three got 24 under AddressSanitizer.
      constexpr int kFrames = 300;
      for (int i = 0; i < kFrames; ++i)
        ASSERT_EQ(submit_frame(engine, i, users), Status::kOk) << "frame " << i;
      ASSERT_EQ(drain_within(engine), Status::kOk);
      ASSERT_TRUE(consumer.settle());
      ASSERT_EQ(consumer.delivered(), static_cast<size_t>(kFrames));
      EXPECT_EQ(consumer.mismatches(), std::vector<std::string>{});
      // Round the devices in turn would give each a third or a half; each
      // gets at least half of its fair share.
      const auto counts = consumer.per_device();
      for (int d = 0; d < n; ++d) EXPECT_GE(counts[d], kFrames / n / 2) << counts_text(counts);
    }
    EXPECT_EQ(users.live.load(), 0);
  }
}

// A device whose every upload takes 3 ms next to one that takes a few
// microseconds: dealing by turns would give each half the frames (and the
// stream the slow device's pace); the fast device must get clearly more.
TEST(MultiEngineTest, AMuchSlowerDeviceGetsFewerFrames) {
  for (int slow : {0, 1}) {
    SCOPED_TRACE("slow device " + std::to_string(slow));
    Watchdog watchdog;
    LiveCounter users;
    {
      MultiConsumer consumer("copy", 2, 0, 9);
      auto specs = equal_devices(2, 0, 5);
      specs[slow].test.upload_delay_us = 3000;
      MultiEngine engine(make_devices(specs), make_config(4, "copy"), consumer.callbacks());
      engine.start();
      constexpr int kFrames = 80;
      for (int i = 0; i < kFrames; ++i)
        ASSERT_EQ(submit_frame(engine, i, users), Status::kOk) << "frame " << i;
      ASSERT_EQ(drain_within(engine), Status::kOk);
      ASSERT_TRUE(consumer.settle());
      ASSERT_EQ(consumer.delivered(), static_cast<size_t>(kFrames));
      EXPECT_EQ(consumer.mismatches(), std::vector<std::string>{});
      const auto counts = consumer.per_device();
      EXPECT_GE(counts[1 - slow], 2 * counts[slow]) << counts_text(counts);
    }
    EXPECT_EQ(users.live.load(), 0);
  }
}

// A device slow only for its first frames (a first frame's lazy loads, a
// hiccup) is not left out for good: once it idled it is measured afresh and
// takes its share again.
TEST(MultiEngineTest, ADeviceSlowOnlyAtFirstTakesItsShareAgain) {
  Watchdog watchdog;
  LiveCounter users;
  {
    MultiConsumer consumer("copy", 2, 0, 13);
    auto specs = equal_devices(2, 0, 7);
    specs[0].test.upload_delay_us = 30000;  // its first two frames' uploads
    specs[0].test.delayed_uploads = 2;
    MultiEngine engine(make_devices(specs), make_config(4, "copy"), consumer.callbacks());
    engine.start();
    for (int i = 0; i < 8; ++i) ASSERT_EQ(submit_frame(engine, i, users), Status::kOk);
    ASSERT_EQ(drain_within(engine), Status::kOk);
    ASSERT_TRUE(consumer.settle());
    const auto before = consumer.per_device();
    // Frames now come one at a time, slower than a device takes.
    for (int i = 8; i < 48; ++i) {
      ASSERT_EQ(submit_frame(engine, i, users), Status::kOk);
      std::this_thread::sleep_for(std::chrono::milliseconds(3));
    }
    ASSERT_EQ(drain_within(engine), Status::kOk);
    ASSERT_TRUE(consumer.settle());
    const auto after = consumer.per_device();
    EXPECT_GE(after[0] - before[0], 5)
        << "the device slow at first was left out: " << counts_text(after);
    EXPECT_EQ(consumer.mismatches(), std::vector<std::string>{});
  }
  EXPECT_EQ(users.live.load(), 0);
}

// ---------------------------------------------------------------------------
// drain

class MultiDevicesTest : public ::testing::TestWithParam<int> {};

TEST_P(MultiDevicesTest, DrainReturnsOnlyOnceEveryFrameWasDeliveredAndWorksRepeatedly) {
  const int n = GetParam();
  Watchdog watchdog;
  LiveCounter users;
  {
    MultiConsumer consumer("invert", n, 30, 11);
    MultiEngine engine(make_devices(equal_devices(n, 300, 21)), make_config(4, "invert"),
                       consumer.callbacks());
    engine.start();
    watchdog.stage("draining with nothing submitted");
    EXPECT_EQ(drain_within(engine), Status::kOk);
    uint64_t submitted = 0;
    for (int round = 0; round < 5; ++round) {
      const int frames = 3 + 7 * round;  // fewer and more than the rings hold
      for (int i = 0; i < frames; ++i, ++submitted)
        ASSERT_EQ(submit_frame(engine, submitted, users), Status::kOk) << "frame " << submitted;
      watchdog.stage("draining round " + std::to_string(round));
      ASSERT_EQ(drain_within(engine), Status::kOk) << "round " << round;
      // Handed out already, not merely finished: nothing to wait for here.
      EXPECT_EQ(consumer.delivered(), submitted) << "round " << round;
      // Again with nothing in flight.
      EXPECT_EQ(drain_within(engine), Status::kOk) << "round " << round;
    }
    ASSERT_TRUE(consumer.settle());
    const auto deliveries = consumer.deliveries();
    ASSERT_EQ(deliveries.size(), submitted);
    for (uint64_t i = 0; i < submitted; ++i) EXPECT_EQ(deliveries[i].id, i);
    EXPECT_EQ(consumer.mismatches(), std::vector<std::string>{});
  }
  EXPECT_EQ(users.live.load(), 0);
}

// ---------------------------------------------------------------------------
// flush

TEST_P(MultiDevicesTest, FlushStartUnblocksAWaitingSubmitAndFlushStopResumesInOrder) {
  const int n = GetParam();
  constexpr int kRing = 2;
  Watchdog watchdog;
  LiveCounter users;
  {
    MultiConsumer consumer("invert", n, 0, 13);
    consumer.keep(true);  // every ring fills up and stays full
    MultiEngine engine(make_devices(equal_devices(n, 50, 31)), make_config(kRing, "invert"),
                       consumer.callbacks());
    engine.start();
    const int fill = kRing * n;
    for (int i = 0; i < fill; ++i) {
      const auto status = call_within(
          engine, [&, i] { return submit_frame(engine, i, users); },
          "submit of frame " + std::to_string(i) + " with free slots left", 10s);
      ASSERT_EQ(status, Status::kOk) << "frame " << i;
    }
    ASSERT_TRUE(consumer.wait_for(fill)) << "delivered " << consumer.delivered() << " of " << fill;
    // No slot is left anywhere: the next submit waits…
    auto waiting =
        std::async(std::launch::async, [&] { return submit_frame(engine, fill, users); });
    ASSERT_EQ(waiting.wait_for(150ms), std::future_status::timeout)
        << "a submit with every slot held did not wait";
    // …until a flush begins.
    engine.flush_start();
    if (waiting.wait_for(10s) != std::future_status::ready) {
      engine.stop();  // unblocks it, so that the test can end
      FAIL() << "flush_start() left it blocked";
    }
    EXPECT_EQ(waiting.get(), Status::kFlushing);
    EXPECT_EQ(submit_frame(engine, fill + 1, users), Status::kFlushing);
    watchdog.stage("in flush_stop()");
    engine.flush_stop();
    const auto before = consumer.deliveries();
    ASSERT_EQ(before.size(), static_cast<size_t>(fill));
    consumer.release_kept();  // downstream lets go of what it had
    consumer.keep(false);
    // Frames are taken again, the first one after the flush is delivered
    // first, all in order, intact, with sequences after the old ones.
    constexpr uint64_t kFirst = 100;
    constexpr int kAfter = 30;
    for (int i = 0; i < kAfter; ++i) {
      const auto status = call_within(
          engine, [&, i] { return submit_frame(engine, kFirst + i, users); },
          "submit of frame " + std::to_string(kFirst + i) + " after the flush", 10s);
      ASSERT_EQ(status, Status::kOk) << "frame " << kFirst + i;
    }
    ASSERT_EQ(drain_within(engine, "drain() after the flush"), Status::kOk);
    ASSERT_TRUE(consumer.settle());
    const auto deliveries = consumer.deliveries();
    ASSERT_EQ(deliveries.size(), static_cast<size_t>(fill + kAfter));
    for (int i = 0; i < kAfter; ++i) EXPECT_EQ(deliveries[fill + i].id, kFirst + i);
    EXPECT_GT(deliveries[fill].sequence, before.back().sequence);
    EXPECT_EQ(consumer.mismatches(), std::vector<std::string>{});
    EXPECT_EQ(consumer.warnings(), std::vector<std::string>{});
    EXPECT_EQ(consumer.errors(), std::vector<std::string>{});
    engine.stop();
  }
  EXPECT_EQ(users.live.load(), 0);
}

TEST_P(MultiDevicesTest, FlushMidStreamDropsInFlightFramesAndLaterFramesArriveIntact) {
  const int n = GetParam();
  Watchdog watchdog;
  LiveCounter users;
  {
    MultiConsumer consumer("invert", n, 50, 17);
    MultiEngine engine(make_devices(equal_devices(n, 300, 3)), make_config(4, "invert"),
                       consumer.callbacks());
    engine.start();
    uint64_t next = 0;
    for (int round = 0; round < 3; ++round) {
      SCOPED_TRACE("round " + std::to_string(round));
      for (int i = 0; i < 30; ++i, ++next)
        ASSERT_EQ(submit_frame(engine, next, users), Status::kOk) << "frame " << next;
      watchdog.stage("flushing, round " + std::to_string(round));
      engine.flush();
      const size_t at_flush = consumer.delivered();
      const uint64_t first_after = next;
      for (int i = 0; i < 30; ++i, ++next)
        ASSERT_EQ(submit_frame(engine, next, users), Status::kOk) << "frame " << next;
      ASSERT_EQ(drain_within(engine), Status::kOk);
      const auto deliveries = consumer.deliveries();
      // Every frame submitted after the flush arrives, in order, and nothing
      // from before it arrives after it.
      ASSERT_EQ(deliveries.size(), at_flush + 30);
      for (int i = 0; i < 30; ++i) EXPECT_EQ(deliveries[at_flush + i].id, first_after + i);
    }
    ASSERT_TRUE(consumer.settle());
    EXPECT_EQ(consumer.mismatches(), std::vector<std::string>{});
    EXPECT_EQ(consumer.errors(), std::vector<std::string>{});
  }
  EXPECT_EQ(users.live.load(), 0);
}

// Frames of the fast device that finished while an earlier frame of the slow
// one runs wait in the reorder, holding their slots: a flush drops them and
// gives their slots back (else the fast device's ring stays full for good),
// and none of them is handed out afterwards.
TEST(MultiEngineTest, AFlushDropsFramesWaitingForAnEarlierOneAndFreesTheirSlots) {
  Watchdog watchdog;
  LiveCounter users;
  {
    MultiConsumer consumer("copy", 2, 0, 19);
    auto specs = equal_devices(2, 0, 7);
    specs[0].test.upload_delay_us = 20000;
    MultiEngine engine(make_devices(specs), make_config(2, "copy"), consumer.callbacks());
    engine.start();
    for (int round = 0; round < 3; ++round) {
      SCOPED_TRACE("round " + std::to_string(round));
      const uint64_t base = 100 * static_cast<uint64_t>(round);
      for (int i = 0; i < 4; ++i) {
        const auto status = call_within(
            engine, [&, i] { return submit_frame(engine, base + i, users); },
            "submit of frame " + std::to_string(base + i) + " before the flush", 10s);
        ASSERT_EQ(status, Status::kOk);
      }
      std::this_thread::sleep_for(5ms);  // the fast device's frames are done
      watchdog.stage("flushing, round " + std::to_string(round));
      engine.flush();
      const size_t at_flush = consumer.delivered();
      for (int i = 10; i < 20; ++i) {
        const auto status = call_within(
            engine, [&, i] { return submit_frame(engine, base + i, users); },
            "submit of frame " + std::to_string(base + i) + " after the flush", 10s);
        ASSERT_EQ(status, Status::kOk);
      }
      ASSERT_EQ(drain_within(engine), Status::kOk);
      const auto deliveries = consumer.deliveries();
      ASSERT_EQ(deliveries.size(), at_flush + 10);
      for (int i = 0; i < 10; ++i) EXPECT_EQ(deliveries[at_flush + i].id, base + 10 + i);
    }
    ASSERT_TRUE(consumer.settle());
    EXPECT_EQ(consumer.mismatches(), std::vector<std::string>{});
  }
  EXPECT_EQ(users.live.load(), 0);
}

// ---------------------------------------------------------------------------
// stop

// Frames in flight on a slow device, later ones of a fast device waiting for
// them in the reorder, and frames the test still holds: stop() returns (and
// again), nothing more is handed out, held frames can be released after
// stop() and after the MultiEngine is gone, and nothing leaks.
TEST(MultiEngineTest, StopWithFramesInFlightAndWaitingReturnsAndLeaksNothing) {
  for (bool call_stop : {true, false}) {
    SCOPED_TRACE(call_stop ? "stop()" : "destructor only");
    Watchdog watchdog;
    const size_t buffers_before = cpu_live_buffers();
    LiveCounter users;
    std::vector<OutputFrame> held_after_engine;
    {
      MultiConsumer consumer("copy", 2, 0, 23);
      consumer.keep(true);
      auto specs = equal_devices(2, 0, 9);
      specs[0].test.upload_delay_us = 60000;
      std::vector<OutputFrame> held_after_stop;
      {
        MultiEngine engine(make_devices(specs), make_config(4, "copy"), consumer.callbacks());
        engine.start();
        for (int i = 0; i < 7; ++i) {
          const auto status = call_within(
              engine, [&, i] { return submit_frame(engine, i, users); },
              "submit of frame " + std::to_string(i), 10s);
          ASSERT_EQ(status, Status::kOk);
        }
        std::this_thread::sleep_for(10ms);  // the fast device's frames are done
        ASSERT_LT(consumer.delivered(), 7u) << "the slow device's frames were out already";
        std::vector<OutputFrame> kept = consumer.take_kept();
        for (size_t i = 0; i < kept.size(); ++i)
          (i % 2 ? held_after_stop : held_after_engine).push_back(std::move(kept[i]));
        if (call_stop) {
          watchdog.stage("in stop()");
          const auto t0 = std::chrono::steady_clock::now();
          engine.stop();
          engine.stop();  // twice is fine
          EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
          const size_t at_stop = consumer.delivered();
          EXPECT_NE(submit_frame(engine, 99, users), Status::kOk) << "a frame taken after stop()";
          std::this_thread::sleep_for(50ms);
          EXPECT_EQ(consumer.delivered(), at_stop) << "a frame handed out after stop()";
          for (OutputFrame& f : held_after_stop) f.release();
          held_after_stop.clear();
          consumer.release_kept();
          // Frames in flight and frames that waited in the reorder are gone
          // with stop(): only those the test still holds keep their `user`.
          EXPECT_EQ(users.live.load(), static_cast<int>(held_after_engine.size()))
              << "frames dropped by stop() are still referenced";
        }
        watchdog.stage("destroying the MultiEngine");
      }
      held_after_stop.clear();
      EXPECT_EQ(consumer.mismatches(), std::vector<std::string>{});
      EXPECT_EQ(consumer.errors(), std::vector<std::string>{});
      consumer.release_kept();
    }
    for (OutputFrame& f : held_after_engine) {
      EXPECT_TRUE(f);
      f.release();
    }
    held_after_engine.clear();
    EXPECT_EQ(users.live.load(), 0);
    EXPECT_EQ(cpu_live_buffers(), buffers_before) << "buffers leaked";
  }
}

// ---------------------------------------------------------------------------
// A failing device

struct FaultCase {
  int devices;
  int failing;  // which device fails
  FaultStage stage;
  const char* name;
  const char* word;  // the warning names what failed
};

void PrintTo(const FaultCase& c, std::ostream* os) {
  *os << c.devices << " devices, device " << c.failing << " fails in its " << c.name;
}

class MultiFaultTest : public ::testing::TestWithParam<FaultCase> {};

TEST_P(MultiFaultTest, TheStreamGoesOnWithoutAFailedDevice) {
  const FaultCase& c = GetParam();
  constexpr int kRing = 3;
  constexpr int kFrames = 150;
  constexpr uint64_t kFaultFrame = 5;  // in the failing device's own order
  Watchdog watchdog;
  LiveCounter users;
  {
    MultiConsumer consumer("invert", c.devices, 30, 29);
    auto specs = equal_devices(c.devices, 100, 50 + static_cast<int>(c.stage));
    specs[c.failing].test.fault = c.stage;
    specs[c.failing].test.fault_frame = kFaultFrame;
    MultiEngine engine(make_devices(specs), make_config(kRing, "invert"), consumer.callbacks());
    engine.start();
    watchdog.stage("submitting");
    for (int i = 0; i < kFrames; ++i)
      ASSERT_EQ(submit_frame(engine, i, users, &consumer), Status::kOk) << "frame " << i;
    ASSERT_EQ(drain_within(engine), Status::kOk);
    ASSERT_TRUE(consumer.settle());
    ASSERT_TRUE(consumer.wait_for_warnings(1)) << "no warning";
    const auto warnings = consumer.warnings();
    ASSERT_EQ(warnings.size(), 1u) << "one warning, for one failure";
    EXPECT_NE(warnings[0].find(c.word), std::string::npos) << warnings[0];
    EXPECT_NE(warnings[0].find("device " + std::to_string(c.failing)), std::string::npos)
        << "the warning names the device: " << warnings[0];
    EXPECT_EQ(consumer.warned_devices(), std::vector<int>{c.failing});
    EXPECT_EQ(consumer.errors(), std::vector<std::string>{}) << "the stream went on";
    EXPECT_EQ(engine.error(), "");
    EXPECT_EQ(engine.live_devices(), c.devices - 1);
    for (int d = 0; d < c.devices; ++d) EXPECT_EQ(engine.live(d), d != c.failing) << "device " << d;

    // Frames lost: only some submitted before the warning, at most one ring.
    const uint64_t before_warning = consumer.submits_at_warning()[0];
    const auto deliveries = consumer.deliveries();
    std::set<uint64_t> delivered;
    for (const Delivery& d : deliveries) delivered.insert(d.id);
    EXPECT_EQ(delivered.size(), deliveries.size()) << "a frame delivered twice";
    std::vector<uint64_t> lost;
    for (uint64_t i = 0; i < kFrames; ++i)
      if (!delivered.count(i)) lost.push_back(i);
    EXPECT_LE(lost.size(), static_cast<size_t>(kRing)) << "more frames lost than one ring";
    for (uint64_t id : lost)
      EXPECT_LT(id, before_warning) << "frame " << id << ", submitted after the warning, was lost";
    // The warning says how many were lost.
    if (lost.empty()) {
      EXPECT_LE(stated_lost(warnings[0]), 0) << "none was lost: " << warnings[0];
    } else {
      EXPECT_EQ(stated_lost(warnings[0]), static_cast<int>(lost.size()))
          << "lost: " << ::testing::PrintToString(lost) << "; " << warnings[0];
    }
    // The frame that failed, and every later one on that device, never
    // comes out of it: it hands out at most the frames before. (The frame
    // itself may come out of another device: when the failure shows while
    // its own submit() is still under way, submit() gives it to another
    // device, and nothing is lost. Under ThreadSanitizer that happened.)
    size_t from_failing = 0;
    for (const Delivery& d : deliveries) from_failing += d.device == c.failing ? 1 : 0;
    EXPECT_LE(from_failing, kFaultFrame)
        << "the frame whose " << c.name << " failed cannot have been delivered by its device";
    // After the warning, the failed device computes nothing more.
    for (const Delivery& d : deliveries) {
      if (d.id >= before_warning) {
        EXPECT_NE(d.device, c.failing) << "frame " << d.id;
      }
    }
    EXPECT_EQ(consumer.mismatches(), std::vector<std::string>{});

    // The stream goes on: more frames, all delivered.
    const size_t so_far = deliveries.size();
    for (int i = 0; i < 30; ++i)
      ASSERT_EQ(submit_frame(engine, 1000 + i, users, &consumer), Status::kOk);
    ASSERT_EQ(drain_within(engine), Status::kOk);
    ASSERT_TRUE(consumer.settle());
    const auto all = consumer.deliveries();
    ASSERT_EQ(all.size(), so_far + 30);
    for (int i = 0; i < 30; ++i) EXPECT_EQ(all[so_far + i].id, 1000u + i);
    EXPECT_EQ(consumer.warnings().size(), 1u);
    EXPECT_EQ(consumer.mismatches(), std::vector<std::string>{});
    engine.stop();
  }
  EXPECT_EQ(users.live.load(), 0);
}

std::vector<FaultCase> fault_cases() {
  std::vector<FaultCase> cases;
  const std::pair<int, int> layouts[] = {{2, 1}, {2, 0}, {3, 1}};
  for (const auto& [n, failing] : layouts) {
    cases.push_back({n, failing, FaultStage::kUpload, "upload", "upload"});
    cases.push_back({n, failing, FaultStage::kCompute, "kernel", "kernel"});
    cases.push_back({n, failing, FaultStage::kDownload, "download", "download"});
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Devices, MultiFaultTest, ::testing::ValuesIn(fault_cases()),
                         [](const auto& info) {
                           return std::to_string(info.param.devices) + "_device" +
                                  std::to_string(info.param.failing) + "_" + info.param.name;
                         });

// Submits frames until one is refused (at most 2000), then drains: the
// stream must end in the error state, with on_error called.
void submit_until_error(MultiEngine& engine, MultiConsumer& consumer, LiveCounter& users) {
  Status status = Status::kOk;
  uint64_t submitted = 0;
  for (; submitted < 2000 && status == Status::kOk; ++submitted)
    status = submit_frame(engine, submitted, users, &consumer);
  if (status == Status::kOk) status = drain_within(engine);
  EXPECT_EQ(status, Status::kError) << status_name(status) << " after " << submitted;
  ASSERT_TRUE(consumer.wait_for_error()) << "no on_error";
}

// The error state sticks, the frames delivered before it were intact, and
// on_error was called once.
void expect_error_sticks(MultiEngine& engine, MultiConsumer& consumer, LiveCounter& users) {
  EXPECT_EQ(submit_frame(engine, 5000, users), Status::kError);
  EXPECT_EQ(drain_within(engine), Status::kError);
  ASSERT_TRUE(consumer.settle());
  EXPECT_EQ(consumer.mismatches(), std::vector<std::string>{});
  EXPECT_EQ(consumer.errors().size(), 1u) << "on_error once";
}

// Every device fails (the only one, with one): on_error once, then submit()
// and drain() say kError; nothing hangs.
TEST_P(MultiDevicesTest, WhenEveryDeviceFailsTheErrorIsReportedAndSticks) {
  const int n = GetParam();
  for (FaultStage stage : {FaultStage::kCompute, FaultStage::kUpload}) {
    SCOPED_TRACE(stage == FaultStage::kCompute ? "kernel" : "upload");
    Watchdog watchdog;
    LiveCounter users;
    {
      MultiConsumer consumer("invert", n, 10, 37);
      auto specs = equal_devices(n, 80, 60);
      for (int d = 0; d < n; ++d) {
        specs[d].test.fault = stage;
        specs[d].test.fault_frame = 3 + 3 * static_cast<uint64_t>(d);
      }
      MultiEngine engine(make_devices(specs), make_config(3, "invert"), consumer.callbacks());
      engine.start();
      watchdog.stage("submitting until every device failed");
      ASSERT_NO_FATAL_FAILURE(submit_until_error(engine, consumer, users));
      const auto errors = consumer.errors();
      EXPECT_EQ(errors.size(), 1u) << "on_error once";
      EXPECT_FALSE(engine.error().empty());
      EXPECT_EQ(engine.live_devices(), 0);
      const auto warnings = consumer.warnings();
      // A warning for each device but the last, whose failure is the error.
      EXPECT_EQ(warnings.size(), static_cast<size_t>(n - 1)) << ::testing::PrintToString(warnings);
      ASSERT_NO_FATAL_FAILURE(expect_error_sticks(engine, consumer, users));
      watchdog.stage("stopping");
      engine.stop();
    }
    EXPECT_EQ(users.live.load(), 0);
  }
}

// An application's handler that refuses a frame fails the operation, not
// the device: every device would refuse the same, so the stream ends with
// one error at once, no device is left out, and no frame is lost quietly
// with a device (before: with several devices each refusal took one device
// out with a warning and its frames with it, and only the last one's was an
// error).
TEST_P(MultiDevicesTest, AnOperationsOwnFailureEndsTheStreamAndLeavesNoDeviceOut) {
  const int n = GetParam();
  // Overlapped, the refusal comes from a worker; serial, from within the
  // producer's submit() (as the cuda backend's handler refuses there).
  for (Mode mode : {Mode::kOverlapped, Mode::kSerial}) {
    SCOPED_TRACE(mode == Mode::kSerial ? "serial" : "overlapped");
    Watchdog watchdog;
    LiveCounter users;
    {
      MultiConsumer consumer("copy", n, 10, 41);
      constexpr int kRefused = 6;  // the handler's call that says no
      std::atomic<int> calls{0};
      auto process = std::make_shared<const ApplicationProcess>(
          [&calls](const ImageRef& in, const ImageRef& out, CUstream_st*) {
            if (calls.fetch_add(1) == kRefused) return false;
            for (int p = 0; p < format_info(in.format).n_planes; ++p)
              for (int y = 0; y < static_cast<int>(plane_rows(in.format, p, in.height)); ++y)
                std::memcpy(out.planes[p].data + static_cast<size_t>(y) * out.planes[p].stride,
                            in.planes[p].data + static_cast<size_t>(y) * in.planes[p].stride,
                            plane_row_bytes(in.format, p, in.width));
            return true;
          });
      EngineConfig config = make_config(3, "copy");
      config.mode = mode;
      config.operation = std::make_shared<ApplicationOperation>(process);
      MultiEngine engine(make_devices(equal_devices(n, 80, 70)), config, consumer.callbacks());
      engine.start();
      watchdog.stage("submitting until the handler refused");
      ASSERT_NO_FATAL_FAILURE(submit_until_error(engine, consumer, users));
      const auto errors = consumer.errors();
      ASSERT_EQ(errors.size(), 1u) << "on_error once";
      EXPECT_NE(errors[0].find("did not process the frame"), std::string::npos) << errors[0];
      EXPECT_NE(engine.error().find("did not process the frame"), std::string::npos)
          << engine.error();
      EXPECT_EQ(consumer.warnings(), std::vector<std::string>{}) << "no device left out";
      EXPECT_EQ(engine.live_devices(), n);
      // The handler was not asked again and again, device after device
      // (before: until 2000 frames); the frames already dealt to the others
      // (a ring each, and as many again while the refusal is on its way)
      // may still run.
      EXPECT_LE(calls.load(), kRefused + 1 + 2 * 3 * n);
      ASSERT_NO_FATAL_FAILURE(expect_error_sticks(engine, consumer, users));
      watchdog.stage("stopping");
      engine.stop();
    }
    EXPECT_EQ(users.live.load(), 0);
  }
}

// ---------------------------------------------------------------------------
// replace_operation

// Operations that take only GRAY8: refused for the engines' NV12.
class Gray8Only final : public Operation {
 public:
  const char* name() const override { return "gray8-only"; }
  std::vector<PixelFormat> output_formats(PixelFormat in) const override {
    if (in == PixelFormat::kGRAY8) return {in};
    return {};
  }
  bool mixes_rows(PixelFormat, PixelFormat) const override { return false; }
  bool same_as(const Operation& other) const override { return &other == this; }
  void enqueue_cuda(const ImageRef&, const ImageRef&, const Workspace&,
                    CUstream_st*) const override {
    throw Error("never runs");
  }
  void run_reference(const ImageRef&, const ImageRef&, const Workspace&) const override {
    throw Error("never runs");
  }
};

TEST_P(MultiDevicesTest, AReplacedOperationRunsOnEveryDeviceFromTheNextFrame) {
  const int n = GetParam();
  // Frames 0-99 copy, 100-199 invert, 200-299 copy again.
  auto kernel_of = [](uint64_t id) { return id >= 100 && id < 200 ? "invert" : "copy"; };
  Watchdog watchdog;
  LiveCounter users;
  {
    MultiConsumer consumer(kernel_of, n, 30, 41);
    MultiEngine engine(make_devices(equal_devices(n, 150, 43)), make_config(3, "copy"),
                       consumer.callbacks());
    engine.start();
    for (uint64_t i = 0; i < 300; ++i) {
      if (i == 100) engine.replace_operation(make_operation("invert"));
      if (i == 200) engine.replace_operation(make_operation("copy"));
      if (i == 150) {
        // A refusal changes no device.
        EXPECT_THROW(engine.replace_operation(std::make_shared<Gray8Only>()), Error);
      }
      ASSERT_EQ(submit_frame(engine, i, users), Status::kOk) << "frame " << i;
    }
    ASSERT_EQ(drain_within(engine), Status::kOk);
    ASSERT_TRUE(consumer.settle());
    const auto deliveries = consumer.deliveries();
    ASSERT_EQ(deliveries.size(), 300u);
    EXPECT_EQ(consumer.mismatches(), std::vector<std::string>{});
    // Every device ran each operation.
    for (int part = 0; part < 3; ++part) {
      std::set<int> used;
      for (const Delivery& d : deliveries)
        if (d.id / 100 == static_cast<uint64_t>(part)) used.insert(d.device);
      EXPECT_EQ(used.size(), static_cast<size_t>(n))
          << "frames " << part * 100 << "-" << part * 100 + 99;
    }
  }
  EXPECT_EQ(users.live.load(), 0);
}

// ---------------------------------------------------------------------------
// Callbacks

// Callbacks may ask the MultiEngine about its devices (only stop() and
// destroying it are ruled out): on_frame must not be called in a way that
// keeps such a question waiting. Asked from a thread of its own, so that a
// question that waits for on_frame to return fails the test instead of
// hanging it.
TEST_P(MultiDevicesTest, OnFrameMayAskTheMultiEngineAboutItsDevices) {
  const int n = GetParam();
  Watchdog watchdog;
  LiveCounter users;
  std::mutex mutex;
  std::vector<std::future<int>> unanswered;  // finished after on_frame returned
  std::vector<std::string> problems;
  int asked = 0;
  MultiEngine* asking = nullptr;
  MultiEngineCallbacks cb;
  cb.on_frame = [&](OutputFrame frame) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (frame.sequence() % 10 != 0 || !problems.empty()) return;
      ++asked;
    }
    auto answer = std::async(std::launch::async, [&] {
      return asking->live_devices() + (asking->live(0) ? 0 : 100) +
             static_cast<int>(asking->error().size());
    });
    const bool answered = answer.wait_for(2s) == std::future_status::ready;
    std::lock_guard<std::mutex> lock(mutex);
    if (!answered) {
      problems.push_back("live_devices() asked in on_frame of frame " +
                         std::to_string(frame.sequence()) + " did not return within 2 s");
      unanswered.push_back(std::move(answer));
    } else if (const int got = answer.get(); got != n) {
      problems.push_back("asked in on_frame: " + std::to_string(got));
    }
  };
  {
    MultiEngine engine(make_devices(equal_devices(n, 50, 61)), make_config(3, "copy"), cb);
    asking = &engine;
    engine.start();
    for (int i = 0; i < 40; ++i)
      ASSERT_EQ(submit_frame(engine, i, users), Status::kOk) << "frame " << i;
    const Status drained = drain_within(engine);
    {
      // A question that waited is answered once on_frame returned; the
      // MultiEngine must still be there for it.
      std::lock_guard<std::mutex> lock(mutex);
      for (auto& answer : unanswered) answer.wait();
    }
    ASSERT_EQ(drained, Status::kOk);
    engine.stop();
  }
  std::lock_guard<std::mutex> lock(mutex);
  EXPECT_GT(asked, 0);
  EXPECT_EQ(problems, std::vector<std::string>{});
  EXPECT_EQ(users.live.load(), 0);
}

// ---------------------------------------------------------------------------
// start

TEST(MultiEngineTest, ADeviceThatCannotStartIsLeftOutWithAWarning) {
  for (const auto& [n, bad] : {std::pair<int, int>{2, 0}, {2, 1}, {3, 1}}) {
    SCOPED_TRACE("devices " + std::to_string(n) + ", device " + std::to_string(bad) +
                 " cannot start");
    Watchdog watchdog;
    const size_t buffers_before = cpu_live_buffers();
    LiveCounter users;
    {
      MultiConsumer consumer("invert", n, 20, 47);
      auto specs = equal_devices(n, 50, 53);
      specs[bad].memory_limit = 1000;  // far less than one slot
      MultiEngine engine(make_devices(specs), make_config(3, "invert"), consumer.callbacks());
      ASSERT_NO_THROW(engine.start());
      const auto warnings = consumer.warnings();
      ASSERT_EQ(warnings.size(), 1u) << "one warning, from start()";
      EXPECT_NE(warnings[0].find("ring-size 3 needs"), std::string::npos) << warnings[0];
      EXPECT_NE(warnings[0].find("device " + std::to_string(bad)), std::string::npos)
          << "the warning names the device: " << warnings[0];
      EXPECT_EQ(consumer.warned_devices(), std::vector<int>{bad});
      EXPECT_EQ(engine.live_devices(), n - 1);
      EXPECT_FALSE(engine.live(bad));
      for (int i = 0; i < 60; ++i)
        ASSERT_EQ(submit_frame(engine, i, users), Status::kOk) << "frame " << i;
      ASSERT_EQ(drain_within(engine), Status::kOk);
      ASSERT_TRUE(consumer.settle());
      const auto deliveries = consumer.deliveries();
      ASSERT_EQ(deliveries.size(), 60u);
      for (uint64_t i = 0; i < 60; ++i) {
        EXPECT_EQ(deliveries[i].id, i);
        EXPECT_EQ(deliveries[i].sequence, i);
        EXPECT_NE(deliveries[i].device, bad) << "frame " << i;
      }
      EXPECT_EQ(consumer.mismatches(), std::vector<std::string>{});
      EXPECT_EQ(consumer.errors(), std::vector<std::string>{});
      const auto counts = consumer.per_device();
      for (int d = 0; d < n; ++d) {
        if (d != bad) {
          EXPECT_GT(counts[d], 0) << counts_text(counts);
        }
      }
      engine.stop();
    }
    EXPECT_EQ(users.live.load(), 0);
    EXPECT_EQ(cpu_live_buffers(), buffers_before) << "buffers leaked";
  }
}

TEST(MultiEngineTest, WhenNoDeviceCanStartStartThrows) {
  for (int n : {1, 2}) {
    SCOPED_TRACE("devices " + std::to_string(n));
    Watchdog watchdog;
    const size_t buffers_before = cpu_live_buffers();
    // What a plain Engine says about such a device.
    std::string engine_error;
    {
      Engine plain(make_devices({DeviceSpec{0, 1, 1000, {}}})[0], make_config(3, "invert"), {});
      try {
        plain.start();
      } catch (const Error& e) {
        engine_error = e.what();
      }
    }
    ASSERT_NE(engine_error.find("ring-size 3 needs"), std::string::npos) << engine_error;
    {
      MultiConsumer consumer("invert", n, 0, 1);
      std::vector<DeviceSpec> specs(static_cast<size_t>(n), DeviceSpec{0, 1, 1000, {}});
      MultiEngine engine(make_devices(specs), make_config(3, "invert"), consumer.callbacks());
      try {
        engine.start();
        ADD_FAILURE() << "start() returned with no device started";
      } catch (const Error& e) {
        if (n == 1) {
          EXPECT_EQ(std::string(e.what()), engine_error) << "one device: its Error as it was";
        } else {
          EXPECT_NE(std::string(e.what()).find("ring-size 3 needs"), std::string::npos) << e.what();
        }
      }
      EXPECT_EQ(engine.live_devices(), 0);
      engine.stop();  // fine after a failed start()
      engine.stop();
    }
    EXPECT_EQ(cpu_live_buffers(), buffers_before) << "buffers leaked";
  }
}

INSTANTIATE_TEST_SUITE_P(Devices, MultiDevicesTest, ::testing::Values(1, 2, 3),
                         [](const auto& info) { return std::to_string(info.param); });

// ---------------------------------------------------------------------------
// CUDA

// Without a GPU the reason names what is missing (a driver, a GPU) before
// CUDA's own words: CUDA says "driver version is insufficient" when there is
// no driver at all, which sends users to update one. The driver's library
// is looked for here directly, as CUDA looks for it, to know which it is.
TEST(CudaDeviceTest, WithoutADeviceTheReasonNamesWhatIsMissing) {
  std::string why;
  if (cuda_device_count(&why) > 0) GTEST_SKIP() << "this machine has a CUDA device";
  const auto starts_with = [&](const char* prefix) { return why.rfind(prefix, 0) == 0; };
#ifdef CUDAOVERLAP_HAVE_CUDA
  void* driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (driver) {
    dlclose(driver);
    EXPECT_TRUE(starts_with("no NVIDIA GPU found") || starts_with("the NVIDIA driver supports") ||
                starts_with("CUDA cannot be used"))
        << why;
  } else {
    EXPECT_TRUE(starts_with("no NVIDIA driver found (CUDA: ")) << why;
  }
  try {
    make_cuda_device(0);
    FAIL() << "no device, yet make_cuda_device succeeded";
  } catch (const Error& e) {
    const std::string error = e.what();
    EXPECT_NE(error.find(why), std::string::npos) << error;
    EXPECT_NE(error.find("backend=auto"), std::string::npos) << error;
    EXPECT_NE(error.find("falls back to the cpu backend"), std::string::npos) << error;
  }
#else
  EXPECT_TRUE(starts_with("cudaoverlap was built without CUDA support")) << why;
#endif
}

// One device, for sanity: the plain path with one lane.
TEST(MultiEngineCudaTest, OneCudaDeviceDeliversIntactFramesInOrder) {
  std::string why;
  if (cuda_device_count(&why) == 0) GTEST_SKIP() << "no CUDA device: " << why;
  Watchdog watchdog;
  LiveCounter users;
  {
    MultiConsumer consumer("invert", 1, 30, 59);
    MultiEngine engine({make_cuda_device(0)}, make_config(3, "invert"), consumer.callbacks());
    engine.start();
    for (int i = 0; i < 500; ++i)
      ASSERT_EQ(submit_frame(engine, i, users), Status::kOk) << "frame " << i;
    ASSERT_EQ(drain_within(engine), Status::kOk);
    ASSERT_TRUE(consumer.settle());
    const auto deliveries = consumer.deliveries();
    ASSERT_EQ(deliveries.size(), 500u);
    for (uint64_t i = 0; i < 500; ++i) {
      EXPECT_EQ(deliveries[i].id, i);
      EXPECT_EQ(deliveries[i].sequence, i);
      EXPECT_EQ(deliveries[i].device, 0);
    }
    EXPECT_EQ(consumer.mismatches(), std::vector<std::string>{});
    EXPECT_EQ(consumer.warnings(), std::vector<std::string>{});
    EXPECT_EQ(consumer.errors(), std::vector<std::string>{});
  }
  EXPECT_EQ(users.live.load(), 0);
}

// Frames of a real size, cheap to make and to check: a few base patterns,
// each row stamped with its frame number and row, so a frame, a row or a
// band from any other frame is noticed.
class StampedFrames {
 public:
  explicit StampedFrames(const FrameLayout& layout) : layout_(layout) {
    for (uint64_t k = 0; k < kBases; ++k) {
      bases_.emplace_back(layout.size);
      fill_pattern(layout, layout.at(bases_.back().data()), k);
    }
  }
  static uint64_t stamp(uint64_t id, size_t y) { return id * 0x9E3779B97F4A7C15ull ^ (y + 1); }
  void make(uint64_t id, const ImageRef& image) const {
    const std::vector<uint8_t>& base = bases_[id % kBases];
    std::memcpy(image.planes[0].data, base.data(), layout_.size);
    for (size_t y = 0; y < layout_.rows(0); ++y) {
      const uint64_t s = stamp(id, y);
      std::memcpy(image.planes[0].data + y * image.planes[0].stride, &s, sizeof s);
    }
  }
  // Empty when `image` is frame `id`.
  std::string check(uint64_t id, const ImageRef& image) const {
    const std::vector<uint8_t>& base = bases_[id % kBases];
    const size_t row = layout_.row_bytes(0);
    for (size_t y = 0; y < layout_.rows(0); ++y) {
      const uint8_t* got = image.planes[0].data + y * image.planes[0].stride;
      const uint8_t* want = base.data() + y * layout_.stride[0];
      const uint64_t s = stamp(id, y);
      if (std::memcmp(got, &s, sizeof s) != 0 ||
          std::memcmp(got + sizeof s, want + sizeof s, row - sizeof s) != 0)
        return "frame " + std::to_string(id) + ": row " + std::to_string(y) + " differs";
    }
    return {};
  }

 private:
  static constexpr uint64_t kBases = 17;
  FrameLayout layout_;
  std::vector<std::vector<uint8_t>> bases_;
};

TEST(MultiEngineCudaTest, EveryCudaDeviceTakesPartInTenThousandIntactFramesInOrder) {
  std::string why;
  const int count = cuda_device_count(&why);
  if (count < 2)
    GTEST_SKIP() << "needs at least two CUDA devices; found " << count
                 << (why.empty() ? "" : ": " + why);
  const FrameLayout layout = FrameLayout::packed(PixelFormat::kRGBA, 640, 360);
  const StampedFrames frames(layout);
  constexpr uint64_t kFrames = 10000;
  Watchdog watchdog;
  LiveCounter users;
  std::mutex mutex;
  std::vector<int> per_device(static_cast<size_t>(count), 0);
  std::vector<std::string> problems;
  std::vector<std::string> reports;
  uint64_t delivered = 0;
  int64_t last_sequence = -1;
  MultiEngineCallbacks cb;
  cb.on_frame = [&](OutputFrame f) {
    const uint64_t id = *static_cast<const uint64_t*>(f.user().get());
    std::string problem = frames.check(id, f.image());
    f.release();
    std::lock_guard<std::mutex> lock(mutex);
    if (problem.empty() && id != delivered)
      problem = "frame " + std::to_string(id) + " arrived as delivery " + std::to_string(delivered);
    if (problem.empty() && static_cast<int64_t>(f.sequence()) <= last_sequence)
      problem =
          "sequence " + std::to_string(f.sequence()) + " after " + std::to_string(last_sequence);
    if (problem.empty() && (f.device() < 0 || f.device() >= count))
      problem = "device " + std::to_string(f.device());
    if (!problem.empty() && problems.size() < 8) problems.push_back(problem);
    if (f.device() >= 0 && f.device() < count) ++per_device[static_cast<size_t>(f.device())];
    last_sequence = static_cast<int64_t>(f.sequence());
    ++delivered;
  };
  cb.on_warning = [&](int, const std::string& m) {
    std::lock_guard<std::mutex> lock(mutex);
    reports.push_back("warning: " + m);
  };
  cb.on_error = [&](const std::string& m) {
    std::lock_guard<std::mutex> lock(mutex);
    reports.push_back("error: " + m);
  };
  {
    std::vector<std::shared_ptr<Device>> devices;
    for (int i = 0; i < count; ++i) devices.push_back(make_cuda_device(i));
    MultiEngine engine(devices, make_config(4, "copy", layout), cb);
    engine.start();
    ASSERT_EQ(engine.live_devices(), count);
    std::vector<uint8_t> host(layout.size);
    const ImageRef image = layout.at(host.data());
    watchdog.stage("submitting");
    for (uint64_t i = 0; i < kFrames; ++i) {
      frames.make(i, image);
      InputFrame in;
      in.image = image;
      in.user = users.make(i);
      ASSERT_EQ(engine.submit(std::move(in)), Status::kOk) << "frame " << i;
    }
    ASSERT_EQ(drain_within(engine), Status::kOk);
    engine.stop();
  }
  std::lock_guard<std::mutex> lock(mutex);
  EXPECT_EQ(delivered, kFrames);
  EXPECT_EQ(problems, std::vector<std::string>{});
  EXPECT_EQ(reports, std::vector<std::string>{});
  for (int d = 0; d < count; ++d) EXPECT_GT(per_device[d], 0) << counts_text(per_device);
  EXPECT_EQ(users.live.load(), 0);
  std::printf("frames per device: %s\n", counts_text(per_device).c_str());
}

}  // namespace
}  // namespace cudaoverlap::test
