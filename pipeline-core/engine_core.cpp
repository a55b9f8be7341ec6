// The ring's state and the core's resources (see engine_core.h).
#include "engine_core.h"

#include <string>
#include <utility>
#include <vector>

#include "kernels/error.h"

namespace cudaoverlap {

EngineCore::EngineCore(std::shared_ptr<Device> device, const EngineConfig& config)
    : device_(std::move(device)),
      config_(config),
      graphs_(config.ring_size, config.input.n_planes()) {}

EngineCore::~EngineCore() {
  synchronize_streams();
  graphs_.clear();
  streams_.clear();
}

void EngineCore::synchronize_streams() noexcept {
  for (auto& stream : streams_) {
    try {
      stream->synchronize();
    } catch (const Error&) {
      // Reported through the error state already, or nobody is listening.
    }
  }
}

void EngineCore::allocate() {
  layouts_ = slot_layouts(config_);
  const Operation& op = *config_.operation;
  BandPlan plan = plan_bands(config_.input, config_.output, op, config_.bands,
                             config_.mode == Mode::kOverlapped, kDeviceAlign);
  const int bands = plan.bands();
  const size_t scratch_bytes = plan.by_view() ? plan.scratch_layout.size : 0;
  slots_ = allocate_slots(*device_, config_, layouts_, bands, scratch_bytes, &scratch_);
  // One stream in serial mode, and where frames are read and written in
  // place on the host: upload and download streams would only pass events on.
  const int n_streams = config_.mode == Mode::kSerial || host_in_place() ? 1 : 3;
  for (int s = 0; s < n_streams; ++s) streams_.push_back(device_->create_stream());
  PassStreams streams;
  streams.upload = streams_.front().get();
  streams.compute = streams_[n_streams == 1 ? 0 : 1].get();
  streams.download = streams_.back().get();
  Workspace workspace;
  if (op.workspace_bytes() > 0) {
    try {
      workspace_ = device_->alloc_device(op.workspace_bytes());
    } catch (const Error& e) {
      throw Error(std::string("kernel '") + op.name() + "' needs " +
                  megabytes(op.workspace_bytes()) + " of device memory for its tables on " +
                  device_->describe() + "; allocating it failed (" + e.what() + ")");
    }
    workspace = Workspace{workspace_->data(), workspace_->size()};
  }
  pass_ = SlotPass(streams, config_.input, config_.output, std::move(plan), workspace,
                   scratch_ ? scratch_->data() : nullptr);
  // Ordered before every frame's kernel by the compute stream itself; and
  // done before start() returns, for a graph (EngineConfig::graphs) joins
  // the compute stream but for its own events and is ordered by none of
  // its earlier work.
  streams.compute->prepare(op, workspace);
  streams.compute->synchronize();
  for (int i = 0; i < config_.ring_size; ++i) free_.push_back(i);
}

Status EngineCore::take_slot(InputFrame& frame, const std::shared_ptr<const Operation>& operation,
                             uint64_t* next_sequence, FrameTiming* timing, int* index,
                             uint64_t* sequence, bool* alone) {
  // The slot's previous operation may be a replaced one's last reference:
  // it goes after the lock (unloading its program may wait on the device).
  std::shared_ptr<const Operation> replaced;
  std::unique_lock<std::mutex> lock(mutex_);
  // Backpressure: wait for the consumer to release a slot.
  slot_freed_.wait(lock,
                   [&] { return !free_.empty() || flushing_ || stopping_ || !error_.empty(); });
  timing->wait_slot.end_ns = host_now_ns();
  if (flushing_ || stopping_) return Status::kFlushing;
  if (!error_.empty()) return Status::kError;
  *index = free_.front();
  free_.pop_front();
  Slot& slot = slots_[*index];
  *sequence = (*next_sequence)++;
  slot.sequence = *sequence;
  slot.user = std::move(frame.user);
  slot.destination = frame.destination;
  slot.keep_alive =
      frame.pinned || frame.on_device || host_in_place() ? std::move(frame.keep_alive) : nullptr;
  replaced = std::move(slot.operation);
  slot.operation = operation;
  // Every frame before this one is done (delivered, or dropped after its
  // download completed): nothing on any stream runs, so this frame's
  // graph needs no order but the upload stream's. Only submit() adds.
  // And a graph only where the source leaves the engine idle long enough
  // that the next frame is unlikely to come while this one runs
  // (EngineConfig::graphs_idle).
  *alone = in_flight_.empty() && static_cast<double>(timing->wait_slot.end_ns - last_done_ns_) >=
                                     config_.graphs_idle * static_cast<double>(last_took_ns_);
  lock.unlock();
  replaced.reset();
  return Status::kOk;
}

void EngineCore::enqueued(int index, const FrameTiming& timing, bool timed) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    Slot& slot = slots_[index];
    slot.timing = timing;
    slot.timed = timed;
    in_flight_.push_back(index);
  }
  queued_.notify_one();
}

std::string EngineCore::fail(const std::string& message, bool operation) {
  std::string error;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (error_.empty()) {
      error_ = message;
      operation_failed_ = operation;
    }
    error = error_;
  }
  notify_everyone();
  return error;
}

void EngineCore::release(int slot) noexcept {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    free_.push_back(slot);
  }
  slot_freed_.notify_all();
  if (on_slot_freed_) on_slot_freed_();
}

void EngineCore::begin_flush() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    flushing_ = true;
  }
  notify_everyone();
}

void EngineCore::end_flush() {
  std::vector<int> dropped;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    flushing_ = true;  // in case begin_flush() was not called
    idle_.wait(lock, [&] { return !worker_busy_; });
    dropped.assign(in_flight_.begin(), in_flight_.end());
    in_flight_.clear();
  }
  // Each dropped slot's device work finishes before it is freed undelivered.
  std::vector<std::shared_ptr<void>> references;
  for (int index : dropped) {
    Slot& slot = slots_[index];
    try {
      slot.events.downloaded->synchronize();
    } catch (const Error&) {
      // The error state already holds the first failure.
    }
    std::lock_guard<std::mutex> lock(mutex_);
    references.push_back(std::move(slot.user));
    references.push_back(std::move(slot.keep_alive));
  }
  references.clear();  // outside the lock: deleters may call into the host app
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (int index : dropped) free_.push_back(index);
    flushing_ = false;
  }
  notify_everyone();
  if (on_slot_freed_ && !dropped.empty()) on_slot_freed_();
}

void EngineCore::begin_stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  notify_everyone();
}

void EngineCore::drop_references() {
  std::vector<std::shared_ptr<void>> references;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (Slot& slot : slots_) {
      references.push_back(std::move(slot.user));
      references.push_back(std::move(slot.keep_alive));
    }
    in_flight_.clear();
  }
  references.clear();  // outside the lock: deleters may call into the host app
}

int EngineCore::free_slots() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return static_cast<int>(free_.size());
}

std::string EngineCore::error() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return error_;
}

bool EngineCore::operation_failed() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return !error_.empty() && operation_failed_;
}

}  // namespace cudaoverlap
