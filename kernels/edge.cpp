// CPU reference of the `edge` kernel (see edge.h).
#include "edge.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "balance.h"

namespace cudaoverlap {

uint8_t edge_magnitude(int gx, int gy) {
  const int n = gx * gx + gy * gy;
  int s = static_cast<int>(std::sqrt(static_cast<double>(n)));
  while (s * s > n) --s;
  while ((s + 1) * (s + 1) <= n) ++s;
  return static_cast<uint8_t>(std::min(s, 255));
}

void edge_reference(const ImageRef& in, const ImageRef& out) {
  const FormatInfo& info = format_info(in.format);
  const int w = in.width, h = in.height;
  const bool rgb = !info.is_yuv && in.format != PixelFormat::kGRAY8;
  int ro = 0, go = 0, bo = 0;
  if (rgb) rgb_byte_offsets(in.format, &ro, &go, &bo);
  std::vector<int> grey(static_cast<size_t>(w) * h);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      const uint8_t* s = in.planes[0].data + y * in.planes[0].stride;
      grey[static_cast<size_t>(y) * w + x] =
          rgb ? (77 * s[x * 4 + ro] + 150 * s[x * 4 + go] + 29 * s[x * 4 + bo] + 128) >> 8 : s[x];
    }
  auto at = [&](int x, int y) {
    return grey[static_cast<size_t>(std::clamp(y, 0, h - 1)) * w + std::clamp(x, 0, w - 1)];
  };
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      const int gx = (at(x + 1, y - 1) + 2 * at(x + 1, y) + at(x + 1, y + 1)) -
                     (at(x - 1, y - 1) + 2 * at(x - 1, y) + at(x - 1, y + 1));
      const int gy = (at(x - 1, y + 1) + 2 * at(x, y + 1) + at(x + 1, y + 1)) -
                     (at(x - 1, y - 1) + 2 * at(x, y - 1) + at(x + 1, y - 1));
      const uint8_t m = edge_magnitude(gx, gy);
      uint8_t* d = out.planes[0].data + y * out.planes[0].stride;
      if (rgb) {
        const uint8_t* s = in.planes[0].data + y * in.planes[0].stride;
        std::memcpy(d + x * 4, s + x * 4, 4);  // alpha or padding
        d[x * 4 + ro] = d[x * 4 + go] = d[x * 4 + bo] = m;
      } else {
        d[x] = m;
      }
    }
  for (int p = 1; p < info.n_planes; ++p)
    for (size_t y = 0; y < plane_rows(in.format, p, h); ++y)
      std::memset(out.planes[p].data + y * out.planes[p].stride, 128,
                  plane_row_bytes(in.format, p, w));
}

std::vector<PixelFormat> EdgeOperation::output_formats(PixelFormat in) const {
  using F = PixelFormat;
  std::vector<F> taken = rgb32_yuv420_gray8_formats();
  taken.insert(taken.end(), {F::kNV21, F::kNV16, F::kY42B, F::kY444});
  return keep_format_of(in, taken);
}

bool EdgeOperation::same_as(const Operation& other) const {
  return dynamic_cast<const EdgeOperation*>(&other) != nullptr;
}

void EdgeOperation::enqueue_cuda(const ImageRef& in, const ImageRef& out, const Workspace&,
                                 CUstream_st* stream) const {
  CO_CUDA_ONLY(edge_cuda(in, out, stream));
}

void EdgeOperation::run_reference(const ImageRef& in, const ImageRef& out, const Workspace&) const {
  edge_reference(in, out);
}

}  // namespace cudaoverlap
