// Many thousand frames through the engine with random delays on every stream
// operation and on every release: each output must be the frame that went
// in (each frame carries its own pattern), in submission order, and must not
// change while the consumer holds it.
#include "engine_test_util.h"

namespace cudaoverlap::test {
namespace {

struct OrderingCase {
  BackendKind backend;
  Mode mode;
  int ring_size;
  HostWait host_wait = HostWait::kPoll;
  int bands = 1;
};

std::string case_name(const ::testing::TestParamInfo<OrderingCase>& info) {
  return std::string(backend_name(info.param.backend)) + "_" +
         (info.param.mode == Mode::kSerial ? "serial" : "overlapped") + "_ring" +
         std::to_string(info.param.ring_size) +
         (info.param.host_wait == HostWait::kBlock  ? "_block"
          : info.param.host_wait == HostWait::kSpin ? "_spin"
                                                    : "") +
         (info.param.bands > 1 ? "_bands" + std::to_string(info.param.bands) : "");
}

class OrderingTest : public ::testing::TestWithParam<OrderingCase> {};

void run_frames(const OrderingCase& c, const FrameLayout& layout, const std::string& kernel,
                int frames, bool pinned_input, uint64_t seed) {
  RunSpec spec;
  spec.backend = c.backend;
  spec.mode = c.mode;
  spec.ring_size = c.ring_size;
  spec.layout = layout;
  spec.kernel = kernel;
  spec.frames = frames;
  spec.pinned_input = pinned_input;
  spec.seed = seed;
  spec.disabled_barrier = barrier_to_disable();
  spec.host_wait = c.host_wait;
  spec.bands = c.bands;
  const RunResult r = run_frames(spec);
  if (r.skipped) GTEST_SKIP() << r.skipped_why;
  EXPECT_EQ(r.submit_failure, "");
  ASSERT_EQ(r.order.size(), static_cast<size_t>(frames));
  for (int i = 0; i < frames; ++i) ASSERT_EQ(r.order[i], static_cast<uint64_t>(i));
  EXPECT_EQ(r.mismatches, std::vector<std::string>{});
  EXPECT_EQ(r.errors, std::vector<std::string>{});
  EXPECT_EQ(r.live_users, 0);
}

TEST_P(OrderingTest, TenThousandPatternedFramesArriveIntactAndInOrder) {
  const OrderingCase& c = GetParam();
  // An odd-sized NV12 frame: two planes, odd chroma rounding, padded input.
  run_frames(c, FrameLayout::packed(PixelFormat::kNV12, 33, 17), "invert", 10000, false,
             11 + c.ring_size);
}

TEST_P(OrderingTest, ZeroCopyPinnedInputIsHeldUntilUploaded) {
  const OrderingCase& c = GetParam();
  run_frames(c, FrameLayout::packed(PixelFormat::kRGBA, 21, 9), "copy", 2000, true,
             23 + c.ring_size);
}

TEST_P(OrderingTest, EveryFormatAndOddSizesSurviveTheRing) {
  const OrderingCase& c = GetParam();
  const PixelFormat formats[] = {PixelFormat::kRGBA, PixelFormat::kBGRx, PixelFormat::kARGB,
                                 PixelFormat::kABGR, PixelFormat::kI420, PixelFormat::kGRAY8};
  for (PixelFormat f : formats)
    for (const char* k : {"copy", "invert"})
      run_frames(c, FrameLayout::packed(f, 7, 5), k, 40, false, 5);
}

std::vector<OrderingCase> ordering_cases() {
  std::vector<OrderingCase> cases;
  for (BackendKind b : {BackendKind::kCpu, BackendKind::kCuda})
    for (Mode m : {Mode::kOverlapped, Mode::kSerial})
      for (int n : {1, 2, 3, 8}) cases.push_back({b, m, n});
  // The worker's other ways of waiting for a download (the default, kPoll,
  // is in every case above).
  for (BackendKind b : {BackendKind::kCpu, BackendKind::kCuda})
    for (HostWait w : {HostWait::kBlock, HostWait::kSpin})
      cases.push_back({b, Mode::kOverlapped, 3, w});
  // Frames split into bands (as many as the size allows: 7x5 4:2:0 has two).
  for (BackendKind b : {BackendKind::kCpu, BackendKind::kCuda})
    for (int n : {1, 3}) cases.push_back({b, Mode::kOverlapped, n, HostWait::kPoll, 4});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Engine, OrderingTest, ::testing::ValuesIn(ordering_cases()), case_name);

}  // namespace
}  // namespace cudaoverlap::test
