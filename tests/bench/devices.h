// cudaoverlap-bench --devices: the devices it runs over and what their
// links move, alone and together.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bench.h"

namespace cudaoverlap::bench {

// A device of --devices and the number it is shown by: its CUDA device
// number, or on the cpu backend its place in the list.
struct ListedDevice {
  int number = 0;
  std::shared_ptr<Device> device;
};

// The devices LIST names: `all` or CUDA device numbers (`0,1`); on the cpu
// backend a count of cpu devices standing in (`2`; `all` is two, a list one
// per entry). Empty with `why` set when LIST is not understood; throws
// Error when a CUDA device named does not exist, or none does for `all`.
std::vector<ListedDevice> listed_devices(const std::string& list, bool cuda, int link_us,
                                         std::string* why);
// "0,1": the numbers of `devices`.
std::string numbers_of(const std::vector<ListedDevice>& devices);

// Where the copy probes' host memory comes from: the device's own pinned
// memory (Device::alloc_pinned, as the engine's), or anonymous memory the
// kernel is asked to back with 2 MB pages (transparent huge pages,
// MADV_HUGEPAGE), then registered with the device. Fewer, larger pages
// mean fewer translations for the DMA to look up where an IOMMU sits
// between the links and memory: whether that is what caps several links
// copying at once shows in the difference.
enum class HostPages { kPinned, kHuge };

// Both directions at once on every device together, in GB/s summed over
// the devices (devices_probe.cpp says how).
Spread measure_copies_together(const std::vector<ListedDevice>& devices, size_t bytes, int runs,
                               HostPages pages = HostPages::kPinned, int64_t* huge_bytes = nullptr);

// The --devices tables; the program's exit status.
int run_devices_table(const std::vector<ListedDevice>& devices, const Options& opt);

}  // namespace cudaoverlap::bench
