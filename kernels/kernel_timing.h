// GPU time of an operation's launches and of a device copy, for the
// benchmark's kernel table (kernel_timing.cu; without CUDA both throw).
#pragma once

#include <cstddef>
#include <vector>

#include "kernels/operation.h"

namespace cudaoverlap {

// For benchmarks: prepares `op` and enqueues `iterations` launches of it on
// a stream of its own, launch i on ins[i % n] and outs[i % n] (n =
// ins.size() == outs.size(); sets that together exceed the GPU's L2 cache
// keep a launch from finding its frame still there from the one before);
// returns the GPU milliseconds per launch, from CUDA events. The images
// point into device memory of the current device. `hold` false: the
// launches are not queued behind a hold (for profilers, which serialize
// launches; the host's enqueueing may then enter the figure). Throws
// cudaoverlap::Error (also when built without CUDA).
double time_operation_cuda(const Operation& op, const std::vector<ImageRef>& ins,
                           const std::vector<ImageRef>& outs, int iterations, bool hold = true);
// For benchmarks: GPU milliseconds of one device-to-device cudaMemcpy of
// `bytes` (the same timing), what the memory moves at when nothing but a
// copy runs.
double time_device_copy_cuda(void* dst, const void* src, size_t bytes, int iterations);

}  // namespace cudaoverlap
