// One stream of frames over several devices: an Engine per device, each with
// its own ring, streams, pinned memory and worker, frames dealt to the
// device that will be free first, and handed out in submission order.
//
// Dealing: submit() gives each frame to the live engine with a free slot and
// the fewest frames in flight (ties go round the devices in turn), so equal
// devices take turns and a slower one gets fewer frames; when no engine has
// a free slot, to the one whose oldest frame in flight is the oldest of all,
// whose slot comes back first when the consumer releases frames in order.
//
// Order: every frame gets a sequence number across all devices
// (OutputFrame::sequence()); each engine delivers its own frames in order,
// and frames that finish ahead of an earlier one on another device wait
// (holding their slot) until it is out. on_frame is called for one frame at
// a time, in sequence order, from whichever engine's worker completed the
// run (with one device: that engine's worker, with nothing in between).
//
// A device that fails (an error from its engine, at start() or later) takes
// itself out: on_warning says so and how many frames in flight on it were
// lost, those frames are skipped in the order (never delivered, never
// waited for), and the others go on; a frame whose submit() failed on it is
// submitted to another device. When no device is left, on_error reports the
// last failure and the MultiEngine is in its error state.
//
// Threads and calls are the Engine's (engine.h): one producer calls
// submit(), drain(), flush_stop() and replace_operation(); the owner calls
// start() and stop(); flush_start() from any thread. Callbacks must not
// call stop() or destroy the MultiEngine.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "engine.h"

namespace cudaoverlap {

struct MultiEngineCallbacks {
  // A finished frame, in submission order across devices;
  // OutputFrame::device() says which device (an index into the devices
  // given) computed it.
  std::function<void(OutputFrame frame)> on_frame;
  // Device `device` (an index into the devices given) took itself out, or
  // could not start; the others go on. The message names it.
  std::function<void(int device, const std::string& message)> on_warning;
  // No device is left: the stream cannot go on.
  std::function<void(const std::string& message)> on_error;
};

class MultiEngine {
 public:
  // One engine per device, each with `config` (its own ring of
  // config.ring_size slots).
  MultiEngine(std::vector<std::shared_ptr<Device>> devices, EngineConfig config,
              MultiEngineCallbacks callbacks);
  ~MultiEngine();  // stop()s
  MultiEngine(const MultiEngine&) = delete;
  MultiEngine& operator=(const MultiEngine&) = delete;

  // Starts every engine. A device whose engine cannot start is left out
  // with a warning when another one started; when none started, throws the
  // first one's Error (with one device: its Error as it was). Owner; once.
  void start();

  // Engine::submit on the device chosen as above. kError only when no
  // device is left. Producer thread.
  Status submit(InputFrame frame);

  // Engine::replace_operation on every live device: checked on the first
  // before any is changed, so a refusal leaves all unchanged. Producer.
  void replace_operation(std::shared_ptr<const Operation> operation);

  // Blocks until every submitted frame was handed to on_frame or lost with
  // its device. kFlushing, or kError when no device is left. Producer.
  Status drain();

  void flush_start();  // any thread
  void flush_stop();   // producer: in-flight frames are dropped on every device
  void flush() {
    flush_start();
    flush_stop();
  }
  // Stops every engine; in-flight frames, and frames waiting for an earlier
  // one, are dropped. Twice is fine. Owner thread.
  void stop();

  // Devices given, and how many of them are still live.
  int devices() const { return static_cast<int>(lanes_.size()); }
  int live_devices() const;
  // The i-th device given, and whether it is still live.
  Device& device(int i) { return *lanes_[static_cast<size_t>(i)].device; }
  bool live(int i) const;
  // Bands each frame is split into (the first live engine's; every engine
  // has the same config).
  int bands() const;
  // Empty unless no device is left.
  std::string error() const;
  const EngineConfig& config() const { return config_; }

 private:
  struct Lane {
    std::shared_ptr<Device> device;
    std::unique_ptr<Engine> engine;
    bool live = false;    // started and not failed (under mutex_)
    bool reaped = false;  // failed, and its engine stopped by the producer (under mutex_)
    std::deque<uint64_t> sequences;  // submitted to it, not yet delivered (under mutex_)
  };

  // Engine callbacks of lane `i` (its worker, or the producer in submit()).
  void lane_frame(int i, OutputFrame frame);
  void lane_error(int i, const std::string& message);
  // Under mutex_: takes lane `i` out (its sequences skipped); returns what
  // to report, or empty when it was out already.
  std::string take_out_locked(int i, const std::string& message, bool* last);
  // Outside mutex_: what take_out_locked returned goes to on_warning or,
  // for the last device, on_error.
  void report_out(int i, const std::string& report, bool last);
  // Under mutex_: hands out every frame that is next in order.
  void deliver_ready_locked();
  int choose_lane_locked();
  // Producer: stops the engines of devices taken out, which hold their
  // frames' references until then.
  void stop_failed();
  void reap_locked(std::vector<Engine*>* engines);

  EngineConfig config_;
  MultiEngineCallbacks callbacks_;
  std::vector<Lane> lanes_;

  // Guards the lanes' live flags and sequences, the order below and error_.
  // on_frame is called under it (that is what keeps frames in order); no
  // engine call that waits is made under it.
  mutable std::mutex mutex_;
  uint64_t next_sequence_ = 0;             // the next frame submitted gets this
  uint64_t next_out_ = 0;                  // the next frame handed out has this
  std::map<uint64_t, OutputFrame> ready_;  // finished before an earlier one
  std::set<uint64_t> skipped_;             // lost with their device
  std::string error_;                      // set when no device is left
  int last_lane_ = -1;                     // producer: the last dealt to
  bool started_ = false;
  std::atomic<bool> failed_{false};  // a device was taken out
};

}  // namespace cudaoverlap
