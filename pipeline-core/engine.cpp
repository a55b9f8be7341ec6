// The overlap engine; see engine.h for the data flow and thread contracts.
//
// The Engine owns the threads (the worker, the staging copy's) and joins
// them in stop(); EngineCore (engine_core.h) holds the ring and what must
// outlive the Engine while consumers still hold OutputFrames. A frame's
// device work is a SlotPass (slot_pass.h), enqueued call by call or as a
// graph launch (graph_cache.h); finished frames are handed out by
// EngineCore's deliverers (delivery.cpp).
#include "engine.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "engine_core.h"
#include "kernels/error.h"
#include "parallel_copy.h"
#include "polling_wait.h"
#include "timer_slack.h"

namespace cudaoverlap {
namespace {

constexpr int kMinRing = 1;
constexpr int kMaxRing = 16;
constexpr int kMaxStagingThreads = 64;
constexpr int kMaxTimingInterval = 1024;
constexpr int kMaxBands = 16;
static_assert(kMaxPlanes <= ParallelCopy::kMaxPlanes, "the staging copy takes every plane");

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
         graphs_idle == o.graphs_idle && host_in_place == o.host_in_place;
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
    threads_->worker = std::thread(EngineCore::run_worker, core_, std::cref(threads_->callbacks));
  }
}

uint64_t new_memory_id() {
  static std::atomic<uint64_t> last{0};
  return last.fetch_add(1, std::memory_order_relaxed) + 1;
}

uint64_t Engine::graph_frames() const { return core_ ? core_->graphs_.frames() : 0; }

uint64_t Engine::graph_captures() const { return core_ ? core_->graphs_.captures() : 0; }

namespace {

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

// Whether every plane of `image` (laid out as `layout`'s format) starts and
// steps rows on kDeviceAlign, as the slot's device frames do.
bool device_aligned(const ImageRef& image, const FrameLayout& layout) {
  for (int p = 0; p < layout.n_planes(); ++p)
    if (reinterpret_cast<uintptr_t>(image.planes[p].data) % kDeviceAlign != 0 ||
        image.planes[p].stride % kDeviceAlign != 0 || image.planes[p].stride < layout.row_bytes(p))
      return false;
  return true;
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
  const Status taken = c.take_slot(frame, config_.operation, &threads_->next_sequence, &timing,
                                   &index, &sequence, &alone);
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
    const bool to_device = frame.destination.planes[0].data != nullptr;
    images.destination = to_device ? frame.destination : memory.output;
    images.destination_on_device = to_device;
    images.source_on_device = frame.on_device;
    // Device memory laid out as the slot's would be (every plane and row
    // on kDeviceAlign) is read or written by the kernel where it is; other
    // layouts (a crop's offset) are copied on the device.
    images.read_in_place = frame.on_device && device_aligned(frame.image, config_.input);
    images.write_in_place = to_device && device_aligned(frame.destination, config_.output);
    if (images.read_in_place) images.device_in = frame.image;
    if (images.write_in_place) images.device_out = frame.destination;
    // Host memory that is the device's: the kernel reads the frame and
    // writes the slot's output, and nothing is copied.
    const bool in_place = c.host_in_place();
    if (in_place) {
      images.read_in_place = images.source_on_device = true;
      images.device_in = frame.image;
      if (!to_device) {
        images.write_in_place = images.destination_on_device = true;
        images.device_out = memory.output;
      }
    }
    if (!frame.pinned && !frame.on_device && !in_place) {
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
                   (!frame.pinned || memory_id != 0) && !frame.on_device && !to_device &&
                   !in_place &&
                   c.graphs_.launch(index, sequence, memory_id, c.pass_, slot.events, images,
                                    slot.operation, reading, &stage);
    if (!timing.graph)
      c.pass_.enqueue(slot.events, images, *slot.operation, reading, timed, &stage);

    if (config_.mode == Mode::kSerial) c.pass_.streams().download->synchronize();
  } catch (const Error& e) {
    // The slot's work may be half enqueued: it stays out of the ring, and
    // its references are dropped by stop().
    const std::string message = c.fail(std::string(stage_name(stage)) + " of frame " +
                                           std::to_string(sequence) + " failed: " + e.what(),
                                       dynamic_cast<const OperationError*>(&e) != nullptr);
    if (threads_->callbacks.on_error) threads_->callbacks.on_error(message);
    return Status::kError;
  }

  timing.enqueued_ns = host_now_ns();
  c.enqueued(index, timing, timed);
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
  return EngineCore::drain(core_, threads_->callbacks, threads_->pull_polling);
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
  if (!core->make_current_for_delivery(t.callbacks)) return OutputFrame();
  const TimerSlack slack(core->polls());
  return EngineCore::fetch(core, t.callbacks, t.pull_polling);
}

void Engine::flush_start() {
  if (core_) core_->begin_flush();
}

void Engine::flush_stop() {
  if (core_) core_->end_flush();
}

void Engine::stop() {
  if (!core_) return;
  EngineCore& c = *core_;
  c.begin_stop();
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
  c.drop_references();
  // The core lives on while consumers hold OutputFrames.
  core_.reset();
}

int Engine::free_slots() const { return core_ ? core_->free_slots() : 0; }

std::string Engine::error() const { return core_ ? core_->error() : std::string(); }

bool Engine::operation_failed() const { return core_ && core_->operation_failed(); }

}  // namespace cudaoverlap
