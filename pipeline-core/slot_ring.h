// The engine's ring of slots: the memory and barrier events of one frame in
// flight each, and what the engine notes of the frame a slot holds. Which
// slots are free or in flight is the engine's state, under its lock
// (engine_core.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "device.h"
#include "engine.h"
#include "frame_layout.h"
#include "slot_pass.h"

namespace cudaoverlap {

struct Slot {
  // Memory of one frame in flight. Allocated in start(), freed with the core.
  std::unique_ptr<Buffer> pinned_in;
  std::unique_ptr<Buffer> device_in;
  std::unique_ptr<Buffer> device_out;
  std::unique_ptr<Buffer> pinned_out;
  SlotEvents events;
  // Guarded by EngineCore::mutex_.
  uint64_t sequence = 0;
  std::shared_ptr<void> keep_alive;  // the zero-copy input, until uploaded
  std::shared_ptr<FrameUser> user;
  ImageRef destination;  // InputFrame::destination, or empty: pinned_out
  // The operation the frame's kernel runs: held until the slot is taken
  // again, long after that kernel finished, so one replaced while frames
  // are in flight (Engine::replace_operation) outlives its launches.
  std::shared_ptr<const Operation> operation;
  // Host stages. Written under mutex_ as the slot enters in_flight_; the
  // worker reads it after taking the slot from there, and nothing writes it
  // again until the slot was freed.
  FrameTiming timing;
  bool timed = false;  // its device stages were measured (EngineConfig::timing_interval)
};

// How a slot's frames are laid out: the host input it stages into, the
// device frames (rows padded for the kernels) and the host output.
struct SlotLayouts {
  FrameLayout staging;
  FrameLayout device_in;
  FrameLayout device_out;
  FrameLayout output;
};

// Device planes start on, and pitch to, 256 bytes: what cudaMallocPitch
// would pick, and what lets kernels use 16-byte vector loads.
constexpr size_t kDeviceAlign = 256;
SlotLayouts slot_layouts(const EngineConfig& config);

// `config.ring_size` slots with their memory and events for `bands` bands,
// and first, where `scratch_bytes` is not 0, the scratch image of bands
// computed by view (BandPlan) into `scratch`. Throws Error with a sentence
// naming how much of what the ring needs.
std::vector<Slot> allocate_slots(Device& device, const EngineConfig& config,
                                 const SlotLayouts& layouts, int bands, size_t scratch_bytes,
                                 std::unique_ptr<Buffer>* scratch);

// "33.2 MB": memory asked for, in the sentences of allocation failures.
std::string megabytes(size_t bytes);

// The worker, once the slot's download completed: the device stages'
// times. A backend that cannot tell leaves them invalid.
void read_device_times(const SlotEvents& events, FrameTiming* timing);

// A slot's memory as images of the ring's layouts.
struct SlotImages {
  ImageRef staging;
  ImageRef device_in;
  ImageRef device_out;
  ImageRef output;
};
SlotImages slot_images(const Slot& slot, const SlotLayouts& layouts);

}  // namespace cudaoverlap
