// EngineCore's deliverers: the worker, fetch() and drain() (see
// engine_core.h). Each waits for a slot's download in submission order and
// hands the frame out: to on_frame on the worker thread, or, with
// EngineConfig::pull, returned by Engine::deliver().
#include <exception>
#include <string>
#include <utility>

#include "engine_core.h"
#include "kernels/error.h"
#include "timer_slack.h"

namespace cudaoverlap {

bool EngineCore::polls() const {
  return config_.host_wait == HostWait::kPoll && device_->cuda_device() >= 0;
}

TakenFrame EngineCore::take_front(const std::shared_ptr<EngineCore>& core,
                                  const EngineCallbacks& callbacks, PollingWait& polling,
                                  std::unique_lock<std::mutex>& lock) {
  EngineCore& c = *core;
  const int index = c.in_flight_.front();
  Slot& slot = c.slots_[index];
  c.worker_busy_ = true;
  lock.unlock();

  // Barrier "downloaded": the slot's pinned output is complete only when
  // its D2H copy has finished.
  std::string failure;
  bool operations = false;  // the failure is an OperationError
  FrameTiming timing = slot.timing;
  timing.worker_wait.start_ns = host_now_ns();
  bool done_before = false;  // complete when the wait began: when, the event says
  try {
    if (c.polls()) {
      done_before = polling.wait(*slot.events.downloaded, timing.enqueued_ns);
    } else {
      done_before = slot.events.downloaded->query();
      if (!done_before) slot.events.downloaded->synchronize();
    }
  } catch (const Error& e) {
    failure = e.what();
    operations = dynamic_cast<const OperationError*>(&e) != nullptr;
  }
  timing.worker_wait.end_ns = host_now_ns();
  // Read here, off the producer's path: the events are complete, so no
  // call below waits for the device. The slot is still in flight, so its
  // events and timing are not rewritten meanwhile.
  timing.delivered_ns = timing.worker_wait.end_ns;
  // Seen complete by a waiter that waited: then. Complete before anyone
  // looked (the consumer was busy elsewhere): the barrier's own time, whose
  // place on the host clock may be off by the device clock's drift since
  // its anchor, which a waiter's own reading is not.
  timing.ready_ns = timing.delivered_ns;
  if (failure.empty() && done_before && c.config_.timing) {
    try {
      const int64_t at = slot.events.downloaded->completed_at_ns();
      if (at >= 0 && at < timing.ready_ns) timing.ready_ns = at;
    } catch (const Error&) {
      // No time from the device this once: when it was seen will do.
    }
  }
  if (failure.empty() && slot.timed) read_device_times(slot.events, &timing);

  lock.lock();
  if (!failure.empty()) {
    const bool first = c.error_.empty();
    if (first) {
      c.error_ = "frame " + std::to_string(slot.sequence) + " failed: " + failure;
      c.operation_failed_ = operations;
    }
    c.worker_busy_ = false;
    const std::string message = c.error_;
    lock.unlock();
    c.notify_everyone();
    if (first && callbacks.on_error) callbacks.on_error(message);
    lock.lock();
    return {};
  }
  if (c.flushing_ || c.stopping_) {
    // flush_stop()/stop() drop what is in flight, this slot included.
    c.worker_busy_ = false;
    c.idle_.notify_all();
    return {};
  }
  c.in_flight_.pop_front();
  c.last_done_ns_ = timing.delivered_ns;
  c.last_took_ns_ = timing.delivered_ns - timing.enqueued_ns;
  // The consumer may release the frame at once, and the slot be reused by
  // the next submit(): nothing of the slot is read after this.
  TakenFrame taken;
  taken.keep_alive = std::move(slot.keep_alive);
  const ImageRef image = slot.destination.planes[0].data != nullptr
                            ? slot.destination
                            : c.layouts_.output.at(slot.pinned_out->data());
  taken.frame = OutputFrame(core, index, slot.sequence, image, std::move(slot.user), timing);
  return taken;
}

void EngineCore::handed_out(const EngineCallbacks& callbacks, const std::string& consumer_failure,
                            std::unique_lock<std::mutex>& lock) {
  EngineCore& c = *this;
  c.worker_busy_ = false;
  const bool first = !consumer_failure.empty() && c.error_.empty();
  if (first) c.error_ = consumer_failure;
  // Not slot_freed_: a slot is freed by its release(), which notifies.
  if (first)
    c.notify_everyone();
  else
    c.idle_.notify_all();
  if (first && callbacks.on_error) {
    lock.unlock();
    callbacks.on_error(consumer_failure);
    lock.lock();
  }
}

bool EngineCore::deliver_front(const std::shared_ptr<EngineCore>& core,
                               const EngineCallbacks& callbacks, PollingWait& polling,
                               std::unique_lock<std::mutex>& lock) {
  TakenFrame taken = take_front(core, callbacks, polling, lock);
  if (!taken.frame) return false;
  OutputFrame frame = std::move(taken.frame);
  const uint64_t sequence = frame.sequence();
  lock.unlock();
  taken.keep_alive.reset();  // its upload is long done; the producer may reuse it
  std::string consumer_failure;
  try {
    if (callbacks.on_frame) callbacks.on_frame(std::move(frame));
  } catch (const std::exception& e) {
    // A consumer must not throw; if it does, the engine stops cleanly
    // instead of letting the exception end the process.
    consumer_failure =
        std::string("the consumer of frame ") + std::to_string(sequence) + " failed: " + e.what();
  }
  frame.release();  // a consumer that did not take the frame frees it here
  lock.lock();
  core->handed_out(callbacks, consumer_failure, lock);
  return true;
}

OutputFrame EngineCore::fetch(const std::shared_ptr<EngineCore>& core,
                              const EngineCallbacks& callbacks, PollingWait& polling) {
  EngineCore& c = *core;
  std::unique_lock<std::mutex> lock(c.mutex_);
  if (c.worker_busy_) {
    // drain() is handing the next frame out (to on_frame): wait for it, so
    // that whatever comes after this call comes after that frame.
    c.idle_.wait(lock, [&] { return !c.worker_busy_; });
    return OutputFrame();
  }
  if (c.stopping_ || c.flushing_ || !c.error_.empty() || c.in_flight_.empty()) return OutputFrame();
  TakenFrame taken = take_front(core, callbacks, polling, lock);
  if (!taken.frame) return OutputFrame();
  c.handed_out(callbacks, std::string(), lock);
  lock.unlock();
  taken.keep_alive.reset();  // its upload is long done; the producer may reuse it
  return std::move(taken.frame);
}

Status EngineCore::drain(const std::shared_ptr<EngineCore>& core, const EngineCallbacks& callbacks,
                         PollingWait& polling) {
  EngineCore& c = *core;
  if (c.config_.pull) {
    // Hands out, on this thread, whatever no fetch() is taking.
    if (!c.make_current_for_delivery(callbacks)) return Status::kError;
    std::unique_lock<std::mutex> lock(c.mutex_);
    for (;;) {
      c.idle_.wait(
          lock, [&] { return !c.worker_busy_ || c.flushing_ || c.stopping_ || !c.error_.empty(); });
      if (!c.error_.empty()) return Status::kError;
      if (c.flushing_ || c.stopping_) return Status::kFlushing;
      if (c.in_flight_.empty()) return Status::kOk;
      deliver_front(core, callbacks, polling, lock);
    }
  }
  std::unique_lock<std::mutex> lock(c.mutex_);
  c.idle_.wait(lock, [&] {
    return (c.in_flight_.empty() && !c.worker_busy_) || c.flushing_ || c.stopping_ ||
           !c.error_.empty();
  });
  if (!c.error_.empty()) return Status::kError;
  if (c.flushing_ || c.stopping_) return Status::kFlushing;
  return Status::kOk;
}

bool EngineCore::make_current_for_delivery(const EngineCallbacks& callbacks) {
  EngineCore& c = *this;
  try {
    c.device_->make_current();
    return true;
  } catch (const Error& e) {
    bool first;
    {
      std::lock_guard<std::mutex> lock(c.mutex_);
      first = c.error_.empty();
      if (first) c.error_ = e.what();
    }
    c.notify_everyone();
    if (first && callbacks.on_error) callbacks.on_error(e.what());
    return false;
  }
}

void EngineCore::run_worker(const std::shared_ptr<EngineCore>& core,
                            const EngineCallbacks& callbacks) {
  EngineCore& c = *core;
  try {
    c.device_->make_current();
  } catch (const Error& e) {
    std::lock_guard<std::mutex> lock(c.mutex_);
    c.error_ = e.what();
  }
#ifdef __linux__
  // Named for top -H and profilers (it would otherwise bear the name of the
  // thread that started the engine, e.g. upstream's streaming thread).
  prctl(PR_SET_NAME, "co-worker", 0UL, 0UL, 0UL);
#endif
  TimerSlack(c.polls()).keep();
  PollingWait polling;
  std::unique_lock<std::mutex> lock(c.mutex_);
  for (;;) {
    c.queued_.wait(lock, [&] {
      return c.stopping_ || (!c.in_flight_.empty() && !c.flushing_ && c.error_.empty());
    });
    if (c.stopping_) return;
    deliver_front(core, callbacks, polling, lock);
  }
}

}  // namespace cudaoverlap
