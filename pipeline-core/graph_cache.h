// EngineConfig::graphs: a frame submitted alone is enqueued as one graph
// launch, captured from its SlotPass the first time a slot meets its input
// memory with its operation, and kept for the frames after.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "device.h"
#include "slot_pass.h"

namespace cudaoverlap {

// Captures one frame's pass into a graph, with the compute and download
// streams joined back into the upload stream. Null, with nothing enqueued,
// where the backend has no graphs or a call cannot be captured. An
// exception other than Error ends the capture and is rethrown. `stage` as
// SlotPass::enqueue's.
std::unique_ptr<Graph> capture_pass(const SlotPass& pass, const SlotEvents& events,
                                    const PassImages& images, const Operation& op,
                                    BandReading reading, Stage* stage = nullptr);

// The graphs captured per slot, each for one operation and input memory
// (the planes its upload reads), kGraphsPerSlot (engine.h) a slot at most.
// The producer thread's alone, but for the counters.
class GraphCache {
 public:
  GraphCache() = default;
  GraphCache(int ring_size, int planes)
      : ring_size_(ring_size), planes_(planes), slots_(ring_size) {}

  // Launches the graph of slot `slot`'s frame on the pass's upload stream,
  // capturing it first where the slot has none for `images.source` and
  // `op`, then records events.downloaded after it there. False, with
  // nothing enqueued, where the frame is to go call by call: an operation
  // that is not capturable, a capture that failed, a slot whose graphs are
  // all in use. `memory_id` is the input's InputFrame::memory_id when it is
  // uploaded from where it lies, 0 when it was staged into the slot.
  // `stage` follows the calls as SlotPass::enqueue's does.
  bool launch(int slot, uint64_t sequence, uint64_t memory_id, const SlotPass& pass,
              const SlotEvents& events, const PassImages& images,
              const std::shared_ptr<const Operation>& op, BandReading reading, Stage* stage);

  // Frames launched as graphs, and graphs captured, so far. Any thread.
  uint64_t frames() const { return frames_.load(std::memory_order_relaxed); }
  uint64_t captures() const { return captures_.load(std::memory_order_relaxed); }

  // Frees every graph; before the streams they were captured from go.
  void clear() { slots_.clear(); }

 private:
  struct CapturedFrame {
    std::shared_ptr<const Operation> operation;  // held: no other can take its address
    const uint8_t* source[kMaxPlanes] = {};
    size_t stride[kMaxPlanes] = {};
    uint64_t memory_id = 0;  // InputFrame::memory_id; 0: the slot's staging memory
    std::unique_ptr<Graph> graph;
    uint64_t last_used = 0;  // the sequence of the last frame it ran
  };

  int ring_size_ = 0;
  int planes_ = 0;
  std::vector<std::vector<CapturedFrame>> slots_;
  // An operation whose capture failed: enqueued call by call from then on.
  std::shared_ptr<const Operation> not_capturable_;
  std::atomic<uint64_t> frames_{0};
  std::atomic<uint64_t> captures_{0};
};

}  // namespace cudaoverlap
