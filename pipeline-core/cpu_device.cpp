// The cpu backend; see cpu_device.h.
//
// A CpuStream is a host thread running a FIFO of operations. A CpuEvent
// counts generations: record() takes the next generation and enqueues an
// operation that completes it; wait() captures the generation recorded so far
// and enqueues an operation that blocks its stream until that generation is
// complete. This is CUDA's event semantics, so the engine's barriers behave
// (and fail, when missing) as they do on a GPU.
#include "cpu_device.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <mutex>
#include <random>
#include <thread>
#include <utility>
#include <vector>

#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "kernels/error.h"
#include "row_workers.h"

namespace cudaoverlap {
namespace {

std::atomic<size_t> g_live_buffers{0};
std::atomic<size_t> g_live_registrations{0};

// A stream's first failure, sticky like a CUDA error, and whether it was
// the operation's own (OperationError) rather than the device's.
struct Failure {
  std::string message;
  bool operations = false;

  bool empty() const { return message.empty(); }
  [[noreturn]] void raise() const {
    if (operations) throw OperationError(message);
    throw Error(message);
  }
};

class CpuEvent final : public Event {
 public:
  // Stream side: a new generation begins; returns it.
  uint64_t begin_record() {
    std::lock_guard<std::mutex> lock(mutex_);
    return ++recorded_;
  }
  uint64_t recorded() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return recorded_;
  }
  // Called on the recording stream's thread when the generation is reached.
  void complete(uint64_t generation, const Failure& error) {
    // Taken before the generation is published, so a stream that waits on
    // this event stamps its own later events no earlier than this one.
    const int64_t now = host_now_ns();
    // Notified under the lock: a waiter may destroy the event (a marker on
    // its stack in synchronize()) as soon as it sees the generation, which
    // must not happen while notify_all() still touches the condition.
    std::lock_guard<std::mutex> lock(mutex_);
    if (generation > completed_) {
      completed_ = generation;
      completed_at_ns_ = now;
    }
    if (!error.empty() && error_.empty()) error_ = error;
    done_.notify_all();
  }
  // Blocks until `generation` completed; returns the failure it carries.
  Failure wait_for(uint64_t generation) {
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, [&] { return completed_ >= generation; });
    return error_;
  }
  void synchronize() override {
    const Failure error = wait_for(recorded());
    if (!error.empty()) error.raise();
  }
  bool query() override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (completed_ < recorded_) return false;
    if (!error_.empty()) error_.raise();
    return true;
  }
  // Every cpu event keeps its time: a host clock read is all it costs.
  int64_t completed_at_ns() override {
    std::lock_guard<std::mutex> lock(mutex_);
    return completed_ > 0 ? completed_at_ns_ : -1;
  }

 private:
  mutable std::mutex mutex_;
  std::condition_variable done_;
  uint64_t recorded_ = 0;         // guarded by mutex_
  uint64_t completed_ = 0;        // guarded by mutex_
  int64_t completed_at_ns_ = -1;  // guarded by mutex_: when `completed_` was reached
  Failure error_;                 // guarded by mutex_; sticky, like a CUDA error
};

// Output rows [y0, y1) of a launch: on `rows`' threads in bands where the
// operation computes bands at once (Operation::cpu_rows_at_once) and each
// band has at least kMinBandPixels, else on the calling thread.
constexpr int64_t kMinBandPixels = 64 * 1024;

void run_launch(RowWorkers* rows, const Operation& op, const ImageRef& in, const ImageRef& out,
                const Workspace& workspace, int y0, int y1) {
  const bool whole = y0 == 0 && y1 == out.height;
  const int step = band_row_step(in.format, out.format);
  int64_t bands = 1;
  if (rows != nullptr && op.cpu_rows_at_once(in.format, out.format))
    bands = std::min({int64_t{rows->threads()}, int64_t{(y1 - y0) / step},
                      int64_t{out.width} * (y1 - y0) / kMinBandPixels});
  if (bands < 2) {
    if (whole) return op.run_cpu(in, out, workspace);
    return op.run_cpu_rows(in, out, workspace, y0, y1);
  }
  const auto row = [&](int64_t k) {
    return k == bands ? y1 : y0 + static_cast<int>(k * (y1 - y0) / bands / step * step);
  };
  rows->run(static_cast<int>(bands),
            [&](int k) { op.run_cpu_rows(in, out, workspace, row(k), row(k + 1)); });
}

class CpuStream final : public Stream {
 public:
  CpuStream(uint32_t max_delay_us, uint64_t seed,
            std::shared_ptr<std::atomic<uint64_t>> launches = nullptr,
            uint64_t fail_after_launches = UINT64_MAX, std::shared_ptr<RowWorkers> rows = nullptr)
      : max_delay_us_(max_delay_us),
        random_(seed),
        launches_(std::move(launches)),
        fail_after_launches_(fail_after_launches),
        rows_(std::move(rows)),
        thread_([this] { run(); }) {}

  ~CpuStream() override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    thread_.join();  // runs what is queued first
  }

  void copy_2d(void* dst, size_t dst_pitch, const void* src, size_t src_pitch, size_t row_bytes,
               size_t rows, CopyKind) override {
    // CUDA rejects these synchronously (cudaErrorInvalidPitchValue).
    if (dst_pitch < row_bytes || src_pitch < row_bytes)
      throw Error("copy of " + std::to_string(row_bytes) + "-byte rows with pitches " +
                  std::to_string(dst_pitch) + " (dst) and " + std::to_string(src_pitch) +
                  " (src): invalid pitch");
    enqueue([=] {
      for (size_t y = 0; y < rows; ++y)
        std::memcpy(static_cast<uint8_t*>(dst) + y * dst_pitch,
                    static_cast<const uint8_t*>(src) + y * src_pitch, row_bytes);
    });
  }

  void launch(const Operation& op, const ImageRef& in, const ImageRef& out,
              const Workspace& workspace) override {
    // Like a CUDA kernel fault, a failing operation reports asynchronously.
    if (broken()) return enqueue([] { throw Error("injected device fault (cpu backend)"); });
    enqueue([&op, in, out, workspace, rows = rows_.get()] {
      run_launch(rows, op, in, out, workspace, 0, out.height);
    });
  }
  void launch_rows(const Operation& op, const ImageRef& in, const ImageRef& out,
                   const Workspace& workspace, int y0, int y1) override {
    if (broken()) return enqueue([] { throw Error("injected device fault (cpu backend)"); });
    enqueue([&op, in, out, workspace, y0, y1, rows = rows_.get()] {
      run_launch(rows, op, in, out, workspace, y0, y1);
    });
  }
  void launch_part(const Operation& op, size_t part, const ImageRef& in, const ImageRef& out,
                   const Workspace& workspace) override {
    if (broken()) return enqueue([] { throw Error("injected device fault (cpu backend)"); });
    enqueue([&op, part, in, out, workspace] { op.run_cpu_part(part, in, out, workspace); });
  }
  void prepare(const Operation& op, const Workspace& workspace) override {
    enqueue([&op, workspace] { op.prepare_reference(workspace); });
  }

  void record(Event& event) override {
    auto& e = static_cast<CpuEvent&>(event);
    const uint64_t generation = e.begin_record();
    enqueue_always([this, &e, generation] { e.complete(generation, error_); });
  }

  void wait(Event& event) override {
    auto& e = static_cast<CpuEvent&>(event);
    const uint64_t generation = e.recorded();
    enqueue_always([this, &e, generation] {
      const Failure error = e.wait_for(generation);
      if (!error.empty() && error_.empty()) error_ = error;
    });
  }

  void synchronize() override {
    CpuEvent marker;
    record(marker);
    marker.synchronize();
  }

 private:
  struct Op {
    std::function<void()> fn;
    bool always;  // runs even after a failure (event bookkeeping)
  };

  // CpuDeviceOptions::fail_after_launches: this launch is past it.
  bool broken() { return launches_ && launches_->fetch_add(1) >= fail_after_launches_; }
  void enqueue(std::function<void()> fn) { push(Op{std::move(fn), false}); }
  void enqueue_always(std::function<void()> fn) { push(Op{std::move(fn), true}); }
  void push(Op op) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      queue_.push_back(std::move(op));
    }
    wake_.notify_one();
  }

  void run() {
#ifdef __linux__
    // Microsecond delays need microsecond sleeps, not the default 50 us slack.
    if (max_delay_us_ > 0) prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
#endif
    std::uniform_int_distribution<uint32_t> delay(0, max_delay_us_);
    for (;;) {
      Op op;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) return;
        op = std::move(queue_.front());
        queue_.pop_front();
      }
      if (max_delay_us_ > 0) std::this_thread::sleep_for(std::chrono::microseconds(delay(random_)));
      if (!error_.empty() && !op.always) continue;  // a failed stream does nothing more
      try {
        op.fn();
      } catch (const OperationError& e) {
        error_ = Failure{e.what(), true};
      } catch (const std::exception& e) {
        error_ = Failure{e.what(), false};
      }
    }
  }

  const uint32_t max_delay_us_;
  std::mt19937_64 random_;                                 // stream thread only
  const std::shared_ptr<std::atomic<uint64_t>> launches_;  // the device's, or null
  const uint64_t fail_after_launches_;
  Failure error_;                           // stream thread only: the first failure, sticky
  const std::shared_ptr<RowWorkers> rows_;  // the device's, or null
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Op> queue_;   // guarded by mutex_
  bool stopping_ = false;  // guarded by mutex_
  std::thread thread_;     // last: starts after everything above exists
};

// Host memory standing in for both device and pinned memory.
class CpuBuffer final : public Buffer {
 public:
  CpuBuffer(uint8_t* data, size_t size, std::shared_ptr<std::atomic<size_t>> used)
      : Buffer(data, size), used_(std::move(used)) {
    ++g_live_buffers;
  }
  ~CpuBuffer() override {
    std::free(data_);
    *used_ -= size_;
    --g_live_buffers;
  }
  CpuBuffer(const CpuBuffer&) = delete;
  CpuBuffer& operator=(const CpuBuffer&) = delete;

 private:
  std::shared_ptr<std::atomic<size_t>> used_;
};

// Registered host ranges of one device, refusing overlaps as CUDA does
// (cudaErrorHostMemoryAlreadyRegistered), at page granularity.
class HostRanges {
 public:
  void add(uintptr_t begin, uintptr_t end) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& r : ranges_)
      if (begin < r.second && r.first < end)
        throw Error("part of this host memory is already registered");
    ranges_.emplace_back(begin, end);
  }
  void remove(uintptr_t begin) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto it = ranges_.begin(); it != ranges_.end(); ++it)
      if (it->first == begin) {
        ranges_.erase(it);
        return;
      }
  }

 private:
  std::mutex mutex_;  // a leaf
  std::vector<std::pair<uintptr_t, uintptr_t>> ranges_;
};

class CpuHostRegistration final : public HostRegistration {
 public:
  CpuHostRegistration(std::shared_ptr<HostRanges> ranges, void* data, size_t bytes)
      : ranges_(std::move(ranges)) {
    constexpr uintptr_t kPage = 4096;
    begin_ = reinterpret_cast<uintptr_t>(data) / kPage * kPage;
    const uintptr_t end = (reinterpret_cast<uintptr_t>(data) + bytes + kPage - 1) / kPage * kPage;
    ranges_->add(begin_, end);
    ++g_live_registrations;
  }
  ~CpuHostRegistration() override {
    ranges_->remove(begin_);
    --g_live_registrations;
  }
  CpuHostRegistration(const CpuHostRegistration&) = delete;
  CpuHostRegistration& operator=(const CpuHostRegistration&) = delete;

 private:
  std::shared_ptr<HostRanges> ranges_;
  uintptr_t begin_;
};

// n-threads' workers (none for one thread).
std::shared_ptr<RowWorkers> row_workers(int threads) {
  if (threads <= 1) return nullptr;
  try {
    return std::make_shared<RowWorkers>(threads);
  } catch (const Error& e) {
    throw Error(std::string("the cpu backend: ") + e.what() + "; lower n-threads");
  }
}

class CpuDevice final : public Device {
 public:
  explicit CpuDevice(const CpuDeviceOptions& options)
      : options_(options),
        rows_(row_workers(options.threads)) {}

  std::string describe() const override {
    return options_.stand_in < 0 ? "the cpu backend"
                                 : "the cpu backend (standing in for device " +
                                       std::to_string(options_.stand_in) + ")";
  }
  bool host_memory_is_device_memory() const override { return true; }
  void make_current() override {}
  size_t device_memory_free() override {
    if (options_.memory_limit == SIZE_MAX) return SIZE_MAX;
    const size_t used = *used_;
    return used < options_.memory_limit ? options_.memory_limit - used : 0;
  }
  std::unique_ptr<Stream> create_stream() override {
    // Each stream gets its own sequence of delays.
    return std::make_unique<CpuStream>(options_.max_delay_us, options_.seed + streams_++, launches_,
                                       options_.fail_after_launches, rows_);
  }
  std::unique_ptr<Event> create_event() override { return std::make_unique<CpuEvent>(); }
  std::unique_ptr<Buffer> alloc_device(size_t bytes) override { return allocate(bytes); }
  std::unique_ptr<Buffer> alloc_pinned(size_t bytes) override { return allocate(bytes); }
  std::unique_ptr<HostRegistration> register_host(void* data, size_t bytes) override {
    if (data == nullptr || bytes == 0) throw Error("no host memory to register");
    return std::make_unique<CpuHostRegistration>(ranges_, data, bytes);
  }

 private:
  std::unique_ptr<Buffer> allocate(size_t bytes) {
    constexpr size_t kAlign = 256;
    const size_t rounded = (bytes + kAlign - 1) / kAlign * kAlign;
    if (*used_ + rounded > options_.memory_limit)
      throw Error("out of memory: " + std::to_string(rounded) + " bytes asked, " +
                  std::to_string(options_.memory_limit - *used_) + " left");
    auto* data = static_cast<uint8_t*>(std::aligned_alloc(kAlign, rounded == 0 ? kAlign : rounded));
    if (!data) throw Error("out of host memory: " + std::to_string(rounded) + " bytes asked");
    *used_ += rounded;
    return std::make_unique<CpuBuffer>(data, rounded, used_);
  }

  const CpuDeviceOptions options_;
  const std::shared_ptr<RowWorkers> rows_;  // threads > 1: shared by its streams
  uint64_t streams_ = 0;
  // Kernel launches on all its streams (fail_after_launches).
  std::shared_ptr<std::atomic<uint64_t>> launches_ = std::make_shared<std::atomic<uint64_t>>(0);
  std::shared_ptr<std::atomic<size_t>> used_ = std::make_shared<std::atomic<size_t>>(0);
  std::shared_ptr<HostRanges> ranges_ = std::make_shared<HostRanges>();
};

}  // namespace

std::unique_ptr<Device> make_cpu_device(const CpuDeviceOptions& options) {
  return std::make_unique<CpuDevice>(options);
}

size_t cpu_live_buffers() { return g_live_buffers; }
size_t cpu_live_registrations() { return g_live_registrations; }

}  // namespace cudaoverlap
