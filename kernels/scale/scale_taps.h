// The resampling filter of `scale`, for one axis: which input samples each
// output sample reads and with what weights, as fixed-point integers worked
// out once on the host, so that the CUDA kernel and the CPU reference read
// the same table and agree to the byte.
//
// Sample centres are aligned (output sample o sits at (o + 0.5) * in / out
// - 0.5 on the input's grid, as GStreamer's video scaler places it). When
// shrinking, the filter widens by the factor in / out, so every input sample
// counts and fine detail does not alias (GStreamer's multi-tap methods do
// the same); nearest never widens. An axis that keeps its size is a copy.
#pragma once

#include <cstdint>
#include <vector>

namespace cudaoverlap {

enum class ScaleMethod { kNearest = 0, kBilinear = 1, kBicubic = 2, kLanczos = 3 };

// Weights are in units of 1 / 2^kScaleWeightBits; each output's sum to
// exactly 2^kScaleWeightBits.
constexpr int kScaleWeightBits = 14;

struct ScaleAxis {
  int in_size = 0;
  int out_size = 0;
  int taps = 0;                 // per output sample (some may weigh 0)
  std::vector<int32_t> first;   // per output: the input index of its first tap
  std::vector<int16_t> weight;  // out_size * taps; taps past an edge read the edge
};

// The taps of `method` from `in_size` samples to `out_size` (both >= 1).
ScaleAxis scale_axis(ScaleMethod method, int in_size, int out_size);

// The filter's reach either side of a sample, in input samples when not
// widened: 0.5 (nearest), 1 (bilinear), 2 (bicubic), 3 (lanczos).
double scale_radius(ScaleMethod method);

}  // namespace cudaoverlap
