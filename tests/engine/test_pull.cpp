// EngineConfig::pull: no worker thread; the consumer's thread fetches each
// frame with deliver(), which returns it, and drain() hands to on_frame on
// the producer's thread what nobody fetches; and stop or flush while a
// deliver() waits.
#include <atomic>
#include <functional>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

#include "lifecycle_test_util.h"

namespace cudaoverlap::test {
namespace {

using namespace std::chrono_literals;

class PullTest : public ::testing::TestWithParam<BackendKind> {};

EngineConfig pull_config(int ring) {
  EngineConfig config = make_config(ring);
  config.pull = true;
  return config;
}

// A consumer's callbacks that also note the thread each frame came on.
struct ThreadNotingCallbacks {
  std::mutex mutex;
  std::vector<std::thread::id> threads;
  EngineCallbacks wrap(EngineCallbacks inner) {
    auto on_frame = inner.on_frame;
    inner.on_frame = [this, on_frame](OutputFrame frame) {
      {
        std::lock_guard<std::mutex> lock(mutex);
        threads.push_back(std::this_thread::get_id());
      }
      on_frame(std::move(frame));
    };
    return inner;
  }
  std::vector<std::thread::id> seen() {
    std::lock_guard<std::mutex> lock(mutex);
    return threads;
  }
};

TEST_P(PullTest, TheConsumerThreadFetchesEveryFrameInOrder) {
  CO_DEVICE_OR_SKIP(device, GetParam(), 300, 11);
  constexpr int kFrames = 60;
  LiveCounter users;
  {
    CheckingConsumer consumer("invert", test_layout(), 200);
    ThreadNotingCallbacks noting;
    Engine engine(device, pull_config(4), noting.wrap(consumer.callbacks()));
    engine.start();
    std::atomic<bool> done{false};
    std::atomic<int> fetched{0};
    std::thread fetcher([&] {
      const EngineCallbacks checking = consumer.callbacks();
      while (!done.load()) {
        if (OutputFrame frame = engine.deliver()) {
          ++fetched;
          checking.on_frame(std::move(frame));
        } else {
          std::this_thread::sleep_for(50us);  // nothing in flight yet
        }
      }
    });
    // Joined on every way out of this scope, a failed assertion's included.
    struct Join {
      std::atomic<bool>& done;
      std::thread& thread;
      ~Join() {
        done = true;
        if (thread.joinable()) thread.join();
      }
    } join{done, fetcher};
    for (int i = 0; i < kFrames; ++i) ASSERT_EQ(submit_frame(engine, i, users), Status::kOk);
    // The submits only come back as the fetcher frees slots (ring 4 of 60).
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    while (consumer.order().size() < kFrames && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(1ms);
    done = true;
    if (fetcher.joinable()) fetcher.join();
    ASSERT_EQ(engine.drain(), Status::kOk);
    consumer.settle();
    std::vector<uint64_t> expected(kFrames);
    for (int i = 0; i < kFrames; ++i) expected[i] = i;
    EXPECT_EQ(consumer.order(), expected);
    EXPECT_EQ(consumer.mismatches(), std::vector<std::string>{});
    EXPECT_EQ(fetched.load(), kFrames);
    // Every frame was returned to the fetching thread: there is no worker,
    // and on_frame is not called.
    EXPECT_TRUE(noting.seen().empty());
    EXPECT_FALSE(engine.deliver());  // nothing in flight
    engine.stop();
  }
  EXPECT_EQ(users.live.load(), 0);
}

TEST_P(PullTest, DrainHandsOutOnTheProducerWhatNobodyFetches) {
  CO_DEVICE_OR_SKIP(device, GetParam(), 300, 12);
  LiveCounter users;
  {
    CheckingConsumer consumer("invert", test_layout());
    ThreadNotingCallbacks noting;
    Engine engine(device, pull_config(4), noting.wrap(consumer.callbacks()));
    engine.start();
    for (int i = 0; i < 3; ++i) ASSERT_EQ(submit_frame(engine, i, users), Status::kOk);
    ASSERT_EQ(engine.drain(), Status::kOk);
    EXPECT_EQ(consumer.order(), (std::vector<uint64_t>{0, 1, 2}));
    for (const std::thread::id& id : noting.seen()) EXPECT_EQ(id, std::this_thread::get_id());
    consumer.settle();
    EXPECT_EQ(consumer.mismatches(), std::vector<std::string>{});
  }
  EXPECT_EQ(users.live.load(), 0);
}

TEST_P(PullTest, DeliverGivesNothingWithoutPullOrBeforeStart) {
  CO_DEVICE_OR_SKIP(device, GetParam());
  LiveCounter users;
  {
    CheckingConsumer consumer("invert", test_layout());
    Engine pulled(device, pull_config(2), consumer.callbacks());
    EXPECT_FALSE(pulled.deliver());  // not started
  }
  {
    CheckingConsumer consumer("invert", test_layout());
    Engine engine(device, make_config(2), consumer.callbacks());
    engine.start();
    ASSERT_EQ(submit_frame(engine, 0, users), Status::kOk);
    EXPECT_FALSE(engine.deliver());  // the worker hands frames out
    ASSERT_EQ(engine.drain(), Status::kOk);
    EXPECT_EQ(consumer.order(), std::vector<uint64_t>{0});
  }
  EXPECT_EQ(users.live.load(), 0);
}

// A pulled engine (ring 2) on the cpu backend whose kernel runs only once
// open() was called, and which notes each frame handed out: its number and
// the thread that handed it out. The gate opens at the latest when the
// helper goes, so that a failed assertion cannot leave the engine's stop()
// waiting for it.
class GatedPull {
 public:
  GatedPull() : gate_(open_.get_future()) {
    EngineConfig config = pull_config(2);
    config.operation = std::make_shared<GatedOperation>(gate_);
    EngineCallbacks callbacks;
    callbacks.on_frame = [this](OutputFrame frame) { note(frame); };
    engine_ = std::make_unique<Engine>(make_cpu_device(CpuDeviceOptions{}), config, callbacks);
    engine_->start();
  }
  ~GatedPull() {
    open();
    engine_.reset();
  }
  GatedPull(const GatedPull&) = delete;
  GatedPull& operator=(const GatedPull&) = delete;
  Engine& engine() { return *engine_; }
  void open() {
    if (!opened_.exchange(true)) open_.set_value();
  }
  // A frame handed out (to on_frame, or returned by deliver()).
  void note(const OutputFrame& frame) {
    std::lock_guard<std::mutex> lock(mutex_);
    out_.emplace_back(frame_id(frame), std::this_thread::get_id());
  }
  std::vector<std::pair<uint64_t, std::thread::id>> out() {
    std::lock_guard<std::mutex> lock(mutex_);
    return out_;
  }
  // Declared after a test's futures, it opens the gate before their ends
  // wait for the calls they run.
  struct OpenOnExit {
    GatedPull& gated;
    ~OpenOnExit() { gated.open(); }
  };

 private:
  std::promise<void> open_;
  std::shared_future<void> gate_;
  std::atomic<bool> opened_{false};
  std::mutex mutex_;
  std::vector<std::pair<uint64_t, std::thread::id>> out_;
  std::unique_ptr<Engine> engine_;
};

// stop() while a deliver() waits for a frame still on the device: the
// frame is dropped undelivered, deliver() returns, and nothing is left
// behind; a deliver() after stop() gives nothing.
TEST(PullStopTest, StopWithADeliverWaitingForTheDeviceDropsItsFrame) {
  LiveCounter users;
  {
    GatedPull gated;
    Engine& engine = gated.engine();
    ASSERT_EQ(submit_frame(engine, 0, users), Status::kOk);
    auto fetch = std::async(std::launch::async, [&] { return engine.deliver(); });
    std::this_thread::sleep_for(50ms);
    EXPECT_EQ(fetch.wait_for(0ms), std::future_status::timeout) << "deliver() did not wait";
    auto stopping = std::async(std::launch::async, [&] { engine.stop(); });
    GatedPull::OpenOnExit open_on_exit{gated};
    EXPECT_EQ(stopping.wait_for(100ms), std::future_status::timeout)
        << "stop() did not wait for the deliver() under way";
    gated.open();
    ASSERT_EQ(stopping.wait_for(10s), std::future_status::ready);
    ASSERT_EQ(fetch.wait_for(10s), std::future_status::ready);
    EXPECT_FALSE(fetch.get());  // dropped by stop()
    EXPECT_TRUE(gated.out().empty());
    EXPECT_FALSE(engine.deliver());
  }
  EXPECT_EQ(users.live.load(), 0);
}

// A frame deliver() returned is the consumer's: stop() does not wait for
// it, it stays intact while held, and releasing it after stop() frees its
// slot's memory (the core outlives the engine while frames are held).
TEST(PullStopTest, AFrameReturnedByDeliverOutlivesStop) {
  LiveCounter users;
  const size_t buffers_before = cpu_live_buffers();
  {
    std::shared_ptr<Device> device = make_cpu_device(CpuDeviceOptions{});
    CheckingConsumer consumer("invert", test_layout());
    Engine engine(device, pull_config(2), consumer.callbacks());
    engine.start();
    ASSERT_EQ(submit_frame(engine, 0, users), Status::kOk);
    OutputFrame frame;
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (!(frame = engine.deliver()) && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(1ms);
    ASSERT_TRUE(frame);
    auto stopping = std::async(std::launch::async, [&] { engine.stop(); });
    ASSERT_EQ(stopping.wait_for(10s), std::future_status::ready)
        << "stop() waited for a frame the consumer holds";
    consumer.callbacks().on_frame(std::move(frame));  // checks the bytes, releases
    consumer.settle();
    EXPECT_EQ(consumer.order(), std::vector<uint64_t>{0});
    EXPECT_EQ(consumer.mismatches(), std::vector<std::string>{});
  }
  EXPECT_EQ(users.live.load(), 0);
  EXPECT_EQ(cpu_live_buffers(), buffers_before);
}

// A deliver() while drain() is handing the front frame out on the producer
// waits for it and returns no frame, without taking another: each frame
// goes out once, in order.
TEST(PullStopTest, ADeliverWhileDrainHandsTheFrameOutWaitsForIt) {
  LiveCounter users;
  {
    GatedPull gated;
    Engine& engine = gated.engine();
    ASSERT_EQ(submit_frame(engine, 0, users), Status::kOk);
    std::thread::id producer;
    auto draining = std::async(std::launch::async, [&] {
      producer = std::this_thread::get_id();
      return engine.drain();
    });
    // drain() takes frame 0 at once and waits for its kernel; a deliver()
    // that came first would take it itself, and the frame would come on
    // its thread (the check below).
    std::this_thread::sleep_for(250ms);
    auto fetch = std::async(std::launch::async, [&] { return engine.deliver(); });
    GatedPull::OpenOnExit open_on_exit{gated};
    EXPECT_EQ(fetch.wait_for(100ms), std::future_status::timeout)
        << "deliver() returned while drain() was handing the frame out";
    gated.open();
    ASSERT_EQ(draining.wait_for(10s), std::future_status::ready);
    EXPECT_EQ(draining.get(), Status::kOk);
    ASSERT_EQ(fetch.wait_for(10s), std::future_status::ready);
    EXPECT_FALSE(fetch.get());
    const auto out = gated.out();
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].first, 0u);
    EXPECT_EQ(out[0].second, producer);
  }
  EXPECT_EQ(users.live.load(), 0);
}

// A flush while a deliver() waits for a frame: the frame is dropped,
// deliver() returns no frame, and after flush_stop() the next frames are
// fetched as before.
TEST(PullStopTest, AFlushDropsTheFrameADeliverWaitsForAndTheStreamGoesOn) {
  LiveCounter users;
  {
    GatedPull gated;
    Engine& engine = gated.engine();
    ASSERT_EQ(submit_frame(engine, 0, users), Status::kOk);
    auto fetch = std::async(std::launch::async, [&] { return engine.deliver(); });
    GatedPull::OpenOnExit open_on_exit{gated};
    std::this_thread::sleep_for(50ms);
    engine.flush_start();
    gated.open();  // frame 0 finishes on the device, under the flush
    ASSERT_EQ(fetch.wait_for(10s), std::future_status::ready);
    EXPECT_FALSE(fetch.get());
    engine.flush_stop();
    for (uint64_t i = 1; i <= 2; ++i) {
      ASSERT_EQ(submit_frame(engine, i, users), Status::kOk);
      OutputFrame frame = engine.deliver();
      ASSERT_TRUE(frame);
      gated.note(frame);
    }
    EXPECT_FALSE(engine.deliver());
    const auto out = gated.out();
    ASSERT_EQ(out.size(), 2u);
    EXPECT_EQ(out[0].first, 1u);
    EXPECT_EQ(out[1].first, 2u);
  }
  EXPECT_EQ(users.live.load(), 0);
}

INSTANTIATE_TEST_SUITE_P(Backends, PullTest,
                         ::testing::Values(BackendKind::kCpu, BackendKind::kCuda),
                         [](const auto& info) { return std::string(backend_name(info.param)); });

}  // namespace
}  // namespace cudaoverlap::test
