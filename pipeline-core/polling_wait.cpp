// HostWait::kPoll's wait; see polling_wait.h.
#include "polling_wait.h"

#include <algorithm>
#include <chrono>
#include <thread>

namespace cudaoverlap {
namespace {

class HostWaitClock final : public WaitClock {
 public:
  int64_t now_ns() override { return host_now_ns(); }
  void sleep_for_ns(int64_t ns) override {
    std::this_thread::sleep_for(std::chrono::nanoseconds(ns));
  }
  // A few hundred nanoseconds between two looks without sleeping, leaving
  // the core's other hardware thread and the driver's locks alone.
  void relax() override {
    for (int i = 0; i < kSpinPauses; ++i) {
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#elif defined(__aarch64__)
      asm volatile("yield");
#endif
    }
  }

 private:
  static constexpr int kSpinPauses = 64;
};

}  // namespace

WaitClock& host_wait_clock() {
  // Never destroyed: a thread may still wait while the process exits.
  static HostWaitClock* const clock = new HostWaitClock;
  return *clock;
}

bool PollingWait::wait(Event& done, int64_t enqueued_ns) {
  if (done.query()) {
    previous_done_ns_ = -1;  // done some time ago: not a time to learn from
    return true;
  }
  const bool alone = previous_done_ns_ < 0 || enqueued_ns >= previous_done_ns_;
  int64_t expected = -1;
  if (alone && alone_.size() > 0) expected = enqueued_ns + alone_.min();
  if (!alone && spacing_.size() > 0) expected = previous_done_ns_ + spacing_.median();
  int64_t seen = -1;  // when it was seen done, if that is when it completed
  // Alone, after frames found done at the first look: wake earlier by a
  // probe that doubles with each such frame, up to half the time expected
  // from the enqueueing.
  int64_t wake = expected;
  int64_t probe = 0;
  if (alone && expected >= 0) {
    if (early_streak_ > 0)
      probe = std::min(kPollNs << std::min(early_streak_, kMaxProbeDoublings),
                       (expected - enqueued_ns) / 2);
    wake = expected - alone_margin() - probe;
  }
  if (expected >= 0 && wake > clock_.now_ns()) {
    clock_.sleep_for_ns(wake - clock_.now_ns());
    if (alone) late_.add(clock_.now_ns() - wake);
  }
  if (expected >= 0 && done.query()) {
    // Done before the waiter woke, by an unknown time.
    if (alone) {
      // Woken before the expected time: the frame took at most until now,
      // which is what it learns, never a figure below what a frame took.
      // (Expecting it a quarter sooner, as this did first, put a figure
      // far below the real one into the window: every frame of the next
      // kWindow then woke hundreds of microseconds early.) Woken after it
      // (a sleep that overran the margin): the frame may have been done
      // just at the expected time, and nothing is learned. Either way the
      // next frame is woken for a probe earlier, twice the last one, so
      // that the figure comes down in a few frames however far above the
      // frames' time it was (a slow first frame, a cheaper kernel), rather
      // than by what the margin exceeds the overrun (some 10 us) a frame.
      const int64_t now = clock_.now_ns();
      if (now <= expected) alone_.add(now - enqueued_ns);
      early_streak_ = std::min(early_streak_ + 1, kMaxProbeDoublings);
      previous_done_ns_ = now;
      return false;
    }
    // Queued: one look's interval sooner, so that the median settles where
    // about half the first looks find the frame done.
    seen = std::max(previous_done_ns_, wake - kPollNs);
  } else {
    bool is_done = false;
    if (alone) early_streak_ = 0;  // now learns when it completes
    // Spinning from a long probe's wake-up would be spinning through most
    // of the frame when the figure was far off: such a frame is looked for
    // sleeping.
    if (alone && expected >= 0 && probe <= kAloneSpinNs) {
      // Looks back to back, a few hundred nanoseconds apart, without giving
      // up the core.
      const int64_t until = expected + kAloneSpinNs;
      while (!(is_done = done.query()) && clock_.now_ns() < until) clock_.relax();
    }
    // Each look waits twice as long as the one before: a few looks when the
    // expectation was early, fewer and fewer when it was far off or there
    // was none (alone with one: never more than kAloneMaxPollNs apart, as
    // each wait adds to the frame's latency).
    const int64_t max_interval = alone && expected >= 0 ? kAloneMaxPollNs : kMaxPollNs;
    for (int64_t interval = kPollNs; !is_done && !(is_done = done.query());
         interval = std::min(interval * 2, max_interval))
      clock_.sleep_for_ns(interval);
    seen = clock_.now_ns();
  }
  if (alone)
    alone_.add(seen - enqueued_ns);
  else
    spacing_.add(seen - previous_done_ns_);
  previous_done_ns_ = seen;
  return false;
}

int64_t PollingWait::alone_margin() const {
  if (late_.size() < kMinLate) return kAloneMarginNs;
  return std::clamp(late_.at_share(7, 8) + kMarginSlackNs, kMinMarginNs, kMaxMarginNs);
}

void PollingWait::Window::add(int64_t value) {
  values_[next_] = value;
  next_ = (next_ + 1) % kWindow;
  count_ = std::min(count_ + 1, kWindow);
}

int64_t PollingWait::Window::min() const { return *std::min_element(values_, values_ + count_); }

int64_t PollingWait::Window::at_share(int num, int den) const {
  int64_t sorted[kWindow];
  std::copy(values_, values_ + count_, sorted);
  const int k = std::min(count_ - 1, count_ * num / den);
  std::nth_element(sorted, sorted + k, sorted + count_);
  return sorted[k];
}

}  // namespace cudaoverlap
