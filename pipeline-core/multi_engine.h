// One stream of frames over several devices: an Engine per device, each with
// its own ring, streams, pinned memory and worker, frames dealt to the
// device that will be free first, and handed out in submission order.
//
// Dealing: submit() gives each frame to the live engine that will have it
// done first, as far as the engine can tell: the one with the least work
// ahead of it, (frames in flight on it + 1) x the time it has been taking
// per frame (a moving average of the time from when it could start on a
// frame, the frame's submission or the previous delivery, to its
// delivery). Equal devices take turns; a slower one gets fewer frames, and
// none while a faster one would still finish sooner after the frames it
// has, even if that means waiting for the faster one's slot (for as long
// as the faster one is expected to be ahead; a consumer holding its frames
// does not stall the stream while another device has a free slot). A
// device not measured yet counts as the measured ones' average, and as at
// least as slow as its oldest frame in flight is old.
//
// Order: every frame gets a sequence number across all devices
// (OutputFrame::sequence()); each engine delivers its own frames in order,
// and frames that finish ahead of an earlier one on another device wait
// (holding their slot) until it is out. on_frame is called for one frame at
// a time, in sequence order, without any lock of the MultiEngine held, from
// whichever engine's worker found the next frame ready (with one device:
// that engine's worker, with nothing in between; or, with EngineConfig::pull,
// drain()'s thread, while deliver() returns the frames it fetches).
//
// A device that fails (an error from its engine, at start() or later) takes
// itself out: on_warning says so and how many frames in flight on it were
// lost, those frames are skipped in the order (never delivered, never
// waited for), and the others go on; a frame whose submit() failed on it is
// submitted to another device. When no device is left, on_error reports the
// last failure and the MultiEngine is in its error state. A failure of the
// operation itself (OperationError: an application's handler refusing a
// frame) is not the device's, and any other device would fail the same
// way: on_error reports it at once, the MultiEngine is in its error state,
// and every device stays live.
//
// Threads and calls are the Engine's (engine.h): one producer calls
// submit(), drain(), flush_stop() and replace_operation(); the owner calls
// start() and stop(); flush_start() from any thread; live_devices(),
// live() and error() from any thread, callbacks included. Callbacks must not
// call stop() or destroy the MultiEngine, and on_frame must not throw (a
// consumer that does puts the MultiEngine in its error state).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
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
  // A frame lost with a failed device, at the place in the order where it
  // would have been handed out; `user` is its InputFrame::user.
  std::function<void(const std::shared_ptr<FrameUser>& user)> on_lost;
  // The stream cannot go on: no device is left, the operation itself
  // failed, or the consumer threw. Called once.
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

  // Engine::submit on the device chosen as above. kError only in the error
  // state (no device left, or the operation failed). Producer thread.
  Status submit(InputFrame frame);

  // Engine::replace_operation on every live device: checked on the first
  // before any is changed, so a refusal leaves all unchanged. Producer.
  void replace_operation(std::shared_ptr<const Operation> operation);

  // Blocks until every submitted frame was handed to on_frame or lost with
  // its device. kFlushing, or kError in the error state. Producer.
  Status drain();

  // Whether frames are pulled: EngineConfig::pull over one device (over
  // several, the engines' workers hand frames out and deliver() does
  // nothing). Fixed from start() on.
  bool pulls() const;
  // Engine::deliver() of the one device when pulls(), else no frame. The
  // consumer thread, one at a time; also after stop().
  OutputFrame deliver();

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
  // Empty unless in the error state (see on_error).
  std::string error() const;
  // What the dealing saw of device i so far, for benchmarks and
  // diagnostics: the times per frame it measured (see Dealing above; their
  // sum and count: a mean over any stretch is the difference of two
  // readings), and the frames of other devices that its worker handed out
  // (it found the next frame in order ready and went on with those that
  // waited behind it), with the time that took. With one device, where
  // nothing is dealt, all zero. Any thread.
  struct LaneFigures {
    double measured_ns = 0.0;  // sum of the times per frame measured
    int64_t measured = 0;      // how many
    int64_t handed_for_others = 0;
    int64_t handing_ns = 0;  // in on_frame for those
  };
  LaneFigures lane_figures(int i) const;
  const EngineConfig& config() const { return config_; }

 private:
  struct Queued {
    uint64_t sequence;
    int64_t submitted_ns;
    std::shared_ptr<FrameUser> user;  // for on_lost
  };
  struct Lane {
    std::shared_ptr<Device> device;
    std::unique_ptr<Engine> engine;
    // Under mutex_:
    bool live = false;             // started and not failed
    bool reaped = false;           // failed, and its engine stopped by the producer
    std::deque<Queued> sequences;  // submitted to it, not yet delivered by it
    int64_t delivered_ns = -1;     // its last delivery
    double frame_ns = 0.0;         // time per frame, moving average; 0: not measured
    LaneFigures figures;
  };

  // Engine callbacks of lane `i` (its worker, or the producer in submit()).
  void lane_frame(int i, OutputFrame frame);
  void lane_error(int i, const std::string& message);
  // Under mutex_: takes lane `i` out (its frames in flight skipped, but for
  // one whose submit() is under way, which submit() sees to); returns what
  // to report, or empty when it was out already.
  std::string take_out_locked(int i, const std::string& message, bool* last);
  // Outside mutex_: what take_out_locked returned goes to on_warning or,
  // for the last device, on_error.
  void report_out(int i, const std::string& report, bool last);
  // Hands out every frame that is next in order, on this thread unless
  // another one is at it (it then takes these too); `by`: the lane whose
  // worker this is, -1 for another thread. Without mutex_.
  void deliver_ready(int by = -1);
  // Under mutex_: the live lane that would have a frame done first
  // (`best`, -1 when none is live) and the one among those with a free slot
  // (`free`, -1 when none has one), with what each would take, in ns.
  struct Choice {
    int best = -1;
    double best_ns = 0.0;
    int free = -1;
    double free_ns = 0.0;
  };
  Choice choose_lane_locked() const;
  // Producer: stops the engines of devices taken out, which hold their
  // frames' references until then.
  void stop_failed();
  // Drops what waits for an earlier frame once no delivery is under way,
  // and has the order go on from the next frame submitted.
  void reset_order();
  // Sets SlotSignal::wake (flush_start, stop: true; flush_stop: false).
  void wake_submit(bool wake);

  EngineConfig config_;
  MultiEngineCallbacks callbacks_;
  std::vector<Lane> lanes_;

  // Guards the lanes' state, the order below, error_ and the flags. No
  // callback and no engine call that waits is made under it.
  mutable std::mutex mutex_;
  std::condition_variable idle_;           // delivering_ fell (drain, flush_stop, stop)
  uint64_t next_sequence_ = 0;             // the next frame submitted gets this
  uint64_t next_out_ = 0;                  // the next frame handed out has this
  std::map<uint64_t, OutputFrame> ready_;  // done, waiting for its turn
  std::map<uint64_t, std::shared_ptr<FrameUser>> skipped_;  // lost with their device: their users
  bool delivering_ = false;                                 // a thread is in deliver_ready's loop
  bool flushing_ = false;                                   // between flush_start and flush_stop
  int submitting_lane_ = -1;          // submit() is in this lane's Engine::submit …
  uint64_t submitting_sequence_ = 0;  // … with this frame
  std::string error_;                 // the error state: why the stream cannot go on
  int last_lane_ = -1;                // the last dealt to
  bool started_ = false;
  std::atomic<bool> failed_{false};  // a device was taken out
  // Slots going back to any engine's ring (EngineCallbacks::on_slot_freed),
  // which submit() waits for when the device it would take has none free.
  // Shared with the engines' cores, which may outlive the MultiEngine.
  struct SlotSignal {
    std::mutex mutex;
    std::condition_variable freed;
    uint64_t count = 0;  // slots freed so far
    bool wake = false;   // flush_start or stop: waiting submit()s return
  };
  std::shared_ptr<SlotSignal> slots_ = std::make_shared<SlotSignal>();
};

}  // namespace cudaoverlap
