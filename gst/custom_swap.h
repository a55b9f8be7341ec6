// kernel=custom's source replaced while playing: each request is compiled
// on a thread of its own, so the caller (often an application's main loop)
// never waits for a compile, and the latest one compiled is swapped in by
// the streaming thread between two frames (Engine::replace_operation).
// Frames submitted before keep the old kernel. A request that cannot be
// compiled or checked is a warning on the bus and the running kernel stays.
#pragma once

#include <gst/gst.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>

#include "engine.h"
#include "kernels/custom/custom.h"

namespace cudaoverlap {

class CustomKernelSwap {
 public:
  explicit CustomKernelSwap(GstElement* element);
  ~CustomKernelSwap() { stop(); }
  CustomKernelSwap(const CustomKernelSwap&) = delete;
  CustomKernelSwap& operator=(const CustomKernelSwap&) = delete;

  // Owner: from start() to stop() requests are compiled; stop() joins the
  // compile under way and forgets what was swapped in.
  void start();
  void stop();

  // Streaming: an engine was installed (null: none). A replacement compiled
  // for the engine before is dropped; a kernel=custom engine is what the
  // next requests are compiled for (its geometry and colorimetry).
  void engine_installed(const EngineConfig* config);

  // Any thread: compile `params` for the running kernel=custom engine.
  // Without one there is nothing to do: the next caps take the properties
  // as they are then.
  void request(CustomKernelParams params);

  // Streaming, before each frame: the latest request compiled, if any.
  std::shared_ptr<const Operation> take_ready();
  // Streaming: `op` (from take_ready) now runs; the next requests are
  // compared with it.
  void swapped_in(const std::shared_ptr<const Operation>& op);

  // Streaming: the parameters last swapped in, which new caps build the
  // engine with rather than the properties (which may hold a change that
  // was refused); null when none was.
  std::shared_ptr<const CustomKernelParams> accepted() const;

 private:
  GstElement* element_;  // not referenced: it owns the session that owns this

  mutable std::mutex mutex_;  // a leaf
  // Guarded by mutex_. What a replacement is compiled for: the running
  // engine's kernel=custom, null when it runs another kernel or none.
  std::shared_ptr<const Operation> base_;
  uint64_t generation_ = 0;                 // counts engines installed
  uint64_t request_ = 0;                    // counts requests
  std::shared_ptr<const Operation> ready_;  // the latest request, compiled
  ImageRef in_, out_;                       // the engine's geometry, no planes
  std::shared_ptr<const CustomKernelParams> accepted_;

  // One compile at a time; joined before the next and in stop().
  std::mutex compiler_mutex_;  // guards the two below; taken before mutex_
  std::thread compiler_;
  bool accepting_ = false;  // from start() to stop()
};

}  // namespace cudaoverlap
