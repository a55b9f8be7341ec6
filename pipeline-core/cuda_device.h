// The cuda backend: the Device contract of device.h on the CUDA runtime.
// Declared here without CUDA syntax; without CUDA support in the build the
// functions still exist and say so.
#pragma once

#include <memory>
#include <string>

#include "device.h"

namespace cudaoverlap {

// CUDA devices usable by this process; 0 when there is no device or driver,
// or when the build has no CUDA. `why` (if given) receives the reason for 0.
int cuda_device_count(std::string* why = nullptr);

// Throws Error with a sentence a user can act on ("no CUDA device: …",
// "CUDA device 3 does not exist: this machine has 1").
std::unique_ptr<Device> make_cuda_device(int device_id);
// The same on `context`, a CUDA driver context (CUcontext) of that device
// made elsewhere (GStreamer's shared CUDA context): the device's work is
// done with it current instead of the device's primary context. `keep`
// keeps the context alive: the device and everything it makes hold it
// (memory can outlive the device, in buffers downstream holds).
std::unique_ptr<Device> make_cuda_device(int device_id, void* context,
                                         std::shared_ptr<void> keep);

// Device `device_id`'s primary context, the one the runtime uses, as a
// CUcontext, retained (made if it was not yet) until as many
// cuda_release_primary_context calls; no thread's context changes.
// Throws Error.
void* cuda_retain_primary_context(int device_id);
void cuda_release_primary_context(int device_id);

// Peak bandwidth of device `device_id`'s memory in GB/s (10^9 bytes), from
// its memory clock and bus width (double data rate): what one read plus
// one write of every byte a kernel moves is measured against. 0 when it
// cannot be told (no such device, no CUDA).
double cuda_memory_peak_gbps(int device_id);

// Bytes of device `device_id`'s L2 cache; 0 when it cannot be told.
size_t cuda_l2_cache_bytes(int device_id);

// Device and pinned buffers of the cuda backend alive in this process.
size_t cuda_live_buffers();
// Host memory registrations (Device::register_host) of the cuda backend alive.
size_t cuda_live_registrations();

}  // namespace cudaoverlap
