// How the engine waits for a frame's download with HostWait::kPoll: timed
// sleeps and looks at the event (PollingWait), on a clock that tests can
// replace (WaitClock).
#pragma once

#include <cstdint>

#include "device.h"

namespace cudaoverlap {

// The time, sleeps and spins PollingWait uses: the host's
// (host_wait_clock()), or a test's, which runs on a clock of its own.
class WaitClock {
 public:
  virtual ~WaitClock() = default;
  virtual int64_t now_ns() = 0;  // host_now_ns() on the host's clock
  virtual void sleep_for_ns(int64_t ns) = 0;
  virtual void relax() = 0;  // a moment between two looks without sleeping
};

// The steady clock, std::this_thread::sleep_for, and a few dozen pause
// instructions.
WaitClock& host_wait_clock();

// The engine's HostWait::kPoll: sleeps until shortly before a frame's
// download is expected to be done, then looks at its event, so that it
// neither spins through the frame (a core per engine) nor depends on the
// driver's interrupt-driven wake-up (tens to hundreds of microseconds after
// an idle spell). Expected when, from what the waiter saw before (the last
// kWindow of each):
// - a frame that found the pipeline idle (enqueued after the one before it
//   was done) takes `alone` from being enqueued, the shortest seen: a live
//   source's case, where a frame's stages vary little;
// - a frame queued behind another is done `spacing` after it, the median:
//   the case of a source faster than the device, where consecutive
//   completions vary more as neighbouring frames share the link, and the
//   shortest had the waiter look too early (some 7 times a frame).
// How it looks then depends on which:
// - alone, the frame's latency is what counts and frames are far apart (a
//   live source): it wakes early by a margin, the overrun that all but the
//   3 largest of its last kWindow sleeps to an expected time stayed within,
//   plus kMarginSlackNs, within kMinMarginNs..kMaxMarginNs (kAloneMarginNs
//   until kMinLate were seen), and looks without sleeping until the frame
//   is done, for at most kAloneSpinNs after the expected time. A frame
//   later than that is looked for after kPollNs, twice that, ... up to
//   kAloneMaxPollNs apart: a wake-up a look rather than a spinning core.
//   A frame found done at the first look teaches that it took at most
//   until then (if that was before the expected time), and has the next
//   frame woken for a probe earlier still (kPollNs, doubling with each
//   such frame, at most half the time expected from its enqueueing), and
//   looked for sleeping when the probe is longer than kAloneSpinNs, so
//   that a figure far too high (a slow first frame, a cheaper kernel)
//   comes down in a few frames without a figure below the truth ever
//   entering the window.
//   How late a sleep ends depends on the machine (measured with 1 us timer
//   slack: 5-25 us typically on a GPU machine's virtual machine, p99 up to
//   150 us, more after longer sleeps), and a live 4K frame on a GPU that
//   idled between frames often comes a few hundred microseconds after the
//   shortest seen: with a fixed 100 us margin and 200 us of spinning past
//   the expected time, spinning was most of what such a frame cost the
//   waiting thread;
// - queued, the host time per frame is what counts (the source is faster
//   than the device, the engine's rate is the device's, and ring slack
//   absorbs a late look): it wakes at the expected time and sleeps between
//   looks, so that a frame costs one or two wake-ups (each a context
//   switch, and a look that takes the driver's locks from the producer).
// A wait that found the event not yet done learns when the work really
// completed (give or take one look); one that found it done learns a bound
// (alone) or the expected time less a look's interval (queued). With
// nothing to expect yet it looks after kPollNs, twice that each time, up
// to kMaxPollNs apart. It never blocks in the driver: an event that a
// thread may block on (cudaEventBlockingSync) has the driver's own event
// thread woken for every frame, whoever waits (measured: about a tenth of
// the process's CPU time flat out), so the engine makes its events as for
// HostWait::kSpin.
// One thread at a time (the worker, or whoever delivers).
class PollingWait {
 public:
  explicit PollingWait(WaitClock& clock = host_wait_clock()) : clock_(clock) {}

  // Returns once `done` has completed; `enqueued_ns` is when its frame was
  // enqueued (host_now_ns()). True when it had completed before the wait
  // began (found done at the first look: when is unknown). Throws what
  // done.query() throws.
  bool wait(Event& done, int64_t enqueued_ns);

  // Alone: wake this much before the expected time (the margin), and look
  // without sleeping until kAloneSpinNs after it.
  static constexpr int64_t kAloneMarginNs = 100'000;  // until kMinLate sleeps were seen
  static constexpr int64_t kMarginSlackNs = 10'000;
  static constexpr int64_t kMinMarginNs = 20'000;
  static constexpr int64_t kMaxMarginNs = 250'000;
  static constexpr int kMinLate = 8;
  static constexpr int64_t kAloneSpinNs = 50'000;
  // Then look after kPollNs, twice as long each time, up to kMaxPollNs
  // (kAloneMaxPollNs alone).
  static constexpr int64_t kPollNs = 10'000;
  static constexpr int64_t kMaxPollNs = 250'000;
  static constexpr int64_t kAloneMaxPollNs = 40'000;
  // A probe is at most kPollNs << kMaxProbeDoublings.
  static constexpr int kMaxProbeDoublings = 20;

 private:
  // The last kWindow figures.
  class Window {
   public:
    void add(int64_t value);
    int size() const { return count_; }
    int64_t min() const;
    int64_t median() const { return at_share(1, 2); }
    // The figure at index size() * num / den of the sorted figures (at
    // most the last): 7, 8 is the 29th of 32, the 8th of 8.
    int64_t at_share(int num, int den) const;

   private:
    static constexpr int kWindow = 32;
    int64_t values_[kWindow] = {};
    int next_ = 0;
    int count_ = 0;
  };

  int64_t alone_margin() const;

  WaitClock& clock_;
  Window alone_;
  Window spacing_;
  Window late_;                    // how long after its time each alone sleep ended
  int64_t previous_done_ns_ = -1;  // when the last frame waited for completed, as far as known
  int early_streak_ = 0;           // alone frames found done at the first look in a row
};

}  // namespace cudaoverlap
