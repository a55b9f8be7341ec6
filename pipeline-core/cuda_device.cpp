// The cuda backend (see cuda_device.h): each Device/Stream/Event/Buffer call
// is one CUDA runtime call through CO_CUDA_CHECK.
#include "cuda_device.h"

#include <atomic>
#include <cmath>
#include <mutex>

#include "cuda_resources.h"

namespace cudaoverlap {
namespace {

std::atomic<size_t> g_live_buffers{0};
std::atomic<size_t> g_live_registrations{0};

// Places the GPU times of timing events on the host's steady clock. CUDA
// only tells the time between two events (cudaEventElapsedTime, in float
// milliseconds), so the anchor is an event whose host time is known: recorded
// on a private, idle stream and synchronized, the host clock read right
// after (late by the wake-up, a few microseconds). Float milliseconds lose
// precision with distance (0.5 us at 8 s), so the anchor is renewed when it
// is older than kRenewNs; renewing blocks the caller for one record and
// synchronize of an idle stream.
class HostClockAnchor {
 public:
  HostClockAnchor() : stream_(CudaStream::create()), event_(CudaEvent::create_timing()) {}

  // Any thread bound to the device; serialized by mutex_.
  int64_t host_time_ns(cudaEvent_t completed) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (anchor_ns_ < 0 || host_now_ns() - anchor_ns_ > kRenewNs) {
      CO_CUDA_CHECK(cudaEventRecord(event_.get(), stream_.get()));
      CO_CUDA_CHECK(cudaEventSynchronize(event_.get()));
      anchor_ns_ = host_now_ns();
    }
    // Negative when `completed` is older than the anchor, which is fine.
    float ms = 0.0f;
    CO_CUDA_CHECK(cudaEventElapsedTime(&ms, event_.get(), completed));
    return anchor_ns_ + static_cast<int64_t>(std::llround(static_cast<double>(ms) * 1e6));
  }

 private:
  static constexpr int64_t kRenewNs = 4'000'000'000;
  // Lock order: a leaf; only CUDA calls are made under it.
  std::mutex mutex_;
  CudaStream stream_;       // only ever used for the anchor
  CudaEvent event_;         // guarded by mutex_
  int64_t anchor_ns_ = -1;  // guarded by mutex_: host time of event_'s last record
};

class CudaEventImpl final : public Event {
 public:
  explicit CudaEventImpl(bool blocking = false) : event_(CudaEvent::create(blocking)) {}
  CudaEventImpl(std::shared_ptr<HostClockAnchor> anchor, bool blocking)
      : event_(CudaEvent::create_timing(blocking)), anchor_(std::move(anchor)) {}
  void synchronize() override { CO_CUDA_CHECK(cudaEventSynchronize(event_.get())); }
  bool query() override {
    const cudaError_t status = cudaEventQuery(event_.get());
    if (status == cudaErrorNotReady) {
      (void)cudaGetLastError();  // not an error: keep it out of later checks
      return false;
    }
    CO_CUDA_CHECK(status);
    return true;
  }
  int64_t completed_at_ns() override {
    if (!anchor_) return -1;
    return anchor_->host_time_ns(event_.get());
  }
  cudaEvent_t get() const { return event_.get(); }

 private:
  CudaEvent event_;
  std::shared_ptr<HostClockAnchor> anchor_;  // null: a barrier event without timing
};

class CudaStreamImpl final : public Stream {
 public:
  CudaStreamImpl() : stream_(CudaStream::create()) {}

  void copy_2d(void* dst, size_t dst_pitch, const void* src, size_t src_pitch, size_t row_bytes,
               size_t rows, CopyKind kind) override {
    const cudaMemcpyKind k = kind == CopyKind::kHostToDevice   ? cudaMemcpyHostToDevice
                             : kind == CopyKind::kDeviceToHost ? cudaMemcpyDeviceToHost
                                                               : cudaMemcpyDeviceToDevice;
    CO_CUDA_CHECK(
        cudaMemcpy2DAsync(dst, dst_pitch, src, src_pitch, row_bytes, rows, k, stream_.get()));
  }
  void launch(const Operation& op, const ImageRef& in, const ImageRef& out,
              const Workspace& workspace) override {
    op.enqueue_cuda(in, out, workspace, stream_.get());
  }
  void launch_rows(const Operation& op, const ImageRef& in, const ImageRef& out,
                   const Workspace& workspace, int y0, int y1) override {
    op.enqueue_cuda_rows(in, out, workspace, y0, y1, stream_.get());
  }
  void prepare(const Operation& op, const Workspace& workspace) override {
    op.prepare_cuda(workspace, stream_.get());
  }
  void record(Event& event) override {
    CO_CUDA_CHECK(cudaEventRecord(static_cast<CudaEventImpl&>(event).get(), stream_.get()));
  }
  void wait(Event& event) override {
    CO_CUDA_CHECK(cudaStreamWaitEvent(stream_.get(), static_cast<CudaEventImpl&>(event).get(), 0));
  }
  void synchronize() override { CO_CUDA_CHECK(cudaStreamSynchronize(stream_.get())); }

 private:
  CudaStream stream_;
};

template <typename Memory>
class CudaBuffer final : public Buffer {
 public:
  explicit CudaBuffer(size_t bytes) : CudaBuffer(Memory::allocate(bytes), bytes) {}
  ~CudaBuffer() override { --g_live_buffers; }

 private:
  CudaBuffer(Memory memory, size_t bytes)
      : Buffer(static_cast<uint8_t*>(memory.get()), bytes), memory_(std::move(memory)) {
    ++g_live_buffers;
  }
  Memory memory_;
};

class CudaHostRegistration final : public HostRegistration {
 public:
  CudaHostRegistration(int device, void* data, size_t bytes) : device_(device), data_(data) {
    CO_CUDA_CHECK(cudaSetDevice(device_));
    CO_CUDA_CHECK(cudaHostRegister(data_, bytes, cudaHostRegisterDefault));
    ++g_live_registrations;
  }
  ~CudaHostRegistration() override {
    // Destructors do not throw: a failure here leaves the pages locked until
    // the process ends, which is all that can be done about it.
    if (cudaSetDevice(device_) != cudaSuccess || cudaHostUnregister(data_) != cudaSuccess)
      (void)cudaGetLastError();
    --g_live_registrations;
  }
  CudaHostRegistration(const CudaHostRegistration&) = delete;
  CudaHostRegistration& operator=(const CudaHostRegistration&) = delete;

 private:
  int device_;
  void* data_;
};

class CudaDevice final : public Device {
 public:
  explicit CudaDevice(int id) : id_(id) {
    cudaDeviceProp prop{};
    CO_CUDA_CHECK(cudaGetDeviceProperties(&prop, id_));
    name_ = std::string(prop.name) + " (CUDA device " + std::to_string(id_) + ")";
  }
  std::string describe() const override { return name_; }
  int cuda_device() const override { return id_; }
  void make_current() override { CO_CUDA_CHECK(cudaSetDevice(id_)); }
  size_t device_memory_free() override {
    make_current();
    size_t free_bytes = 0, total = 0;
    CO_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total));
    return free_bytes;
  }
  std::unique_ptr<Stream> create_stream() override { return std::make_unique<CudaStreamImpl>(); }
  std::unique_ptr<Event> create_event() override { return std::make_unique<CudaEventImpl>(); }
  std::unique_ptr<Event> create_timing_event() override {
    // Start-up only (engine allocation), from the owner's thread.
    if (!anchor_) anchor_ = std::make_shared<HostClockAnchor>();
    return std::make_unique<CudaEventImpl>(anchor_, false);
  }
  std::unique_ptr<Event> create_host_event(HostWait wait, bool timing) override {
    // kPoll's waiter never blocks in the driver (engine.cpp, PollingWait).
    const bool blocking = wait == HostWait::kBlock;
    if (!timing) return std::make_unique<CudaEventImpl>(blocking);
    if (!anchor_) anchor_ = std::make_shared<HostClockAnchor>();
    return std::make_unique<CudaEventImpl>(anchor_, blocking);
  }
  std::unique_ptr<Buffer> alloc_device(size_t bytes) override {
    return std::make_unique<CudaBuffer<DeviceMemory>>(bytes);
  }
  std::unique_ptr<Buffer> alloc_pinned(size_t bytes) override {
    return std::make_unique<CudaBuffer<PinnedMemory>>(bytes);
  }
  std::unique_ptr<HostRegistration> register_host(void* data, size_t bytes) override {
    return std::make_unique<CudaHostRegistration>(id_, data, bytes);
  }

 private:
  int id_;
  std::string name_;
  std::shared_ptr<HostClockAnchor> anchor_;  // made with the first timing event
};

}  // namespace

int cuda_device_count(std::string* why) {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    // Clear the error so it does not surface in a later, unrelated check.
    (void)cudaGetLastError();
    if (why) *why = std::string(cudaGetErrorString(status));
    return 0;
  }
  if (count == 0 && why) *why = "the CUDA driver reports no device";
  return count;
}

std::unique_ptr<Device> make_cuda_device(int device_id) {
  std::string why;
  const int count = cuda_device_count(&why);
  if (count == 0) throw Error("no CUDA device: " + why + "; use backend=cpu to run without a GPU");
  if (device_id < 0 || device_id >= count)
    throw Error("CUDA device " + std::to_string(device_id) + " does not exist: this machine has " +
                std::to_string(count) + " (device-id 0 to " + std::to_string(count - 1) + ")");
  return std::make_unique<CudaDevice>(device_id);
}

double cuda_memory_peak_gbps(int device_id) {
  int clock_khz = 0, bus_bits = 0;
  if (cudaDeviceGetAttribute(&clock_khz, cudaDevAttrMemoryClockRate, device_id) != cudaSuccess ||
      cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, device_id) !=
          cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return 2.0 * clock_khz * 1e3 * (bus_bits / 8.0) / 1e9;
}

size_t cuda_l2_cache_bytes(int device_id) {
  int bytes = 0;
  if (cudaDeviceGetAttribute(&bytes, cudaDevAttrL2CacheSize, device_id) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return static_cast<size_t>(bytes);
}

size_t cuda_live_buffers() { return g_live_buffers; }
size_t cuda_live_registrations() { return g_live_registrations; }

}  // namespace cudaoverlap
