// The devices of --devices and probes of their links: pinned copies on each
// device alone and on all at once, from pinned or huge-page host memory.
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "../engine/test_device.h"
#include "bench.h"
#include "cpu_device.h"
#include "cuda_device.h"
#include "devices.h"

namespace cudaoverlap::bench {
namespace {

// A whole number and nothing else, or -1.
int parse_count(const std::string& text) {
  if (text.empty() || text.size() > 6) return -1;
  for (char c : text)
    if (c < '0' || c > '9') return -1;
  return std::atoi(text.c_str());
}

// Host memory for a copy probe, as HostPages says.
class ProbeMemory {
 public:
  ProbeMemory(Device& device, size_t bytes, HostPages pages) {
    if (pages == HostPages::kPinned) {
      pinned_ = device.alloc_pinned(bytes);
      data_ = pinned_->data();
      return;
    }
    constexpr size_t kHuge = size_t{2} << 20;
    mapped_ = (bytes + kHuge - 1) / kHuge * kHuge + kHuge;  // room to align
    map_ = mmap(nullptr, mapped_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (map_ == MAP_FAILED) throw Error("mmap of " + std::to_string(mapped_) + " bytes failed");
    const uintptr_t at = reinterpret_cast<uintptr_t>(map_);
    data_ = reinterpret_cast<uint8_t*>((at + kHuge - 1) / kHuge * kHuge);
    const size_t usable = (bytes + kHuge - 1) / kHuge * kHuge;
    (void)madvise(data_, usable, MADV_HUGEPAGE);  // a kernel without it: small pages
    std::memset(data_, 0, usable);                // faulted in before pinning
    try {
      registration_ = device.register_host(data_, usable);
    } catch (...) {
      munmap(map_, mapped_);  // the destructor does not run for a throwing constructor
      throw;
    }
  }
  ~ProbeMemory() {
    registration_.reset();  // unpinned before unmapped
    if (map_) munmap(map_, mapped_);
  }
  ProbeMemory(const ProbeMemory&) = delete;
  ProbeMemory& operator=(const ProbeMemory&) = delete;
  uint8_t* data() const { return data_; }

 private:
  std::unique_ptr<Buffer> pinned_;
  void* map_ = nullptr;
  size_t mapped_ = 0;
  std::unique_ptr<HostRegistration> registration_;
  uint8_t* data_ = nullptr;
};

// How much of this process's anonymous memory the kernel backs with huge
// pages now (AnonHugePages of /proc/self/smaps_rollup), in bytes; -1 when
// it does not say.
int64_t anon_huge_bytes() {
  std::FILE* f = std::fopen("/proc/self/smaps_rollup", "r");
  if (!f) return -1;
  char line[256];
  long long kb = -1;
  while (std::fgets(line, sizeof line, f))
    if (std::sscanf(line, "AnonHugePages: %lld kB", &kb) == 1) break;
  std::fclose(f);
  return kb < 0 ? -1 : kb * 1024;
}

// Both directions at once on every device together (each device's upload
// and download on two streams, all devices started at the same moment from
// a thread each), in GB/s summed over the devices: what the host and its
// links move when every device copies, against the sum of each alone.
// `huge_bytes`, when given, gets how many bytes of the probe's host memory
// the kernel backed with huge pages.

}  // namespace

// The devices LIST names: `all` or CUDA device numbers (`0,1`); on the cpu
// backend a count of cpu devices standing in (`2`; `all` is two, a list one
// per entry). Empty with `why` set when LIST is not understood; throws
// Error when a CUDA device named does not exist, or none does for `all`.
std::vector<ListedDevice> listed_devices(const std::string& list, bool cuda, int link_us,
                                         std::string* why) {
  std::vector<ListedDevice> listed;
  const std::vector<std::string> entries = split_commas(list);
  if (!cuda) {
    int count = list == "all" ? 2 : static_cast<int>(entries.size());
    if (entries.size() == 1 && list != "all") count = parse_count(list);
    if (count < 1 || count > 16) {
      *why = "--devices on the cpu backend takes a count of cpu devices from 1 to 16, not " + list;
      return {};
    }
    for (int i = 0; i < count; ++i) {
      CpuDeviceOptions options;
      options.stand_in = count > 1 ? i : -1;
      std::shared_ptr<Device> device = make_cpu_device(options);
      if (link_us > 0) {
        // The frame's upload waits for a sleep on its stream: a link of
        // link_us a frame that costs the host nothing.
        test::TestDeviceOptions link;
        link.upload_delay_us = static_cast<uint32_t>(link_us);
        device = std::make_shared<test::TestDevice>(std::move(device), link);
      }
      listed.push_back({i, std::move(device)});
    }
    return listed;
  }
  std::vector<int> numbers;
  if (list == "all") {
    const int count = cuda_device_count(why);
    if (count == 0) throw Error("no CUDA device: " + *why);
    for (int i = 0; i < count; ++i) numbers.push_back(i);
  } else {
    for (const std::string& entry : entries) {
      const int number = parse_count(entry);
      if (number < 0) {
        *why = "--devices takes `all` or CUDA device numbers such as 0,1, not " + list;
        return {};
      }
      if (std::find(numbers.begin(), numbers.end(), number) != numbers.end()) {
        *why = "--devices names CUDA device " + entry + " twice";
        return {};
      }
      numbers.push_back(number);
    }
  }
  // make_cuda_device says which numbers exist when one does not.
  for (int number : numbers) listed.push_back({number, make_cuda_device(number)});
  return listed;
}

// "0,1": the numbers of `devices`.

// "0,1": the numbers of `devices`.
std::string numbers_of(const std::vector<ListedDevice>& devices) {
  std::string text;
  for (const ListedDevice& d : devices)
    text += (text.empty() ? "" : ",") + std::to_string(d.number);
  return text;
}

// Where the copy probes' host memory comes from: the device's own pinned
// memory (Device::alloc_pinned, as the engine's), or anonymous memory the
// kernel is asked to back with 2 MB pages (transparent huge pages,
// MADV_HUGEPAGE), then registered with the device. Fewer, larger pages
// mean fewer translations for the DMA to look up where an IOMMU sits
// between the links and memory: whether that is what caps several links
// copying at once shows in the difference.

// Both directions at once on every device together (each device's upload
// and download on two streams, all devices started at the same moment from
// a thread each), in GB/s summed over the devices: what the host and its
// links move when every device copies, against the sum of each alone.
// `huge_bytes`, when given, gets how many bytes of the probe's host memory
// the kernel backed with huge pages.
Spread measure_copies_together(const std::vector<ListedDevice>& devices, size_t bytes, int runs,
                               HostPages pages, int64_t* huge_bytes) {
  struct Link {
    std::unique_ptr<ProbeMemory> host_a, host_b;
    std::unique_ptr<Buffer> dev_a, dev_b;
    std::unique_ptr<Stream> up, down;
  };
  const size_t n = devices.size();
  std::vector<Link> links(n);
  const int64_t huge_before = anon_huge_bytes();
  for (size_t d = 0; d < n; ++d) {
    Device& dev = *devices[d].device;
    dev.make_current();
    Link& link = links[d];
    link.host_a = std::make_unique<ProbeMemory>(dev, bytes, pages);
    link.host_b = std::make_unique<ProbeMemory>(dev, bytes, pages);
    link.dev_a = dev.alloc_device(bytes);
    link.dev_b = dev.alloc_device(bytes);
    std::memset(link.host_a->data(), 0x3c, bytes);
    std::memset(link.host_b->data(), 0xc3, bytes);
    link.up = dev.create_stream();
    link.down = dev.create_stream();
  }
  if (huge_bytes) {
    const int64_t huge_after = anon_huge_bytes();
    *huge_bytes = huge_before < 0 || huge_after < 0 ? -1 : huge_after - huge_before;
  }
  constexpr int kCopies = 20;
  auto once = [&] {
    std::mutex mutex;
    std::condition_variable changed;
    size_t ready = 0;
    bool go = false;
    std::vector<std::string> errors(n);
    std::vector<std::chrono::steady_clock::time_point> ends(n);
    std::vector<std::thread> threads;
    for (size_t d = 0; d < n; ++d)
      threads.emplace_back([&, d] {
        // Ready even when it failed, so that the others are not held.
        try {
          devices[d].device->make_current();
        } catch (const std::exception& e) {
          errors[d] = devices[d].device->describe() + ": " + e.what();
        }
        {
          std::unique_lock<std::mutex> lock(mutex);
          ++ready;
          changed.notify_all();
          changed.wait(lock, [&] { return go; });
        }
        if (!errors[d].empty()) return;
        try {
          Link& link = links[d];
          for (int i = 0; i < kCopies; ++i) {
            link.up->copy_2d(link.dev_a->data(), bytes, link.host_a->data(), bytes, bytes, 1,
                             CopyKind::kHostToDevice);
            link.down->copy_2d(link.host_b->data(), bytes, link.dev_b->data(), bytes, bytes, 1,
                               CopyKind::kDeviceToHost);
          }
          link.up->synchronize();
          link.down->synchronize();
          ends[d] = std::chrono::steady_clock::now();
        } catch (const std::exception& e) {
          errors[d] = devices[d].device->describe() + ": " + e.what();
        }
      });
    std::chrono::steady_clock::time_point start;
    {
      std::unique_lock<std::mutex> lock(mutex);
      changed.wait(lock, [&] { return ready == n; });
      go = true;
      start = std::chrono::steady_clock::now();
    }
    changed.notify_all();
    for (std::thread& t : threads) t.join();
    for (const std::string& e : errors)
      if (!e.empty()) throw Error(e);
    const auto end = *std::max_element(ends.begin(), ends.end());
    const double seconds = std::chrono::duration<double>(end - start).count();
    return 2.0 * kCopies * static_cast<double>(bytes) * static_cast<double>(n) / seconds / 1e9;
  };
  once();  // warm-up
  std::vector<double> rates;
  for (int r = 0; r < runs; ++r) rates.push_back(once());
  // Each device's streams and memory freed with it current.
  for (size_t d = 0; d < n; ++d) {
    devices[d].device->make_current();
    links[d] = Link{};
  }
  return spread_of(rates);
}

}  // namespace cudaoverlap::bench
