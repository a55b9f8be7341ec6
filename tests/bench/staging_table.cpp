// --staging: what a frame in pageable memory costs, staged every frame or
// pinned once.
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

#include "bench.h"
#include "parallel_copy.h"

namespace cudaoverlap::bench {
namespace {

// Pageable memory as an upstream allocator hands it out: malloc'd, every
// page touched (so no first-touch fault lands in a timed region).
class PageableBlock {
 public:
  explicit PageableBlock(size_t bytes) : data_(static_cast<uint8_t*>(std::malloc(bytes))) {
    if (!data_) throw Error("out of host memory: " + std::to_string(bytes) + " bytes asked");
    for (size_t b = 0; b < bytes; ++b) data_[b] = uint8_t(b * 13 + b / 4099);
  }
  ~PageableBlock() { std::free(data_); }
  PageableBlock(const PageableBlock&) = delete;
  PageableBlock& operator=(const PageableBlock&) = delete;
  uint8_t* data() const { return data_; }

 private:
  uint8_t* data_;
};

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// GB/s of `repeats` staging copies of a frame from pageable into pinned
// memory on `threads` threads (the engine's ParallelCopy, its own
// threshold), after one copy untimed.
double staging_gbps(Device& device, const FrameLayout& layout, int threads, int repeats) {
  const PageableBlock source(layout.size);
  auto pinned = device.alloc_pinned(layout.size);
  const ImageRef from = layout.at(source.data());
  const ImageRef to = layout.at(pinned->data());
  PlaneCopy planes[kMaxPlanes];
  for (int p = 0; p < layout.n_planes(); ++p)
    planes[p] = PlaneCopy{to.planes[p].data,     to.planes[p].stride, from.planes[p].data,
                          from.planes[p].stride, layout.row_bytes(p), layout.rows(p)};
  ParallelCopy copier(threads);
  copier.copy(planes, layout.n_planes());
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < repeats; ++i) copier.copy(planes, layout.n_planes());
  return frame_bytes(layout) * repeats / seconds_since(start) / 1e9;
}

struct RegistrationCost {
  double register_ms = 0;
  double unregister_ms = 0;
};

// Means over `runs` registrations, each of a freshly allocated and touched
// block of `bytes`.
RegistrationCost registration_cost(Device& device, size_t bytes, int runs) {
  RegistrationCost cost;
  for (int r = 0; r < runs; ++r) {
    const PageableBlock block(bytes);
    auto start = std::chrono::steady_clock::now();
    auto registration = device.register_host(block.data(), bytes);
    cost.register_ms += seconds_since(start) * 1e3;
    start = std::chrono::steady_clock::now();
    registration.reset();
    cost.unregister_ms += seconds_since(start) * 1e3;
  }
  cost.register_ms /= runs;
  cost.unregister_ms /= runs;
  return cost;
}

// GB/s of uploading a frame from `host` into device memory laid out as the
// engine's (256-byte pitch), one frame at a time: a copy per plane, an event
// recorded after them and waited for, as a serial upload would.
double upload_gbps(Device& device, const FrameLayout& layout, uint8_t* host, int repeats) {
  const FrameLayout device_layout =
      FrameLayout::packed(layout.format, layout.width, layout.height, 256, 256);
  auto device_memory = device.alloc_device(device_layout.size);
  auto stream = device.create_stream();
  auto uploaded = device.create_event();
  const ImageRef from = layout.at(host);
  const ImageRef to = device_layout.at(device_memory->data());
  auto upload_once = [&] {
    for (int p = 0; p < layout.n_planes(); ++p)
      stream->copy_2d(to.planes[p].data, to.planes[p].stride, from.planes[p].data,
                      from.planes[p].stride, layout.row_bytes(p), layout.rows(p),
                      CopyKind::kHostToDevice);
    stream->record(*uploaded);
    uploaded->synchronize();
  };
  upload_once();
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < repeats; ++i) upload_once();
  return frame_bytes(layout) * repeats / seconds_since(start) / 1e9;
}

}  // namespace

int run_staging_table(const std::shared_ptr<Device>& device, const Options& opt) {
  Device& dev = *device;
  dev.make_current();
  struct StagedSize {
    const char* name;
    PixelFormat format;
    int width, height;
  };
  const StagedSize sizes[] = {{"1080p RGBA", PixelFormat::kRGBA, 1920, 1080},
                              {"4K NV12", PixelFormat::kNV12, 3840, 2160},
                              {"4K RGBA", PixelFormat::kRGBA, 3840, 2160}};
  const int thread_counts[] = {1, 2, 4, 8};
  std::printf("cudaoverlap staging vs pinning upstream memory on %s\n", dev.describe().c_str());
  std::printf(
      "%d copies/uploads per figure, registration: mean of %d on fresh, touched memory; "
      "automatic staging-threads here: %d\n\n",
      opt.repeats, opt.register_runs, ParallelCopy::automatic_threads());
  std::printf(
      "| frame | MB | memcpy->pinned GB/s 1 thr | 2 thr | 4 thr | 8 thr | register ms | "
      "unregister ms | H2D GB/s pageable | registered | pinned |\n");
  std::printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  std::string break_even;
  for (const StagedSize& size : sizes) {
    const FrameLayout layout = FrameLayout::packed(size.format, size.width, size.height);
    const double bytes = frame_bytes(layout);
    double copy_gbps[4];
    int best = 0;
    for (int t = 0; t < 4; ++t) {
      copy_gbps[t] = staging_gbps(dev, layout, thread_counts[t], opt.repeats);
      if (copy_gbps[t] > copy_gbps[best]) best = t;
    }
    const RegistrationCost cost = registration_cost(dev, layout.size, opt.register_runs);
    const PageableBlock pageable(layout.size);
    const double from_pageable = upload_gbps(dev, layout, pageable.data(), opt.repeats);
    double from_registered;
    {
      const PageableBlock block(layout.size);
      auto registration = dev.register_host(block.data(), layout.size);
      from_registered = upload_gbps(dev, layout, block.data(), opt.repeats);
    }
    auto pinned = dev.alloc_pinned(layout.size);
    std::memset(pinned->data(), 0x5A, layout.size);
    const double from_pinned = upload_gbps(dev, layout, pinned->data(), opt.repeats);
    std::printf("| %s | %.1f | %.1f | %.1f | %.1f | %.1f | %.2f | %.2f | %.1f | %.1f | %.1f |\n",
                size.name, bytes / 1e6, copy_gbps[0], copy_gbps[1], copy_gbps[2], copy_gbps[3],
                cost.register_ms, cost.unregister_ms, from_pageable, from_registered, from_pinned);

    // Per frame, staging costs the copy at its best thread count plus an
    // upload from pinned memory; pinned once, a frame costs an upload from
    // registered memory, after registering and unregistering once.
    const double staged_ms =
        bytes / (copy_gbps[best] * 1e9) * 1e3 + bytes / (from_pinned * 1e9) * 1e3;
    const double registered_ms = bytes / (from_registered * 1e9) * 1e3;
    const double once_ms = cost.register_ms + cost.unregister_ms;
    char entry[160];
    if (staged_ms <= registered_ms)
      std::snprintf(entry, sizeof entry, "%s never (staging %.2f ms/frame <= registered %.2f)",
                    size.name, staged_ms, registered_ms);
    else {
      const double frames = std::max(1.0, std::ceil(once_ms / (staged_ms - registered_ms)));
      std::snprintf(entry, sizeof entry,
                    "%s after %.0f frame%s (%.2f ms once, %.2f ms/frame saved)", size.name, frames,
                    frames == 1.0 ? "" : "s", once_ms, staged_ms - registered_ms);
    }
    break_even += (break_even.empty() ? "" : "; ") + std::string(entry);
  }
  std::printf(
      "\nbreak-even, pinning once (register + unregister) vs staging every frame at the best "
      "thread count (copy + upload from pinned, vs upload from registered): %s\n",
      break_even.c_str());
  return 0;
}

}  // namespace cudaoverlap::bench
