#include "delivery.h"

#include <exception>
#include <string>
#include <utility>

#include "kernels/error.h"

namespace cudaoverlap {

bool polls(const EngineCore& c) {
  return c.config_.host_wait == HostWait::kPoll && c.device_->cuda_device() >= 0;
}

TakenFrame take_front(const std::shared_ptr<EngineCore>& core, const EngineCallbacks& callbacks,
                      PollingWait& polling, std::unique_lock<std::mutex>& lock) {
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
    if (polls(c)) {
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
  taken.frame =
      OutputFrame(core, index, slot.sequence, c.layouts_.output.at(slot.pinned_out->data()),
                  std::move(slot.user), timing);
  return taken;
}

void handed_out(EngineCore& c, const EngineCallbacks& callbacks,
                const std::string& consumer_failure, std::unique_lock<std::mutex>& lock) {
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

bool deliver_front(const std::shared_ptr<EngineCore>& core, const EngineCallbacks& callbacks,
                   PollingWait& polling, std::unique_lock<std::mutex>& lock) {
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
  handed_out(*core, callbacks, consumer_failure, lock);
  return true;
}

bool make_current_for_delivery(EngineCore& c, const EngineCallbacks& callbacks) {
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

void run_worker(const std::shared_ptr<EngineCore>& core, const EngineCallbacks& callbacks) {
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
  TimerSlack(polls(c)).keep();
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
