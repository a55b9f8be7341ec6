// Pinned host memory of the cuda backend on machines with several GPUs: each
// device's buffers lie on the device's own NUMA node (where the machine has
// more than one), carry copies on that device, and, pinned for every CUDA
// context, carry copies on another device too, as one engine may upload from
// memory another engine's device allocated. The node expected is worked out
// here as the backend does, from CUDA and the kernel; where a page lies, the
// kernel says (get_mempolicy).
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cuda_device.h"

#ifdef CUDAOVERLAP_HAVE_CUDA
#include <cuda_runtime_api.h>
#include <linux/mempolicy.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#endif

namespace cudaoverlap::test {
namespace {

#ifdef CUDAOVERLAP_HAVE_CUDA

#define CO_ASSERT_CUDA(expr)                                                         \
  do {                                                                               \
    const cudaError_t status_ = (expr);                                              \
    ASSERT_EQ(status_, cudaSuccess) << #expr << ": " << cudaGetErrorString(status_); \
  } while (0)

// Rows of a frame whose size is no whole number of pages: 4,196,000 bytes.
constexpr size_t kRowBytes = 4000;
constexpr size_t kRows = 1049;
constexpr size_t kBytes = kRowBytes * kRows;

// NUMA nodes online; 1 when the kernel does not say.
int online_numa_nodes() {
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
}

// The host node nearest `device`: CUDA's answer, else the kernel's for the
// device's PCI function; -1 when neither knows.
int device_numa_node(int device) {
#if CUDART_VERSION >= 12020
  int node = -1;
  if (cudaDeviceGetAttribute(&node, cudaDevAttrHostNumaId, device) == cudaSuccess && node >= 0)
    return node;
  (void)cudaGetLastError();
#endif
  char bus_id[64] = {};
  if (cudaDeviceGetPCIBusId(bus_id, static_cast<int>(sizeof bus_id), device) != cudaSuccess) {
    (void)cudaGetLastError();
    return -1;
  }
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

// The node holding the page at `address`; -1 (errno set) when the kernel
// will not say.
int node_of(const void* address) {
  int node = -1;
  if (syscall(SYS_get_mempolicy, &node, nullptr, 0UL, const_cast<void*>(address),
              static_cast<unsigned long>(MPOL_F_NODE | MPOL_F_ADDR)) != 0)
    return -1;
  return node;
}

void fill(uint8_t* data, size_t bytes, unsigned seed) {
  for (size_t i = 0; i < bytes; ++i) data[i] = static_cast<uint8_t>(i * 131 + seed * 7 + i / 4093);
}

// Index of the first byte where `a` and `b` differ, or `bytes`.
size_t first_difference(const uint8_t* a, const uint8_t* b, size_t bytes) {
  for (size_t i = 0; i < bytes; ++i)
    if (a[i] != b[i]) return i;
  return bytes;
}

// Host memory CUDA takes for pinned in the calling thread's current context.
void expect_pinned_here(const void* data, const std::string& what) {
  cudaPointerAttributes attributes{};
  const cudaError_t status = cudaPointerGetAttributes(&attributes, data);
  ASSERT_EQ(status, cudaSuccess) << what << ": " << cudaGetErrorString(status);
  EXPECT_EQ(attributes.type, cudaMemoryTypeHost) << what << " is not pinned memory here";
}

// Uploads `in` (host) to a buffer of `device`, downloads it to `out` (host)
// on one of the device's streams, and expects the bytes back unchanged.
void round_trip(Device& device, const uint8_t* in, uint8_t* out, const std::string& what) {
  device.make_current();
  auto on_device = device.alloc_device(kBytes);
  auto stream = device.create_stream();
  std::memset(out, 0, kBytes);
  stream->copy_2d(on_device->data(), kRowBytes, in, kRowBytes, kRowBytes, kRows,
                  CopyKind::kHostToDevice);
  stream->copy_2d(out, kRowBytes, on_device->data(), kRowBytes, kRowBytes, kRows,
                  CopyKind::kDeviceToHost);
  stream->synchronize();
  const size_t at = first_difference(in, out, kBytes);
  EXPECT_EQ(at, kBytes) << what << ": the bytes came back changed from byte " << at;
}

#define CO_CUDA_DEVICES_OR_SKIP(count)               \
  std::string count##_why;                           \
  const int count = cuda_device_count(&count##_why); \
  if (count == 0) GTEST_SKIP() << "no CUDA device: " << count##_why

TEST(PinnedNumaTest, BuffersLieOnTheirDevicesNode) {
  CO_CUDA_DEVICES_OR_SKIP(count);
  const int nodes = online_numa_nodes();
  if (nodes < 2)
    GTEST_SKIP() << "this machine has " << nodes
                 << " NUMA node online: where pinned memory lies makes no difference here";
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t before = cuda_live_buffers();
  int checked = 0;
  for (int d = 0; d < count; ++d) {
    const int node = device_numa_node(d);
    if (node < 0) {
      std::printf("CUDA device %d: neither CUDA nor the kernel knows its NUMA node\n", d);
      continue;
    }
    std::shared_ptr<Device> device = make_cuda_device(d);
    EXPECT_NE(device->describe().find(", NUMA node " + std::to_string(node) + ")"),
              std::string::npos)
        << device->describe();
    auto buffer = device->alloc_pinned(kBytes);
    ASSERT_TRUE(buffer);
    ASSERT_EQ(buffer->size(), kBytes);
    fill(buffer->data(), kBytes, static_cast<unsigned>(d));

    const uint8_t* data = buffer->data();
    if (node_of(data) < 0) {
      const int error = errno;
      if (error == EPERM || error == ENOSYS)
        GTEST_SKIP() << "the kernel does not let this process ask where a page lies "
                        "(get_mempolicy: "
                     << std::strerror(error)
                     << "), so the placement cannot be checked; mbind is then most likely "
                        "refused too, and pinned memory falls back to cudaHostAlloc";
      FAIL() << "get_mempolicy on pinned memory of CUDA device " << d << ": "
             << std::strerror(error);
    }
    size_t pages = 0, off_node = 0, first_off = 0;
    int first_off_node = -1;
    for (size_t offset = 0; offset < kBytes; offset += page) {
      const int at = node_of(data + offset);
      ++pages;
      if (at != node && off_node++ == 0) {
        first_off = offset;
        first_off_node = at;
      }
    }
    const int last = node_of(data + kBytes - 1);
    EXPECT_EQ(last, node) << "CUDA device " << d << ": the buffer's last byte";
    EXPECT_EQ(off_node, 0u) << "CUDA device " << d << " (NUMA node " << node << "): " << off_node
                            << " of " << pages << " pages lie elsewhere, the first at byte "
                            << first_off << " on node " << first_off_node;
    ++checked;
  }
  EXPECT_EQ(cuda_live_buffers(), before);
  if (checked == 0) GTEST_SKIP() << "no CUDA device's NUMA node is known";
}

TEST(PinnedNumaTest, BuffersCarryCopiesOnTheirDevice) {
  CO_CUDA_DEVICES_OR_SKIP(count);
  const size_t before = cuda_live_buffers();
  for (int d = 0; d < count; ++d) {
    const std::string what = "CUDA device " + std::to_string(d);
    std::shared_ptr<Device> device = make_cuda_device(d);
    auto in = device->alloc_pinned(kBytes);
    auto out = device->alloc_pinned(kBytes);
    ASSERT_TRUE(in && out);
    fill(in->data(), kBytes, static_cast<unsigned>(d));
    device->make_current();
    expect_pinned_here(in->data(), what + "'s buffer");
    expect_pinned_here(out->data(), what + "'s buffer");
    round_trip(*device, in->data(), out->data(), what);

    // The plain runtime copies too, synchronous and in one piece.
    void* on_device = nullptr;
    CO_ASSERT_CUDA(cudaMalloc(&on_device, kBytes));
    std::memset(out->data(), 0, kBytes);
    const cudaError_t up = cudaMemcpy(on_device, in->data(), kBytes, cudaMemcpyHostToDevice);
    const cudaError_t down = cudaMemcpy(out->data(), on_device, kBytes, cudaMemcpyDeviceToHost);
    CO_ASSERT_CUDA(cudaFree(on_device));
    CO_ASSERT_CUDA(up);
    CO_ASSERT_CUDA(down);
    EXPECT_EQ(first_difference(in->data(), out->data(), kBytes), kBytes) << what << ", cudaMemcpy";
  }
  EXPECT_EQ(cuda_live_buffers(), before);
}

// Each device uses the buffers (and a registration) of the next one, and
// frees them while bound to itself: the thread stays bound to it.
TEST(PinnedNumaTest, BuffersOfOneDeviceCarryCopiesOnAnother) {
  CO_CUDA_DEVICES_OR_SKIP(count);
  if (count < 2) GTEST_SKIP() << "needs 2 CUDA devices; this machine has " << count;
  const size_t before = cuda_live_buffers();
  const size_t registrations_before = cuda_live_registrations();
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t registered_bytes = (kBytes + page - 1) / page * page;
  for (int user = 0; user < count; ++user) {
    const int owner = (user + 1) % count;
    const std::string what =
        "CUDA device " + std::to_string(owner) + "'s buffer on CUDA device " + std::to_string(user);
    std::shared_ptr<Device> owning = make_cuda_device(owner);
    std::shared_ptr<Device> using_device = make_cuda_device(user);
    {
      auto in = owning->alloc_pinned(kBytes);
      auto out = owning->alloc_pinned(kBytes);
      ASSERT_TRUE(in && out);
      fill(in->data(), kBytes, static_cast<unsigned>(owner * 31 + user));
      using_device->make_current();
      expect_pinned_here(in->data(), what);
      round_trip(*using_device, in->data(), out->data(), what);
      // Freed here, bound to `user`.
    }
    int current = -1;
    CO_ASSERT_CUDA(cudaGetDevice(&current));
    EXPECT_EQ(current, user) << "freeing " << what << " left the thread bound elsewhere";

    // Memory registered by one device uploads on another as well.
    void* host = nullptr;
    ASSERT_EQ(posix_memalign(&host, page, registered_bytes), 0);
    std::unique_ptr<void, void (*)(void*)> host_owner(host, std::free);
    auto out = owning->alloc_pinned(kBytes);
    ASSERT_TRUE(out);
    fill(static_cast<uint8_t*>(host), kBytes, static_cast<unsigned>(user * 17 + owner));
    {
      auto registration = owning->register_host(host, registered_bytes);
      EXPECT_EQ(cuda_live_registrations(), registrations_before + 1);
      using_device->make_current();
      expect_pinned_here(host, "memory registered by CUDA device " + std::to_string(owner));
      round_trip(*using_device, static_cast<const uint8_t*>(host), out->data(),
                 "memory registered by CUDA device " + std::to_string(owner) + ", on " +
                     std::to_string(user));
    }
    EXPECT_EQ(cuda_live_registrations(), registrations_before);
    CO_ASSERT_CUDA(cudaGetDevice(&current));
    EXPECT_EQ(current, user) << "unregistering left the thread bound elsewhere";
  }
  EXPECT_EQ(cuda_live_buffers(), before);
}

#else  // CUDAOVERLAP_HAVE_CUDA

TEST(PinnedNumaTest, NeedsCuda) { GTEST_SKIP() << "cudaoverlap was built without CUDA support"; }

#endif  // CUDAOVERLAP_HAVE_CUDA

}  // namespace
}  // namespace cudaoverlap::test
