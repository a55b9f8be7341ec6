// The overlap engine; see engine.h for the data flow and thread contracts.
//
// EngineCore holds everything that must outlive the Engine while consumers
// still hold OutputFrames: the device, streams, events, slot buffers and the
// free list. The Engine owns the worker thread and joins it in stop().
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

#include "error.h"
#include "operation_registry.h"
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
// Device planes start on, and pitch to, 256 bytes: what cudaMallocPitch
// would pick, and what lets kernels use 16-byte vector loads.
constexpr size_t kDeviceAlign = 256;

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

// The step of submit() that failed, for the error message.
enum class Stage { kStaging, kUpload, kCompute, kDownload };

const char* stage_name(Stage stage) {
  switch (stage) {
    case Stage::kStaging:
      return "staging copy";
    case Stage::kUpload:
      return "upload";
    case Stage::kCompute:
      return "kernel";
    case Stage::kDownload:
      return "download";
  }
  return "";
}

}  // namespace

struct Slot {
  // Memory of one frame in flight. Allocated in start(), freed with the core.
  std::unique_ptr<Buffer> pinned_in;
  std::unique_ptr<Buffer> device_in;
  std::unique_ptr<Buffer> device_out;
  std::unique_ptr<Buffer> pinned_out;
  // One per band (EngineConfig::bands; one band: the whole frame). The last
  // band's is the whole frame's.
  std::vector<std::unique_ptr<Event>> uploaded;
  std::vector<std::unique_ptr<Event>> computed;
  std::unique_ptr<Event> downloaded;
  // EngineConfig::timing only: the starts of the three stages (their ends
  // are the barrier events above, then made with timing).
  std::unique_ptr<Event> upload_started;
  std::unique_ptr<Event> compute_started;
  std::unique_ptr<Event> download_started;
  // Guarded by EngineCore::mutex_.
  uint64_t sequence = 0;
  std::shared_ptr<void> keep_alive;  // the zero-copy input, until uploaded
  std::shared_ptr<void> user;
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

class EngineCore {
 public:
  EngineCore(std::shared_ptr<Device> device, const EngineConfig& config)
      : device_(std::move(device)), config_(config) {}

  ~EngineCore() {
    // Streams go first and are drained, so no device work still touches the
    // buffers and events freed after them.
    for (auto& stream : streams_) {
      try {
        stream->synchronize();
      } catch (const Error&) {
        // Already reported through the error state.
      }
    }
    captured_.clear();
    streams_.clear();
  }

  void allocate();
  void release(int slot) noexcept;
  // EngineCallbacks::on_slot_freed, set before the worker starts.
  std::function<void()> on_slot_freed_;

  std::shared_ptr<Device> device_;
  EngineConfig config_;
  FrameLayout device_in_layout_;
  FrameLayout device_out_layout_;
  FrameLayout staging_layout_;
  // The operation's workspace (Operation::workspace_bytes), prepared on the
  // compute stream before the first frame; null when it needs none.
  std::unique_ptr<Buffer> workspace_;
  Workspace workspace_view_;

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
  // Flushing, stopping and errors concern everyone.
  void notify_everyone() {
    slot_freed_.notify_all();
    queued_.notify_all();
    idle_.notify_all();
  }
  std::deque<int> free_;       // free slots, oldest released first
  std::deque<int> in_flight_;  // submitted, not yet delivered, in order
  bool worker_busy_ = false;   // worker is waiting on / delivering front
  // The last frame delivered: when it was found done, and how long from
  // its enqueueing (host_now_ns()), for EngineConfig::graphs_idle.
  int64_t last_done_ns_ = 0;
  int64_t last_took_ns_ = 0;
  bool flushing_ = false;
  bool stopping_ = false;
  std::string error_;
  bool operation_failed_ = false;  // error_ came from an OperationError

  // Written in allocate() before the worker starts, then read-only.
  // Where the bands of a frame start, top to bottom, and the height last
  // (2 entries when frames are not split).
  std::vector<int> band_rows_;
  int band_step_ = 1;  // band_row_step of the formats
  // Operations that compute bands by view (Operation::bands_by_view): the
  // halo the scratch image was made for (-1: none), its layout (the output
  // format, as many rows as the largest band's view) and memory. Only the
  // compute stream uses it, one band after another.
  int view_halo_ = -1;
  FrameLayout scratch_layout_;
  std::unique_ptr<Buffer> scratch_;
  std::vector<Slot> slots_;
  // EngineConfig::graphs: per slot, the graphs captured of its frames, each
  // for one operation and input memory (the planes it uploads from). The
  // producer's alone.
  struct CapturedFrame {
    std::shared_ptr<const Operation> operation;  // held: no other can take its address
    const uint8_t* source[kMaxPlanes] = {};
    size_t stride[kMaxPlanes] = {};
    uint64_t memory_id = 0;  // InputFrame::memory_id; 0: the slot's staging memory
    std::unique_ptr<Graph> graph;
    uint64_t last_used = 0;  // the sequence of the last frame it ran
  };
  std::vector<std::vector<CapturedFrame>> captured_;
  // An operation whose capture failed: enqueued call by call from then on.
  std::shared_ptr<const Operation> not_capturable_;
  std::atomic<uint64_t> graph_frames_{0};
  std::atomic<uint64_t> graph_captures_{0};
  std::vector<std::unique_ptr<Stream>> streams_;  // one in serial mode
  Stream* upload_ = nullptr;
  Stream* compute_ = nullptr;
  Stream* download_ = nullptr;
};

void EngineCore::allocate() {
  const int n = config_.ring_size;
  const FrameLayout& in = config_.input;
  const FrameLayout& out = config_.output;
  device_in_layout_ =
      FrameLayout::packed(in.format, in.width, in.height, kDeviceAlign, kDeviceAlign);
  device_out_layout_ =
      FrameLayout::packed(out.format, out.width, out.height, kDeviceAlign, kDeviceAlign);
  staging_layout_ = FrameLayout::packed(in.format, in.width, in.height);

  // Bands: as many as asked, where the operation allows it, on rows that
  // are a multiple of both formats' vertical period.
  const int step = band_row_step(in.format, out.format);
  band_step_ = step;
  int bands = 1;
  const Operation& banded = *config_.operation;
  if (config_.bands > 1 && config_.mode == Mode::kOverlapped && !banded.swaps_axes() &&
      in.height == out.height && banded.band_halo(in.format, out.format) >= 0)
    bands = std::min(config_.bands, in.height / step);
  bands = std::max(bands, 1);
  for (int k = 0; k < bands; ++k)
    band_rows_.push_back(static_cast<int>(int64_t{k} * in.height / bands / step * step));
  band_rows_.push_back(in.height);
  int view_rows = 0;
  if (bands > 1 && banded.bands_by_view(in.format, out.format)) {
    view_halo_ = banded.band_halo(in.format, out.format);
    for (int k = 0; k < bands; ++k) {
      const RowRange view =
          band_view(band_rows_[k], band_rows_[k + 1], view_halo_, step, in.height);
      view_rows = std::max(view_rows, view.last - view.first);
    }
    scratch_layout_ =
        FrameLayout::packed(out.format, out.width, view_rows, kDeviceAlign, kDeviceAlign);
  }

  const size_t device_bytes = n * (device_in_layout_.size + device_out_layout_.size) +
                              (view_rows ? scratch_layout_.size : 0);
  const size_t pinned_bytes = n * (staging_layout_.size + out.size);
  const std::string ring = "ring-size " + std::to_string(n);
  const size_t free_bytes = device_->device_memory_free();
  if (device_bytes > free_bytes)
    throw Error(ring + " needs " + megabytes(device_bytes) + " of device memory for " +
                std::to_string(in.width) + "x" + std::to_string(in.height) + " frames, but " +
                device_->describe() + " has only " + megabytes(free_bytes) +
                " free; lower ring-size or the frame size");

  slots_.resize(n);
  captured_.resize(n);
  try {
    if (view_rows > 0) scratch_ = device_->alloc_device(scratch_layout_.size);
    for (Slot& slot : slots_) {
      slot.device_in = device_->alloc_device(device_in_layout_.size);
      slot.device_out = device_->alloc_device(device_out_layout_.size);
    }
  } catch (const Error& e) {
    throw Error(ring + " needs " + megabytes(device_bytes) + " of device memory on " +
                device_->describe() + "; allocating it failed (" + e.what() +
                "); lower ring-size or the frame size");
  }
  for (Slot& slot : slots_) {
    try {
      slot.pinned_in = device_->alloc_pinned(staging_layout_.size);
      slot.pinned_out = device_->alloc_pinned(out.size);
    } catch (const Error& e) {
      throw Error(ring + " needs " + megabytes(pinned_bytes) +
                  " of pinned host memory; allocating it failed (" + e.what() +
                  "); lower ring-size or the frame size");
    }
    for (int k = 0; k < bands; ++k) {
      slot.uploaded.push_back(config_.timing ? device_->create_timing_event()
                                             : device_->create_event());
      slot.computed.push_back(config_.timing ? device_->create_timing_event()
                                             : device_->create_event());
    }
    if (config_.timing) {
      slot.downloaded = device_->create_host_event(config_.host_wait, true);
      slot.upload_started = device_->create_timing_event();
      slot.compute_started = device_->create_timing_event();
      slot.download_started = device_->create_timing_event();
    } else {
      slot.downloaded = device_->create_host_event(config_.host_wait, false);
    }
  }
  const int n_streams = config_.mode == Mode::kSerial ? 1 : 3;
  for (int s = 0; s < n_streams; ++s) streams_.push_back(device_->create_stream());
  upload_ = streams_.front().get();
  compute_ = streams_[n_streams == 1 ? 0 : 1].get();
  download_ = streams_.back().get();
  const Operation& op = *config_.operation;
  if (op.workspace_bytes() > 0) {
    try {
      workspace_ = device_->alloc_device(op.workspace_bytes());
    } catch (const Error& e) {
      throw Error(std::string("kernel '") + op.name() + "' needs " +
                  megabytes(op.workspace_bytes()) + " of device memory for its tables on " +
                  device_->describe() + "; allocating it failed (" + e.what() + ")");
    }
    workspace_view_ = Workspace{workspace_->data(), workspace_->size()};
  }
  // Ordered before every frame's kernel by the compute stream itself; and
  // done before start() returns, for a graph (EngineConfig::graphs) joins
  // the compute stream but for its own events and is ordered by none of
  // its earlier work.
  compute_->prepare(op, workspace_view_);
  compute_->synchronize();
  for (int i = 0; i < n; ++i) free_.push_back(i);
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
                         ImageRef image, std::shared_ptr<void> user)
    : core_(std::move(core)),
      slot_(slot),
      sequence_(sequence),
      image_(image),
      user_(std::move(user)) {}

OutputFrame::OutputFrame(std::shared_ptr<EngineCore> core, int slot, uint64_t sequence,
                         ImageRef image, std::shared_ptr<void> user, const FrameTiming& timing)
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

namespace {

// Worker thread, after the slot's download completed: the device stages'
// times. A backend that cannot tell leaves them invalid; statistics are not
// worth failing a frame for.
void read_device_times(Slot& slot, FrameTiming* timing) {
  const auto span = [](Event& start, Event& end) {
    TimeSpan t;
    try {
      t.start_ns = start.completed_at_ns();
      t.end_ns = end.completed_at_ns();
    } catch (const Error&) {
      t = TimeSpan{};
    }
    return t;
  };
  timing->upload = span(*slot.upload_started, *slot.uploaded.back());
  timing->compute = span(*slot.compute_started, *slot.computed.back());
  timing->download = span(*slot.download_started, *slot.downloaded);
}

// Polling pays where waking is slow and polling cheap: a CUDA event. The
// cpu backend's events wake their waiter at once (a condition variable),
// and its streams are host threads that a polling waiter would compete
// with for the cores.
bool polls(const EngineCore& c) {
  return c.config_.host_wait == HostWait::kPoll && c.device_->cuda_device() >= 0;
}

// Sleeps of HostWait::kPoll end within a microsecond of their time, not the
// default 50 later (the thread's timer slack). The worker's for good; a
// thread that only lends itself (deliver(): the consumer's, e.g. a
// GStreamer pad task from a pool other elements use too) gets its own back
// when the TimerSlack goes.
class TimerSlack {
 public:
  explicit TimerSlack(bool tighten) {
#ifdef __linux__
    if (!tighten) return;
    const int previous = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
    if (previous < 0 || previous == kSlackNs) return;
    if (prctl(PR_SET_TIMERSLACK, static_cast<unsigned long>(kSlackNs), 0, 0, 0) == 0)
      previous_ = previous;
#else
    (void)tighten;
#endif
  }
  ~TimerSlack() { restore(); }
  void keep() { previous_ = -1; }  // the thread keeps the tight slack
  TimerSlack(const TimerSlack&) = delete;
  TimerSlack& operator=(const TimerSlack&) = delete;

 private:
  void restore() {
#ifdef __linux__
    if (previous_ > 0) prctl(PR_SET_TIMERSLACK, static_cast<unsigned long>(previous_), 0, 0, 0);
#endif
    previous_ = -1;
  }
  static constexpr int kSlackNs = 1000;
  int previous_ = -1;
};

// The worker's part for the frame at the front of in_flight_: waits for its
// download and hands it to on_frame, or puts the engine in its error state.
// Called with `lock` held on c.mutex_, in_flight_ not empty and worker_busy_
// false; returns with the lock held and worker_busy_ false again. On the
// worker thread, or (EngineConfig::pull) in deliver() and drain(): one
// thread at a time, the one that set worker_busy_, which alone uses
// `polling`. True when the frame went to on_frame.
bool deliver_front(const std::shared_ptr<EngineCore>& core, const EngineCallbacks& callbacks,
                   PollingWait& polling, std::unique_lock<std::mutex>& lock) {
  EngineCore& c = *core;
  const int index = c.in_flight_.front();
  Slot& slot = c.slots_[index];
  c.worker_busy_ = true;
  lock.unlock();

  // Barrier "downloaded": the slot's pinned output is complete only when
  // its D2H copy has finished.
  std::string failure;
  bool operations = false;  // the failure is an OperationError
  FrameTiming timing = slot.timing;
  timing.worker_wait.start_ns = host_now_ns();
  bool done_before = false;  // complete when the wait began: when, the event says
  try {
    if (polls(c)) {
      done_before = polling.wait(*slot.downloaded, timing.enqueued_ns);
    } else {
      done_before = slot.downloaded->query();
      if (!done_before) slot.downloaded->synchronize();
    }
  } catch (const Error& e) {
    failure = e.what();
    operations = dynamic_cast<const OperationError*>(&e) != nullptr;
  }
  timing.worker_wait.end_ns = host_now_ns();
  // Read here, off the producer's path: the events are complete, so no
  // call below waits for the device. The slot is still in flight, so its
  // events and timing are not rewritten meanwhile.
  timing.delivered_ns = timing.worker_wait.end_ns;
  // Seen complete by a waiter that waited: then. Complete before anyone
  // looked (the consumer was busy elsewhere): the barrier's own time, whose
  // place on the host clock may be off by the device clock's drift since
  // its anchor, which a waiter's own reading is not.
  timing.ready_ns = timing.delivered_ns;
  if (failure.empty() && done_before && c.config_.timing) {
    try {
      const int64_t at = slot.downloaded->completed_at_ns();
      if (at >= 0 && at < timing.ready_ns) timing.ready_ns = at;
    } catch (const Error&) {
      // No time from the device this once: when it was seen will do.
    }
  }
  if (failure.empty() && slot.timed) read_device_times(slot, &timing);

  lock.lock();
  if (!failure.empty()) {
    const bool first = c.error_.empty();
    if (first) {
      c.error_ = "frame " + std::to_string(slot.sequence) + " failed: " + failure;
      c.operation_failed_ = operations;
    }
    c.worker_busy_ = false;
    const std::string message = c.error_;
    lock.unlock();
    c.notify_everyone();
    if (first && callbacks.on_error) callbacks.on_error(message);
    lock.lock();
    return false;
  }
  if (c.flushing_ || c.stopping_) {
    // flush_stop()/stop() drop what is in flight, this slot included.
    c.worker_busy_ = false;
    c.idle_.notify_all();
    return false;
  }
  c.in_flight_.pop_front();
  c.last_done_ns_ = timing.delivered_ns;
  c.last_took_ns_ = timing.delivered_ns - timing.enqueued_ns;
  // The consumer may release the frame at once, and the slot be reused by
  // the next submit(): nothing of the slot is read after the callback.
  const uint64_t sequence = slot.sequence;
  std::shared_ptr<void> keep_alive = std::move(slot.keep_alive);
  OutputFrame frame(core, index, sequence, c.config_.output.at(slot.pinned_out->data()),
                    std::move(slot.user), timing);
  lock.unlock();

  keep_alive.reset();  // its upload is long done; the producer may reuse it
  std::string consumer_failure;
  try {
    if (callbacks.on_frame) callbacks.on_frame(std::move(frame));
  } catch (const std::exception& e) {
    // A consumer must not throw; if it does, the engine stops cleanly
    // instead of letting the exception end the process.
    consumer_failure =
        std::string("the consumer of frame ") + std::to_string(sequence) + " failed: " + e.what();
  }
  frame.release();  // a consumer that did not take the frame frees it here

  lock.lock();
  c.worker_busy_ = false;
  const bool first = !consumer_failure.empty() && c.error_.empty();
  if (first) c.error_ = consumer_failure;
  // Not slot_freed_: a slot is freed by its release(), which notifies.
  if (first)
    c.notify_everyone();
  else
    c.idle_.notify_all();
  if (first && callbacks.on_error) {
    lock.unlock();
    callbacks.on_error(consumer_failure);
    lock.lock();
  }
  return true;
}

// Makes the engine's device current on a thread that hands frames out; a
// failure puts the engine in its error state (reported once). False then.
bool make_current_for_delivery(EngineCore& c, const EngineCallbacks& callbacks) {
  try {
    c.device_->make_current();
    return true;
  } catch (const Error& e) {
    bool first;
    {
      std::lock_guard<std::mutex> lock(c.mutex_);
      first = c.error_.empty();
      if (first) c.error_ = e.what();
    }
    c.notify_everyone();
    if (first && callbacks.on_error) callbacks.on_error(e.what());
    return false;
  }
}

// The worker thread's loop. Free function over the core so that the thread
// never touches the Engine object itself.
void run_worker(const std::shared_ptr<EngineCore>& core, const EngineCallbacks& callbacks) {
  EngineCore& c = *core;
  try {
    c.device_->make_current();
  } catch (const Error& e) {
    std::lock_guard<std::mutex> lock(c.mutex_);
    c.error_ = e.what();
  }
#ifdef __linux__
  // Named for top -H and profilers (it would otherwise bear the name of the
  // thread that started the engine, e.g. upstream's streaming thread).
  prctl(PR_SET_NAME, "co-worker", 0UL, 0UL, 0UL);
#endif
  TimerSlack(polls(c)).keep();
  PollingWait polling;
  std::unique_lock<std::mutex> lock(c.mutex_);
  for (;;) {
    c.queued_.wait(lock, [&] {
      return c.stopping_ || (!c.in_flight_.empty() && !c.flushing_ && c.error_.empty());
    });
    if (c.stopping_) return;
    deliver_front(core, callbacks, polling, lock);
  }
}

}  // namespace

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

namespace {

// A slot keeps up to kGraphsPerSlot graphs (engine.h), one per input memory
// it met (with the current operation). When it has that many, a new input
// takes the place of the one least recently run only if that one has not
// run for kStaleFrames frames (a buffer upstream freed); otherwise the new
// one goes call by call. So a pool of more buffers than that, taken in
// turn, has its first kGraphsPerSlot run as graphs and the others by
// calls, rather than every frame's graph captured anew for one launch.
constexpr uint64_t kStaleFrames = 4 * kGraphsPerSlot;  // times the ring size

// EngineConfig::graphs, for a frame alone (submit()): launches the graph of
// slot `index`'s frame from `source`, capturing it first from `enqueue` (the
// frame's calls) when the slot has none for that input and operation, then
// records the slot's `downloaded` after it on the upload stream. False,
// with nothing enqueued, where the frame is to be enqueued call by call: a
// backend without graphs, an operation that is not capturable, a capture
// that failed. `memory_id` is the input's InputFrame::memory_id when it is
// uploaded from where it lies (pinned), 0 when it was staged into the
// slot's own memory. `enqueue` is submit()'s lambda as it is (a
// std::function of it would allocate every frame). Producer thread.
template <typename Enqueue>
bool enqueue_as_graph(EngineCore& c, int index, uint64_t sequence, const ImageRef& source,
                      uint64_t memory_id, const Enqueue& enqueue) {
  Slot& slot = c.slots_[index];
  const std::shared_ptr<const Operation>& op = slot.operation;
  if (!op->capturable() || op == c.not_capturable_) return false;
  std::vector<EngineCore::CapturedFrame>& captured = c.captured_[index];
  // Graphs of a replaced operation are of no more use.
  captured.erase(
      std::remove_if(captured.begin(), captured.end(),
                     [&](const EngineCore::CapturedFrame& f) { return f.operation != op; }),
      captured.end());
  const int planes = c.config_.input.n_planes();
  auto same_source = [&](const EngineCore::CapturedFrame& f) {
    if (f.memory_id != memory_id) return false;
    for (int p = 0; p < planes; ++p)
      if (f.source[p] != source.planes[p].data || f.stride[p] != source.planes[p].stride)
        return false;
    return true;
  };
  auto found = std::find_if(captured.begin(), captured.end(), same_source);
  if (found == captured.end()) {
    auto oldest = captured.end();
    if (captured.size() >= kGraphsPerSlot) {
      oldest = std::min_element(captured.begin(), captured.end(), [](const auto& a, const auto& b) {
        return a.last_used < b.last_used;
      });
      const uint64_t stale = kStaleFrames * static_cast<uint64_t>(c.config_.ring_size);
      if (sequence - oldest->last_used < stale) return false;
    }
    if (!c.upload_->begin_capture()) {
      c.not_capturable_ = op;
      return false;
    }
    bool complete = false;
    try {
      enqueue();
      // Joins the compute and download streams back into the upload stream.
      const int bands = static_cast<int>(c.band_rows_.size()) - 1;
      c.upload_->wait(*slot.computed[bands - 1]);
      c.upload_->wait(*slot.downloaded);
      complete = true;
    } catch (const Error&) {
      // A call that cannot be captured (or a real failure, which the frame's
      // enqueueing call by call then meets and reports).
    } catch (...) {
      (void)c.upload_->end_capture();  // the streams back to normal
      throw;
    }
    std::unique_ptr<Graph> graph = c.upload_->end_capture();
    if (!complete || !graph) {
      c.not_capturable_ = op;
      return false;
    }
    if (oldest != captured.end()) captured.erase(oldest);
    c.graph_captures_.fetch_add(1, std::memory_order_relaxed);
    EngineCore::CapturedFrame made;
    made.operation = op;
    made.memory_id = memory_id;
    for (int p = 0; p < planes; ++p) {
      made.source[p] = source.planes[p].data;
      made.stride[p] = source.planes[p].stride;
    }
    made.graph = std::move(graph);
    captured.push_back(std::move(made));
    found = captured.end() - 1;
  }
  c.upload_->launch_graph(*found->graph);
  c.upload_->record(*slot.downloaded);
  found->last_used = sequence;
  c.graph_frames_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

}  // namespace

uint64_t new_memory_id() {
  static std::atomic<uint64_t> last{0};
  return last.fetch_add(1, std::memory_order_relaxed) + 1;
}

uint64_t Engine::graph_frames() const {
  return core_ ? core_->graph_frames_.load(std::memory_order_relaxed) : 0;
}

uint64_t Engine::graph_captures() const {
  return core_ ? core_->graph_captures_.load(std::memory_order_relaxed) : 0;
}

Status Engine::submit(InputFrame frame) {
  if (!core_) return Status::kFlushing;
  EngineCore& c = *core_;
  int index;
  uint64_t sequence;
  FrameTiming timing;
  bool alone = false;
  timing.wait_slot.start_ns = frame.submitted_ns >= 0 ? frame.submitted_ns : host_now_ns();
  timing.arrived_ns = frame.arrived_ns >= 0 ? frame.arrived_ns : timing.wait_slot.start_ns;
  std::shared_ptr<const Operation> replaced;
  {
    std::unique_lock<std::mutex> lock(c.mutex_);
    // Backpressure: wait for the consumer to release a slot.
    c.slot_freed_.wait(
        lock, [&] { return !c.free_.empty() || c.flushing_ || c.stopping_ || !c.error_.empty(); });
    timing.wait_slot.end_ns = host_now_ns();
    if (c.flushing_ || c.stopping_) return Status::kFlushing;
    if (!c.error_.empty()) return Status::kError;
    index = c.free_.front();
    c.free_.pop_front();
    sequence = threads_->next_sequence++;
    Slot& slot = c.slots_[index];
    slot.sequence = sequence;
    slot.user = std::move(frame.user);
    slot.keep_alive = frame.pinned ? std::move(frame.keep_alive) : nullptr;
    // The slot's previous operation may be a replaced one's last reference:
    // it goes after the lock (unloading its program may wait on the device).
    replaced = std::move(slot.operation);
    slot.operation = config_.operation;
    // Every frame before this one is done (delivered, or dropped after its
    // download completed): nothing on any stream runs, so this frame's
    // graph needs no order but the upload stream's. Only submit() adds.
    // And a graph only where the source leaves the engine idle long enough
    // that the next frame is unlikely to come while this one runs
    // (EngineConfig::graphs_idle).
    alone =
        c.in_flight_.empty() && static_cast<double>(timing.wait_slot.end_ns - c.last_done_ns_) >=
                                    config_.graphs_idle * static_cast<double>(c.last_took_ns_);
  }
  replaced.reset();

  Slot& slot = c.slots_[index];
  Stage stage = Stage::kStaging;
  const bool timed = config_.timing && sequence % config_.timing_interval == 0;
  try {
    device_->make_current();
    const FrameLayout& in = config_.input;
    const ImageRef device_in = c.device_in_layout_.at(slot.device_in->data());
    const ImageRef device_out = c.device_out_layout_.at(slot.device_out->data());
    const ImageRef pinned_out = config_.output.at(slot.pinned_out->data());

    // Stage: pageable memory goes through the slot's pinned input so the
    // upload can be asynchronous. The slot is free, so nothing reads it.
    ImageRef source = frame.image;
    if (!frame.pinned) {
      timing.staging.start_ns = host_now_ns();
      const ImageRef staging = c.staging_layout_.at(slot.pinned_in->data());
      PlaneCopy planes[kMaxPlanes];
      for (int p = 0; p < in.n_planes(); ++p) {
        planes[p].dst = staging.planes[p].data;
        planes[p].dst_stride = staging.planes[p].stride;
        planes[p].src = frame.image.planes[p].data;
        planes[p].src_stride = frame.image.planes[p].stride;
        planes[p].row_bytes = in.row_bytes(p);
        planes[p].rows = in.rows(p);
      }
      threads_->staging->copy(planes, in.n_planes());
      source = staging;
      timing.staging.end_ns = host_now_ns();
    }

    const FrameLayout& out = config_.output;
    const std::vector<int>& rows = c.band_rows_;
    const int bands = static_cast<int>(rows.size()) - 1;
    // The frame's device work, call by call (or captured into a graph).
    // Each stream gets its calls in band order; the host issues them band
    // by band (a band's upload, then the kernels whose input is uploaded by
    // then, each followed by its download), so that the first band's
    // download is on its stream as soon as its kernel can have run, rather
    // than after every other band's calls: a frame's calls take longer to
    // make (cold, 4 to 6 us each, 30 for 4 bands) than a band's upload at
    // 1080p, and the download stream, which then carries the whole frame,
    // would start late by that much.
    auto enqueue = [&] {
      const Operation& op = *slot.operation;  // config_.operation now: threads_ noted its bands
      const int halo = bands > 1 ? threads_->band_halo : 0;
      const bool by_view = bands > 1 && threads_->bands_by_view;
      // The input rows band k's kernel reads.
      const auto reads = [&](int k) {
        if (by_view) return band_view(rows[k], rows[k + 1], halo, c.band_step_, rows[bands]);
        return RowRange{std::max(rows[k] - halo, 0), std::min(rows[k + 1] + halo, rows[bands])};
      };
      const auto upload = [&](int k) {
        stage = Stage::kUpload;
        if (timed && k == 0) c.upload_->record(*slot.upload_started);
        for (int p = 0; p < in.n_planes(); ++p) {
          const size_t r0 = plane_rows(in.format, p, rows[k]),
                       r1 = plane_rows(in.format, p, rows[k + 1]);
          c.upload_->copy_2d(
              device_in.planes[p].data + r0 * device_in.planes[p].stride,
              device_in.planes[p].stride, source.planes[p].data + r0 * source.planes[p].stride,
              source.planes[p].stride, in.row_bytes(p), r1 - r0, CopyKind::kHostToDevice);
        }
        c.upload_->record(*slot.uploaded[k]);
      };
      const auto compute = [&](int k, int needed) {
        stage = Stage::kCompute;
        const RowRange read = reads(k);
        // Barrier "uploaded": the kernel reads the slot's device input down
        // to read.last: it waits for the band that holds that row (the
        // upload stream runs bands in order).
        c.compute_->wait(*slot.uploaded[needed]);
        if (timed && k == 0) c.compute_->record(*slot.compute_started);
        if (bands == 1) {
          c.compute_->launch(op, device_in, device_out, c.workspace_view_);
        } else if (!by_view) {
          c.compute_->launch_rows(op, device_in, device_out, c.workspace_view_, rows[k],
                                  rows[k + 1]);
        } else {
          // The whole-frame kernel on the band's view, into the scratch
          // image, whose band rows then go to the output. The compute stream
          // runs one band after another, so one scratch image serves all.
          const ImageRef scratch =
              image_rows(c.scratch_layout_.at(c.scratch_->data()), 0, read.last - read.first);
          c.compute_->launch(op, image_rows(device_in, read.first, read.last), scratch,
                             c.workspace_view_);
          for (int p = 0; p < out.n_planes(); ++p) {
            const size_t r0 = plane_rows(out.format, p, rows[k]);
            const size_t r1 = plane_rows(out.format, p, rows[k + 1]);
            const size_t from = r0 - plane_rows(out.format, p, read.first);
            c.compute_->copy_2d(device_out.planes[p].data + r0 * device_out.planes[p].stride,
                                device_out.planes[p].stride,
                                scratch.planes[p].data + from * scratch.planes[p].stride,
                                scratch.planes[p].stride, out.row_bytes(p), r1 - r0,
                                CopyKind::kDeviceToDevice);
          }
        }
        c.compute_->record(*slot.computed[k]);
      };
      const auto download = [&](int k) {
        stage = Stage::kDownload;
        // Barrier "computed": the download reads the band's device output.
        c.download_->wait(*slot.computed[k]);
        if (timed && k == 0) c.download_->record(*slot.download_started);
        for (int p = 0; p < out.n_planes(); ++p) {
          // Bands split frames of equal heights only; a whole frame's output
          // may be of another height (a rotation).
          const int y1 = k + 1 == bands ? out.height : rows[k + 1];
          const size_t r0 = plane_rows(out.format, p, rows[k]), r1 = plane_rows(out.format, p, y1);
          c.download_->copy_2d(pinned_out.planes[p].data + r0 * pinned_out.planes[p].stride,
                               pinned_out.planes[p].stride,
                               device_out.planes[p].data + r0 * device_out.planes[p].stride,
                               device_out.planes[p].stride, out.row_bytes(p), r1 - r0,
                               CopyKind::kDeviceToHost);
        }
      };
      // `next`: the first band whose kernel is not enqueued yet; `needed`:
      // the band whose upload holds the last row it reads.
      for (int k = 0, next = 0, needed = 0; k < bands; ++k) {
        upload(k);
        while (next < bands) {
          const int last = reads(next).last;
          while (rows[needed + 1] < last) ++needed;
          if (needed > k) break;
          compute(next, needed);
          download(next);
          ++next;
        }
      }
      c.download_->record(*slot.downloaded);
    };

    // Pinned input only where its memory is known (InputFrame::memory_id):
    // a graph keeps the pages its upload reads from, not just the address.
    const uint64_t memory_id = frame.pinned ? frame.memory_id : 0;
    stage = Stage::kUpload;  // a graph launch that fails, failed at its start
    timing.graph = alone && !timed && config_.graphs && config_.mode == Mode::kOverlapped &&
                   (!frame.pinned || memory_id != 0) &&
                   enqueue_as_graph(c, index, sequence, source, memory_id, [&] {
                     enqueue();
                     stage = Stage::kUpload;  // the launch after a capture
                   });
    if (!timing.graph) enqueue();

    if (config_.mode == Mode::kSerial) c.download_->synchronize();
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
  if (core_ && core_->band_rows_.size() > 2 &&
      (operation->band_halo(in, out) < 0 ||
       (operation->bands_by_view(in, out) && operation->band_halo(in, out) > core_->view_halo_)))
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

int Engine::bands() const { return core_ ? static_cast<int>(core_->band_rows_.size()) - 1 : 1; }

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

Delivery Engine::deliver() {
  EngineThreads& t = *threads_;
  std::shared_ptr<EngineCore> core;
  {
    std::lock_guard<std::mutex> lock(t.pull_mutex);
    core = t.pull_core;
    if (!core) return Delivery::kNothing;  // not pulling, not started, or stopped
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
  if (!make_current_for_delivery(c, t.callbacks)) return Delivery::kNothing;
  const TimerSlack slack(polls(c));
  std::unique_lock<std::mutex> lock(c.mutex_);
  if (c.worker_busy_) {
    // drain() is handing the next frame out: that is this call's frame.
    c.idle_.wait(lock, [&] { return !c.worker_busy_; });
    return Delivery::kFrame;
  }
  if (c.stopping_ || c.flushing_ || !c.error_.empty() || c.in_flight_.empty())
    return Delivery::kNothing;
  return deliver_front(core, t.callbacks, t.pull_polling, lock) ? Delivery::kFrame
                                                                : Delivery::kNothing;
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
      slot.downloaded->synchronize();
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

  for (auto& stream : c.streams_) {
    try {
      stream->synchronize();
    } catch (const Error&) {
      // Reported through the error state already, or nobody is listening.
    }
  }
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
