// CPU reference of the `blur` kernel (see blur.h): the two integer passes
// written directly, component by component through the format table.
#include "blur.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "copy.h"

namespace cudaoverlap {

BlurTaps blur_taps(double sigma, int shift) {
  BlurTaps taps;
  const double s = sigma / static_cast<double>(1 << shift);
  taps.radius = std::clamp(static_cast<int>(std::ceil(3.0 * s)), 1, kBlurMaxRadius);
  double g[kBlurMaxRadius + 1];
  double sum = 0;
  for (int d = 0; d <= taps.radius; ++d) {
    g[d] = std::exp(-0.5 * d * d / (s * s));
    sum += d == 0 ? g[d] : 2 * g[d];
  }
  const int32_t total = 1 << kBlurWeightBits;
  int32_t quantised = 0;
  for (int d = 0; d <= taps.radius; ++d) {
    taps.weight[d] = static_cast<int32_t>(std::lround(g[d] / sum * total));
    quantised += d == 0 ? taps.weight[d] : 2 * taps.weight[d];
  }
  // The centre tap takes the rounding error, so the taps sum to exactly
  // `total` and a flat image stays flat.
  taps.weight[0] += total - quantised;
  return taps;
}

namespace {

// One component, `width` x `height` samples of the picture: the horizontal
// pass into `rows` with blur_fraction_bits(depth) fractional bits, then the
// vertical pass rounded once.
void blur_component(const ImageRef& in, const ImageRef& out, int c, int width, int height,
                    const BlurTaps& across, const BlurTaps& down) {
  const Component& k = format_info(in.format).comp[c];
  const uint32_t max = (uint32_t{1} << k.depth) - 1;
  const int frac = blur_fraction_bits(k.depth);
  const int first_shift = kBlurWeightBits - frac;
  std::vector<uint32_t> rows(static_cast<size_t>(width) * height);
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x) {
      int32_t acc = 0;
      for (int d = -across.radius; d <= across.radius; ++d)
        acc += across.weight[std::abs(d)] *
               static_cast<int32_t>(read_sample(in, c, std::clamp(x + d, 0, width - 1), y));
      rows[static_cast<size_t>(y) * width + x] =
          static_cast<uint32_t>((acc + (1 << (first_shift - 1))) >> first_shift);
    }
  const int shift = kBlurWeightBits + frac;
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x) {
      uint32_t acc = 0;
      for (int d = -down.radius; d <= down.radius; ++d) {
        const int sy = std::clamp(y + d, 0, height - 1);
        acc += static_cast<uint32_t>(down.weight[std::abs(d)]) *
               rows[static_cast<size_t>(sy) * width + x];
      }
      write_sample(out, c, x, y, std::min<uint32_t>(max, (acc + (1u << (shift - 1))) >> shift));
    }
}

}  // namespace

void blur_reference(const ImageRef& in, const ImageRef& out, double sigma) {
  // Alpha, padding, the bits around a 10-bit sample and the second luma of
  // an odd-width YUY2 row's last pair come from here.
  copy_reference(in, out);
  const FormatInfo& info = format_info(in.format);
  for (int c = 0; c < colour_components(in.format); ++c) {
    const Component& k = info.comp[c];
    const int width = (in.width + (1 << k.x_sub) - 1) >> k.x_sub;
    const int height = (in.height + (1 << k.y_sub) - 1) >> k.y_sub;
    blur_component(in, out, c, width, height, blur_taps(sigma, k.x_sub), blur_taps(sigma, k.y_sub));
  }
}

std::string BlurOperation::check(const ImageRef& in, const ImageRef& out) const {
  if (!(sigma_ >= kBlurMinSigma && sigma_ <= kBlurMaxSigma))
    return "blur sigma " + std::to_string(sigma_) + " is out of range: it takes " +
           std::to_string(kBlurMinSigma) + " to " + std::to_string(kBlurMaxSigma) + " pixels";
  return Operation::check(in, out);
}

std::vector<PixelFormat> BlurOperation::output_formats(PixelFormat in) const {
  return keep_format(in);
}

bool BlurOperation::same_as(const Operation& other) const {
  const auto* o = dynamic_cast<const BlurOperation*>(&other);
  return o != nullptr && o->sigma_ == sigma_;
}

void BlurOperation::enqueue_cuda(const ImageRef& in, const ImageRef& out, const Workspace&,
                                 CUstream_st* stream) const {
  CO_CUDA_ONLY(blur_cuda(in, out, sigma_, stream));
}

void BlurOperation::run_reference(const ImageRef& in, const ImageRef& out, const Workspace&) const {
  blur_reference(in, out, sigma_);
}

}  // namespace cudaoverlap
