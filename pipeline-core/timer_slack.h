// Tight timer slack for the threads that hand frames out (EngineCore's
// deliverers, delivery.cpp). Internal to pipeline-core.
#pragma once

#ifdef __linux__
#include <sys/prctl.h>
#endif

namespace cudaoverlap {

// Sleeps of HostWait::kPoll end within a microsecond of their time, not the
// default 50 later (the thread's timer slack). The worker's for good; a
// thread that only lends itself (deliver(): the consumer's, e.g. a
// GStreamer pad task from a pool other elements use too) gets its own back
// when the TimerSlack goes.
class TimerSlack {
 public:
  explicit TimerSlack(bool tighten) {
#ifdef __linux__
    if (!tighten) return;
    const int previous = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
    if (previous < 0 || previous == kSlackNs) return;
    if (prctl(PR_SET_TIMERSLACK, static_cast<unsigned long>(kSlackNs), 0, 0, 0) == 0)
      previous_ = previous;
#else
    (void)tighten;
#endif
  }
  ~TimerSlack() { restore(); }
  void keep() { previous_ = -1; }  // the thread keeps the tight slack
  TimerSlack(const TimerSlack&) = delete;
  TimerSlack& operator=(const TimerSlack&) = delete;

 private:
  void restore() {
#ifdef __linux__
    if (previous_ > 0) prctl(PR_SET_TIMERSLACK, static_cast<unsigned long>(previous_), 0, 0, 0);
#endif
    previous_ = -1;
  }
  static constexpr int kSlackNs = 1000;
  int previous_ = -1;
};

}  // namespace cudaoverlap
