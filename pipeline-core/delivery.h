// Handing finished frames out: waiting for a slot's download in submission
// order and handing it out as an OutputFrame: to on_frame on the engine's
// worker thread, or (EngineConfig::pull) returned to the thread that asks
// (Engine::deliver()). Internal to pipeline-core.
#pragma once

#ifdef __linux__
#include <sys/prctl.h>
#endif

#include <memory>
#include <mutex>
#include <string>

#include "engine_core.h"
#include "polling_wait.h"

namespace cudaoverlap {

// Polling pays where waking is slow and polling cheap: a CUDA event. The
// cpu backend's events wake their waiter at once (a condition variable),
// and its streams are host threads that a polling waiter would compete
// with for the cores.
bool polls(const EngineCore& c);

// A frame taken out of the ring, and what its upload kept alive: to be let
// go without the engine's lock (it may be the producer's buffer).
struct TakenFrame {
  OutputFrame frame;
  std::shared_ptr<void> keep_alive;
};

// Takes the frame at the front of in_flight_ out of the ring: waits for its
// download and returns it, still "being handed out" (worker_busy_ stays
// true, so drain() waits for it) until handed_out(); or, when it failed or
// a flush or stop began, puts the engine in its error state or drops it,
// and returns no frame with worker_busy_ false again. Called with
// `lock` held on c.mutex_, in_flight_ not empty and worker_busy_ false;
// returns with the lock held. On the worker thread, or (EngineConfig::pull)
// in deliver() and drain(): one thread at a time, the one that set
// worker_busy_, which alone uses `polling`.
TakenFrame take_front(const std::shared_ptr<EngineCore>& core, const EngineCallbacks& callbacks,
                      PollingWait& polling, std::unique_lock<std::mutex>& lock);

// The frame take_front() returned is in its consumer's hands: worker_busy_
// false again. `consumer_failure`, when not empty, puts the engine in its
// error state (on_error is called once, without the lock). With `lock`
// held; returns with it held.
void handed_out(EngineCore& c, const EngineCallbacks& callbacks,
                const std::string& consumer_failure, std::unique_lock<std::mutex>& lock);

// take_front(), then the frame to on_frame without the lock: the worker's
// way out, and drain()'s with EngineConfig::pull. True when a frame went.
bool deliver_front(const std::shared_ptr<EngineCore>& core, const EngineCallbacks& callbacks,
                   PollingWait& polling, std::unique_lock<std::mutex>& lock);

// Makes the engine's device current on a thread that hands frames out; a
// failure puts the engine in its error state (reported once). False then.
bool make_current_for_delivery(EngineCore& c, const EngineCallbacks& callbacks);

// The worker thread's loop. Free function over the core so that the thread
// never touches the Engine object itself.
void run_worker(const std::shared_ptr<EngineCore>& core, const EngineCallbacks& callbacks);

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
