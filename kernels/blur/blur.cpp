// CPU reference of the `blur` kernel (see blur.h): the two integer passes
// written directly, component by component through the format table.
#include "kernels/blur/blur.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/copy/copy.h"

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

// One component, `width` x `height` samples of the picture, its rows
// [y0, y1) only: the horizontal pass into `rows` with
// blur_fraction_bits(depth) fractional bits, on the rows the vertical pass
// reads (clamped to the component's own height, not to the band), then the
// vertical pass rounded once.
void blur_component(const ImageRef& in, const ImageRef& out, int c, int width, int height, int y0,
                    int y1, const BlurTaps& across, const BlurTaps& down) {
  const Component& k = format_info(in.format).comp[c];
  const uint32_t max = (uint32_t{1} << k.depth) - 1;
  const int frac = blur_fraction_bits(k.depth);
  const int first_shift = kBlurWeightBits - frac;
  const int lo = std::max(0, y0 - down.radius);
  const int hi = std::min(height, y1 + down.radius);
  if (hi <= lo) return;
  std::vector<uint32_t> rows(static_cast<size_t>(width) * (hi - lo));
  for (int y = lo; y < hi; ++y)
    for (int x = 0; x < width; ++x) {
      int32_t acc = 0;
      for (int d = -across.radius; d <= across.radius; ++d)
        acc += across.weight[std::abs(d)] *
               static_cast<int32_t>(read_sample(in, c, std::clamp(x + d, 0, width - 1), y));
      rows[static_cast<size_t>(y - lo) * width + x] =
          static_cast<uint32_t>((acc + (1 << (first_shift - 1))) >> first_shift);
    }
  const int shift = kBlurWeightBits + frac;
  for (int y = y0; y < y1; ++y)
    for (int x = 0; x < width; ++x) {
      uint32_t acc = 0;
      for (int d = -down.radius; d <= down.radius; ++d) {
        const int sy = std::clamp(y + d, 0, height - 1);
        acc += static_cast<uint32_t>(down.weight[std::abs(d)]) *
               rows[static_cast<size_t>(sy - lo) * width + x];
      }
      write_sample(out, c, x, y, std::min<uint32_t>(max, (acc + (1u << (shift - 1))) >> shift));
    }
}

}  // namespace

void blur_reference(const ImageRef& in, const ImageRef& out, double sigma, int y0, int y1) {
  // Alpha, padding, the bits around a 10-bit sample and the second luma of
  // an odd-width YUY2 row's last pair come from here.
  copy_reference(image_rows(in, y0, y1), image_rows(out, y0, y1));
  const FormatInfo& info = format_info(in.format);
  for (int c = 0; c < colour_components(in.format); ++c) {
    const Component& k = info.comp[c];
    const int sub = (1 << k.y_sub) - 1;
    const int width = (in.width + (1 << k.x_sub) - 1) >> k.x_sub;
    const int height = (in.height + sub) >> k.y_sub;
    blur_component(in, out, c, width, height, (y0 + sub) >> k.y_sub, (y1 + sub) >> k.y_sub,
                   blur_taps(sigma, k.x_sub), blur_taps(sigma, k.y_sub));
  }
}

int blur_band_halo(PixelFormat format, double sigma) {
  // Rows [r0, r1) of a component subsampled 2^s down read its rows r0 -
  // radius to r1 + radius - 1, the picture rows (r0 - radius) << s up to
  // ((r1 + radius) << s) - 1; with y0 = r0 << s and y1 = r1 << s (band rows
  // are multiples of the subsampling, or the bottom, where the reach is
  // clamped anyway) that is radius << s picture rows either side.
  const FormatInfo& info = format_info(format);
  int halo = 0;
  for (int c = 0; c < colour_components(format); ++c) {
    const int s = info.comp[c].y_sub;
    halo = std::max(halo, blur_taps(sigma, s).radius << s);
  }
  return halo;
}

std::vector<PixelFormat> BlurOperation::output_formats(PixelFormat in) const {
  return keep_format(in);
}

int BlurOperation::band_halo(PixelFormat in, PixelFormat out) const {
  if (in != out || output_formats(in).empty()) return -1;
  return blur_band_halo(in, sigma_);
}

void BlurOperation::enqueue_cuda(const ImageRef& in, const ImageRef& out, const Workspace&,
                                 CUstream_st* stream) const {
  CO_CUDA_ONLY(blur_cuda(in, out, sigma_, 0, in.height, stream));
}

void BlurOperation::enqueue_cuda_rows(const ImageRef& in, const ImageRef& out, const Workspace&,
                                      int y0, int y1, CUstream_st* stream) const {
  CO_CUDA_ONLY(blur_cuda(in, out, sigma_, y0, y1, stream));
}

void BlurOperation::run_reference(const ImageRef& in, const ImageRef& out, const Workspace&) const {
  blur_reference(in, out, sigma_, 0, in.height);
}

void BlurOperation::run_reference_rows(const ImageRef& in, const ImageRef& out, const Workspace&,
                                       int y0, int y1) const {
  blur_reference(in, out, sigma_, y0, y1);
}

const OperationEntry& blur_entry() {
  static const OperationEntry entry{
      "blur",
      "Blur: Gaussian of sigma pixels, separable, edges clamped; alpha kept",
      true,
      {{"sigma", "Sigma",
        "kernel=blur: standard deviation of the Gaussian in pixels (the kernel reaches 3 sigma "
        "each way; subsampled chroma is blurred by the same extent on the picture)",
        ParamSpec::Type::kDouble, kBlurMinSigma, kBlurMaxSigma, 2.0}},
      [](const KernelParams& p) -> std::shared_ptr<const Operation> {
        return std::make_shared<BlurOperation>(p.values);
      }};
  return entry;
}

}  // namespace cudaoverlap
