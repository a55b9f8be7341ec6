// See multi_engine.h.
#include "multi_engine.h"

#include <cstdint>
#include <utility>

#include "error.h"

namespace cudaoverlap {

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
    lane.engine = std::make_unique<Engine>(lane.device, config_, std::move(callbacks));
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

int MultiEngine::choose_lane_locked() {
  const int n = static_cast<int>(lanes_.size());
  // The live engine with a free slot and the fewest frames in flight, the
  // lanes taken in turn from the one after the last dealt to, so equal
  // devices alternate.
  int best = -1;
  size_t best_in_flight = SIZE_MAX;
  for (int k = 1; k <= n; ++k) {
    const int i = (last_lane_ + k) % n;
    Lane& lane = lanes_[static_cast<size_t>(i)];
    if (!lane.live || lane.engine->free_slots() == 0) continue;
    if (lane.sequences.size() < best_in_flight) {
      best = i;
      best_in_flight = lane.sequences.size();
    }
  }
  if (best >= 0) return best;
  // Every ring is full: the engine whose oldest frame in flight is the
  // oldest of all finishes first, and its slot comes back first when the
  // consumer releases frames in order.
  uint64_t oldest = UINT64_MAX;
  for (int k = 1; k <= n; ++k) {
    const int i = (last_lane_ + k) % n;
    const Lane& lane = lanes_[static_cast<size_t>(i)];
    if (!lane.live) continue;
    const uint64_t front = lane.sequences.empty() ? UINT64_MAX : lane.sequences.front();
    if (best < 0 || front < oldest) {
      best = i;
      oldest = front;
    }
  }
  return best;
}

void MultiEngine::reap_locked(std::vector<Engine*>* engines) {
  for (Lane& lane : lanes_)
    if (!lane.live && lane.engine && !lane.reaped) {
      lane.reaped = true;
      engines->push_back(lane.engine.get());
    }
}

void MultiEngine::stop_failed() {
  std::vector<Engine*> engines;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    reap_locked(&engines);
  }
  // A failed engine holds its frames' references (upstream's buffers) until
  // stopped; the producer may stop it (engine.h), outside the lock.
  for (Engine* engine : engines) engine->stop();
}

Status MultiEngine::submit(InputFrame frame) {
  if (lanes_.size() == 1)
    return lanes_[0].engine ? lanes_[0].engine->submit(std::move(frame)) : Status::kFlushing;
  if (failed_.load(std::memory_order_acquire)) stop_failed();
  for (;;) {
    int i;
    uint64_t sequence;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!error_.empty()) return Status::kError;
      i = choose_lane_locked();
      if (i < 0) return Status::kFlushing;  // not started, or stopped
      sequence = next_sequence_++;
      // Before the submit: the engine's worker may hand the frame out
      // before submit() returns.
      lanes_[static_cast<size_t>(i)].sequences.push_back(sequence);
    }
    Lane& lane = lanes_[static_cast<size_t>(i)];
    // A copy: on a failing device the frame goes to another.
    const Status status = lane.engine->submit(frame);
    if (status == Status::kOk) {
      last_lane_ = i;
      return Status::kOk;
    }
    std::string report;
    bool last = false;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      // The frame was not taken: its number is given back, unless the order
      // has already passed over it as lost with its device.
      std::deque<uint64_t>& sequences = lane.sequences;
      if (!sequences.empty() && sequences.back() == sequence) sequences.pop_back();
      skipped_.erase(sequence);
      if (next_out_ <= sequence) next_sequence_ = sequence;
      if (status == Status::kError) {
        report = take_out_locked(i, lane.engine->error(), &last);
        deliver_ready_locked();
      }
    }
    if (status == Status::kFlushing) return Status::kFlushing;
    report_out(i, report, last);
    if (last) return Status::kError;
    stop_failed();
  }
}

void MultiEngine::lane_frame(int i, OutputFrame frame) {
  if (lanes_.size() == 1) {
    if (callbacks_.on_frame) callbacks_.on_frame(std::move(frame));
    return;
  }
  OutputFrame dropped;
  std::lock_guard<std::mutex> lock(mutex_);
  std::deque<uint64_t>& sequences = lanes_[static_cast<size_t>(i)].sequences;
  if (sequences.empty()) {
    // Flushed, or its device taken out meanwhile: nobody waits for it. It
    // is released after the lock.
    dropped = std::move(frame);
    return;
  }
  frame.sequence_ = sequences.front();
  frame.device_ = i;
  sequences.pop_front();
  ready_.emplace(frame.sequence_, std::move(frame));
  deliver_ready_locked();
}

void MultiEngine::deliver_ready_locked() {
  for (;;) {
    if (!ready_.empty() && ready_.begin()->first == next_out_) {
      OutputFrame frame = std::move(ready_.begin()->second);
      ready_.erase(ready_.begin());
      ++next_out_;
      if (callbacks_.on_frame) callbacks_.on_frame(std::move(frame));
      continue;
    }
    auto lost = skipped_.find(next_out_);
    if (lost == skipped_.end()) return;
    skipped_.erase(lost);
    ++next_out_;
  }
}

std::string MultiEngine::take_out_locked(int i, const std::string& message, bool* last) {
  Lane& lane = lanes_[static_cast<size_t>(i)];
  *last = false;
  if (!lane.live) return {};
  lane.live = false;
  const size_t lost = lane.sequences.size();
  for (uint64_t sequence : lane.sequences) skipped_.insert(sequence);
  lane.sequences.clear();
  failed_.store(true, std::memory_order_release);
  int live = 0;
  for (const Lane& other : lanes_) live += other.live ? 1 : 0;
  std::string text = lane.device->describe() + " failed";
  if (lost > 0)
    text += " with " + std::to_string(lost) + (lost == 1 ? " frame" : " frames") +
            " in flight, which are lost";
  text += ": " + message;
  if (live == 0) {
    *last = true;
    error_ = "no device is left; the last " + text;
    return error_;
  }
  return text + "; " + std::to_string(live) + (live == 1 ? " device goes" : " devices go") + " on";
}

void MultiEngine::lane_error(int i, const std::string& message) {
  if (lanes_.size() == 1) {
    if (callbacks_.on_error) callbacks_.on_error(message);
    return;
  }
  std::string report;
  bool last = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    report = take_out_locked(i, message, &last);
    deliver_ready_locked();  // frames that waited for the lost ones
  }
  report_out(i, report, last);
}

void MultiEngine::report_out(int i, const std::string& report, bool last) {
  if (report.empty()) return;
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
  std::lock_guard<std::mutex> lock(mutex_);
  return error_.empty() ? Status::kOk : Status::kError;
}

void MultiEngine::flush_start() {
  for (Lane& lane : lanes_)
    if (lane.engine) lane.engine->flush_start();
}

void MultiEngine::flush_stop() {
  for (Lane& lane : lanes_)
    if (lane.engine) lane.engine->flush_stop();
  if (lanes_.size() == 1) return;
  // No worker delivers now (each engine's flush_stop waited for its own),
  // and nothing is in flight: what waits for an earlier frame is dropped,
  // and the order goes on from the next frame submitted.
  std::map<uint64_t, OutputFrame> dropped;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (Lane& lane : lanes_) lane.sequences.clear();
    dropped.swap(ready_);
    skipped_.clear();
    next_out_ = next_sequence_;
  }
}

void MultiEngine::stop() {
  for (Lane& lane : lanes_)
    if (lane.engine) lane.engine->stop();
  std::map<uint64_t, OutputFrame> dropped;
  std::lock_guard<std::mutex> lock(mutex_);
  for (Lane& lane : lanes_) lane.sequences.clear();
  dropped.swap(ready_);
  skipped_.clear();
  next_out_ = next_sequence_;
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

}  // namespace cudaoverlap
