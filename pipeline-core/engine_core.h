// What an engine shares with its worker and its OutputFrames, and what
// outlives the Engine while consumers still hold frames: the device, the
// slots, the streams, and the ring's state under one lock. Internal to
// pipeline-core: engine_core.cpp (the ring's state), delivery.cpp (handing
// frames out) and engine.cpp (the Engine shell).
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine.h"
#include "graph_cache.h"
#include "polling_wait.h"
#include "slot_pass.h"
#include "slot_ring.h"

namespace cudaoverlap {

// A frame taken out of the ring, and what its upload kept alive: to be let
// go without the engine's lock (it may be the producer's buffer).
struct TakenFrame {
  OutputFrame frame;
  std::shared_ptr<void> keep_alive;
};

class EngineCore {
 public:
  EngineCore(std::shared_ptr<Device> device, const EngineConfig& config);
  // Drains the streams first, so no device work still touches the buffers
  // and events freed after them.
  ~EngineCore();

  // Every buffer, event and stream; prepares the operation's workspace.
  // Throws Error naming what could not be had. Once, before the worker.
  void allocate();
  // Waits for everything enqueued on the streams; failures are the error
  // state's already.
  void synchronize_streams() noexcept;

  // --- The producer (submit) -----------------------------------------------

  // Waits for a free slot (backpressure) and takes it for `frame`: its
  // references and `operation` noted in the slot, `*sequence` the next of
  // `*next_sequence`. `*alone`: nothing else in flight and the engine idle
  // long enough for a graph launch (EngineConfig::graphs_idle). Sets
  // timing->wait_slot.end_ns. kOk with `*index`, or why not.
  Status take_slot(InputFrame& frame, const std::shared_ptr<const Operation>& operation,
                   uint64_t* next_sequence, FrameTiming* timing, int* index, uint64_t* sequence,
                   bool* alone);
  // EngineConfig::host_in_place on a device whose memory is the host's:
  // frames are read and written where they lie.
  bool host_in_place() const {
    return config_.host_in_place && device_->host_memory_is_device_memory();
  }
  // The slot's device work is enqueued: it goes in flight, in order, with
  // its host timing, and the worker is woken.
  void enqueued(int index, const FrameTiming& timing, bool timed);
  // A failure: the first becomes the error state (`operation`: it came from
  // the operation itself) and wakes every waiter. Returns the error state's
  // message, the first failure's.
  std::string fail(const std::string& message, bool operation);

  // --- Handing frames out (delivery.cpp) -----------------------------------

  // The worker thread's loop, over the core alone (never the Engine).
  static void run_worker(const std::shared_ptr<EngineCore>& core, const EngineCallbacks& callbacks);
  // EngineConfig::pull, Engine::deliver(): the next frame, returned; none at
  // once when none is in flight, or flushing, stopped or failed, and none
  // after a frame drain() was handing out meanwhile went.
  static OutputFrame fetch(const std::shared_ptr<EngineCore>& core,
                           const EngineCallbacks& callbacks, PollingWait& polling);
  // Engine::drain(): until every submitted frame was handed out. With
  // EngineConfig::pull it hands to on_frame, on this thread, what no
  // fetch() is taking.
  static Status drain(const std::shared_ptr<EngineCore>& core, const EngineCallbacks& callbacks,
                      PollingWait& polling);
  // Makes the device current on a thread that hands frames out; a failure
  // puts the engine in its error state (reported once). False then.
  bool make_current_for_delivery(const EngineCallbacks& callbacks);
  // Whether a deliverer polls for the download: HostWait::kPoll, on CUDA.
  // Polling pays where waking is slow and polling cheap: a CUDA event. The
  // cpu backend's events wake their waiter at once (a condition variable),
  // and its streams are host threads that a polling waiter would compete
  // with for the cores.
  bool polls() const;

  // --- Flush and stop, slots coming back ------------------------------------

  // A slot back to the ring (OutputFrame::release). Any thread.
  void release(int slot) noexcept;
  // Flushing: a blocked take_slot() returns, and nothing is delivered.
  void begin_flush();
  // Drops what is in flight once its device work is done, frees the slots,
  // and takes frames again.
  void end_flush();
  // Stopping: every waiter returns, the worker ends.
  void begin_stop();
  // After the streams are synchronised: drops every slot's references.
  void drop_references();

  int free_slots() const;
  std::string error() const;
  bool operation_failed() const;

  // Resources: written in allocate() before any thread but the owner's
  // uses them, then read-only; a slot's per-frame notes are guarded by the
  // ring's lock (slot_ring.h).
  std::shared_ptr<Device> device_;
  EngineConfig config_;
  SlotLayouts layouts_;
  SlotPass pass_;
  std::vector<Slot> slots_;
  GraphCache graphs_;  // the producer's alone, but for its counters
  // EngineCallbacks::on_slot_freed, set before the worker starts.
  std::function<void()> on_slot_freed_;

 private:
  // Flushing, stopping and errors concern everyone.
  void notify_everyone() {
    slot_freed_.notify_all();
    queued_.notify_all();
    idle_.notify_all();
  }
  // The deliverer's steps (delivery.cpp). take_front(): the frame at the
  // front of in_flight_ out of the ring, once downloaded, still "being
  // handed out" (worker_busy_) until handed_out(); or no frame, with the
  // error state set or the frame dropped (flushing, stopping). Called with
  // `lock` held, in_flight_ not empty and worker_busy_ false; returns with
  // it held. One deliverer at a time (the one that set worker_busy_),
  // which alone uses `polling`.
  static TakenFrame take_front(const std::shared_ptr<EngineCore>& core,
                               const EngineCallbacks& callbacks, PollingWait& polling,
                               std::unique_lock<std::mutex>& lock);
  void handed_out(const EngineCallbacks& callbacks, const std::string& consumer_failure,
                  std::unique_lock<std::mutex>& lock);
  // take_front(), then the frame to on_frame without the lock.
  static bool deliver_front(const std::shared_ptr<EngineCore>& core,
                            const EngineCallbacks& callbacks, PollingWait& polling,
                            std::unique_lock<std::mutex>& lock);

  // Lock order: mutex_ is the only lock of the engine; no callback and no
  // device call that waits for device work is made while it is held, except
  // in stop/flush where only event waits that cannot depend on this lock run.
  // The staging copy's lock (ParallelCopy) is a leaf, never taken under it.
  mutable std::mutex mutex_;
  // Who waits for what, so that a change wakes only the thread it concerns
  // (a waiter woken for nothing costs two context switches a frame):
  std::condition_variable slot_freed_;  // take_slot(): free_ (producer)
  std::condition_variable queued_;      // the worker: in_flight_
  std::condition_variable idle_;        // drain(), end_flush(): worker_busy_, in_flight_
  std::deque<int> free_;                // free slots, oldest released first
  std::deque<int> in_flight_;           // submitted, not yet delivered, in order
  bool worker_busy_ = false;            // a deliverer is waiting on / handing out the front
  // The last frame delivered: when it was found done, and how long from
  // its enqueueing (host_now_ns()), for EngineConfig::graphs_idle.
  int64_t last_done_ns_ = 0;
  int64_t last_took_ns_ = 0;
  bool flushing_ = false;
  bool stopping_ = false;
  std::string error_;
  bool operation_failed_ = false;  // error_ came from an OperationError

  std::vector<std::unique_ptr<Stream>> streams_;  // one in serial mode
  // The operation's workspace (Operation::workspace_bytes), prepared on the
  // compute stream before the first frame; null when it needs none.
  std::unique_ptr<Buffer> workspace_;
  // Bands computed by view (BandPlan::scratch_layout); only the compute
  // stream uses it, one band after another.
  std::unique_ptr<Buffer> scratch_;
};

}  // namespace cudaoverlap
