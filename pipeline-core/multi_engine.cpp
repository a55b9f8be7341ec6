// See multi_engine.h.
#include "multi_engine.h"

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <utility>

#include "kernels/error.h"

namespace cudaoverlap {
namespace {

// A device with nothing in flight for this long is measured afresh.
constexpr int64_t kProbeAfterNs = 20'000'000;

}  // namespace

MultiEngine::MultiEngine(std::vector<std::shared_ptr<Device>> devices, EngineConfig config,
                         MultiEngineCallbacks callbacks)
    : config_(std::move(config)), callbacks_(std::move(callbacks)) {
  lanes_.resize(devices.size());
  for (size_t i = 0; i < devices.size(); ++i) lanes_[i].device = std::move(devices[i]);
}

MultiEngine::~MultiEngine() { stop(); }

void MultiEngine::start() {
  if (started_) throw Error("the engine was already started");
  started_ = true;
  if (lanes_.empty()) throw Error("the engine has no device");
  const bool single = lanes_.size() == 1;
  std::string first_error;
  std::vector<std::pair<int, std::string>> left_out;
  int started = 0;
  for (size_t i = 0; i < lanes_.size(); ++i) {
    Lane& lane = lanes_[i];
    if (!lane.device) throw Error("the engine has no device");
    EngineCallbacks callbacks;
    const int index = static_cast<int>(i);
    callbacks.on_frame = [this, index](OutputFrame frame) { lane_frame(index, std::move(frame)); };
    callbacks.on_error = [this, index](const std::string& message) { lane_error(index, message); };
    if (!single)
      callbacks.on_slot_freed = [signal = slots_] {
        {
          std::lock_guard<std::mutex> lock(signal->mutex);
          ++signal->count;
        }
        signal->freed.notify_all();
      };
    // Pulling (EngineConfig::pull) is for one device: over several, each
    // engine's worker hands its frames to the ordering below.
    EngineConfig config = config_;
    if (!single) config.pull = false;
    lane.engine = std::make_unique<Engine>(lane.device, config, std::move(callbacks));
    try {
      lane.engine->start();
    } catch (const Error& e) {
      // With one device its error stays as it was: nothing else explains it.
      const std::string message = single ? e.what() : lane.device->describe() + ": " + e.what();
      if (first_error.empty()) first_error = message;
      left_out.emplace_back(index, message);
      lane.engine.reset();
      continue;
    }
    std::lock_guard<std::mutex> lock(mutex_);
    lane.live = true;
    ++started;
  }
  if (started == 0)
    throw Error(single ? first_error : "no device could start; the first: " + first_error);
  if (callbacks_.on_warning)
    for (const auto& [index, message] : left_out)
      callbacks_.on_warning(index, "a device could not start and is left out: " + message);
}

MultiEngine::Choice MultiEngine::choose_lane_locked() const {
  const int n = static_cast<int>(lanes_.size());
  const int64_t now = host_now_ns();
  // Idle for a while: measured again, so that a device slow once (a first
  // frame's module loads, a hiccup) is not left out for good; its old time
  // counts for nothing, not even in the others' average.
  const auto stale = [&](const Lane& lane) {
    return lane.sequences.empty() && lane.delivered_ns >= 0 &&
           now - lane.delivered_ns > kProbeAfterNs;
  };
  double measured_sum = 0.0;
  int measured = 0;
  for (const Lane& lane : lanes_)
    if (lane.live && lane.frame_ns > 0.0 && !stale(lane)) {
      measured_sum += lane.frame_ns;
      ++measured;
    }
  const double neutral_ns = measured > 0 ? measured_sum / measured : 1.0;
  Choice choice;
  size_t best_in_flight = 0, free_in_flight = 0;
  const auto better = [](double cost, size_t in_flight, int current, double current_cost,
                         size_t current_in_flight) {
    return current < 0 || cost < current_cost ||
           (cost == current_cost && in_flight < current_in_flight);
  };
  // From the one after the last dealt to, so that ties go round in turn.
  for (int k = 1; k <= n; ++k) {
    const int i = (last_lane_ + k) % n;
    const Lane& lane = lanes_[static_cast<size_t>(i)];
    if (!lane.live) continue;
    const size_t in_flight = lane.sequences.size();
    double frame_ns = stale(lane) ? 0.0 : lane.frame_ns;
    if (frame_ns == 0.0) {
      frame_ns = neutral_ns;
      if (in_flight > 0)
        frame_ns =
            std::max(frame_ns, static_cast<double>(now - lane.sequences.front().submitted_ns));
    }
    const double cost = static_cast<double>(in_flight + 1) * frame_ns;
    const bool has_free = lane.engine->free_slots() > 0;
    if (better(cost, in_flight, choice.best, choice.best_ns, best_in_flight)) {
      choice.best = i;
      choice.best_ns = cost;
      best_in_flight = in_flight;
    }
    if (has_free && better(cost, in_flight, choice.free, choice.free_ns, free_in_flight)) {
      choice.free = i;
      choice.free_ns = cost;
      free_in_flight = in_flight;
    }
  }
  return choice;
}

void MultiEngine::stop_failed() {
  std::vector<Engine*> engines;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (Lane& lane : lanes_)
      if (!lane.live && lane.engine && !lane.reaped) {
        lane.reaped = true;
        engines.push_back(lane.engine.get());
      }
  }
  // A failed engine holds its frames' references (upstream's buffers) until
  // stopped; the producer may stop it (engine.h), outside the lock.
  for (Engine* engine : engines) engine->stop();
}

bool MultiEngine::pulls() const { return lanes_.size() == 1 && config_.pull && lanes_[0].engine; }

OutputFrame MultiEngine::deliver() { return pulls() ? lanes_[0].engine->deliver() : OutputFrame(); }

Status MultiEngine::submit(InputFrame frame) {
  if (lanes_.size() == 1)
    return lanes_[0].engine ? lanes_[0].engine->submit(std::move(frame)) : Status::kFlushing;
  if (failed_.load(std::memory_order_acquire)) stop_failed();
  // Waiting here for a device's slot is waiting for a slot (FrameTiming).
  if (frame.submitted_ns < 0) frame.submitted_ns = host_now_ns();
  for (;;) {
    int i = -1;
    uint64_t sequence;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      for (;;) {
        if (!error_.empty()) return Status::kError;
        if (flushing_) return Status::kFlushing;
        // Counted before choosing, so a slot freed from here on is seen.
        uint64_t seen;
        {
          std::lock_guard<std::mutex> slots(slots_->mutex);
          seen = slots_->count;
        }
        const Choice choice = choose_lane_locked();
        if (choice.best < 0) return Status::kFlushing;  // not started, or stopped
        // The best device has a free slot; or waiting for one of its
        // slots is expected to cost more than the best free device takes.
        double wait_ns = 0.0;
        if (choice.free == choice.best) {
          i = choice.best;
        } else if (choice.free >= 0) {
          wait_ns = choice.free_ns - choice.best_ns;
          i = choice.free;
        }
        if (i >= 0 && wait_ns <= 0.0) break;
        // Wait for a slot to come back anywhere (for at most wait_ns when
        // another device could take the frame now), then choose again.
        lock.unlock();
        std::unique_lock<std::mutex> slots(slots_->mutex);
        const auto freed = [&] { return slots_->count != seen || slots_->wake; };
        bool came = true;
        if (i < 0)
          slots_->freed.wait(slots, freed);
        else
          came = slots_->freed.wait_for(
              slots, std::chrono::nanoseconds(static_cast<int64_t>(wait_ns)), freed);
        slots.unlock();
        lock.lock();
        if (!came) break;  // i: the free one
        i = -1;
      }
      sequence = next_sequence_++;
      // Before the submit: the engine's worker may hand the frame out
      // before submit() returns.
      lanes_[static_cast<size_t>(i)].sequences.push_back(
          Queued{sequence, host_now_ns(), frame.user});
      submitting_lane_ = i;
      submitting_sequence_ = sequence;
    }
    Lane& lane = lanes_[static_cast<size_t>(i)];
    // A copy: should the device fail, the frame goes to another.
    const Status status = lane.engine->submit(frame);
    // The operation refused the frame: another device would too. The
    // engine's on_error may not have reached lane_error yet (a worker
    // reports after releasing its lock); lane_error is idempotent and
    // sets error() before submit() returns.
    if (status == Status::kError && lane.engine->operation_failed()) {
      lane_error(i, lane.engine->error());
      std::lock_guard<std::mutex> lock(mutex_);
      submitting_lane_ = -1;
      return Status::kError;
    }
    std::string report;
    bool last = false;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      submitting_lane_ = -1;
      const bool delivered = next_out_ > sequence || ready_.count(sequence) > 0;
      if (status == Status::kOk && (lane.live || delivered)) {
        last_lane_ = i;
        return Status::kOk;
      }
      // Not taken, or taken by a device that failed meanwhile (it never
      // comes out of there): its number is given back, and the frame goes
      // to another device.
      for (auto it = lane.sequences.rbegin(); it != lane.sequences.rend(); ++it)
        if (it->sequence == sequence) {
          lane.sequences.erase(std::next(it).base());
          break;
        }
      next_sequence_ = sequence;
      if (status != Status::kFlushing) report = take_out_locked(i, lane.engine->error(), &last);
    }
    if (status == Status::kFlushing) return Status::kFlushing;
    report_out(i, report, last);
    deliver_ready();  // frames that waited for the lost ones
    if (last) return Status::kError;
    stop_failed();
  }
}

void MultiEngine::lane_frame(int i, OutputFrame frame) {
  if (lanes_.size() == 1) {
    if (callbacks_.on_frame) callbacks_.on_frame(std::move(frame));
    return;
  }
  OutputFrame dropped;  // released after the lock
  {
    std::lock_guard<std::mutex> lock(mutex_);
    Lane& lane = lanes_[static_cast<size_t>(i)];
    if (lane.sequences.empty()) {
      // Flushed, or its device taken out meanwhile: nobody waits for it.
      dropped = std::move(frame);
      return;
    }
    const Queued& queued = lane.sequences.front();
    // How long the device took for it from when it could start on it. A
    // device's first frame (lazy loads, cold caches) and the first after it
    // idled are not its pace: they start the measurement afresh.
    const int64_t now = host_now_ns();
    const bool fresh = lane.delivered_ns < 0 || now - lane.delivered_ns > kProbeAfterNs;
    if (fresh) {
      lane.frame_ns = 0.0;
    } else {
      const double took =
          static_cast<double>(now - std::max(queued.submitted_ns, lane.delivered_ns));
      lane.frame_ns = lane.frame_ns == 0.0 ? took : 0.875 * lane.frame_ns + 0.125 * took;
      lane.figures.measured_ns += took;
      ++lane.figures.measured;
    }
    lane.delivered_ns = now;
    frame.sequence_ = queued.sequence;
    frame.device_ = i;
    ready_.emplace(queued.sequence, std::move(frame));
    lane.sequences.pop_front();
  }
  deliver_ready(i);
}

void MultiEngine::deliver_ready(int by) {
  std::string failure;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    // One thread hands frames out at a time, so they go in order; frames
    // made ready meanwhile are its to hand out too.
    if (delivering_) return;
    delivering_ = true;
    while (!flushing_ && failure.empty()) {
      const auto lost = skipped_.find(next_out_);
      if (lost != skipped_.end()) {
        std::shared_ptr<FrameUser> user = std::move(lost->second);
        skipped_.erase(lost);
        ++next_out_;
        lock.unlock();  // the user's deleter may call into the host app
        try {
          if (callbacks_.on_lost) callbacks_.on_lost(user);
        } catch (const std::exception& e) {
          failure = std::string("the consumer of a lost frame failed: ") + e.what();
        }
        user.reset();
        lock.lock();
        continue;
      }
      if (ready_.empty() || ready_.begin()->first != next_out_) break;
      OutputFrame frame = std::move(ready_.begin()->second);
      ready_.erase(ready_.begin());
      ++next_out_;
      const uint64_t sequence = frame.sequence();
      const bool other = by >= 0 && frame.device() != by;  // another lane's frame
      lock.unlock();
      const int64_t handing_from = other ? host_now_ns() : 0;
      try {
        if (callbacks_.on_frame) callbacks_.on_frame(std::move(frame));
      } catch (const std::exception& e) {
        failure = "the consumer of frame " + std::to_string(sequence) + " failed: " + e.what();
      }
      frame.release();  // one the consumer did not take
      const int64_t handing_ns = other ? host_now_ns() - handing_from : 0;
      lock.lock();
      if (other) {
        LaneFigures& figures = lanes_[static_cast<size_t>(by)].figures;
        ++figures.handed_for_others;
        figures.handing_ns += handing_ns;
      }
    }
    // Reported once, by whoever put the MultiEngine in its error state.
    if (!error_.empty()) failure.clear();
    if (!failure.empty()) error_ = failure;
    delivering_ = false;
  }
  idle_.notify_all();
  if (!failure.empty() && callbacks_.on_error) callbacks_.on_error(failure);
}

std::string MultiEngine::take_out_locked(int i, const std::string& message, bool* last) {
  Lane& lane = lanes_[static_cast<size_t>(i)];
  *last = false;
  if (!lane.live) return {};
  lane.live = false;
  if (!error_.empty()) {
    // The stream ended already (on_error): nothing more to report; stop()
    // drops what was in flight on it.
    failed_.store(true, std::memory_order_release);
    return {};
  }
  // Its frames in flight will never come out; the one submit() is giving
  // it now goes to another device instead (submit() sees to that).
  size_t lost = 0;
  for (const Queued& queued : lane.sequences) {
    if (i == submitting_lane_ && queued.sequence == submitting_sequence_) continue;
    skipped_.emplace(queued.sequence, queued.user);
    ++lost;
  }
  lane.sequences.clear();
  failed_.store(true, std::memory_order_release);
  int live = 0;
  for (const Lane& other : lanes_) live += other.live ? 1 : 0;
  std::string text = lane.device->describe() + " failed";
  if (lost > 0)
    text += " with " + std::to_string(lost) +
            (lost == 1 ? " frame in flight, which is lost" : " frames in flight, which are lost");
  text += ": " + message;
  if (live == 0) {
    *last = true;
    error_ = "no device is left; the last: " + text;
    return error_;
  }
  return text + "; " + std::to_string(live) + (live == 1 ? " device goes" : " devices go") + " on";
}

void MultiEngine::lane_error(int i, const std::string& message) {
  if (lanes_.size() == 1) {
    // The operation's own failure (below) leaves the device live.
    const bool device_failed = !lanes_[0].engine->operation_failed();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (device_failed) lanes_[0].live = false;
    }
    if (callbacks_.on_error) callbacks_.on_error(message);
    return;
  }
  // The operation's own failure (an application's handler refusing a
  // frame) is not the device's: every device would fail the same way, so
  // the stream ends here rather than after one device after another left
  // with its frames. The device stays live; the error is reported once.
  if (lanes_[static_cast<size_t>(i)].engine->operation_failed()) {
    const std::string text = lanes_[static_cast<size_t>(i)].device->describe() + ": " + message;
    bool first = false;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (error_.empty()) {
        error_ = text;
        first = true;
      }
    }
    idle_.notify_all();  // drain() returns kError
    wake_submit(true);   // so does a submit() waiting for a slot
    if (first && callbacks_.on_error) callbacks_.on_error(text);
    return;
  }
  std::string report;
  bool last = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    report = take_out_locked(i, message, &last);
  }
  report_out(i, report, last);
  deliver_ready();  // frames that waited for the lost ones
}

void MultiEngine::report_out(int i, const std::string& report, bool last) {
  if (report.empty()) return;
  {
    // A submit() waiting for a slot chooses again: the device it waited
    // for may be the one gone, or none may be left.
    std::lock_guard<std::mutex> lock(slots_->mutex);
    ++slots_->count;
  }
  slots_->freed.notify_all();
  if (last && callbacks_.on_error) callbacks_.on_error(report);
  if (!last && callbacks_.on_warning) callbacks_.on_warning(i, report);
}

void MultiEngine::replace_operation(std::shared_ptr<const Operation> operation) {
  for (Lane& lane : lanes_) {
    if (!lane.engine || (lanes_.size() > 1 && !live(static_cast<int>(&lane - lanes_.data()))))
      continue;
    // Every engine has the same config: only the first can refuse, before
    // any changed.
    lane.engine->replace_operation(operation);
  }
  config_.operation = std::move(operation);
}

Status MultiEngine::drain() {
  if (lanes_.size() == 1) return lanes_[0].engine ? lanes_[0].engine->drain() : Status::kOk;
  for (size_t i = 0; i < lanes_.size(); ++i) {
    if (!live(static_cast<int>(i))) continue;
    const Status status = lanes_[i].engine->drain();
    if (status == Status::kFlushing) return Status::kFlushing;
    if (status == Status::kError) lane_error(static_cast<int>(i), lanes_[i].engine->error());
  }
  if (failed_.load(std::memory_order_acquire)) stop_failed();
  // Every engine handed its frames over; the last of them may still be on
  // their way out on another thread.
  deliver_ready();
  std::unique_lock<std::mutex> lock(mutex_);
  idle_.wait(lock, [&] {
    return (!delivering_ && next_out_ == next_sequence_) || flushing_ || !error_.empty();
  });
  if (!error_.empty()) return Status::kError;
  if (flushing_) return Status::kFlushing;
  return Status::kOk;
}

void MultiEngine::flush_start() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    flushing_ = true;
  }
  idle_.notify_all();
  wake_submit(true);
  // Under the lock: the producer may be stopping a failed device's engine
  // (stop_failed), which is then marked reaped first.
  std::lock_guard<std::mutex> lock(mutex_);
  for (Lane& lane : lanes_)
    if (lane.engine && !lane.reaped) lane.engine->flush_start();
}

void MultiEngine::reset_order() {
  // Released after the lock: users' deleters may call into the host app.
  std::map<uint64_t, OutputFrame> dropped;
  std::map<uint64_t, std::shared_ptr<FrameUser>> lost;
  std::vector<Queued> queued;
  std::unique_lock<std::mutex> lock(mutex_);
  idle_.wait(lock, [&] { return !delivering_; });
  for (Lane& lane : lanes_) {
    queued.insert(queued.end(), lane.sequences.begin(), lane.sequences.end());
    lane.sequences.clear();
  }
  dropped.swap(ready_);
  lost.swap(skipped_);
  next_out_ = next_sequence_;
}

void MultiEngine::flush_stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    flushing_ = true;  // in case flush_start() was not called
  }
  for (Lane& lane : lanes_)
    if (lane.engine) lane.engine->flush_stop();
  // No worker hands frames over now (each engine's flush_stop waited for
  // its own), and nothing is in flight: what waits for an earlier frame is
  // dropped, and the order goes on from the next frame submitted.
  if (lanes_.size() > 1) reset_order();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    flushing_ = false;
  }
  wake_submit(false);
}

void MultiEngine::wake_submit(bool wake) {
  {
    std::lock_guard<std::mutex> lock(slots_->mutex);
    slots_->wake = wake;
  }
  slots_->freed.notify_all();
}

void MultiEngine::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    flushing_ = true;  // no more deliveries
  }
  wake_submit(true);
  for (Lane& lane : lanes_)
    if (lane.engine) lane.engine->stop();
  reset_order();
}

int MultiEngine::live_devices() const {
  std::lock_guard<std::mutex> lock(mutex_);
  int live = 0;
  for (const Lane& lane : lanes_) live += lane.live ? 1 : 0;
  return live;
}

bool MultiEngine::live(int i) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return lanes_[static_cast<size_t>(i)].live;
}

int MultiEngine::bands() const {
  for (size_t i = 0; i < lanes_.size(); ++i)
    if (lanes_[i].engine && live(static_cast<int>(i))) return lanes_[i].engine->bands();
  return 1;
}

std::string MultiEngine::error() const {
  if (lanes_.size() == 1) return lanes_[0].engine ? lanes_[0].engine->error() : std::string();
  std::lock_guard<std::mutex> lock(mutex_);
  return error_;
}

MultiEngine::LaneFigures MultiEngine::lane_figures(int i) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return lanes_[static_cast<size_t>(i)].figures;
}

}  // namespace cudaoverlap
