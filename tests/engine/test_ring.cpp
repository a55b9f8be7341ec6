// The staging ring at its edges: full after exactly N, backpressure that
// wakes on release, wrap-around order of slots, frames kept in order, and
// every buffer freed once the engine and its frames are gone.
#include <future>

#include "engine_test_util.h"

namespace cudaoverlap::test {
namespace {

using namespace std::chrono_literals;

class RingTest : public ::testing::TestWithParam<BackendKind> {};

FrameLayout small_rgba() { return FrameLayout::packed(PixelFormat::kRGBA, 32, 8); }

EngineConfig ring_config(int ring_size) {
  EngineConfig config;
  config.operation = make_operation("copy");
  config.ring_size = ring_size;
  config.input = small_rgba();
  config.output = small_rgba();
  return config;
}

// Collects frames and holds them until the test releases them.
struct Holder {
  std::mutex mutex;
  std::condition_variable arrived;
  std::deque<OutputFrame> frames;
  EngineCallbacks callbacks() {
    EngineCallbacks cb;
    cb.on_frame = [this](OutputFrame f) {
      std::lock_guard<std::mutex> lock(mutex);
      frames.push_back(std::move(f));
      arrived.notify_all();
    };
    return cb;
  }
  bool wait_for(size_t n) {
    std::unique_lock<std::mutex> lock(mutex);
    return arrived.wait_for(lock, 10s, [&] { return frames.size() >= n; });
  }
  OutputFrame pop() {
    std::lock_guard<std::mutex> lock(mutex);
    OutputFrame f = std::move(frames.front());
    frames.pop_front();
    return f;
  }
};

Status submit_pattern(Engine& engine, uint64_t frame, LiveCounter* counter = nullptr) {
  HostFrame host(engine.config().input, frame);
  InputFrame in;
  in.image = host.image;
  in.user = counter ? counter->make(frame) : numbered(frame);
  return engine.submit(std::move(in));
}

TEST_P(RingTest, FullAfterExactlyNAndWakesOnRelease) {
  for (int n : {1, 2, 3, 8}) {
    CO_DEVICE_OR_SKIP(device, GetParam());
    Holder holder;
    Engine engine(device, ring_config(n), holder.callbacks());
    engine.start();
    for (int i = 0; i < n; ++i) ASSERT_EQ(submit_pattern(engine, i), Status::kOk) << "n=" << n;
    ASSERT_TRUE(holder.wait_for(n));

    // All N slots are held by the consumer: the next submit must block...
    auto blocked = std::async(std::launch::async, [&] { return submit_pattern(engine, n); });
    EXPECT_EQ(blocked.wait_for(100ms), std::future_status::timeout) << "n=" << n;
    // ...until exactly one frame is released.
    holder.pop().release();
    ASSERT_EQ(blocked.wait_for(10s), std::future_status::ready) << "n=" << n;
    EXPECT_EQ(blocked.get(), Status::kOk);
    ASSERT_TRUE(holder.wait_for(n));
    engine.stop();
  }
}

TEST_P(RingTest, SlotsWrapAroundInOrderAndFramesKeepTheirOrder) {
  CO_DEVICE_OR_SKIP(device, GetParam());
  constexpr int kRing = 3;
  constexpr int kFrames = 3 * kRing + 2;
  Holder holder;
  Engine engine(device, ring_config(kRing), holder.callbacks());
  engine.start();
  for (int i = 0; i < kFrames; ++i) {
    ASSERT_EQ(submit_pattern(engine, i), Status::kOk);
    ASSERT_TRUE(holder.wait_for(1));
    OutputFrame frame = holder.pop();
    EXPECT_EQ(frame.sequence(), static_cast<uint64_t>(i));
    EXPECT_EQ(frame_id(frame), static_cast<uint64_t>(i));
    // Released in order, slots come back in order: 0 1 2 0 1 2 …
    EXPECT_EQ(frame.slot(), i % kRing);
    EXPECT_EQ(check_frame("copy", engine.config().output, frame.image(), i), "");
  }
}

TEST_P(RingTest, EveryBufferIsFreedAfterTheEngineAndItsFramesAreGone) {
  CO_DEVICE_OR_SKIP(device, GetParam());
  auto live = [&] {
    return GetParam() == BackendKind::kCpu ? cpu_live_buffers() : cuda_live_buffers();
  };
  const size_t before = live();
  LiveCounter users;
  OutputFrame kept;
  {
    Holder holder;
    Engine engine(device, ring_config(4), holder.callbacks());
    engine.start();
    EXPECT_EQ(live(), before + 4 * 4) << "4 buffers a slot";
    for (int i = 0; i < 4; ++i) ASSERT_EQ(submit_pattern(engine, i, &users), Status::kOk);
    ASSERT_TRUE(holder.wait_for(4));
    kept = holder.pop();
    engine.stop();
    // Holder drops the other frames here; the engine object dies too.
  }
  device.reset();
  // A frame outlives the engine: its memory must stay valid…
  EXPECT_GT(live(), before);
  EXPECT_EQ(check_frame("copy", small_rgba(), kept.image(), 0), "");
  kept.release();
  // …and only then is everything freed.
  EXPECT_EQ(live(), before);
  EXPECT_EQ(users.live.load(), 0);
}

INSTANTIATE_TEST_SUITE_P(Backends, RingTest,
                         ::testing::Values(BackendKind::kCpu, BackendKind::kCuda),
                         [](const auto& info) { return std::string(backend_name(info.param)); });

}  // namespace
}  // namespace cudaoverlap::test
