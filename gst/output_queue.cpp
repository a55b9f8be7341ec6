// See output_queue.h.
#include "output_queue.h"

#include <algorithm>
#include <utility>

namespace cudaoverlap {
namespace {

// Sticky events that describe the stream rather than a position in it; they
// stay valid across a flush (as in GStreamer's queue element).
bool survives_flush(GstEvent* event) {
  return GST_EVENT_IS_STICKY(event) && GST_EVENT_TYPE(event) != GST_EVENT_SEGMENT &&
         GST_EVENT_TYPE(event) != GST_EVENT_EOS;
}

}  // namespace

OutputQueue::~OutputQueue() { clear(); }

void OutputQueue::dispose(std::deque<OutputFrame>* frames, std::deque<GstEvent*>* events) {
  frames->clear();
  for (GstEvent* event : *events) gst_event_unref(event);
  events->clear();
}

void OutputQueue::flush_locked(std::deque<OutputFrame>* dropped_frames,
                               std::deque<GstEvent*>* dropped_events) {
  for (OutputFrame& frame : frames_) dropped_frames->push_back(std::move(frame));
  frames_.clear();
  lost_.clear();
  std::deque<PendingEvent> kept;
  for (PendingEvent& pending : events_) {
    if (survives_flush(pending.event))
      kept.push_back(PendingEvent{0, pending.event});
    else
      dropped_events->push_back(pending.event);
  }
  events_ = std::move(kept);
}

void OutputQueue::push_frame(OutputFrame frame, uint64_t epoch) {
  push(std::move(frame), epoch, false);
}

void OutputQueue::push_lost(uint64_t epoch) { push(OutputFrame(), epoch, true); }

void OutputQueue::push(OutputFrame frame, uint64_t epoch, bool lost) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (flow_ == GST_FLOW_OK && epoch == epoch_) {
      frames_.push_back(std::move(frame));
      lost_.push_back(lost);
      changed_.notify_all();
      return;
    }
  }
  frame.release();  // outside the lock: it drops the input buffer's reference
}

bool OutputQueue::push_event(GstEvent* event, uint64_t after_frames) {
  std::lock_guard<std::mutex> lock(mutex_);
  const bool running = flow_ == GST_FLOW_OK;
  if (!running && !survives_flush(event)) return false;
  events_.push_back(PendingEvent{running ? after_frames : 0, event});
  changed_.notify_all();
  return true;
}

bool OutputQueue::pop(OutputItem* item) {
  uint64_t ticket = 0;
  std::unique_lock<std::mutex> lock(mutex_);
  return next_locked(lock, item, false, &ticket) == Next::kItem;
}

OutputQueue::Next OutputQueue::pop_or_pull(OutputItem* item, uint64_t* ticket) {
  std::unique_lock<std::mutex> lock(mutex_);
  return next_locked(lock, item, true, ticket);
}

void OutputQueue::note_submitted() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++noted_;
  }
  changed_.notify_all();
}

bool OutputQueue::take_pulled(OutputFrame frame, uint64_t epoch, OutputItem* item) {
  {
    std::unique_lock<std::mutex> lock(mutex_);
    busy_ = false;
    if (flow_ == GST_FLOW_OK && epoch == epoch_) {
      // First: frames_ was empty when the fetch began (pop_or_pull() gives
      // queued frames before it asks for one), and what drain() queued
      // since came out of the engine after this frame.
      frames_.push_front(std::move(frame));
      lost_.push_front(false);
      uint64_t unused = 0;
      return next_locked(lock, item, false, &unused) == Next::kItem;
    }
    changed_.notify_all();
  }
  frame.release();  // outside the lock: it drops the input buffer's reference
  return false;
}

void OutputQueue::pulled_nothing(uint64_t ticket) {
  std::lock_guard<std::mutex> lock(mutex_);
  busy_ = false;
  fetched_ = std::max(fetched_, ticket);
  changed_.notify_all();
}

OutputQueue::Next OutputQueue::next_locked(std::unique_lock<std::mutex>& lock, OutputItem* item,
                                           bool pull, uint64_t* ticket) {
  for (;;) {
    if (flow_ != GST_FLOW_OK) return Next::kStopped;
    if (!events_.empty() && events_.front().after_frames <= frames_popped_) {
      item->event = events_.front().event;
      events_.pop_front();
      busy_ = true;
      return Next::kItem;
    }
    if (!frames_.empty() && lost_.front()) {
      // A lost frame (push_lost): counted, nothing to push; wait_empty()
      // may be waiting for it to go.
      frames_.pop_front();
      lost_.pop_front();
      ++frames_popped_;
      changed_.notify_all();
      continue;
    }
    if (!frames_.empty()) {
      item->frame = std::move(frames_.front());
      frames_.pop_front();
      lost_.pop_front();
      ++frames_popped_;
      busy_ = true;
      changed_.notify_all();  // wait_room() may be waiting for it to go
      return Next::kItem;
    }
    if (pull && noted_ > fetched_) {
      *ticket = noted_;
      busy_ = true;  // fetching: take_pulled() ends it
      return Next::kPull;
    }
    changed_.wait(lock);
  }
}

GstEvent* OutputQueue::done(GstFlowReturn flow) {
  std::deque<OutputFrame> dropped_frames;
  std::deque<GstEvent*> dropped_events;
  GstEvent* eos = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    busy_ = false;
    if (flow != GST_FLOW_OK && flow_ == GST_FLOW_OK) {
      for (auto it = events_.begin(); it != events_.end(); ++it)
        if (GST_EVENT_TYPE(it->event) == GST_EVENT_EOS) {
          eos = it->event;
          events_.erase(it);
          break;
        }
      flow_ = flow;
      flush_locked(&dropped_frames, &dropped_events);
    }
    changed_.notify_all();
  }
  dispose(&dropped_frames, &dropped_events);
  return eos;
}

void OutputQueue::fail(GstFlowReturn flow) {
  std::deque<OutputFrame> dropped_frames;
  std::deque<GstEvent*> dropped_events;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (flow_ == GST_FLOW_OK) flow_ = flow;
    flush_locked(&dropped_frames, &dropped_events);
    changed_.notify_all();
  }
  dispose(&dropped_frames, &dropped_events);
}

void OutputQueue::set_flushing() {
  std::deque<OutputFrame> dropped_frames;
  std::deque<GstEvent*> dropped_events;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    flow_ = GST_FLOW_FLUSHING;
    flush_locked(&dropped_frames, &dropped_events);
    changed_.notify_all();
  }
  dispose(&dropped_frames, &dropped_events);
}

uint64_t OutputQueue::restart() {
  std::deque<OutputFrame> dropped_frames;
  uint64_t epoch;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    dropped_frames = std::move(frames_);
    frames_.clear();
    lost_.clear();
    for (PendingEvent& pending : events_) pending.after_frames = 0;
    frames_popped_ = 0;
    epoch = ++epoch_;
    busy_ = false;
    flow_ = GST_FLOW_OK;
    changed_.notify_all();
  }
  dropped_frames.clear();
  return epoch;
}

bool OutputQueue::wait_empty() {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(
      lock, [&] { return flow_ != GST_FLOW_OK || (frames_.empty() && events_.empty() && !busy_); });
  return flow_ == GST_FLOW_OK;
}

bool OutputQueue::wait_room(size_t most) {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [&] { return flow_ != GST_FLOW_OK || frames_.size() < most; });
  return flow_ == GST_FLOW_OK;
}

uint64_t OutputQueue::epoch() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return epoch_;
}

GstFlowReturn OutputQueue::flow() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return flow_;
}

void OutputQueue::clear() {
  std::deque<OutputFrame> dropped_frames;
  std::deque<GstEvent*> dropped_events;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    flow_ = GST_FLOW_FLUSHING;
    dropped_frames = std::move(frames_);
    frames_.clear();
    lost_.clear();
    for (PendingEvent& pending : events_) dropped_events.push_back(pending.event);
    events_.clear();
    changed_.notify_all();
  }
  dispose(&dropped_frames, &dropped_events);
}

}  // namespace cudaoverlap
