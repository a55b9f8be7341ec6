// What an engine shares with its worker and its OutputFrames, and what
// outlives the Engine while consumers still hold frames: the device, the
// slots, the streams and the state of the ring under one lock. Internal to
// pipeline-core (engine.cpp, delivery.cpp).
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
#include "slot_pass.h"
#include "slot_ring.h"

namespace cudaoverlap {

class EngineCore {
 public:
  EngineCore(std::shared_ptr<Device> device, const EngineConfig& config);
  // Drains the streams first, so no device work still touches the buffers
  // and events freed after them.
  ~EngineCore();

  // Every buffer, event and stream; prepares the operation's workspace.
  // Throws Error naming what could not be had. Once, before the worker.
  void allocate();
  // A slot back to the ring (OutputFrame::release). Any thread.
  void release(int slot) noexcept;
  // Waits for everything enqueued on the streams; failures are the error
  // state's already.
  void synchronize_streams() noexcept;
  // Flushing, stopping and errors concern everyone.
  void notify_everyone() {
    slot_freed_.notify_all();
    queued_.notify_all();
    idle_.notify_all();
  }

  // EngineCallbacks::on_slot_freed, set before the worker starts.
  std::function<void()> on_slot_freed_;

  std::shared_ptr<Device> device_;
  EngineConfig config_;

  // Written in allocate() before the worker starts, then read-only.
  SlotLayouts layouts_;
  SlotPass pass_;
  // The slots' memory and events; what each notes of its frame is guarded
  // by mutex_ (slot_ring.h).
  std::vector<Slot> slots_;
  // EngineConfig::graphs: the producer's alone, but for its counters.
  GraphCache graphs_;

  // Lock order: mutex_ is the only lock of the engine; no callback and no
  // device call that waits for device work is made while it is held, except
  // in stop/flush where only event waits that cannot depend on this lock run.
  // The staging copy's lock (ParallelCopy) is a leaf, never taken under it.
  mutable std::mutex mutex_;
  // Who waits for what, so that a change wakes only the thread it concerns
  // (a waiter woken for nothing costs two context switches a frame):
  std::condition_variable slot_freed_;  // submit(): free_ (producer)
  std::condition_variable queued_;      // the worker: in_flight_
  std::condition_variable idle_;        // drain(), flush_stop(): worker_busy_, in_flight_
  std::deque<int> free_;                // free slots, oldest released first
  std::deque<int> in_flight_;           // submitted, not yet delivered, in order
  bool worker_busy_ = false;            // worker is waiting on / delivering front
  // The last frame delivered: when it was found done, and how long from
  // its enqueueing (host_now_ns()), for EngineConfig::graphs_idle.
  int64_t last_done_ns_ = 0;
  int64_t last_took_ns_ = 0;
  bool flushing_ = false;
  bool stopping_ = false;
  std::string error_;
  bool operation_failed_ = false;  // error_ came from an OperationError

 private:
  std::vector<std::unique_ptr<Stream>> streams_;  // one in serial mode
  // The operation's workspace (Operation::workspace_bytes), prepared on the
  // compute stream before the first frame; null when it needs none.
  std::unique_ptr<Buffer> workspace_;
  // Bands computed by view (BandPlan::scratch_layout); only the compute
  // stream uses it, one band after another.
  std::unique_ptr<Buffer> scratch_;
};

}  // namespace cudaoverlap
