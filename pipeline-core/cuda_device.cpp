// The cuda backend (see cuda_device.h): each Device/Stream/Event/Buffer call
// is one CUDA runtime call through CO_CUDA_CHECK.
//
// Pinned host memory is pinned for every CUDA context (portable), since an
// engine on one GPU may upload from a buffer that another GPU's device
// allocated. On a machine with several NUMA nodes it is also placed on the
// node nearest the device (NodePinnedBuffer), so that each GPU's copies
// cross no inter-socket link.
#include "cuda_device.h"

#include <linux/mempolicy.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <mutex>
#include <new>
#include <sstream>
#include <vector>

#include "kernels/cuda_resources.h"

namespace cudaoverlap {
namespace {

// Driver functions for contexts made outside the runtime (GStreamer's
// shared CUDA context), taken from the runtime so that the build does not
// link the driver library; null where the driver does not offer them.
using CtxSetCurrentFn = int (*)(void* context);
using CtxGetCurrentFn = int (*)(void** context);
template <typename Fn>
Fn driver_function(const char* name) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
  if (cudaGetDriverEntryPointByVersion(name, &fn, 12000, cudaEnableDefault, &found) !=
          cudaSuccess ||
      found != cudaDriverEntryPointSuccess) {
    (void)cudaGetLastError();
    return nullptr;
  }
  return reinterpret_cast<Fn>(fn);
}
CtxSetCurrentFn ctx_set_current() {
  static const CtxSetCurrentFn fn = driver_function<CtxSetCurrentFn>("cuCtxSetCurrent");
  return fn;
}
CtxGetCurrentFn ctx_get_current() {
  static const CtxGetCurrentFn fn = driver_function<CtxGetCurrentFn>("cuCtxGetCurrent");
  return fn;
}

// While it lives, `context` is current on the calling thread (a thread of
// someone else's, such as upstream's, which gets its own context back).
// Nothing where `context` is null or the driver offers no context calls:
// the runtime then uses the thread's, as it would anyway.
class ContextScope {
 public:
  explicit ContextScope(void* context) {
    const CtxGetCurrentFn get = ctx_get_current();
    const CtxSetCurrentFn set = ctx_set_current();
    if (!context || !get || !set || get(&previous_) != 0 || previous_ == context) return;
    if (set(context) != 0)
      throw Error("the pipeline's CUDA context could not be made current");
    set_ = set;
  }
  ~ContextScope() {
    if (set_) (void)set_(previous_);
  }
  ContextScope(const ContextScope&) = delete;
  ContextScope& operator=(const ContextScope&) = delete;

 private:
  void* previous_ = nullptr;
  CtxSetCurrentFn set_ = nullptr;
};

// Makes `context` current on the calling thread, or device `device`'s
// primary context where `context` is null.
void bind_context(int device, void* context) {
  if (!context) {
    CO_CUDA_CHECK(cudaSetDevice(device));
    return;
  }
  const CtxSetCurrentFn set = ctx_set_current();
  if (!set) throw Error("the CUDA driver offers no cuCtxSetCurrent");
  const int status = set(context);
  if (status != 0)
    throw Error("the pipeline's CUDA context could not be made current (CUDA driver error " +
                std::to_string(status) + ")");
}

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

class CudaGraphImpl final : public Graph {
 public:
  explicit CudaGraphImpl(cudaGraphExec_t exec) : exec_(exec) {}
  ~CudaGraphImpl() override { (void)cudaGraphExecDestroy(exec_); }
  CudaGraphImpl(const CudaGraphImpl&) = delete;
  CudaGraphImpl& operator=(const CudaGraphImpl&) = delete;
  cudaGraphExec_t get() const { return exec_; }

 private:
  cudaGraphExec_t exec_;
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
  void launch_part(const Operation& op, size_t part, const ImageRef& in, const ImageRef& out,
                   const Workspace& workspace) override {
    op.enqueue_cuda_part(part, in, out, workspace, stream_.get());
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

  // Thread-local mode: other threads' calls that cannot be captured (the
  // worker's event queries, an application's own synchronous CUDA work) do
  // not break the capture; only this thread's are checked.
  bool begin_capture() override {
    if (cudaStreamBeginCapture(stream_.get(), cudaStreamCaptureModeThreadLocal) == cudaSuccess)
      return true;
    (void)cudaGetLastError();
    return false;
  }
  std::unique_ptr<Graph> end_capture() override {
    cudaGraph_t graph = nullptr;
    cudaError_t status = cudaStreamEndCapture(stream_.get(), &graph);
    cudaGraphExec_t exec = nullptr;
    if (status == cudaSuccess && graph) status = cudaGraphInstantiate(&exec, graph, 0);
    if (graph) (void)cudaGraphDestroy(graph);
    if (status != cudaSuccess || !exec) {
      (void)cudaGetLastError();  // a capture that failed is no error of the stream's
      return nullptr;
    }
    auto made = std::make_unique<CudaGraphImpl>(exec);
    // Moves the graph to the device now rather than at its first launch.
    if (cudaGraphUpload(exec, stream_.get()) != cudaSuccess) (void)cudaGetLastError();
    return made;
  }
  void launch_graph(Graph& graph) override {
    CO_CUDA_CHECK(cudaGraphLaunch(static_cast<CudaGraphImpl&>(graph).get(), stream_.get()));
  }

 private:
  CudaStream stream_;
};

template <typename Memory>
class CudaBuffer final : public Buffer {
 public:
  // `context`: what keeps the context the memory was made in alive, if
  // not the device's primary one; let go of after the memory.
  CudaBuffer(Memory memory, size_t bytes, std::shared_ptr<void> context)
      : Buffer(static_cast<uint8_t*>(memory.get()), bytes),
        context_(std::move(context)),
        memory_(std::move(memory)) {
    ++g_live_buffers;
  }
  ~CudaBuffer() override { --g_live_buffers; }

 private:
  std::shared_ptr<void> context_;  // declared first: goes last
  Memory memory_;
};

// Unpins host memory registered with cudaHostRegisterPortable. A portable
// registration is known to every context, so the calling thread's own does;
// only if that one does not know it is `device`'s tried, and the thread then
// gets its own device back: memory is released on whatever thread drops it
// last, an engine's worker bound to another GPU included. Never throws;
// returns the last call's status (the error already cleared).
cudaError_t unregister_host(void* data, int device) noexcept {
  cudaError_t status = cudaHostUnregister(data);
  if (status == cudaSuccess) return status;
  (void)cudaGetLastError();
  int previous = -1;
  if (cudaGetDevice(&previous) != cudaSuccess) {
    (void)cudaGetLastError();
    return status;
  }
  if (previous == device) return status;
  // The thread's context (perhaps not a primary one) comes back after.
  void* context = nullptr;
  const CtxGetCurrentFn get = ctx_get_current();
  const CtxSetCurrentFn set = ctx_set_current();
  if (!get || !set || get(&context) != 0) return status;
  if (cudaSetDevice(device) != cudaSuccess) {
    (void)cudaGetLastError();
    return status;
  }
  status = cudaHostUnregister(data);
  if (status != cudaSuccess) (void)cudaGetLastError();
  (void)set(context);
  return status;
}

// NUMA nodes online (/sys/devices/system/node/online: "0", "0-1", "0,2-3");
// 1 when it cannot be told. Read once.
int online_numa_nodes() {
  static const int count = [] {
    std::ifstream in("/sys/devices/system/node/online");
    std::string list;
    if (!std::getline(in, list)) return 1;
    std::istringstream ranges(list);
    std::string range;
    int nodes = 0;
    while (std::getline(ranges, range, ',')) {
      int first = 0, last = 0;
      const int fields = std::sscanf(range.c_str(), "%d-%d", &first, &last);
      if (fields == 1) last = first;
      if (fields < 1 || first < 0 || last < first) return 1;
      nodes += last - first + 1;
    }
    return nodes > 0 ? nodes : 1;
  }();
  return count;
}

// The host NUMA node nearest device `device`, or -1 when unknown: what CUDA
// says (cudaDevAttrHostNumaId, CUDA 12.2 on), else what the kernel says of
// the device's PCI function (/sys/bus/pci/devices/<bus id>/numa_node).
int host_numa_node(int device) {
#if CUDART_VERSION >= 12020
  int node = -1;
  const cudaError_t status = cudaDeviceGetAttribute(&node, cudaDevAttrHostNumaId, device);
  if (status != cudaSuccess) (void)cudaGetLastError();
  if (status == cudaSuccess && node >= 0) return node;
#endif
  char bus_id[64] = {};
  if (cudaDeviceGetPCIBusId(bus_id, static_cast<int>(sizeof bus_id), device) != cudaSuccess) {
    (void)cudaGetLastError();
    return -1;
  }
  // CUDA writes "0000:3B:00.0" (or an 8-digit domain); sysfs names it
  // "0000:3b:00.0".
  unsigned domain = 0, bus = 0, slot = 0, function = 0;
  if (std::sscanf(bus_id, "%x:%x:%x.%x", &domain, &bus, &slot, &function) != 4) return -1;
  char path[128];
  std::snprintf(path, sizeof path, "/sys/bus/pci/devices/%04x:%02x:%02x.%x/numa_node", domain, bus,
                slot, function);
  std::ifstream in(path);
  int sysfs_node = -1;
  if (!(in >> sysfs_node) || sysfs_node < 0) return -1;
  return sysfs_node;
}

// Pinned host memory on one NUMA node: anonymous pages whose policy prefers
// the node (mbind), faulted in there before cudaHostRegister pins them.
// Preferred, not bound: a node out of memory gives pages of another rather
// than failing.
class NodePinnedBuffer final : public Buffer {
 public:
  // Null when any step fails, with nothing left behind: the caller then
  // allocates as it would without a node.
  static std::unique_ptr<Buffer> allocate(size_t bytes, int node, int device,
                                          std::shared_ptr<void> context) {
    const long page = sysconf(_SC_PAGESIZE);
    if (bytes == 0 || node < 0 || page <= 0) return nullptr;
    const size_t page_bytes = static_cast<size_t>(page);
    if (bytes > SIZE_MAX - (page_bytes - 1)) return nullptr;
    const size_t mapped = (bytes + page_bytes - 1) / page_bytes * page_bytes;

    // The node mask: bit `node` set. The kernel reads maxnode - 1 bits, at
    // most a page of them.
    constexpr size_t kBitsPerWord = sizeof(unsigned long) * CHAR_BIT;
    const size_t node_bit = static_cast<size_t>(node);
    if (node_bit >= page_bytes * CHAR_BIT) return nullptr;
    std::vector<unsigned long> mask(node_bit / kBitsPerWord + 1, 0UL);
    mask[node_bit / kBitsPerWord] = 1UL << (node_bit % kBitsPerWord);
    const unsigned long max_node = static_cast<unsigned long>(mask.size() * kBitsPerWord + 1);

    void* data = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (data == MAP_FAILED) return nullptr;
    // Every argument as the long the kernel reads.
    if (syscall(SYS_mbind, data, static_cast<unsigned long>(mapped),
                static_cast<unsigned long>(MPOL_PREFERRED), mask.data(), max_node, 0UL) != 0) {
      munmap(data, mapped);
      return nullptr;
    }
    // Kept out of a fork()ed child (best effort): copy-on-write over pinned
    // pages would either copy them all at the fork or leave the device
    // copying to pages this process no longer maps.
    (void)madvise(data, mapped, MADV_DONTFORK);
    // Fault every page in now, by a write (never the shared zero page), so
    // that each lands on the node under the policy just set; registering
    // then pins those very pages.
    auto* bytes_at = static_cast<volatile uint8_t*>(data);
    for (size_t offset = 0; offset < mapped; offset += page_bytes) bytes_at[offset] = 0;
    if (cudaHostRegister(data, mapped, cudaHostRegisterPortable) != cudaSuccess) {
      (void)cudaGetLastError();
      munmap(data, mapped);
      return nullptr;
    }
    auto* buffer =
        new (std::nothrow) NodePinnedBuffer(static_cast<uint8_t*>(data), bytes, mapped, device,
                                            std::move(context));
    if (!buffer) {
      if (unregister_host(data, device) == cudaSuccess) munmap(data, mapped);
      return nullptr;
    }
    return std::unique_ptr<Buffer>(buffer);
  }

  ~NodePinnedBuffer() override {
    // Unmapped only once unpinned: an address range the driver still takes
    // for pinned could otherwise come back from a later mmap and be copied
    // to through the old pages. A failure leaves it mapped (and reported),
    // which is all that can be done about it.
    const cudaError_t status = unregister_host(data_, device_);
    if (status == cudaSuccess) {
      if (munmap(data_, mapped_) != 0)
        std::fprintf(stderr, "cudaoverlap: munmap of %zu bytes of pinned memory failed: %s\n",
                     mapped_, std::strerror(errno));
    } else if (status != cudaErrorCudartUnloading) {
      std::fprintf(stderr, "cudaoverlap: cudaHostUnregister of pinned memory failed: %s\n",
                   cudaGetErrorString(status));
    }
    --g_live_buffers;
  }
  NodePinnedBuffer(const NodePinnedBuffer&) = delete;
  NodePinnedBuffer& operator=(const NodePinnedBuffer&) = delete;

 private:
  NodePinnedBuffer(uint8_t* data, size_t bytes, size_t mapped, int device,
                   std::shared_ptr<void> context)
      : Buffer(data, bytes), context_(std::move(context)), mapped_(mapped), device_(device) {
    ++g_live_buffers;
  }
  std::shared_ptr<void> context_;  // as CudaBuffer's: the members go after the body
  size_t mapped_;  // bytes mapped: `bytes` rounded up to whole pages
  int device_;
};

class CudaHostRegistration final : public HostRegistration {
 public:
  CudaHostRegistration(int device, void* context, std::shared_ptr<void> keep, void* data,
                       size_t bytes)
      : keep_(std::move(keep)), device_(device), data_(data) {
    // On upstream's thread, which keeps its own context.
    const ContextScope scope(context);
    // Portable: another engine, on another GPU of this process, may upload
    // from the same memory.
    CO_CUDA_CHECK(cudaHostRegister(data_, bytes, cudaHostRegisterPortable));
    ++g_live_registrations;
  }
  ~CudaHostRegistration() override {
    // Destructors do not throw: a failure here leaves the pages locked until
    // the process ends, which is all that can be done about it.
    (void)unregister_host(data_, device_);
    --g_live_registrations;
  }
  CudaHostRegistration(const CudaHostRegistration&) = delete;
  CudaHostRegistration& operator=(const CudaHostRegistration&) = delete;

 private:
  std::shared_ptr<void> keep_;  // the context, as CudaBuffer's
  int device_;
  void* data_;
};

class CudaDevice final : public Device {
 public:
  CudaDevice(int id, void* context, std::shared_ptr<void> keep)
      : id_(id), context_(context), keep_(std::move(keep)) {
    cudaDeviceProp prop{};
    CO_CUDA_CHECK(cudaGetDeviceProperties(&prop, id_));
    // The node matters only where there is more than one.
    if (online_numa_nodes() > 1) numa_node_ = host_numa_node(id_);
    name_ = std::string(prop.name) + " (CUDA device " + std::to_string(id_) +
            (numa_node_ >= 0 ? ", NUMA node " + std::to_string(numa_node_) : std::string()) + ")";
  }
  std::string describe() const override { return name_; }
  int cuda_device() const override { return id_; }
  void make_current() override { bind_context(id_, context_); }
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
    const ContextScope scope(context_);
    return std::make_unique<CudaBuffer<DeviceMemory>>(DeviceMemory::allocate(bytes), bytes, keep_);
  }
  // On the device's NUMA node where that can be done, else as cudaHostAlloc
  // places it; pinned for every context either way (portable).
  std::unique_ptr<Buffer> alloc_pinned(size_t bytes) override {
    if (numa_node_ >= 0) {
      const ContextScope scope(context_);
      if (auto buffer = NodePinnedBuffer::allocate(bytes, numa_node_, id_, keep_)) return buffer;
    }
    void* data = nullptr;
    const ContextScope scope(context_);  // on the caller's thread (upstream's pool)
    CO_CUDA_CHECK(cudaHostAlloc(&data, bytes, cudaHostAllocPortable));
    return std::make_unique<CudaBuffer<PinnedMemory>>(PinnedMemory(data), bytes, keep_);
  }
  std::unique_ptr<HostRegistration> register_host(void* data, size_t bytes) override {
    return std::make_unique<CudaHostRegistration>(id_, context_, keep_, data, bytes);
  }

 private:
  int id_;
  void* context_;  // a driver context made elsewhere; null: the primary one
  std::shared_ptr<void> keep_;  // keeps context_ alive, given to what is made in it
  // The host NUMA node nearest the device, where pinned memory goes; -1 when
  // unknown or when the machine has one node.
  int numa_node_ = -1;
  std::string name_;
  std::shared_ptr<HostClockAnchor> anchor_;  // made with the first timing event
};

// "12.4" from CUDA's 1000 * major + 10 * minor.
std::string cuda_version_text(int version) {
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

// Why cudaGetDeviceCount failed, in the user's terms first: what is missing
// on the machine (a driver, a GPU), then CUDA's own words in parentheses.
// CUDA says "driver version is insufficient" when there is no driver at
// all, which reads as if an update would help.
std::string no_device_reason(cudaError_t status) {
  const std::string cuda = std::string("(CUDA: ") + cudaGetErrorString(status) + ")";
  if (status == cudaErrorInsufficientDriver) {
    int driver = 0, runtime = 0;
    if (cudaDriverGetVersion(&driver) != cudaSuccess) driver = 0;
    if (cudaRuntimeGetVersion(&runtime) != cudaSuccess) runtime = 0;
    (void)cudaGetLastError();
    if (driver == 0) return "no NVIDIA driver found " + cuda;
    return "the NVIDIA driver supports CUDA up to " + cuda_version_text(driver) +
           (runtime > 0
                ? ", older than the CUDA " + cuda_version_text(runtime) + " this build needs"
                : ", older than this build needs") +
           ": update the driver " + cuda;
  }
  if (status == cudaErrorNoDevice) return "no NVIDIA GPU found " + cuda;
  return "CUDA cannot be used: " + std::string(cudaGetErrorString(status)) + " (" +
         cudaGetErrorName(status) + ")";
}

}  // namespace

int cuda_device_count(std::string* why) {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    // Clear the error so it does not surface in a later, unrelated check.
    (void)cudaGetLastError();
    if (why) *why = no_device_reason(status);
    return 0;
  }
  if (count == 0 && why) *why = "no NVIDIA GPU found (the CUDA driver reports no device)";
  return count;
}

std::unique_ptr<Device> make_cuda_device(int device_id) {
  return make_cuda_device(device_id, nullptr, nullptr);
}

std::unique_ptr<Device> make_cuda_device(int device_id, void* context,
                                         std::shared_ptr<void> keep) {
  std::string why;
  const int count = cuda_device_count(&why);
  if (count == 0)
    throw Error("no CUDA device: " + why +
                "; backend=cuda needs one: use backend=cpu, or backend=auto (the default), "
                "which falls back to the cpu backend without a GPU");
  if (device_id < 0 || device_id >= count)
    throw Error("CUDA device " + std::to_string(device_id) + " does not exist: this machine has " +
                std::to_string(count) + " (device-id 0 to " + std::to_string(count - 1) + ")");
  if (context && !ctx_set_current())
    throw Error("the CUDA driver offers no cuCtxSetCurrent, so the pipeline's CUDA context "
                "cannot be used");
  return std::make_unique<CudaDevice>(device_id, context, std::move(keep));
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

void* cuda_retain_primary_context(int device_id) {
  using DeviceGetFn = int (*)(int* device, int ordinal);
  using RetainFn = int (*)(void** context, int device);
  static const DeviceGetFn device_get = driver_function<DeviceGetFn>("cuDeviceGet");
  static const RetainFn retain = driver_function<RetainFn>("cuDevicePrimaryCtxRetain");
  int device = 0;
  void* context = nullptr;
  if (!device_get || !retain || device_get(&device, device_id) != 0 ||
      retain(&context, device) != 0 || !context)
    throw Error("the CUDA driver did not give device " + std::to_string(device_id) +
                "'s primary context");
  return context;
}

void cuda_release_primary_context(int device_id) {
  using DeviceGetFn = int (*)(int* device, int ordinal);
  using ReleaseFn = int (*)(int device);
  static const DeviceGetFn device_get = driver_function<DeviceGetFn>("cuDeviceGet");
  static const ReleaseFn release = driver_function<ReleaseFn>("cuDevicePrimaryCtxRelease");
  int device = 0;
  if (device_get && release && device_get(&device, device_id) == 0) (void)release(device);
}

}  // namespace cudaoverlap
