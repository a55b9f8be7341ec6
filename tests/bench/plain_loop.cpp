// The plain loops the engine is measured against: its upload, kernel and
// download written out by hand on one thread, deliberately apart from the
// engine's own code (SlotPass), so that they bound it rather than follow it.
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
#include "kernels/operation_registry.h"

namespace cudaoverlap::bench {

// The plain loop the engine is measured against: the upload, compute and
// download of docs/architecture.md, "The engine", on three streams with the
// same events, written out
// on one thread with nothing else (no worker, no callbacks, no locks). Frame
// i goes into slot i % ring, after waiting for the download of the frame
// that had the slot before (the consumer reads its output at once). The
// same pinned input frames, operation and device layouts as the engine's.
Result run_plain_loop(const std::shared_ptr<Device>& device, const Options& opt, const Size& size,
                      const char* kernel, uint32_t synthetic_us, int ring, HostWait wait) {
  Device& dev = *device;
  dev.make_current();
  const FrameLayout layout = FrameLayout::packed(PixelFormat::kRGBA, size.width, size.height);
  const FrameLayout device_layout =
      FrameLayout::packed(PixelFormat::kRGBA, size.width, size.height, 256, 256);
  InputPool pool(dev, layout, ring + 2, true);
  KernelParams params;
  params.set("synthetic-us", synthetic_us);
  const auto op = make_operation(kernel, params);
  struct LoopSlot {
    std::unique_ptr<Buffer> device_in, device_out, pinned_out;
    std::unique_ptr<Event> uploaded, computed, downloaded;
    InputFrame input;  // its buffer goes back to the pool once downloaded
    uint64_t sequence = 0;
    bool busy = false;
  };
  std::vector<LoopSlot> slots(ring);
  for (LoopSlot& slot : slots) {
    slot.device_in = dev.alloc_device(device_layout.size);
    slot.device_out = dev.alloc_device(device_layout.size);
    slot.pinned_out = dev.alloc_pinned(layout.size);
    slot.uploaded = dev.create_event();
    slot.computed = dev.create_event();
    slot.downloaded = dev.create_host_event(wait, false);
  }
  auto up = dev.create_stream(), compute = dev.create_stream(), down = dev.create_stream();
  compute->prepare(*op, Workspace{});
  bool ok = true;
  // The frame in `slot` is out: check it when it is one of the checked ones.
  auto retire = [&](LoopSlot& slot) {
    if (!slot.busy) return;
    slot.downloaded->synchronize();
    if (checked_frame(slot.sequence, opt.warmup, opt.frames)) {
      const int input = static_cast<const InputIndex&>(*slot.input.user).input;
      ok = ok && std::memcmp(slot.pinned_out->data(), pool.data(input), layout.size) == 0;
    }
    slot.input = InputFrame{};
    slot.busy = false;
  };
  uint64_t sequence = 0;
  auto run_n = [&](int n) {
    for (int i = 0; i < n; ++i, ++sequence) {
      LoopSlot& slot = slots[sequence % ring];
      retire(slot);
      slot.input = pool.take();
      slot.sequence = sequence;
      slot.busy = true;
      const ImageRef in = slot.input.image;
      const ImageRef device_in = device_layout.at(slot.device_in->data());
      const ImageRef device_out = device_layout.at(slot.device_out->data());
      up->copy_2d(device_in.planes[0].data, device_in.planes[0].stride, in.planes[0].data,
                  in.planes[0].stride, layout.row_bytes(0), layout.rows(0),
                  CopyKind::kHostToDevice);
      up->record(*slot.uploaded);
      compute->wait(*slot.uploaded);
      compute->launch(*op, device_in, device_out, Workspace{});
      compute->record(*slot.computed);
      down->wait(*slot.computed);
      down->copy_2d(slot.pinned_out->data(), layout.stride[0], device_out.planes[0].data,
                    device_out.planes[0].stride, layout.row_bytes(0), layout.rows(0),
                    CopyKind::kDeviceToHost);
      down->record(*slot.downloaded);
    }
    for (int k = 0; k < ring; ++k) retire(slots[(sequence + k) % ring]);
  };
  run_n(opt.warmup);
  const double cpu_start = process_cpu_us();
  const auto start = std::chrono::steady_clock::now();
  run_n(opt.frames);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double cpu = process_cpu_us() - cpu_start;
  return Result{opt.frames / seconds, ok, 0, cpu / opt.frames};
}

// The plain loop with one frame at a time: enqueue, wait for its download.
LiveResult live_plain_loop(Device& dev, const Options& opt, const Size& size, HostWait wait,
                           int fps) {
  dev.make_current();
  const FrameLayout layout = FrameLayout::packed(PixelFormat::kRGBA, size.width, size.height);
  const FrameLayout device_layout =
      FrameLayout::packed(PixelFormat::kRGBA, size.width, size.height, 256, 256);
  auto pinned_in = dev.alloc_pinned(layout.size), pinned_out = dev.alloc_pinned(layout.size);
  std::memset(pinned_in->data(), 0x5a, layout.size);
  auto device_in = dev.alloc_device(device_layout.size),
       device_out = dev.alloc_device(device_layout.size);
  const auto op = make_operation("copy");
  auto up = dev.create_stream(), compute = dev.create_stream(), down = dev.create_stream();
  auto up_started = dev.create_timing_event(), uploaded = dev.create_timing_event(),
       compute_started = dev.create_timing_event(), computed = dev.create_timing_event(),
       down_started = dev.create_timing_event(), downloaded = dev.create_host_event(wait, true);
  const ImageRef din = device_layout.at(device_in->data());
  const ImageRef dout = device_layout.at(device_out->data());
  LiveResult r;
  const int skip = std::min(opt.warmup, opt.live_frames / 4);
  double cpu_start = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < opt.live_frames; ++i) {
    pace(start, i, fps);
    if (i == skip) cpu_start = process_cpu_us();
    const int64_t t0 = host_now_ns();
    up->record(*up_started);
    up->copy_2d(din.planes[0].data, din.planes[0].stride, pinned_in->data(), layout.stride[0],
                layout.row_bytes(0), layout.rows(0), CopyKind::kHostToDevice);
    up->record(*uploaded);
    compute->wait(*uploaded);
    compute->record(*compute_started);
    compute->launch(*op, din, dout, Workspace{});
    compute->record(*computed);
    down->wait(*computed);
    down->record(*down_started);
    down->copy_2d(pinned_out->data(), layout.stride[0], dout.planes[0].data, dout.planes[0].stride,
                  layout.row_bytes(0), layout.rows(0), CopyKind::kDeviceToHost);
    down->record(*downloaded);
    const int64_t enqueued = host_now_ns();
    downloaded->synchronize();
    const int64_t t1 = host_now_ns();
    if (i < skip) continue;
    r.latency_ms.push_back((t1 - t0) / 1e6);
    r.submit_us += (enqueued - t0) / 1e3;
    const int64_t done = downloaded->completed_at_ns();
    r.wake_us.push_back((t1 - done) / 1e3);
    r.upload_ms += (uploaded->completed_at_ns() - up_started->completed_at_ns()) / 1e6;
    r.compute_ms += (computed->completed_at_ns() - compute_started->completed_at_ns()) / 1e6;
    r.download_ms += (done - down_started->completed_at_ns()) / 1e6;
  }
  const double n = static_cast<double>(r.latency_ms.size());
  r.cpu_us = (process_cpu_us() - cpu_start) / n;
  r.submit_us /= n;
  r.upload_ms /= n;
  r.compute_ms /= n;
  r.download_ms /= n;
  if (std::memcmp(pinned_out->data(), pinned_in->data(), layout.size) != 0)
    throw Error("the live plain loop's last frame is wrong");
  return r;
}

}  // namespace cudaoverlap::bench
