// For tests: edge's CUDA magnitude arithmetic run on its own, to hold it
// against the reference's edge_magnitude over every gradient it can meet.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace cudaoverlap {

// For tests: the CUDA kernel's magnitude arithmetic run on the device for
// every (gx, gy) in [-limit, limit]^2, gx fastest, two bytes per pair (from
// the kernel's low and high 16-bit lanes). Sobel gradients of 8-bit samples
// lie in [-1020, 1020]. Only in CUDA builds.
std::vector<uint8_t> edge_magnitudes_cuda(int limit);

// For tests: the CUDA kernel's magnitude of 16-bit samples' gradients
// (|gx|, |gy| <= 4 * 65535), clamped to `max`, for each (gx, gy) listed.
// Only in CUDA builds.
std::vector<uint32_t> edge_deep_magnitudes_cuda(const std::vector<std::pair<int, int>>& gradients,
                                                uint32_t max);

}  // namespace cudaoverlap
