// CPU reference of the `blur` kernel (see blur.h): the two integer passes
// written directly, channel by channel.
#include "blur.h"

#include <algorithm>
#include <cmath>
#include <vector>

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

// One channel of one plane: samples at data + y * stride + x * step.
void blur_channel(const uint8_t* src, size_t src_stride, uint8_t* dst, size_t dst_stride, int step,
                  int width, int height, const BlurTaps& taps) {
  std::vector<uint32_t> rows(static_cast<size_t>(width) * height);
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x) {
      int32_t acc = 0;
      for (int d = -taps.radius; d <= taps.radius; ++d) {
        const int sx = std::clamp(x + d, 0, width - 1);
        acc += taps.weight[std::abs(d)] * src[y * src_stride + static_cast<size_t>(sx) * step];
      }
      // 8 fractional bits kept for the second pass.
      rows[static_cast<size_t>(y) * width + x] =
          static_cast<uint32_t>((acc + (1 << (kBlurWeightBits - 8 - 1))) >> (kBlurWeightBits - 8));
    }
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x) {
      uint32_t acc = 0;
      for (int d = -taps.radius; d <= taps.radius; ++d) {
        const int sy = std::clamp(y + d, 0, height - 1);
        acc += static_cast<uint32_t>(taps.weight[std::abs(d)]) *
               rows[static_cast<size_t>(sy) * width + x];
      }
      const int shift = kBlurWeightBits + 8;
      dst[y * dst_stride + static_cast<size_t>(x) * step] =
          static_cast<uint8_t>(std::min<uint32_t>(255, (acc + (1u << (shift - 1))) >> shift));
    }
}

}  // namespace

void blur_reference(const ImageRef& in, const ImageRef& out, double sigma) {
  const FormatInfo& info = format_info(in.format);
  for (int p = 0; p < info.n_planes; ++p) {
    const int step = info.pixel_bytes[p];
    const int width = static_cast<int>(plane_row_bytes(in.format, p, in.width)) / step;
    const int height = static_cast<int>(plane_rows(in.format, p, in.height));
    // Chroma planes are subsampled equally in x and y for every format here.
    const BlurTaps taps = blur_taps(sigma, info.x_shift[p]);
    for (int c = 0; c < step; ++c) {
      const uint8_t* src = in.planes[p].data + c;
      uint8_t* dst = out.planes[p].data + c;
      if (c == info.alpha_byte) {
        for (int y = 0; y < height; ++y)
          for (int x = 0; x < width; ++x)
            dst[y * out.planes[p].stride + static_cast<size_t>(x) * step] =
                src[y * in.planes[p].stride + static_cast<size_t>(x) * step];
        continue;
      }
      blur_channel(src, in.planes[p].stride, dst, out.planes[p].stride, step, width, height, taps);
    }
  }
}

std::string BlurOperation::check(const ImageRef& in, const ImageRef& out) const {
  if (!(sigma_ >= kBlurMinSigma && sigma_ <= kBlurMaxSigma))
    return "blur sigma " + std::to_string(sigma_) + " is out of range: it takes " +
           std::to_string(kBlurMinSigma) + " to " + std::to_string(kBlurMaxSigma) + " pixels";
  return Operation::check(in, out);
}

std::vector<PixelFormat> BlurOperation::output_formats(PixelFormat in) const {
  using F = PixelFormat;
  std::vector<F> taken = rgb32_yuv420_gray8_formats();
  taken.insert(taken.end(), {F::kNV21, F::kY444});
  return keep_format_of(in, taken);
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
