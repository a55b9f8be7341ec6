// The cpu backend's `blur` for 8-bit formats: blur.cpp's two integer
// passes over the samples of a plane that share their taps at once (a
// packed pixel's colours, a chroma plane's pair), as flat rows the
// compiler vectorises: each horizontal row made once into a ring of the
// rows the vertical taps reach, then the vertical taps over whole rows.
// The bytes are the reference's (tests/kernels/test_cpu_fast.cpp).
#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/blur/blur.h"
#include "kernels/copy/copy.h"

namespace cudaoverlap {
namespace {

// The samples of one plane blurred together: `n` of them a pixel, at
// bytes `offset` of pixels `stride` bytes apart, on a grid of width x
// height with the taps of its subsampling.
struct Group {
  int plane = 0, stride = 0, x_sub = 0, y_sub = 0;
  int n = 0;
  int offset[4] = {};
  int width = 0, height = 0;
};

// Row `s`'s samples of the group, pixel by pixel, with rx pixels repeated
// at either edge.
template <int kN>
void gather(const uint8_t* s, const Group& g, int rx, int16_t* to) {
  const int n = kN > 0 ? kN : g.n, w = g.width;
  for (int x = -rx; x < w + rx; ++x) {
    const uint8_t* p = s + static_cast<size_t>(std::clamp(x, 0, w - 1)) * g.stride;
    int16_t* q = to + static_cast<size_t>(x + rx) * n;
    for (int k = 0; k < n; ++k) q[k] = p[g.offset[k]];
  }
}

void gather(const uint8_t* s, const Group& g, int rx, int16_t* to) {
  switch (g.n) {
    case 1:
      return gather<1>(s, g, rx, to);
    case 2:
      return gather<2>(s, g, rx, to);
    case 3:
      return gather<3>(s, g, rx, to);
    default:
      return gather<0>(s, g, rx, to);
  }
}

void blur_group(const ImageRef& in, const ImageRef& out, const Group& g, double sigma, int y0,
                int y1) {
  const BlurTaps across = blur_taps(sigma, g.x_sub), down = blur_taps(sigma, g.y_sub);
  const int n = g.n, w = g.width, rx = across.radius, ry = down.radius;
  const size_t values = static_cast<size_t>(w) * n;
  constexpr int kFrac = blur_fraction_bits(8);
  constexpr int kFirstShift = kBlurWeightBits - kFrac;
  constexpr int kShift = kBlurWeightBits + kFrac;
  int16_t wx[kBlurMaxRadius + 1], wy[kBlurMaxRadius + 1];
  for (int d = 0; d <= kBlurMaxRadius; ++d) {
    wx[d] = static_cast<int16_t>(across.weight[d]);
    wy[d] = static_cast<int16_t>(down.weight[d]);
  }
  const PlaneRef& src = in.planes[g.plane];
  const PlaneRef& dst = out.planes[g.plane];
  // A row's samples with rx pixels repeated at either edge, then the
  // horizontal sums; the ring holds the 2 ry + 1 rows one output row reads.
  std::vector<int16_t> padded((static_cast<size_t>(w) + 2 * rx) * n);
  std::vector<int32_t> acc(values);
  const int slots = 2 * ry + 1;
  std::vector<uint16_t> ring(static_cast<size_t>(slots) * values);
  std::vector<int> held(slots, -1);
  const auto row = [&](int y) -> const uint16_t* {
    uint16_t* to = ring.data() + static_cast<size_t>(y % slots) * values;
    if (held[y % slots] == y) return to;
    held[y % slots] = y;
    const uint8_t* s = src.data + static_cast<size_t>(y) * src.stride;
    gather(s, g, rx, padded.data());
    const int16_t* centre = padded.data() + static_cast<size_t>(rx) * n;
    for (size_t i = 0; i < values; ++i) acc[i] = wx[0] * centre[i];
    for (int d = 1; d <= rx; ++d) {
      const int16_t* left = centre - static_cast<ptrdiff_t>(d) * n;
      const int16_t* right = centre + static_cast<ptrdiff_t>(d) * n;
      const int16_t wd = wx[d];
      for (size_t i = 0; i < values; ++i) acc[i] += wd * static_cast<int16_t>(left[i] + right[i]);
    }
    for (size_t i = 0; i < values; ++i)
      to[i] = static_cast<uint16_t>((acc[i] + (1 << (kFirstShift - 1))) >> kFirstShift);
    return to;
  };
  std::vector<uint32_t> sum(values);
  for (int y = y0; y < y1; ++y) {
    const uint16_t* mid = row(y);
    const uint16_t w0 = static_cast<uint16_t>(wy[0]);
    for (size_t i = 0; i < values; ++i) sum[i] = uint32_t{w0} * mid[i];
    for (int d = 1; d <= ry; ++d) {
      const uint16_t* above = row(std::max(y - d, 0));
      const uint16_t* below = row(std::min(y + d, g.height - 1));
      // 16-bit weights and rows: widening multiplies, not 32-bit ones.
      const uint16_t wd = static_cast<uint16_t>(wy[d]);
      for (size_t i = 0; i < values; ++i)
        sum[i] += uint32_t{wd} * uint32_t{above[i]} + uint32_t{wd} * uint32_t{below[i]};
    }
    uint8_t* d = dst.data + static_cast<size_t>(y) * dst.stride;
    if (n == g.stride) {
      for (size_t i = 0; i < values; ++i)
        d[i] = static_cast<uint8_t>(
            std::min<uint32_t>(255, (sum[i] + (1u << (kShift - 1))) >> kShift));
      continue;
    }
    for (int x = 0; x < w; ++x)
      for (int k = 0; k < n; ++k) {
        const uint32_t v = sum[static_cast<size_t>(x) * n + k];
        d[static_cast<size_t>(x) * g.stride + g.offset[k]] =
            static_cast<uint8_t>(std::min<uint32_t>(255, (v + (1u << (kShift - 1))) >> kShift));
      }
  }
}

}  // namespace

bool blur_cpu(const ImageRef& in, const ImageRef& out, double sigma, int y0, int y1) {
  const FormatInfo& info = format_info(in.format);
  if (info.sample_bytes != 1) return false;
  std::vector<Group> groups;
  for (int c = 0; c < colour_components(in.format); ++c) {
    const Component& k = info.comp[c];
    auto same = std::find_if(groups.begin(), groups.end(), [&](const Group& g) {
      return g.plane == k.plane && g.stride == k.pixel_stride && g.x_sub == k.x_sub &&
             g.y_sub == k.y_sub;
    });
    if (same == groups.end()) {
      Group g;
      g.plane = k.plane;
      g.stride = k.pixel_stride;
      g.x_sub = k.x_sub;
      g.y_sub = k.y_sub;
      g.width = (in.width + (1 << k.x_sub) - 1) >> k.x_sub;
      g.height = (in.height + (1 << k.y_sub) - 1) >> k.y_sub;
      groups.push_back(g);
      same = groups.end() - 1;
    }
    if (same->n == 4) return false;
    same->offset[same->n++] = k.offset;
  }
  // Bytes no group writes (alpha, padding, a pair's second luma past an
  // odd width) come from the input, as the reference's copy brings them.
  bool whole = true;
  for (int p = 0; p < info.n_planes; ++p) {
    bool covered = false;
    for (const Group& g : groups)
      covered = covered || (g.plane == p && g.n == g.stride &&
                            plane_row_bytes(in.format, p, in.width) ==
                                static_cast<size_t>(g.width) * g.stride);
    whole = whole && covered;
  }
  if (!whole) copy_reference(image_rows(in, y0, y1), image_rows(out, y0, y1));
  for (Group& g : groups) {
    std::sort(g.offset, g.offset + g.n);
    const int sub = (1 << g.y_sub) - 1;
    blur_group(in, out, g, sigma, (y0 + sub) >> g.y_sub, (y1 + sub) >> g.y_sub);
  }
  return true;
}

void BlurOperation::run_cpu(const ImageRef& in, const ImageRef& out, const Workspace&) const {
  if (!blur_cpu(in, out, sigma_, 0, in.height)) blur_reference(in, out, sigma_, 0, in.height);
}

void BlurOperation::run_cpu_rows(const ImageRef& in, const ImageRef& out, const Workspace&, int y0,
                                 int y1) const {
  if (!blur_cpu(in, out, sigma_, y0, y1)) blur_reference(in, out, sigma_, y0, y1);
}

}  // namespace cudaoverlap
