// Per-frame timing (FrameTiming, EngineConfig::timing): every stage of every
// frame is measured, and the measured times respect the engine's barriers
// and each stream's order, under random delays. The cuda variants run where
// a device exists and show that GPU times land on the host clock.
#include <cstdio>
#include <thread>

#include "engine_test_util.h"
#include "kernels/chain/chain.h"

namespace cudaoverlap::test {
namespace {

// Host and GPU clocks agree to the anchor's wake-up and the float
// milliseconds of cudaEventElapsedTime; the cpu backend is exact.
int64_t slack_ns(BackendKind backend) { return backend == BackendKind::kCpu ? 0 : 20000; }

struct Collected {
  std::mutex mutex;
  std::condition_variable arrived;
  std::vector<FrameTiming> timings;
  EngineCallbacks callbacks() {
    EngineCallbacks cb;
    cb.on_frame = [this](OutputFrame frame) {
      const FrameTiming timing = frame.timing();
      frame.release();
      std::lock_guard<std::mutex> lock(mutex);
      timings.push_back(timing);
      arrived.notify_all();
    };
    return cb;
  }
  bool wait_for(size_t n) {
    std::unique_lock<std::mutex> lock(mutex);
    return arrived.wait_for(lock, std::chrono::seconds(20), [&] { return timings.size() >= n; });
  }
};

struct TimingCase {
  BackendKind backend;
  Mode mode;
  bool timing;
  bool pinned_input;
  int interval = 1;  // EngineConfig::timing_interval
};

std::string case_name(const ::testing::TestParamInfo<TimingCase>& info) {
  const TimingCase& c = info.param;
  return std::string(backend_name(c.backend)) +
         (c.mode == Mode::kSerial ? "_serial" : "_overlapped") +
         (c.timing ? "_timed" : "_untimed") + (c.pinned_input ? "_pinned" : "_pageable") +
         (c.interval > 1 ? "_every" + std::to_string(c.interval) : "");
}

class TimingTest : public ::testing::TestWithParam<TimingCase> {};

TEST_P(TimingTest, EveryStageIsMeasuredInBarrierAndStreamOrder) {
  const TimingCase& c = GetParam();
  CO_DEVICE_OR_SKIP(device, c.backend, 20, 5);
  const FrameLayout layout = FrameLayout::packed(PixelFormat::kRGBA, 64, 16);
  EngineConfig config;
  config.operation = make_operation("copy");
  config.ring_size = 3;
  config.mode = c.mode;
  config.input = layout;
  config.output = layout;
  config.timing = c.timing;
  config.timing_interval = c.interval;
  constexpr int kFrames = 300;
  Collected collected;
  std::vector<int64_t> arrived(kFrames);
  {
    std::unique_ptr<PinnedPool> pool;
    if (c.pinned_input) pool = std::make_unique<PinnedPool>(*device, layout, 2);
    Engine engine(device, config, collected.callbacks());
    engine.start();
    for (int i = 0; i < kFrames; ++i) {
      HostFrame host(layout, i);
      InputFrame in;
      if (pool) {
        const int b = pool->acquire();
        in.image = pool->image(b);
        in.pinned = true;
        in.keep_alive = pool->lease(b);
      } else {
        in.image = host.image;
      }
      // Every other frame lets the engine stamp its arrival itself.
      in.arrived_ns = i % 2 == 0 ? host_now_ns() : -1;
      arrived[i] = in.arrived_ns;
      ASSERT_EQ(engine.submit(std::move(in)), Status::kOk) << engine.error();
    }
    ASSERT_EQ(engine.drain(), Status::kOk);
    ASSERT_TRUE(collected.wait_for(kFrames));
    engine.stop();
  }

  const int64_t slack = slack_ns(c.backend);
  const std::vector<FrameTiming>& t = collected.timings;
  ASSERT_EQ(t.size(), static_cast<size_t>(kFrames));
  for (int i = 0; i < kFrames; ++i) {
    SCOPED_TRACE("frame " + std::to_string(i));
    const FrameTiming& f = t[i];
    if (arrived[i] >= 0) {
      EXPECT_EQ(f.arrived_ns, arrived[i]);
    }
    ASSERT_GE(f.arrived_ns, 0);
    ASSERT_TRUE(f.wait_slot.valid());
    EXPECT_LE(f.arrived_ns, f.wait_slot.start_ns);
    EXPECT_EQ(f.staging.valid(), !c.pinned_input);
    if (f.staging.valid()) {
      EXPECT_LE(f.wait_slot.end_ns, f.staging.start_ns);
    }
    // Ready when its download completed: when the worker saw it, or before
    // (the barrier's own time, where it was complete before the worker
    // looked); without timing, when the worker saw it.
    EXPECT_LE(f.ready_ns, f.delivered_ns);
    EXPECT_GE(f.ready_ns + slack, f.wait_slot.end_ns);
    if (!c.timing) {
      EXPECT_EQ(f.ready_ns, f.delivered_ns);
    }
    // With an interval, frames 0, N, 2N, … are measured, and only they.
    if (!c.timing || i % c.interval != 0) {
      EXPECT_FALSE(f.upload.valid());
      EXPECT_FALSE(f.compute.valid());
      EXPECT_FALSE(f.download.valid());
      EXPECT_LE(f.wait_slot.end_ns, f.delivered_ns);
      continue;
    }
    ASSERT_TRUE(f.upload.valid() && f.compute.valid() && f.download.valid());
    // The upload is enqueued after staging; the barriers order the rest.
    const int64_t host_before_upload = f.staging.valid() ? f.staging.end_ns : f.wait_slot.end_ns;
    EXPECT_LE(host_before_upload, f.upload.start_ns + slack);
    EXPECT_LE(f.upload.end_ns, f.compute.start_ns + slack);
    EXPECT_LE(f.compute.end_ns, f.download.start_ns + slack);
    EXPECT_LE(f.download.end_ns, f.delivered_ns + slack);
    EXPECT_GE(f.ready_ns + slack, f.download.end_ns);  // never before it completed
    if (i >= c.interval) {
      // Each stream runs its operations in order.
      const FrameTiming& p = t[i - c.interval];
      EXPECT_LE(p.upload.end_ns, f.upload.start_ns + slack);
      EXPECT_LE(p.compute.end_ns, f.compute.start_ns + slack);
      EXPECT_LE(p.download.end_ns, f.download.start_ns + slack);
      if (c.mode == Mode::kSerial) {
        EXPECT_LE(p.download.end_ns, f.upload.start_ns + slack);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Backends, TimingTest,
    ::testing::Values(TimingCase{BackendKind::kCpu, Mode::kOverlapped, true, false},
                      TimingCase{BackendKind::kCpu, Mode::kOverlapped, true, true},
                      TimingCase{BackendKind::kCpu, Mode::kSerial, true, false},
                      TimingCase{BackendKind::kCpu, Mode::kOverlapped, false, false},
                      TimingCase{BackendKind::kCpu, Mode::kOverlapped, true, true, 7},
                      TimingCase{BackendKind::kCuda, Mode::kOverlapped, true, false},
                      TimingCase{BackendKind::kCuda, Mode::kOverlapped, true, true},
                      TimingCase{BackendKind::kCuda, Mode::kSerial, true, false},
                      TimingCase{BackendKind::kCuda, Mode::kOverlapped, false, false},
                      TimingCase{BackendKind::kCuda, Mode::kOverlapped, true, true, 7}),
    case_name);

// An operation of several parts (a chain's launches) is timed part by part
// on frames timed whole: each part's end after the one before, inside the
// compute stage; frames not timed, and frames cut into bands, carry none.
// A frame run part by part is the frame run whole.
TEST(TimingParts, AChainsLaunchesAreTimedInsideItsComputeStage) {
  for (BackendKind backend : {BackendKind::kCpu, BackendKind::kCuda})
    for (int bands : {1, 2}) {
      SCOPED_TRACE(std::string(backend_name(backend)) + ", bands " + std::to_string(bands));
      std::string why;
      const std::shared_ptr<Device> device = make_backend(&why, backend);
      if (!device) continue;  // no CUDA device
      const FrameLayout layout = FrameLayout::packed(PixelFormat::kRGBA, 64, 32);
      KernelParams params;
      params.chain = parse_chain("invert ! blur sigma=1 ! invert");
      params.sizes = FrameSizes{64, 32, 64, 32};
      EngineConfig config;
      config.operation = make_operation("chain", params);
      ASSERT_EQ(config.operation->parts(PixelFormat::kRGBA, PixelFormat::kRGBA).size(), 3u);
      config.input = config.output = layout;
      config.timing = true;
      config.timing_interval = 2;
      config.bands = bands;
      std::vector<std::vector<uint8_t>> outputs;
      std::vector<FrameTiming> timings;
      std::mutex mutex;
      EngineCallbacks callbacks;
      callbacks.on_frame = [&](OutputFrame frame) {
        const ImageRef& image = frame.image();
        std::vector<uint8_t> bytes(image.planes[0].data, image.planes[0].data + layout.size);
        std::lock_guard<std::mutex> lock(mutex);
        outputs.push_back(std::move(bytes));
        timings.push_back(frame.timing());
      };
      constexpr int kFrames = 8;
      {
        Engine engine(device, config, callbacks);
        engine.start();
        const HostFrame host(layout, 3);  // every frame the same
        for (int i = 0; i < kFrames; ++i) {
          InputFrame in;
          in.image = host.image;
          ASSERT_EQ(engine.submit(std::move(in)), Status::kOk) << engine.error();
        }
        ASSERT_EQ(engine.drain(), Status::kOk) << engine.error();
        engine.stop();
      }
      ASSERT_EQ(timings.size(), static_cast<size_t>(kFrames));
      for (int i = 0; i < kFrames; ++i) {
        SCOPED_TRACE("frame " + std::to_string(i));
        const FrameTiming& f = timings[i];
        EXPECT_TRUE(outputs[i] == outputs[0]) << "differs from frame 0";
        if (i % 2 != 0 || bands > 1) {
          EXPECT_EQ(f.parts, 0);
          continue;
        }
        ASSERT_EQ(f.parts, 3);
        // The blur between the two inversions takes time of its own.
        EXPECT_GT(f.part(1).end_ns, f.part(1).start_ns);
      }
    }
}

TEST(TimingInterval, OutOfRangeIsRefusedAtStart) {
  CO_DEVICE_OR_SKIP(device, BackendKind::kCpu, 0, 1);
  const FrameLayout layout = FrameLayout::packed(PixelFormat::kRGBA, 16, 4);
  for (const int interval : {0, 1025}) {
    EngineConfig config;
    config.operation = make_operation("copy");
    config.input = layout;
    config.output = layout;
    config.timing = true;
    config.timing_interval = interval;
    Engine engine(device, config, EngineCallbacks{});
    try {
      engine.start();
      ADD_FAILURE() << "timing interval " << interval << " was taken";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("timing interval"), std::string::npos) << e.what();
    }
  }
}

// Overlap is visible in the times: with slow enough stages, some frame's
// upload runs while an earlier frame's download runs. (Serial mode never
// does, which the test above checks.)
TEST(TimingOverlap, StagesOfConsecutiveFramesOverlapOnTheCpuBackend) {
  CO_DEVICE_OR_SKIP(device, BackendKind::kCpu, 300, 9);
  const FrameLayout layout = FrameLayout::packed(PixelFormat::kRGBA, 32, 8);
  EngineConfig config;
  config.operation = make_operation("copy");
  config.ring_size = 3;
  config.input = layout;
  config.output = layout;
  config.timing = true;
  constexpr int kFrames = 60;
  Collected collected;
  Engine engine(device, config, collected.callbacks());
  engine.start();
  for (int i = 0; i < kFrames; ++i) {
    HostFrame host(layout, i);
    InputFrame in;
    in.image = host.image;
    ASSERT_EQ(engine.submit(std::move(in)), Status::kOk);
  }
  ASSERT_EQ(engine.drain(), Status::kOk);
  ASSERT_TRUE(collected.wait_for(kFrames));
  engine.stop();
  // Frames whose upload ran while an earlier frame of the ring was being
  // downloaded. Each stage waits up to 300 us at random, so about half the
  // frames should; a pipeline that overlaps only by accident manages a few.
  int overlapping = 0;
  for (int i = 1; i < kFrames; ++i) {
    bool overlaps = false;
    for (int j = std::max(0, i - 3); j < i; ++j) {
      const TimeSpan& up = collected.timings[i].upload;
      const TimeSpan& down = collected.timings[j].download;
      if (up.start_ns < down.end_ns && down.start_ns < up.end_ns) overlaps = true;
    }
    overlapping += overlaps;
  }
  std::printf("frames whose upload overlapped an earlier download: %d of %d\n", overlapping,
              kFrames - 1);
  EXPECT_GE(overlapping, (kFrames - 1) / 4);
}

// A consumer that fetches frames late (EngineConfig::pull, a src pad task
// blocked in a syncing sink's push) makes delivered_ns late, never
// ready_ns: the frame was ready when its download completed, which is
// what the element's latency counts.
TEST(ReadyTime, IsWhenTheDownloadCompletedNotWhenAConsumerFetchedIt) {
  for (BackendKind backend : {BackendKind::kCpu, BackendKind::kCuda}) {
    SCOPED_TRACE(backend_name(backend));
    std::string why;
    std::shared_ptr<Device> device = make_backend(&why, backend, 0, 0);
    if (!device) continue;  // no CUDA device
    const FrameLayout layout = FrameLayout::packed(PixelFormat::kRGBA, 64, 16);
    EngineConfig config;
    config.operation = make_operation("copy");
    config.ring_size = 3;
    config.input = layout;
    config.output = layout;
    config.timing = true;
    config.pull = true;
    Collected collected;
    Engine engine(device, config, collected.callbacks());
    engine.start();
    constexpr int kFrames = 5;
    // Late by far more than a small frame takes on a loaded machine (a
    // sanitizer build beside other tests once took 35 ms for one).
    constexpr auto kLate = std::chrono::milliseconds(150);
    for (int i = 0; i < kFrames; ++i) {
      HostFrame host(layout, i);
      InputFrame in;
      in.image = host.image;
      ASSERT_EQ(engine.submit(std::move(in)), Status::kOk) << engine.error();
      std::this_thread::sleep_for(kLate);  // the consumer is busy elsewhere
      OutputFrame frame = engine.deliver();
      ASSERT_TRUE(frame) << engine.error();
      collected.callbacks().on_frame(std::move(frame));
    }
    ASSERT_TRUE(collected.wait_for(kFrames));
    engine.stop();
    for (const FrameTiming& f : collected.timings) {
      EXPECT_LT(f.ready_ns - f.wait_slot.end_ns, 100'000'000) << "a 64x16 frame took 100 ms";
      EXPECT_GE(f.delivered_ns - f.wait_slot.end_ns, 150'000'000);
    }
  }
}

}  // namespace
}  // namespace cudaoverlap::test
