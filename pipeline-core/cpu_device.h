// The cpu backend: the Device contract of device.h with host threads
// standing in for streams, host flags for events and plain host memory for
// both device and pinned buffers. Kernels run their CPU path
// (Operation::run_cpu), in bands on several threads where asked
// (CpuDeviceOptions::threads). It lets the engine run, and be tested,
// where no GPU exists.
#pragma once

#include <cstdint>
#include <memory>

#include "device.h"

namespace cudaoverlap {

struct CpuDeviceOptions {
  // Test-only: every stream operation first sleeps a random time in
  // [0, max_delay_us] drawn from a generator seeded with `seed`, so a
  // missing barrier shows up as a wrong frame instead of a rare glitch.
  uint32_t max_delay_us = 0;
  uint64_t seed = 1;
  // Test-only: total bytes this device may allocate (device + pinned), to
  // exercise out-of-memory handling.
  size_t memory_limit = SIZE_MAX;
  // Test-only: kernel launches after the first `fail_after_launches` of
  // this device fail (asynchronously, as a device fault would), so a device
  // that breaks in the middle of a stream can be shown.
  uint64_t fail_after_launches = UINT64_MAX;
  // Which device this one stands in for when several run side by side
  // (named in describe()); -1: the only one.
  int stand_in = -1;
  // Threads a kernel launch's rows are computed on, its stream's own
  // included (RowWorkers): its output cut into that many bands of rows
  // where the operation computes rows on their own (Operation::band_halo
  // >= 0) and the frame is large enough to be worth it. 1: whole frames on
  // the stream's thread.
  int threads = 1;
};

std::unique_ptr<Device> make_cpu_device(const CpuDeviceOptions& options = {});

// Buffers of the cpu backend alive in this process (for leak tests).
size_t cpu_live_buffers();
// Host memory registrations (Device::register_host) of the cpu backend alive.
size_t cpu_live_registrations();

}  // namespace cudaoverlap
