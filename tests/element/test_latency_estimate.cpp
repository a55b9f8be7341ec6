// LatencyEstimate (gst/stats.h) alone, fed stays as a live pipeline's
// frames would give them: what it reports before and after warm-up, that it
// reports a high percentile rather than the longest stay, and that it
// follows the stays down as well as up. Built from its source, no plugin.
#include <gtest/gtest.h>

#include "stats.h"

namespace cudaoverlap {
namespace {

constexpr int64_t kMs = 1000000;
constexpr int kFirst = LatencyEstimate::kSkip + LatencyEstimate::kWarmup;

// Feeds `n` stays of `stay_ns`; returns how many changed the report.
int feed(LatencyEstimate* e, int n, int64_t stay_ns) {
  int changes = 0;
  for (int i = 0; i < n; ++i) changes += e->add(stay_ns) ? 1 : 0;
  return changes;
}

TEST(LatencyEstimate, TheEstimateUntilWarmedUpThenTheStaysWithAMargin) {
  LatencyEstimate e;
  EXPECT_EQ(e.own(7 * kMs), static_cast<GstClockTime>(7 * kMs));
  EXPECT_EQ(feed(&e, kFirst - 1, kMs), 0);
  EXPECT_EQ(e.own(7 * kMs), static_cast<GstClockTime>(7 * kMs));
  EXPECT_EQ(feed(&e, 1, kMs), 1);  // the first report is announced
  EXPECT_EQ(e.own(7 * kMs), static_cast<GstClockTime>(1.1 * kMs));
}

TEST(LatencyEstimate, ARareLongStayIsNotReportedForEveryFrame) {
  LatencyEstimate e;
  feed(&e, kFirst + 200, kMs);
  // One frame in a hundred takes 20 ms (a hiccup the sink's processing
  // deadline absorbs): the 99th percentile stays at 1 ms.
  for (int i = 0; i < 300; ++i) e.add(i % 100 == 50 ? 20 * kMs : kMs);
  EXPECT_EQ(e.own(0), static_cast<GstClockTime>(1.1 * kMs));
}

TEST(LatencyEstimate, FollowsTheStaysUpAtOnceAndDownWithinAWindow) {
  LatencyEstimate e;
  feed(&e, kFirst + 200, kMs);
  // Longer stays for good (a larger frame, a busier device): raised as soon
  // as they are more than one in a hundred of the window.
  int frames = 0;
  while (e.own(0) < static_cast<GstClockTime>(4 * kMs) && frames < 10) {
    e.add(4 * kMs);
    ++frames;
  }
  EXPECT_EQ(e.own(0), static_cast<GstClockTime>(4.4 * kMs));
  EXPECT_LE(frames, 3);
  // Back to 1 ms: down once the window holds no more than one in a hundred
  // of the long ones, within a window and one look.
  frames = 0;
  while (e.own(0) > static_cast<GstClockTime>(1.1 * kMs) && frames < 1000) {
    e.add(kMs);
    ++frames;
  }
  EXPECT_EQ(e.own(0), static_cast<GstClockTime>(1.1 * kMs));
  EXPECT_LE(frames, static_cast<int>(LatencyEstimate::kWindow) + LatencyEstimate::kLowerEvery);
}

TEST(LatencyEstimate, SmallChangesAreNotAnnounced) {
  LatencyEstimate e;
  feed(&e, kFirst + 200, 1000 * 1000);
  // Within the 10 % hysteresis: no new LATENCY message, frame after frame.
  EXPECT_EQ(feed(&e, 500, 950 * 1000), 0);
  EXPECT_EQ(feed(&e, 500, 1040 * 1000), 0);
}

// Below a millisecond 10 % is tens of microseconds: a report is lowered
// only by at least kMinLowerNs, so that such jitter does not have the
// pipeline's latency set again every few frames.
TEST(LatencyEstimate, SubMillisecondJitterIsNotAnnounced) {
  LatencyEstimate e;
  feed(&e, kFirst + 200, 300 * 1000);       // reported 0.33 ms
  EXPECT_EQ(feed(&e, 500, 260 * 1000), 0);  // 13 % lower, 40 us
  EXPECT_EQ(e.own(0), static_cast<GstClockTime>(330 * 1000));
  EXPECT_EQ(feed(&e, 500, 200 * 1000), 1);  // 0.22 ms: 110 us lower
  EXPECT_EQ(e.own(0), static_cast<GstClockTime>(220 * 1000));
}

TEST(LatencyEstimate, ResetForgetsWhatWasMeasured) {
  LatencyEstimate e;
  feed(&e, kFirst + 10, 3 * kMs);
  e.reset();
  EXPECT_EQ(e.own(5 * kMs), static_cast<GstClockTime>(5 * kMs));
}

TEST(FirstLatencyEstimate, GrowsWithTheFrameAndIsSmallerOnTheDevice) {
  const size_t hd = 2 * 1920 * 1080 * 4, uhd = 4 * hd;
  EXPECT_LT(first_latency_estimate(hd, true), first_latency_estimate(uhd, true));
  EXPECT_LT(first_latency_estimate(hd, true), first_latency_estimate(hd, false));
  // Nowhere near a frame interval for 1080p on the device.
  EXPECT_LT(first_latency_estimate(hd, true), static_cast<GstClockTime>(5 * kMs));
}

}  // namespace
}  // namespace cudaoverlap
