// The ordered hand-over between the engine and the element's src pad task.
//
// Finished frames arrive from the engine's worker thread (in submission
// order); serialized events (SEGMENT, TAG, GAP, CAPS, EOS, custom ones)
// arrive from the streaming thread. An event that arrived after input
// frame N must go downstream after output frame N, so each event is tagged
// with the number of frames submitted before it, and pop() hands it out only
// once that many frames have been handed out. This keeps events in place
// without draining the engine for each one (a drain per event would empty
// the pipeline on every TAG or custom event).
//
// The queue also holds the element's one flow state: GST_FLOW_OK while
// frames flow, GST_FLOW_FLUSHING while a flush runs or the pads are
// inactive, and downstream's answer (EOS, NOT_LINKED, an error) once a push
// returned it, so that chain() can return it to upstream on the next buffer.
// Whatever is not OK stops the queue: queued frames are dropped and pop()
// gives nothing until restart().
#pragma once

#include <gst/gst.h>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>

#include "engine.h"

namespace cudaoverlap {

// One thing for the src pad task to push: a frame or an event (owned).
struct OutputItem {
  OutputFrame frame;
  GstEvent* event = nullptr;
};

class OutputQueue {
 public:
  OutputQueue() = default;
  ~OutputQueue();
  OutputQueue(const OutputQueue&) = delete;
  OutputQueue& operator=(const OutputQueue&) = delete;

  // Engine worker thread (on_frame). The frame is dropped at once (its slot
  // freed) when it belongs to an older epoch or the flow is not OK.
  void push_frame(OutputFrame frame, uint64_t epoch);
  // Engine worker thread: a frame of `epoch` that will never come (lost
  // with a failed device) takes its place in the order all the same, so
  // that the events behind it go out.
  void push_lost(uint64_t epoch);

  // Streaming thread. Queues `event` to go out after `after_frames` frames
  // of the current epoch, and returns true: the queue owns it. While the flow
  // is not OK, sticky events other than SEGMENT and EOS are kept (for after
  // a restart) and others are refused: false, and the caller keeps `event`.
  bool push_event(GstEvent* event, uint64_t after_frames);

  // Src pad task. Blocks until an item is due; false when flushing.
  bool pop(OutputItem* item);

  // With an engine that is pulled (MultiEngine::pulls()): the streaming
  // thread notes each frame it submitted, and the src pad task, rather than
  // waiting for the frame to come, fetches it (MultiEngine::deliver()).
  // pop_or_pull() is pop() that also returns, with kPull, while frames were
  // noted that no fetch has found missing since: `ticket` then says how far
  // the notes went. The task then fetches, and hands over what it got:
  // - take_pulled(): the frame takes its place in the order, before any
  //   frame drain() queued while it was fetched (those left the engine
  //   after it), and what is due next (the frame, or an event due before
  //   it) comes back in `item` to be pushed, as from pop(): true.
  //   False: nothing to push (the frame dropped as push_frame() drops it,
  //   or the flow not OK).
  // - pulled_nothing(ticket): no frame; no more fetching until the next
  //   note.
  // From kPull until either, the task counts as holding an item
  // (wait_empty()).
  enum class Next { kItem, kPull, kStopped };
  void note_submitted();                                                  // streaming thread
  Next pop_or_pull(OutputItem* item, uint64_t* ticket);                   // src pad task
  bool take_pulled(OutputFrame frame, uint64_t epoch, OutputItem* item);  // src pad task
  void pulled_nothing(uint64_t ticket);                                   // src pad task

  // Src pad task, after pushing what pop() gave: `flow` is downstream's
  // answer (OK for events). A non-OK flow becomes the flow state (unless one
  // is set already) and stops the queue. Returns the EOS that was still
  // waiting in the queue (transfer full), or null: upstream has finished and
  // will not see this flow return, so the task sends that EOS on itself.
  GstEvent* done(GstFlowReturn flow);

  // Any thread: as done(flow) with a failure found elsewhere (engine error).
  void fail(GstFlowReturn flow);

  // Any thread: the flow state becomes FLUSHING (whatever it was); pop() and
  // wait_empty() return false from now on, queued frames are dropped and
  // only sticky events stay (see push_event).
  void set_flushing();

  // Streaming thread, with the src task paused or not started (FLUSH_STOP,
  // pad activation, a new segment after downstream's EOS): a new epoch
  // starts, the flow state is OK again and kept sticky events go out before
  // anything else. Returns the new epoch.
  uint64_t restart();

  // Streaming thread: blocks until everything queued has been pushed
  // downstream (for serialized queries). False when the flow is not OK.
  bool wait_empty();
  // Streaming thread, before queueing a frame that holds no slot (passed
  // through): blocks while `most` frames or more wait to be pushed, the
  // backpressure a ring gives engine frames. False when the flow is not
  // OK.
  bool wait_room(size_t most);

  // Streaming thread: the epoch frames submitted now belong to.
  uint64_t epoch() const;
  // Any thread: the flow state (see the top of this file).
  GstFlowReturn flow() const;

  // Owner, with streaming and the task stopped: drops everything.
  void clear();

 private:
  struct PendingEvent {
    uint64_t after_frames;
    GstEvent* event;
  };

  void push(OutputFrame frame, uint64_t epoch, bool lost);
  // pop() and pop_or_pull(): waits with `lock` held on mutex_.
  Next next_locked(std::unique_lock<std::mutex>& lock, OutputItem* item, bool pull,
                   uint64_t* ticket);
  // Called with mutex_ held; moves what is dropped into `dropped` so that
  // frames are released and events unreffed after the lock is let go.
  void flush_locked(std::deque<OutputFrame>* dropped_frames, std::deque<GstEvent*>* dropped_events);
  static void dispose(std::deque<OutputFrame>* frames, std::deque<GstEvent*>* events);

  // Lock order: the element's engine lock (if held) before mutex_; no other
  // lock is taken while mutex_ is held. Frames are released and events
  // unreffed outside it, since both can call into other elements.
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  // Guarded by mutex_.
  std::deque<OutputFrame> frames_;
  std::deque<bool> lost_;  // one per entry of frames_: a push_lost() place, no frame
  std::deque<PendingEvent> events_;
  uint64_t frames_popped_ = 0;  // this epoch
  uint64_t epoch_ = 0;
  GstFlowReturn flow_ = GST_FLOW_FLUSHING;  // until the first restart()
  bool busy_ = false;                       // the task holds an item it has not pushed yet
  // Frames noted by note_submitted() (any epoch), and how many of those a
  // fetch found nothing after: a fetch is due while noted_ > fetched_.
  uint64_t noted_ = 0;
  uint64_t fetched_ = 0;
};

}  // namespace cudaoverlap
