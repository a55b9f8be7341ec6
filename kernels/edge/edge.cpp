// CPU reference of the `edge` kernel (see edge.h).
#include "kernels/edge/edge.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/copy/copy.h"

namespace cudaoverlap {

uint32_t edge_magnitude(int64_t gx, int64_t gy, uint32_t max) {
  const int64_t n = gx * gx + gy * gy;
  int64_t s = static_cast<int64_t>(std::sqrt(static_cast<double>(n)));
  while (s * s > n) --s;
  while ((s + 1) * (s + 1) <= n) ++s;
  return static_cast<uint32_t>(std::min<int64_t>(s, max));
}

void edge_reference(const ImageRef& in, const ImageRef& out, int y0, int y1) {
  // Alpha, padding, the bits around a 10-bit sample and the second luma of
  // an odd-width YUY2 row's last pair come from here.
  copy_reference(image_rows(in, y0, y1), image_rows(out, y0, y1));
  const FormatInfo& info = format_info(in.format);
  const int w = in.width, h = in.height;
  const bool rgb = colour_components(in.format) == 3 && !info.is_yuv;
  const Component& luma = info.comp[0];
  // The grey rows the output rows read: one above and one below, clamped
  // to the image.
  const int lo = std::max(0, y0 - 1), hi = std::min(h, y1 + 1);
  if (hi <= lo) return;
  std::vector<int64_t> grey(static_cast<size_t>(w) * (hi - lo));
  for (int y = lo; y < hi; ++y)
    for (int x = 0; x < w; ++x)
      grey[static_cast<size_t>(y - lo) * w + x] =
          rgb ? (77 * read_sample(in, 0, x, y) + 150 * read_sample(in, 1, x, y) +
                 29 * read_sample(in, 2, x, y) + 128) >>
                    8
              : read_sample(in, 0, x, y);
  auto at = [&](int x, int y) {
    return grey[static_cast<size_t>(std::clamp(y, 0, h - 1) - lo) * w + std::clamp(x, 0, w - 1)];
  };
  const uint32_t max = (uint32_t{1} << luma.depth) - 1;
  for (int y = y0; y < y1; ++y)
    for (int x = 0; x < w; ++x) {
      const int64_t gx = (at(x + 1, y - 1) + 2 * at(x + 1, y) + at(x + 1, y + 1)) -
                         (at(x - 1, y - 1) + 2 * at(x - 1, y) + at(x - 1, y + 1));
      const int64_t gy = (at(x - 1, y + 1) + 2 * at(x, y + 1) + at(x + 1, y + 1)) -
                         (at(x - 1, y - 1) + 2 * at(x, y - 1) + at(x + 1, y - 1));
      const uint32_t m = edge_magnitude(gx, gy, max);
      for (int c = 0; c < (rgb ? 3 : 1); ++c) write_sample(out, c, x, y, m);
    }
  if (!info.is_yuv) return;
  // Neutral chroma in every sample the chroma rows hold.
  for (int c = 1; c < 3; ++c) {
    const Component& k = info.comp[c];
    const int samples = stored_samples(in.format, c, w);
    const int r0 = static_cast<int>(plane_rows(in.format, k.plane, y0));
    const int r1 = static_cast<int>(plane_rows(in.format, k.plane, y1));
    for (int y = r0; y < r1; ++y)
      for (int x = 0; x < samples; ++x) write_sample(out, c, x, y, uint32_t{1} << (k.depth - 1));
  }
}

std::vector<PixelFormat> EdgeOperation::output_formats(PixelFormat in) const {
  return keep_format(in);
}

int EdgeOperation::band_halo(PixelFormat in, PixelFormat out) const {
  // The luma (or RGB) rows are the picture's, never subsampled down.
  if (in != out || output_formats(in).empty() || format_info(in).comp[0].y_sub != 0) return -1;
  return 1;
}

void EdgeOperation::enqueue_cuda(const ImageRef& in, const ImageRef& out, const Workspace&,
                                 CUstream_st* stream) const {
  CO_CUDA_ONLY(edge_cuda(in, out, 0, in.height, stream));
}

void EdgeOperation::enqueue_cuda_rows(const ImageRef& in, const ImageRef& out, const Workspace&,
                                      int y0, int y1, CUstream_st* stream) const {
  CO_CUDA_ONLY(edge_cuda(in, out, y0, y1, stream));
}

void EdgeOperation::run_reference(const ImageRef& in, const ImageRef& out, const Workspace&) const {
  edge_reference(in, out, 0, in.height);
}

void EdgeOperation::run_reference_rows(const ImageRef& in, const ImageRef& out, const Workspace&,
                                       int y0, int y1) const {
  edge_reference(in, out, y0, y1);
}

const OperationEntry& edge_entry() {
  static const OperationEntry entry{
      "edge",
      "Edge: Sobel gradient magnitude of luma, as grey in R, G and B (alpha kept) or in Y with "
      "neutral chroma",
      true,
      {},
      [](const KernelParams&) -> std::shared_ptr<const Operation> {
        return std::make_shared<EdgeOperation>();
      }};
  return entry;
}

}  // namespace cudaoverlap
