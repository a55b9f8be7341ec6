// HostWait::kPoll's waiting policy (PollingWait) on a clock of the test's
// own: when the waiter sleeps, how long it spins, how late it sees a frame
// done. Sleeps end a set time after they were due (a machine's wake-up
// overrun), looks cost nothing, and the spin between two looks moves the
// clock by kRelaxNs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "polling_wait.h"

namespace cudaoverlap {
namespace {

constexpr int64_t kUs = 1000;
constexpr int64_t kMs = 1000 * kUs;
constexpr int64_t kRelaxNs = 300;

// Sleeps overrun by `overrun_ns`; with `spike_every`, every such sleep by
// `spike_ns` instead.
class FakeClock final : public WaitClock {
 public:
  explicit FakeClock(int64_t overrun_ns, int spike_every = 0, int64_t spike_ns = 0)
      : overrun_ns_(overrun_ns), spike_every_(spike_every), spike_ns_(spike_ns) {}
  int64_t now_ns() override { return now_; }
  void sleep_for_ns(int64_t ns) override {
    ++sleeps_;
    const bool spike = spike_every_ > 0 && sleeps_ % spike_every_ == 0;
    now_ += std::max<int64_t>(ns, 0) + (spike ? spike_ns_ : overrun_ns_);
  }
  void relax() override {
    now_ += kRelaxNs;
    spun_ns_ += kRelaxNs;
  }
  void advance_to(int64_t t) { now_ = std::max(now_, t); }
  int64_t spun_ns() const { return spun_ns_; }
  int sleeps() const { return sleeps_; }

 private:
  const int64_t overrun_ns_;
  const int spike_every_;
  const int64_t spike_ns_;
  int64_t now_ = 0;
  int64_t spun_ns_ = 0;
  int sleeps_ = 0;
};

// Done from `done_at` on the fake clock.
class FakeEvent final : public Event {
 public:
  FakeEvent(FakeClock& clock, int64_t done_at) : clock_(clock), done_at_(done_at) {}
  void synchronize() override { clock_.advance_to(done_at_); }
  bool query() override { return clock_.now_ns() >= done_at_; }

 private:
  FakeClock& clock_;
  const int64_t done_at_;
};

// What one wait cost: time spun, sleeps, and how long after the frame was
// done the waiter returned.
struct WaitCost {
  int64_t spun_ns;
  int sleeps;
  int64_t seen_late_ns;
};

// A live source's frame: enqueued at `enqueued` with the device idle,
// done `takes` later.
WaitCost wait_alone(PollingWait& wait, FakeClock& clock, int64_t enqueued, int64_t takes) {
  clock.advance_to(enqueued);
  FakeEvent done(clock, enqueued + takes);
  const int64_t spun = clock.spun_ns();
  const int sleeps = clock.sleeps();
  wait.wait(done, enqueued);
  return {clock.spun_ns() - spun, clock.sleeps() - sleeps, clock.now_ns() - (enqueued + takes)};
}

constexpr int64_t kPeriod = 16'667 * kUs;  // 60 frames/s

// Sleeps end 5 us late: once the waiter has seen that, it wakes the
// smallest margin early (kMinMarginNs, as 5 us + kMarginSlackNs is less),
// not the 100 us it starts with, and spins only through the rest of it.
TEST(PollingWaitTest, AloneWakesByTheOverrunItLearnedNotAFixedMargin) {
  FakeClock clock(5 * kUs);
  PollingWait wait(clock);
  for (int f = 0; f < 40; ++f) {
    const WaitCost cost = wait_alone(wait, clock, f * kPeriod, 1 * kMs);
    if (f < 20) continue;
    EXPECT_LE(cost.spun_ns, PollingWait::kMinMarginNs - 5 * kUs + kRelaxNs) << "frame " << f;
    EXPECT_LE(cost.seen_late_ns, kRelaxNs) << "frame " << f;
    EXPECT_EQ(cost.sleeps, 1) << "frame " << f;
  }
}

// Sleeps end 120 us late (a slow virtual machine): the margin grows past
// that, so the waiter still wakes before the frame is done and sees it at
// once, rather than 20 us late as with a fixed 100 us margin.
TEST(PollingWaitTest, AloneMarginCoversALargeOverrun) {
  FakeClock clock(120 * kUs);
  PollingWait wait(clock);
  for (int f = 0; f < 48; ++f) {
    const WaitCost cost = wait_alone(wait, clock, f * kPeriod, 1 * kMs);
    if (f < 32) continue;
    EXPECT_LE(cost.seen_late_ns, kRelaxNs) << "frame " << f;
    EXPECT_LE(cost.spun_ns, PollingWait::kMarginSlackNs + kRelaxNs) << "frame " << f;
  }
}

// A frame done long before the waiter woke teaches it no more than that it
// took at most until then: the frames after it, which take the usual time
// again, are not spun for from far too early (expecting the next a quarter
// sooner, as the wait did first, had each of the next 32 frames spun for
// from about 250 us before it was done).
TEST(PollingWaitTest, AloneFrameDoneEarlyTeachesNoFigureBelowWhatItTook) {
  FakeClock clock(5 * kUs);
  PollingWait wait(clock);
  int f = 0;
  for (; f < 40; ++f) wait_alone(wait, clock, f * kPeriod, 1 * kMs);
  wait_alone(wait, clock, f++ * kPeriod, 500 * kUs);
  for (int n = 0; n < 20; ++n, ++f) {
    const WaitCost cost = wait_alone(wait, clock, f * kPeriod, 1 * kMs);
    // At most the margin and a short probe's spin (kAloneSpinNs).
    EXPECT_LE(cost.spun_ns, PollingWait::kMinMarginNs + PollingWait::kAloneSpinNs + kRelaxNs)
        << "frame " << n;
    EXPECT_LE(cost.seen_late_ns, kRelaxNs) << "frame " << n;
  }
}

// A first frame ten times slower than the rest (a cold start: modules
// loaded, clocks raised): the frames after it are found done at the first
// look, and each has the next woken for twice the probe earlier, so the
// figure comes down to theirs within a few frames (coming down by the
// margin's slack over the overrun, some 10 us a frame, the frames stayed
// milliseconds late for hundreds of frames).
TEST(PollingWaitTest, AloneFigureFarTooHighComesDownInAFewFrames) {
  FakeClock clock(5 * kUs);
  PollingWait wait(clock);
  wait_alone(wait, clock, 0, 10 * kMs);
  int f = 1;
  for (; f < 20; ++f) wait_alone(wait, clock, f * kPeriod, 1 * kMs);
  for (; f < 40; ++f) {
    const WaitCost cost = wait_alone(wait, clock, f * kPeriod, 1 * kMs);
    EXPECT_LE(cost.seen_late_ns, kRelaxNs) << "frame " << f;
    EXPECT_LE(cost.spun_ns, PollingWait::kMinMarginNs + kRelaxNs) << "frame " << f;
  }
}

// Every 16th sleep overruns 100 us, the others 5 us: the margin follows
// the many (all but the 3 largest of the last 32), not the few, so most
// frames are spun for no more than the smallest margin.
TEST(PollingWaitTest, AloneMarginFollowsMostSleepsNotTheWorst) {
  FakeClock clock(5 * kUs, /*spike_every=*/16, /*spike_ns=*/100 * kUs);
  PollingWait wait(clock);
  std::vector<int64_t> spun;
  for (int f = 0; f < 100; ++f) {
    const WaitCost cost = wait_alone(wait, clock, f * kPeriod, 1 * kMs);
    if (f >= 50) spun.push_back(cost.spun_ns);
  }
  std::sort(spun.begin(), spun.end());
  EXPECT_LE(spun[spun.size() / 2], PollingWait::kMinMarginNs - 5 * kUs + kRelaxNs);
}

// Frames 100, 400 and 1400 us later than the shortest seen (a live 4K
// frame after the GPU idled): the waiter spins kAloneSpinNs past the
// expected time at most, then looks at most kAloneMaxPollNs apart, so it
// sees the frame done within one such interval and a sleep's overrun
// (spinning 200 us past the expected time and then looking 10, 20, 40, 80,
// 160 and 250 us apart, as the wait did first, saw the 400 us one 135 us
// late).
TEST(PollingWaitTest, AloneFrameLaterThanExpectedIsNotSpunThrough) {
  const int64_t overrun = 5 * kUs;
  FakeClock clock(overrun);
  PollingWait wait(clock);
  int f = 0;
  for (; f < 40; ++f) wait_alone(wait, clock, f * kPeriod, 1 * kMs);
  for (const int64_t later : {100 * kUs, 400 * kUs, 1400 * kUs}) {
    const WaitCost cost = wait_alone(wait, clock, f++ * kPeriod, 1 * kMs + later);
    // Spun: the margin (kMinMarginNs here) less the overrun, then
    // kAloneSpinNs past the expected time.
    EXPECT_LE(cost.spun_ns,
              PollingWait::kMinMarginNs - overrun + PollingWait::kAloneSpinNs + kRelaxNs)
        << later / kUs << " us later";
    EXPECT_LE(cost.seen_late_ns, PollingWait::kAloneMaxPollNs + overrun)
        << later / kUs << " us later";
    // The next frame takes the usual time again and is still expected at it.
    const WaitCost next = wait_alone(wait, clock, f++ * kPeriod, 1 * kMs);
    EXPECT_LE(next.seen_late_ns, kRelaxNs) << "after the one " << later / kUs << " us later";
  }
}

// A source faster than the device: frame k is enqueued as the waiter sees
// frame k - 4 done (a ring of 4), and done kLatency after that or
// kSpacing after frame k - 1, whichever is later (the device's pace). The
// waiter looks for each at the learned spacing, sleeping: it keeps the
// device's pace, never spins, and wakes one or two times a frame.
TEST(PollingWaitTest, QueuedFramesKeepTheDevicesPaceSleeping) {
  constexpr int kRing = 4;
  constexpr int64_t kSpacing = 700 * kUs, kLatency = 3 * kSpacing;
  constexpr int kFrames = 400, kMeasured = 200;
  FakeClock clock(5 * kUs);
  PollingWait wait(clock);
  std::vector<int64_t> seen(kFrames), done_at(kFrames);
  int sleeps = 0;
  int64_t spun = 0;
  for (int f = 0; f < kFrames; ++f) {
    const int64_t enqueued = f < kRing ? 0 : seen[f - kRing];
    done_at[f] = std::max(f > 0 ? done_at[f - 1] + kSpacing : 0, enqueued + kLatency);
    FakeEvent done(clock, done_at[f]);
    const int before = clock.sleeps();
    const int64_t spun_before = clock.spun_ns();
    wait.wait(done, enqueued);
    seen[f] = clock.now_ns();
    if (f < kFrames - kMeasured) continue;
    sleeps += clock.sleeps() - before;
    spun += clock.spun_ns() - spun_before;
  }
  const int64_t first = done_at[kFrames - kMeasured - 1];
  EXPECT_LE(done_at[kFrames - 1] - first, kMeasured * kSpacing * 101 / 100);
  EXPECT_EQ(spun, 0);
  EXPECT_LE(sleeps, 2 * kMeasured);
}

}  // namespace
}  // namespace cudaoverlap
