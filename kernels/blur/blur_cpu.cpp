// The cpu backend's `blur` for 8-bit formats: blur.cpp's two integer
// passes over the samples of a plane that share their taps at once (a
// packed pixel's colours, a chroma plane's pair), as flat rows: each
// horizontal row made once into a ring of the rows the vertical taps
// reach, then the vertical taps over whole rows. Packed pixels of 2 or 4
// bytes are blurred whole, every byte, and the bytes that are not the
// group's are put back from the input (or from the other group's output).
// The hot loops have AVX2 forms chosen at run time and portable ones.
// The bytes are the reference's (tests/kernels/test_cpu_fast.cpp).
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "kernels/blur/blur.h"
#include "kernels/cpu_simd.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define BLUR_CPU_X86 1
#else
#define BLUR_CPU_X86 0
#endif

namespace cudaoverlap {
namespace {

constexpr int kFrac = blur_fraction_bits(8);
constexpr int kFirstShift = kBlurWeightBits - kFrac;
constexpr int kShift = kBlurWeightBits + kFrac;
// The AVX2 rows hold v - 32768 (v the horizontal pass's 0..65280) as
// int16, so that 16-bit multiply-adds take them; the vertical sum adds
// 32768 times the taps' total (1 << kBlurWeightBits) back.
constexpr int32_t kRowBias = 32768;
// Values the vector loops take at a time; rows are this many longer.
constexpr size_t kVector = 32;
// Output rows the AVX2 vertical pass makes at once, sharing their rows'
// loads.
constexpr int kRowsAtOnce = 4;

// The samples of one plane blurred together: `n` of them a pixel, at
// bytes `offset` of pixels `stride` bytes apart, on a grid of width x
// height with the taps of its subsampling. `lanes`: the values a pixel
// in the rows blurred, the `n` samples gathered or, `flat`, the pixel's
// `stride` bytes as they lie; `alone`: no other group writes the plane.
struct Group {
  int plane = 0, stride = 0, x_sub = 0, y_sub = 0;
  int n = 0;
  int offset[4] = {};
  int width = 0, height = 0;
  int lanes = 0;
  bool flat = false, alone = false;
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

#if BLUR_CPU_X86
__attribute__((target("avx2"))) void widen_avx2(const uint8_t* s, size_t n, int16_t* to) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm256_storeu_si256(
        reinterpret_cast<__m256i*>(to + i),
        _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i))));
  for (; i < n; ++i) to[i] = s[i];
}
#endif

// Row `s`'s first w * lanes bytes as they lie, with rx pixels repeated at
// either edge.
void spread(const uint8_t* s, const Group& g, int rx, [[maybe_unused]] bool avx2, int16_t* to) {
  const int lanes = g.lanes;
  const size_t values = static_cast<size_t>(g.width) * lanes;
  int16_t* centre = to + static_cast<size_t>(rx) * lanes;
#if BLUR_CPU_X86
  if (avx2)
    widen_avx2(s, values, centre);
  else
#endif
    for (size_t i = 0; i < values; ++i) centre[i] = s[i];
  const uint8_t* last = s + values - lanes;
  for (int x = 1; x <= rx; ++x)
    for (int k = 0; k < lanes; ++k) {
      centre[-x * lanes + k] = s[k];
      centre[values + static_cast<size_t>(x - 1) * lanes + k] = last[k];
    }
}

// The horizontal pass over `values` values around `centre` (taps `lanes`
// values apart), rounded to kFrac fractional bits.
void horizontal(const int16_t* centre, int lanes, const int16_t* wx, int rx, size_t values,
                int32_t* acc, uint16_t* to) {
  for (size_t i = 0; i < values; ++i) acc[i] = wx[0] * centre[i];
  for (int d = 1; d <= rx; ++d) {
    const int16_t* left = centre - static_cast<ptrdiff_t>(d) * lanes;
    const int16_t* right = centre + static_cast<ptrdiff_t>(d) * lanes;
    const int16_t wd = wx[d];
    for (size_t i = 0; i < values; ++i) acc[i] += wd * static_cast<int16_t>(left[i] + right[i]);
  }
  for (size_t i = 0; i < values; ++i)
    to[i] = static_cast<uint16_t>((acc[i] + (1 << (kFirstShift - 1))) >> kFirstShift);
}

// The vertical pass over `count` rows with their weights into bytes:
// where `keep` is given, the bytes whose lane is off in `on` (a pattern
// of kVector bytes) are keep's instead.
void vertical(const uint16_t* const* rows, const uint16_t* weight, int count, size_t values,
              uint32_t* sum, const uint8_t* keep, const uint8_t* on, uint8_t* d) {
  for (size_t i = 0; i < values; ++i) sum[i] = uint32_t{weight[0]} * rows[0][i];
  for (int k = 1; k < count; ++k) {
    // 16-bit weights and rows: widening multiplies, not 32-bit ones.
    const uint16_t* r = rows[k];
    const uint16_t wk = weight[k];
    for (size_t i = 0; i < values; ++i) sum[i] += uint32_t{wk} * uint32_t{r[i]};
  }
  for (size_t i = 0; i < values; ++i) {
    const auto v =
        static_cast<uint8_t>(std::min<uint32_t>(255, (sum[i] + (1u << (kShift - 1))) >> kShift));
    d[i] = keep && !on[i % kVector] ? keep[i] : v;
  }
}

#if BLUR_CPU_X86
// Interleaved pairs of 16-bit values (of two taps' sums, or of two rows)
// multiply-added with their weights' pair `w` (in each 32 bits) into the
// sums of the values in their low and high halves.
__attribute__((target("avx2"), always_inline)) inline void madd_pair(__m256i ab_lo, __m256i ab_hi,
                                                                     __m256i w, __m256i& lo,
                                                                     __m256i& hi) {
  lo = _mm256_add_epi32(lo, _mm256_madd_epi16(ab_lo, w));
  hi = _mm256_add_epi32(hi, _mm256_madd_epi16(ab_hi, w));
}

__attribute__((target("avx2"), always_inline)) inline void tap_pair(__m256i a, __m256i b, __m256i w,
                                                                    __m256i& lo, __m256i& hi) {
  madd_pair(_mm256_unpacklo_epi16(a, b), _mm256_unpackhi_epi16(a, b), w, lo, hi);
}

__attribute__((target("avx2"), always_inline)) inline __m256i load16(const int16_t* p) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}

// Tap d's sum for 16 values from `c`: the left and right values (<= 510).
__attribute__((target("avx2"), always_inline)) inline __m256i tap_sum(const int16_t* c,
                                                                      ptrdiff_t d) {
  return _mm256_add_epi16(load16(c - d), load16(c + d));
}

// horizontal() over whole vectors, up to kVector values past `values`,
// into rows of v - kRowBias, 32 values at a time: the taps' sums (the
// centre, then left + right) taken two at a time, an even rx's last
// alone.
__attribute__((target("avx2"))) void horizontal_avx2(const int16_t* centre, int lanes,
                                                     const int16_t* wx, int rx, size_t values,
                                                     int16_t* to) {
  const int pairs = (rx + 1) / 2;
  __m256i pair[kBlurMaxRadius / 2 + 1];
  for (int p = 0; p <= pairs; ++p) {
    const int a = 2 * p, b = a + 1;
    pair[p] =
        _mm256_set1_epi32(static_cast<int32_t>(static_cast<uint16_t>(a <= rx ? wx[a] : 0) |
                                               static_cast<uint32_t>(b <= rx ? wx[b] : 0) << 16));
  }
  const __m256i start = _mm256_set1_epi32((1 << (kFirstShift - 1)) - (kRowBias << kFirstShift));
  const ptrdiff_t step = lanes;
  for (size_t i = 0; i < values; i += 32) {
    const int16_t* c = centre + i;
    __m256i lo0 = start, hi0 = start, lo1 = start, hi1 = start;
    tap_pair(load16(c), tap_sum(c, step), pair[0], lo0, hi0);
    tap_pair(load16(c + 16), tap_sum(c + 16, step), pair[0], lo1, hi1);
    for (int p = 1; p < pairs; ++p) {
      const ptrdiff_t a = 2 * p * step, b = a + step;
      tap_pair(tap_sum(c, a), tap_sum(c, b), pair[p], lo0, hi0);
      tap_pair(tap_sum(c + 16, a), tap_sum(c + 16, b), pair[p], lo1, hi1);
    }
    if (rx % 2 == 0) {
      const ptrdiff_t a = rx * step;
      tap_pair(tap_sum(c, a), _mm256_setzero_si256(), pair[pairs], lo0, hi0);
      tap_pair(tap_sum(c + 16, a), _mm256_setzero_si256(), pair[pairs], lo1, hi1);
    }
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(to + i),
                        _mm256_packs_epi32(_mm256_srai_epi32(lo0, kFirstShift),
                                           _mm256_srai_epi32(hi0, kFirstShift)));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(to + i + 16),
                        _mm256_packs_epi32(_mm256_srai_epi32(lo1, kFirstShift),
                                           _mm256_srai_epi32(hi1, kFirstShift)));
  }
}

// vertical() for kRows (up to 4) output rows at once, y to y + kRows - 1,
// from the 2 ry + kRows rows from y - ry on holding v - kRowBias, 16
// values at a time: the rows taken two at a time, interleaved, each pair
// loaded once and multiply-added with the weights of each output row it
// reaches (pair 0 reaches outputs 0 and 1 only, pair ry + 1 outputs 2 and
// 3 only, the pairs between all). Each output's bias comes back as
// kRowBias times its weights' total.
template <int kRows>
__attribute__((target("avx2"))) void vertical_avx2(const uint16_t* const* rows,
                                                   const int16_t* weight, int ry, size_t values,
                                                   const uint8_t* const* keep, const uint8_t* on,
                                                   uint8_t* const* d) {
  static_assert(kRows >= 1 && kRows <= 4, "pairs 0 and ry + 1 reach outputs 0-1 and 2-3");
  constexpr int kHead = kRows < 2 ? kRows : 2;
  const int count = 2 * ry + kRows, pairs = (count + 1) / 2;
  // An odd count's last row pairs with itself, with weight 0.
  const uint16_t* first[kBlurMaxRadius + 3];
  const uint16_t* second[kBlurMaxRadius + 3];
  __m256i pair[kBlurMaxRadius + 3][kRows];
  for (int p = 0; p < pairs; ++p) {
    first[p] = rows[2 * p];
    second[p] = rows[std::min(2 * p + 1, count - 1)];
    for (int j = 0; j < kRows; ++j) {
      uint32_t w[2];
      for (int k = 0; k < 2; ++k) {
        const int t = std::abs(2 * p + k - ry - j);
        w[k] = 2 * p + k < count && t <= ry ? static_cast<uint16_t>(weight[t]) : 0;
      }
      pair[p][j] = _mm256_set1_epi32(static_cast<int32_t>(w[0] | w[1] << 16));
    }
  }
  const __m256i start = _mm256_set1_epi32((kRowBias << kBlurWeightBits) + (1 << (kShift - 1)));
  const __m128i mask = _mm_loadu_si128(reinterpret_cast<const __m128i*>(on));
  for (size_t i = 0; i < values; i += 16) {
    __m256i lo[kRows], hi[kRows];
#pragma GCC unroll 4
    for (int j = 0; j < kRows; ++j) lo[j] = hi[j] = start;
    for (int p = 0; p < pairs; ++p) {
      const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(first[p] + i));
      const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(second[p] + i));
      const __m256i ab_lo = _mm256_unpacklo_epi16(a, b), ab_hi = _mm256_unpackhi_epi16(a, b);
      if (p == 0) {
#pragma GCC unroll 2
        for (int j = 0; j < kHead; ++j) madd_pair(ab_lo, ab_hi, pair[p][j], lo[j], hi[j]);
      } else if (p <= ry) {
#pragma GCC unroll 4
        for (int j = 0; j < kRows; ++j) madd_pair(ab_lo, ab_hi, pair[p][j], lo[j], hi[j]);
      } else {
#pragma GCC unroll 2
        for (int j = 2; j < kRows; ++j) madd_pair(ab_lo, ab_hi, pair[p][j], lo[j], hi[j]);
      }
    }
#pragma GCC unroll 4
    for (int j = 0; j < kRows; ++j) {
      // 0..255 each; the packs keep the order within each 128-bit half.
      const __m256i v16 =
          _mm256_packs_epi32(_mm256_srai_epi32(lo[j], kShift), _mm256_srai_epi32(hi[j], kShift));
      const __m128i v =
          _mm_packus_epi16(_mm256_castsi256_si128(v16), _mm256_extracti128_si256(v16, 1));
      if (i + 16 <= values) {
        __m128i* to = reinterpret_cast<__m128i*>(d[j] + i);
        if (keep[j])
          _mm_storeu_si128(
              to, _mm_blendv_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(keep[j] + i)), v,
                                  mask));
        else
          _mm_storeu_si128(to, v);
        continue;
      }
      alignas(16) uint8_t tail[16];
      _mm_store_si128(reinterpret_cast<__m128i*>(tail), v);
      for (size_t k = 0; i + k < values; ++k)
        d[j][i + k] = keep[j] && !on[k] ? keep[j][i + k] : tail[k];
    }
  }
}
#endif

bool use_avx2() { return BLUR_CPU_X86 && cpu_avx2(); }

void blur_group(const ImageRef& in, const ImageRef& out, const Group& g, double sigma, int y0,
                int y1) {
  const BlurTaps across = blur_taps(sigma, g.x_sub), down = blur_taps(sigma, g.y_sub);
  const int lanes = g.lanes, w = g.width, rx = across.radius, ry = down.radius;
  const size_t values = static_cast<size_t>(w) * lanes;
  const size_t span = (values + kVector - 1) / kVector * kVector;
  const bool avx2 = use_avx2();
  int16_t wx[kBlurMaxRadius + 1], wy[kBlurMaxRadius + 1];
  for (int d = 0; d <= kBlurMaxRadius; ++d) {
    wx[d] = static_cast<int16_t>(across.weight[d]);
    wy[d] = static_cast<int16_t>(down.weight[d]);
  }
  const PlaneRef& src = in.planes[g.plane];
  const PlaneRef& dst = out.planes[g.plane];
  // A row's values with rx pixels repeated at either edge and kVector
  // more (the AVX2 pass's last vector), then the horizontal sums; the ring
  // holds the 2 ry + kRowsAtOnce rows the output rows made at once read.
  std::vector<int16_t> padded((static_cast<size_t>(w) + 2 * rx) * lanes + kVector);
  const int16_t* centre = padded.data() + static_cast<size_t>(rx) * lanes;
  std::vector<int32_t> acc(avx2 ? 0 : values);
  const int slots = 2 * ry + kRowsAtOnce;
  std::vector<uint16_t> ring(static_cast<size_t>(slots) * span);
  std::vector<int> held(slots, -1);
  const auto row = [&](int y) -> const uint16_t* {
    uint16_t* to = ring.data() + static_cast<size_t>(y % slots) * span;
    if (held[y % slots] == y) return to;
    held[y % slots] = y;
    const uint8_t* s = src.data + static_cast<size_t>(y) * src.stride;
    if (g.flat)
      spread(s, g, rx, avx2, padded.data());
    else
      gather(s, g, rx, padded.data());
#if BLUR_CPU_X86
    if (avx2) {
      horizontal_avx2(centre, lanes, wx, rx, values, reinterpret_cast<int16_t*>(to));
      return to;
    }
#endif
    horizontal(centre, lanes, wx, rx, values, acc.data(), to);
    return to;
  };
  // The bytes of a flat row that are the group's, kVector of them; the
  // others are kept: the input's where the plane is the group's alone,
  // else what the copy and the other groups put in the output.
  alignas(32) uint8_t on[kVector] = {};
  for (size_t i = 0; i < kVector; ++i)
    for (int k = 0; k < g.n; ++k)
      if (!g.flat || static_cast<int>(i) % lanes == g.offset[k]) on[i] = 0xFF;
  const bool blend = g.flat && g.n < lanes;
  std::vector<uint32_t> sum(avx2 ? 0 : values);
  std::vector<uint8_t> line(g.flat ? 0 : values * kRowsAtOnce);
  std::vector<const uint16_t*> rows(slots);
  uint16_t weight[2 * kBlurMaxRadius + 1];
  for (int k = 0; k <= 2 * ry; ++k) weight[k] = static_cast<uint16_t>(wy[std::abs(k - ry)]);
  for (int y = y0; y < y1;) {
    // kRowsAtOnce output rows where the AVX2 pass runs and they remain.
    const int n_out = avx2 && y1 - y >= kRowsAtOnce ? kRowsAtOnce : 1;
    uint8_t* d[kRowsAtOnce];
    const uint8_t* keep[kRowsAtOnce];
    for (int j = 0; j < n_out; ++j) {
      uint8_t* out_row = dst.data + static_cast<size_t>(y + j) * dst.stride;
      keep[j] = !blend    ? nullptr
                : g.alone ? src.data + static_cast<size_t>(y + j) * src.stride
                          : out_row;
      d[j] = g.flat ? out_row : line.data() + j * values;
    }
    for (int k = 0; k < 2 * ry + n_out; ++k) rows[k] = row(std::clamp(y - ry + k, 0, g.height - 1));
#if BLUR_CPU_X86
    if (n_out == kRowsAtOnce)
      vertical_avx2<kRowsAtOnce>(rows.data(), wy, ry, values, keep, on, d);
    else if (avx2)
      vertical_avx2<1>(rows.data(), wy, ry, values, keep, on, d);
    else
#endif
      vertical(rows.data(), weight, 2 * ry + 1, values, sum.data(), keep[0], on, d[0]);
    if (!g.flat)
      for (int j = 0; j < n_out; ++j) {
        uint8_t* out_row = dst.data + static_cast<size_t>(y + j) * dst.stride;
        for (int x = 0; x < w; ++x)
          for (int k = 0; k < g.n; ++k)
            out_row[static_cast<size_t>(x) * g.stride + g.offset[k]] =
                d[j][static_cast<size_t>(x) * g.n + k];
      }
    y += n_out;
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
  // Flat where the pixel's bytes fit the row and the lanes a pixel leaves
  // repeat within a vector. Bytes no group writes (alpha or padding of a
  // pixel not blurred flat, a pair's second luma past an odd width) come
  // from the input, as the reference's copy brings them: a plane whose
  // one group writes its rows whole needs no copy.
  for (Group& g : groups) {
    std::sort(g.offset, g.offset + g.n);
    g.alone = std::count_if(groups.begin(), groups.end(),
                            [&](const Group& o) { return o.plane == g.plane; }) == 1;
    const size_t bytes = static_cast<size_t>(g.width) * g.stride;
    g.flat = g.stride <= 4 && (g.n == g.stride || kVector % g.stride == 0) &&
             bytes <= plane_row_bytes(in.format, g.plane, in.width);
    g.lanes = g.flat ? g.stride : g.n;
  }
  for (int p = 0; p < info.n_planes; ++p) {
    bool covered = false;
    for (const Group& g : groups)
      covered = covered || (g.plane == p && g.alone && g.flat &&
                            plane_row_bytes(in.format, p, in.width) ==
                                static_cast<size_t>(g.width) * g.stride);
    if (covered) continue;
    const size_t row_bytes = plane_row_bytes(in.format, p, in.width);
    const size_t first = plane_rows(in.format, p, y0), rows = plane_rows(in.format, p, y1 - y0);
    for (size_t y = first; y < first + rows; ++y)
      std::memcpy(out.planes[p].data + y * out.planes[p].stride,
                  in.planes[p].data + y * in.planes[p].stride, row_bytes);
  }
  for (const Group& g : groups) {
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
