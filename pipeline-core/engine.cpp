// The overlap engine; see engine.h for the data flow and thread contracts.
//
// The Engine owns the threads (the worker, the staging copy's) and joins
// them in stop(); EngineCore (engine_core.h) holds what must outlive it
// while consumers still hold OutputFrames. A frame's device work is a
// SlotPass (slot_pass.h), enqueued call by call or as a graph launch
// (graph_cache.h); finished frames are handed out as delivery.h says.
#include "engine.h"

#ifdef __linux__
#include <sys/prctl.h>
#endif

#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "delivery.h"
#include "engine_core.h"
#include "kernels/error.h"
#include "parallel_copy.h"
#include "polling_wait.h"

namespace cudaoverlap {
namespace {

constexpr int kMinRing = 1;
constexpr int kMaxRing = 16;
constexpr int kMaxStagingThreads = 64;
constexpr int kMaxTimingInterval = 1024;
constexpr int kMaxBands = 16;
static_assert(kMaxPlanes <= ParallelCopy::kMaxPlanes, "the staging copy takes every plane");

std::string megabytes(size_t bytes) {
  char text[64];
  std::snprintf(text, sizeof text, "%.1f MB", static_cast<double>(bytes) / 1e6);
  return text;
}

// An image with format and size but no memory, for checks of geometry.
ImageRef geometry_only(const FrameLayout& layout) {
  ImageRef image;
  image.format = layout.format;
  image.width = layout.width;
  image.height = layout.height;
  return image;
}

}  // namespace

// ---------------------------------------------------------------------------
// EngineCore

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
  const int n_streams = config_.mode == Mode::kSerial ? 1 : 3;
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

void EngineCore::release(int slot) noexcept {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    free_.push_back(slot);
  }
  slot_freed_.notify_all();
  if (on_slot_freed_) on_slot_freed_();
}

// ---------------------------------------------------------------------------
// OutputFrame

OutputFrame::OutputFrame(std::shared_ptr<EngineCore> core, int slot, uint64_t sequence,
                         ImageRef image, std::shared_ptr<FrameUser> user)
    : core_(std::move(core)),
      slot_(slot),
      sequence_(sequence),
      image_(image),
      user_(std::move(user)) {}

OutputFrame::OutputFrame(std::shared_ptr<EngineCore> core, int slot, uint64_t sequence,
                         ImageRef image, std::shared_ptr<FrameUser> user, const FrameTiming& timing)
    : OutputFrame(std::move(core), slot, sequence, image, std::move(user)) {
  timing_ = timing;
}

OutputFrame::OutputFrame(OutputFrame&& other) noexcept { *this = std::move(other); }

OutputFrame& OutputFrame::operator=(OutputFrame&& other) noexcept {
  if (this != &other) {
    release();
    core_ = std::move(other.core_);
    slot_ = std::exchange(other.slot_, -1);
    sequence_ = other.sequence_;
    device_ = other.device_;
    image_ = other.image_;
    user_ = std::move(other.user_);
    timing_ = other.timing_;
  }
  return *this;
}

OutputFrame::~OutputFrame() { release(); }

void OutputFrame::release() noexcept {
  if (!core_) return;
  user_.reset();
  core_->release(slot_);
  core_.reset();
  slot_ = -1;
}

// ---------------------------------------------------------------------------
// Engine

struct EngineThreads {
  std::thread worker;  // none with EngineConfig::pull
  // EngineConfig::pull: the core deliver() works on, from start() to stop()
  // (deliver() may run on the consumer's thread while the owner stops the
  // engine), under pull_mutex (a leaf); and the polling state of whichever
  // thread hands a frame out (worker_busy_ says which).
  std::mutex pull_mutex;
  std::shared_ptr<EngineCore> pull_core;
  int pulling = 0;                    // deliver() calls under way, under pull_mutex
  std::condition_variable pull_done;  // pulling fell
  PollingWait pull_polling;
  // The staging copy's threads, made in start() and joined in stop(); used
  // by the producer thread only, inside submit().
  std::unique_ptr<ParallelCopy> staging;
  EngineCallbacks callbacks;
  uint64_t next_sequence = 0;  // producer thread only
  // How config.operation computes bands (Operation::band_halo,
  // bands_by_view), worked out when it is set rather than for every frame
  // (convert's takes a list of formats). Producer thread only.
  int band_halo = -1;
  bool bands_by_view = false;
};

bool EngineConfig::operator==(const EngineConfig& o) const {
  return ring_size == o.ring_size && mode == o.mode && input == o.input && output == o.output &&
         same_operation(operation, o.operation) && timing == o.timing &&
         timing_interval == o.timing_interval && staging_threads == o.staging_threads &&
         host_wait == o.host_wait && bands == o.bands && pull == o.pull && graphs == o.graphs &&
         graphs_idle == o.graphs_idle;
}

Engine::Engine(std::shared_ptr<Device> device, EngineConfig config, EngineCallbacks callbacks)
    : device_(std::move(device)),
      config_(std::move(config)),
      threads_(std::make_unique<EngineThreads>()) {
  threads_->callbacks = std::move(callbacks);
}

Engine::~Engine() { stop(); }

void Engine::start() {
  if (core_) throw Error("the engine was already started");
  if (!device_) throw Error("the engine has no device");
  if (config_.ring_size < kMinRing || config_.ring_size > kMaxRing)
    throw Error("ring-size " + std::to_string(config_.ring_size) + " is out of range: use " +
                std::to_string(kMinRing) + " to " + std::to_string(kMaxRing));
  for (const FrameLayout* layout : {&config_.input, &config_.output}) {
    const std::string problem = layout->validate();
    if (!problem.empty())
      throw Error(std::string(layout == &config_.input ? "input" : "output") +
                  " layout: " + problem);
  }
  if (!config_.operation) throw Error("the engine has no operation");
  const std::string kernel_problem =
      config_.operation->check(geometry_only(config_.input), geometry_only(config_.output));
  if (!kernel_problem.empty()) throw Error(kernel_problem);
  if (config_.bands < 1 || config_.bands > kMaxBands)
    throw Error("bands " + std::to_string(config_.bands) +
                " is out of range: use 1 (whole frames) to " + std::to_string(kMaxBands));
  if (config_.timing_interval < 1 || config_.timing_interval > kMaxTimingInterval)
    throw Error("timing interval " + std::to_string(config_.timing_interval) +
                " is out of range: use 1 (every frame) to " + std::to_string(kMaxTimingInterval));
  if (config_.staging_threads < 0 || config_.staging_threads > kMaxStagingThreads)
    throw Error("staging-threads " + std::to_string(config_.staging_threads) +
                " is out of range: use 0 (one per core) to " + std::to_string(kMaxStagingThreads));
  if (!std::isfinite(config_.graphs_idle) || config_.graphs_idle < 0)
    throw Error("graphs_idle " + std::to_string(config_.graphs_idle) +
                " is out of range: use 0 (every frame alone) or more");

  device_->make_current();
  auto core = std::make_shared<EngineCore>(device_, config_);
  core->allocate();  // throws before anything runs; the core frees what it got
  threads_->staging = std::make_unique<ParallelCopy>(
      config_.staging_threads == 0 ? ParallelCopy::automatic_threads() : config_.staging_threads);
  core->on_slot_freed_ = threads_->callbacks.on_slot_freed;
  core_ = core;
  note_operation_bands();
  if (config_.pull) {
    std::lock_guard<std::mutex> lock(threads_->pull_mutex);
    threads_->pull_core = core_;
  } else {
    threads_->worker = std::thread(run_worker, core_, std::cref(threads_->callbacks));
  }
}

uint64_t new_memory_id() {
  static std::atomic<uint64_t> last{0};
  return last.fetch_add(1, std::memory_order_relaxed) + 1;
}

uint64_t Engine::graph_frames() const { return core_ ? core_->graphs_.frames() : 0; }

uint64_t Engine::graph_captures() const { return core_ ? core_->graphs_.captures() : 0; }

namespace {

// submit()'s wait for a free slot, and the slot taken for `frame`: its
// references and `operation` (the current one) noted under the lock, and whether the frame
// runs alone (EngineConfig::graphs_idle). kOk with `*index` and
// `*sequence` set, or why not.
Status take_slot(EngineCore& c, EngineThreads& t, InputFrame& frame,
                 const std::shared_ptr<const Operation>& operation, FrameTiming* timing, int* index,
                 uint64_t* sequence, bool* alone) {
  // The slot's previous operation may be a replaced one's last reference:
  // it goes after the lock (unloading its program may wait on the device).
  std::shared_ptr<const Operation> replaced;
  std::unique_lock<std::mutex> lock(c.mutex_);
  // Backpressure: wait for the consumer to release a slot.
  c.slot_freed_.wait(
      lock, [&] { return !c.free_.empty() || c.flushing_ || c.stopping_ || !c.error_.empty(); });
  timing->wait_slot.end_ns = host_now_ns();
  if (c.flushing_ || c.stopping_) return Status::kFlushing;
  if (!c.error_.empty()) return Status::kError;
  *index = c.free_.front();
  c.free_.pop_front();
  Slot& slot = c.slots_[*index];
  *sequence = t.next_sequence++;
  slot.sequence = *sequence;
  slot.user = std::move(frame.user);
  slot.keep_alive = frame.pinned ? std::move(frame.keep_alive) : nullptr;
  replaced = std::move(slot.operation);
  slot.operation = operation;
  // Every frame before this one is done (delivered, or dropped after its
  // download completed): nothing on any stream runs, so this frame's
  // graph needs no order but the upload stream's. Only submit() adds.
  // And a graph only where the source leaves the engine idle long enough
  // that the next frame is unlikely to come while this one runs
  // (EngineConfig::graphs_idle).
  *alone =
      c.in_flight_.empty() && static_cast<double>(timing->wait_slot.end_ns - c.last_done_ns_) >=
                                  c.config_.graphs_idle * static_cast<double>(c.last_took_ns_);
  lock.unlock();
  replaced.reset();
  return Status::kOk;
}

// Pageable memory goes through the slot's pinned input so the upload can
// be asynchronous. The slot is free, so nothing reads it.
void stage_frame(ParallelCopy& copy, const FrameLayout& in, const ImageRef& from,
                 const ImageRef& staging) {
  PlaneCopy planes[kMaxPlanes];
  for (int p = 0; p < in.n_planes(); ++p) {
    planes[p].dst = staging.planes[p].data;
    planes[p].dst_stride = staging.planes[p].stride;
    planes[p].src = from.planes[p].data;
    planes[p].src_stride = from.planes[p].stride;
    planes[p].row_bytes = in.row_bytes(p);
    planes[p].rows = in.rows(p);
  }
  copy.copy(planes, in.n_planes());
}

}  // namespace

Status Engine::submit(InputFrame frame) {
  if (!core_) return Status::kFlushing;
  EngineCore& c = *core_;
  FrameTiming timing;
  timing.wait_slot.start_ns = frame.submitted_ns >= 0 ? frame.submitted_ns : host_now_ns();
  timing.arrived_ns = frame.arrived_ns >= 0 ? frame.arrived_ns : timing.wait_slot.start_ns;
  int index = -1;
  uint64_t sequence = 0;
  bool alone = false;
  const Status taken =
      take_slot(c, *threads_, frame, config_.operation, &timing, &index, &sequence, &alone);
  if (taken != Status::kOk) return taken;

  Slot& slot = c.slots_[index];
  Stage stage = Stage::kStaging;
  const bool timed = config_.timing && sequence % config_.timing_interval == 0;
  try {
    device_->make_current();
    const SlotImages memory = slot_images(slot, c.layouts_);
    PassImages images;
    images.source = frame.image;
    images.device_in = memory.device_in;
    images.device_out = memory.device_out;
    images.destination = memory.output;
    if (!frame.pinned) {
      timing.staging.start_ns = host_now_ns();
      stage_frame(*threads_->staging, config_.input, frame.image, memory.staging);
      images.source = memory.staging;
      timing.staging.end_ns = host_now_ns();
    }
    // config_.operation is the slot's now: threads_ noted its bands.
    const BandReading reading{threads_->band_halo, threads_->bands_by_view};
    // Pinned input only where its memory is known (InputFrame::memory_id):
    // a graph keeps the pages its upload reads from, not just the address.
    const uint64_t memory_id = frame.pinned ? frame.memory_id : 0;
    stage = Stage::kUpload;  // a graph launch that fails, failed at its start
    timing.graph = alone && !timed && config_.graphs && config_.mode == Mode::kOverlapped &&
                   (!frame.pinned || memory_id != 0) &&
                   c.graphs_.launch(index, sequence, memory_id, c.pass_, slot.events, images,
                                    slot.operation, reading, &stage);
    if (!timing.graph)
      c.pass_.enqueue(slot.events, images, *slot.operation, reading, timed, &stage);

    if (config_.mode == Mode::kSerial) c.pass_.streams().download->synchronize();
  } catch (const Error& e) {
    std::string message;
    {
      std::lock_guard<std::mutex> lock(c.mutex_);
      if (c.error_.empty()) {
        c.error_ = std::string(stage_name(stage)) + " of frame " + std::to_string(sequence) +
                   " failed: " + e.what();
        c.operation_failed_ = dynamic_cast<const OperationError*>(&e) != nullptr;
      }
      message = c.error_;
      // The slot's work may be half enqueued: it stays out of the ring, and
      // its references are dropped by stop().
    }
    c.notify_everyone();
    if (threads_->callbacks.on_error) threads_->callbacks.on_error(message);
    return Status::kError;
  }

  timing.enqueued_ns = host_now_ns();
  {
    std::lock_guard<std::mutex> lock(c.mutex_);
    slot.timing = timing;
    slot.timed = timed;
    c.in_flight_.push_back(index);
  }
  c.queued_.notify_one();
  return Status::kOk;
}

void Engine::replace_operation(std::shared_ptr<const Operation> operation) {
  if (!operation) throw Error("replace_operation needs an operation");
  const std::string problem =
      operation->check(geometry_only(config_.input), geometry_only(config_.output));
  if (!problem.empty()) throw Error(problem);
  // A workspace is shared by every frame in flight: new tables written into
  // it would reach frames of the old operation still running.
  if (operation->workspace_bytes() > 0 || config_.operation->workspace_bytes() > 0)
    throw Error(std::string("kernel '") + operation->name() +
                "' keeps tables on the device and cannot replace a running kernel; restart "
                "the engine instead");
  // Frames split into bands stay split: the new operation must allow it,
  // within the scratch image made at start() if it computes bands by view.
  const PixelFormat in = config_.input.format, out = config_.output.format;
  if (core_ && core_->pass_.bands() > 1 &&
      (operation->band_halo(in, out) < 0 ||
       (operation->bands_by_view(in, out) &&
        operation->band_halo(in, out) > core_->pass_.plan().view_halo)))
    throw Error(std::string("kernel '") + operation->name() +
                "' cannot run on bands of a frame as this engine started; restart the engine "
                "instead");
  config_.operation = std::move(operation);
  note_operation_bands();
}

void Engine::note_operation_bands() {
  const PixelFormat in = config_.input.format, out = config_.output.format;
  threads_->band_halo = config_.operation->band_halo(in, out);
  threads_->bands_by_view = config_.operation->bands_by_view(in, out);
}

int live_bands(const FrameLayout& input, const FrameLayout& output) {
  // Bytes of a frame's pixels, without row padding.
  const auto pixel_bytes = [](const FrameLayout& layout) {
    size_t bytes = 0;
    for (int p = 0; p < layout.n_planes(); ++p) bytes += layout.row_bytes(p) * layout.rows(p);
    return bytes;
  };
  const size_t bytes = std::max(pixel_bytes(input), pixel_bytes(output));
  const auto bands = static_cast<int>((bytes + kLiveBandBytes / 2) / kLiveBandBytes);
  return std::clamp(bands, kMinLiveBands, kMaxLiveBands);
}

int Engine::bands() const { return core_ ? core_->pass_.bands() : 1; }

Status Engine::drain() {
  if (!core_) return Status::kOk;
  EngineCore& c = *core_;
  if (config_.pull) {
    // Hands out, on this thread, whatever no deliver() is handing out.
    if (!make_current_for_delivery(c, threads_->callbacks)) return Status::kError;
    std::unique_lock<std::mutex> lock(c.mutex_);
    for (;;) {
      c.idle_.wait(
          lock, [&] { return !c.worker_busy_ || c.flushing_ || c.stopping_ || !c.error_.empty(); });
      if (!c.error_.empty()) return Status::kError;
      if (c.flushing_ || c.stopping_) return Status::kFlushing;
      if (c.in_flight_.empty()) return Status::kOk;
      deliver_front(core_, threads_->callbacks, threads_->pull_polling, lock);
    }
  }
  std::unique_lock<std::mutex> lock(c.mutex_);
  c.idle_.wait(lock, [&] {
    return (c.in_flight_.empty() && !c.worker_busy_) || c.flushing_ || c.stopping_ ||
           !c.error_.empty();
  });
  if (!c.error_.empty()) return Status::kError;
  if (c.flushing_ || c.stopping_) return Status::kFlushing;
  return Status::kOk;
}

OutputFrame Engine::deliver() {
  EngineThreads& t = *threads_;
  std::shared_ptr<EngineCore> core;
  {
    std::lock_guard<std::mutex> lock(t.pull_mutex);
    core = t.pull_core;
    if (!core) return OutputFrame();  // not pulling, not started, or stopped
    ++t.pulling;
  }
  // stop() waits for this call to end, whatever it does.
  struct Pulling {
    EngineThreads& t;
    ~Pulling() {
      {
        std::lock_guard<std::mutex> lock(t.pull_mutex);
        --t.pulling;
      }
      t.pull_done.notify_all();
    }
  } pulling{t};
  EngineCore& c = *core;
  if (!make_current_for_delivery(c, t.callbacks)) return OutputFrame();
  const TimerSlack slack(polls(c));
  std::unique_lock<std::mutex> lock(c.mutex_);
  if (c.worker_busy_) {
    // drain() is handing the next frame out (to on_frame): wait for it, so
    // that whatever comes after this call comes after that frame.
    c.idle_.wait(lock, [&] { return !c.worker_busy_; });
    return OutputFrame();
  }
  if (c.stopping_ || c.flushing_ || !c.error_.empty() || c.in_flight_.empty()) return OutputFrame();
  TakenFrame taken = take_front(core, t.callbacks, t.pull_polling, lock);
  if (!taken.frame) return OutputFrame();
  handed_out(c, t.callbacks, std::string(), lock);
  lock.unlock();
  taken.keep_alive.reset();  // its upload is long done; the producer may reuse it
  return std::move(taken.frame);
}

void Engine::flush_start() {
  if (!core_) return;
  {
    std::lock_guard<std::mutex> lock(core_->mutex_);
    core_->flushing_ = true;
  }
  core_->notify_everyone();
}

namespace {

// Waits for the device work of `dropped` slots, then frees them undelivered.
// Called without the lock held.
void drop_slots(EngineCore& c, const std::vector<int>& dropped) {
  std::vector<std::shared_ptr<void>> references;
  for (int index : dropped) {
    Slot& slot = c.slots_[index];
    try {
      slot.events.downloaded->synchronize();
    } catch (const Error&) {
      // The error state already holds the first failure.
    }
    std::lock_guard<std::mutex> lock(c.mutex_);
    references.push_back(std::move(slot.user));
    references.push_back(std::move(slot.keep_alive));
  }
  references.clear();  // outside the lock: deleters may call into the host app
}

}  // namespace

void Engine::flush_stop() {
  if (!core_) return;
  EngineCore& c = *core_;
  std::vector<int> dropped;
  {
    std::unique_lock<std::mutex> lock(c.mutex_);
    c.flushing_ = true;  // in case flush_start() was not called
    c.idle_.wait(lock, [&] { return !c.worker_busy_; });
    dropped.assign(c.in_flight_.begin(), c.in_flight_.end());
    c.in_flight_.clear();
  }
  drop_slots(c, dropped);
  {
    std::lock_guard<std::mutex> lock(c.mutex_);
    for (int index : dropped) c.free_.push_back(index);
    c.flushing_ = false;
  }
  c.notify_everyone();
  if (c.on_slot_freed_ && !dropped.empty()) c.on_slot_freed_();
}

void Engine::stop() {
  if (!core_) return;
  EngineCore& c = *core_;
  {
    std::lock_guard<std::mutex> lock(c.mutex_);
    c.stopping_ = true;
  }
  c.notify_everyone();
  if (threads_->worker.joinable()) threads_->worker.join();
  {
    // deliver() calls under way end (one waiting for a frame sees stopping_
    // once that frame's device work is done) before anything they use goes;
    // later ones find no core.
    std::unique_lock<std::mutex> lock(threads_->pull_mutex);
    threads_->pull_core.reset();
    threads_->pull_done.wait(lock, [&] { return threads_->pulling == 0; });
  }
  threads_->staging.reset();  // no submit() runs now, so no copy either

  c.synchronize_streams();
  std::vector<std::shared_ptr<void>> references;
  {
    std::lock_guard<std::mutex> lock(c.mutex_);
    for (Slot& slot : c.slots_) {
      references.push_back(std::move(slot.user));
      references.push_back(std::move(slot.keep_alive));
    }
    c.in_flight_.clear();
  }
  references.clear();
  // The core lives on while consumers hold OutputFrames.
  core_.reset();
}

int Engine::free_slots() const {
  if (!core_) return 0;
  std::lock_guard<std::mutex> lock(core_->mutex_);
  return static_cast<int>(core_->free_.size());
}

std::string Engine::error() const {
  if (!core_) return {};
  std::lock_guard<std::mutex> lock(core_->mutex_);
  return core_->error_;
}

bool Engine::operation_failed() const {
  if (!core_) return false;
  std::lock_guard<std::mutex> lock(core_->mutex_);
  return !core_->error_.empty() && core_->operation_failed_;
}

}  // namespace cudaoverlap
