// The filters of scale_taps.h: triangle (bilinear), Mitchell-Netravali cubic
// (B = C = 1/3, GStreamer's default cubic) and Lanczos of three lobes.
#include "kernels/scale/scale_taps.h"

#include <algorithm>
#include <cmath>

namespace cudaoverlap {
namespace {

constexpr double kPi = 3.14159265358979323846;

double sinc(double x) { return x == 0 ? 1.0 : std::sin(kPi * x) / (kPi * x); }

double filter(ScaleMethod method, double t) {
  t = std::fabs(t);
  switch (method) {
    case ScaleMethod::kNearest:
      return t < 0.5 ? 1.0 : 0.0;
    case ScaleMethod::kBilinear:
      return t < 1 ? 1 - t : 0.0;
    case ScaleMethod::kBicubic: {
      constexpr double B = 1.0 / 3, C = 1.0 / 3;
      if (t < 1)
        return ((12 - 9 * B - 6 * C) * t * t * t + (-18 + 12 * B + 6 * C) * t * t + (6 - 2 * B)) /
               6;
      if (t < 2)
        return ((-B - 6 * C) * t * t * t + (6 * B + 30 * C) * t * t + (-12 * B - 48 * C) * t +
                (8 * B + 24 * C)) /
               6;
      return 0.0;
    }
    case ScaleMethod::kLanczos:
      return t < 3 ? sinc(t) * sinc(t / 3) : 0.0;
  }
  return 0.0;
}

}  // namespace

double scale_radius(ScaleMethod method) {
  switch (method) {
    case ScaleMethod::kNearest:
      return 0.5;
    case ScaleMethod::kBilinear:
      return 1;
    case ScaleMethod::kBicubic:
      return 2;
    case ScaleMethod::kLanczos:
      return 3;
  }
  return 1;
}

ScaleAxis scale_axis(ScaleMethod method, int in_size, int out_size) {
  ScaleAxis axis;
  axis.in_size = in_size;
  axis.out_size = out_size;
  const double ratio = static_cast<double>(in_size) / out_size;
  constexpr int kOne = 1 << kScaleWeightBits;
  if (method == ScaleMethod::kNearest || in_size == out_size) {
    // The input sample under the output's centre, in integers: an axis
    // that keeps its size is left alone by every method, as GStreamer's
    // scaler leaves it (Mitchell-Netravali's cubic would soften it, and
    // mix the fields of interlaced video).
    axis.taps = 1;
    for (int o = 0; o < out_size; ++o) {
      const int64_t i = (int64_t{2} * o + 1) * in_size / (int64_t{2} * out_size);
      axis.first.push_back(static_cast<int32_t>(std::min<int64_t>(i, in_size - 1)));
      axis.weight.push_back(kOne);
    }
    return axis;
  }
  const double widen = std::max(1.0, ratio);
  const double reach = scale_radius(method) * widen;
  axis.taps = std::max(1, static_cast<int>(std::ceil(2 * reach)));
  std::vector<double> w(axis.taps);
  for (int o = 0; o < out_size; ++o) {
    const double centre = (o + 0.5) * ratio - 0.5;
    const int first = static_cast<int>(std::floor(centre - reach)) + 1;
    double sum = 0;
    for (int k = 0; k < axis.taps; ++k) {
      w[k] = filter(method, (first + k - centre) / widen);
      sum += w[k];
    }
    // Fixed point by largest remainders: each weight rounded down, then the
    // units the sum still lacks to the weights that lost most, so that a
    // flat picture stays exactly flat and no weight is off by a unit or
    // more, however many taps share the total.
    const size_t at = axis.weight.size();
    std::vector<double> lost(axis.taps);
    int total = 0;
    for (int k = 0; k < axis.taps; ++k) {
      const double exact = w[k] / sum * kOne;
      const double down = std::floor(exact);
      axis.weight.push_back(static_cast<int16_t>(down));
      lost[k] = exact - down;
      total += static_cast<int>(down);
    }
    std::vector<int> order(axis.taps);
    for (int k = 0; k < axis.taps; ++k) order[k] = k;
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return lost[a] > lost[b]; });
    for (int i = 0; i < kOne - total; ++i) ++axis.weight[at + order[i % axis.taps]];
    axis.first.push_back(first);
  }
  return axis;
}

}  // namespace cudaoverlap
