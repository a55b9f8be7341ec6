// Every barrier of the engine is load-bearing: with it, frames arrive intact
// under random delays; taken out (a TestDevice, or the test's own producer or
// consumer misbehaving, see test_device.h), the same
// run delivers wrong or changing frames. If one of these "taken out" tests
// passes, the barrier is not protecting anything the tests can see, and the
// suite has lost its teeth.
#include "engine_test_util.h"

namespace cudaoverlap::test {
namespace {

struct BarrierCase {
  Barrier barrier;
  const char* name;
};

class BarrierTest : public ::testing::TestWithParam<BarrierCase> {};

// A run where each race has room to happen: long random delays on every
// stream operation and on every release. `barrier` decides the input kind
// (the keep-alive barrier only exists for zero-copy input); `disabled` is
// the barrier taken out, if any.
RunSpec race_prone_run(Barrier barrier, Barrier disabled) {
  RunSpec spec;
  spec.backend = BackendKind::kCpu;  // the only backend whose timing we control
  spec.ring_size = 3;
  spec.layout = FrameLayout::packed(PixelFormat::kRGBA, 64, 16);
  spec.kernel = "invert";
  spec.frames = 300;
  spec.max_delay_us = 200;
  // A consumer that holds frames longer than the ring takes to come round
  // again, so a slot reused before release is caught in the act.
  spec.max_hold_us = barrier == Barrier::kRelease ? 3000 : 300;
  spec.pinned_input = barrier == Barrier::kKeepAlive;
  spec.disabled_barrier = disabled;
  spec.seed = 42;
  return spec;
}

TEST_P(BarrierTest, FramesStayIntactWithTheBarrier) {
  const RunResult r = run_frames(race_prone_run(GetParam().barrier, Barrier::kNone));
  EXPECT_EQ(r.submit_failure, "");
  EXPECT_EQ(r.order.size(), 300u);
  EXPECT_EQ(r.mismatches, std::vector<std::string>{});
  EXPECT_EQ(r.live_users, 0);
}

TEST_P(BarrierTest, TakingTheBarrierOutIsNoticed) {
  const RunResult r = run_frames(race_prone_run(GetParam().barrier, GetParam().barrier));
  EXPECT_FALSE(r.mismatches.empty())
      << "without the " << GetParam().name << " barrier every frame still arrived intact";
  EXPECT_EQ(r.live_users, 0);
}

INSTANTIATE_TEST_SUITE_P(Engine, BarrierTest,
                         ::testing::Values(BarrierCase{Barrier::kUploaded, "uploaded"},
                                           BarrierCase{Barrier::kComputed, "computed"},
                                           BarrierCase{Barrier::kDownloaded, "downloaded"},
                                           BarrierCase{Barrier::kRelease, "release"},
                                           BarrierCase{Barrier::kKeepAlive, "keep_alive"}),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace cudaoverlap::test
