// The cpu backend's `convert` for the conversions cameras and decoders
// need most: 8-bit YUV (4:2:0, 4:2:2, 4:4:4; planar, semi-planar or
// packed) to packed RGB. Row by row: luma and chroma, brought to each
// pixel as convert_math.h's blocks bring them (the nearest sample or
// videoconvert's 3:1 interpolation, across then down), are gathered into
// arrays, and the matrix runs over the arrays in loops the compiler
// vectorises. The bytes are the reference's (tests/kernels/test_cpu_fast.cpp).
#include <algorithm>
#include <cstring>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "kernels/convert/convert.h"
#include "kernels/convert/convert_math.h"
#include "kernels/copy/copy.h"

namespace cudaoverlap {
namespace {

using convert_math::mix31;

// n samples `step` bytes apart from `from`.
template <int kStep>
void gather(const uint8_t* from, int n, int16_t* to) {
  for (int i = 0; i < n; ++i) to[i] = from[i * kStep];
}

void gather(const uint8_t* from, int step, int n, int16_t* to) {
  switch (step) {
    case 1:
      return gather<1>(from, n, to);
    case 2:
      return gather<2>(from, n, to);
    case 4:
      return gather<4>(from, n, to);
    default:
      for (int i = 0; i < n; ++i) to[i] = from[i * step];
  }
}

// Chroma row `sy`, both components, brought to each of `w` pixel columns:
// the input's column itself (no subsampling across), the column's sample
// (nearest), or mixed 3:1 with the neighbouring column on the pixel's
// side, clamped at the edges (linear). The last three rows made are kept:
// a 4:2:0 row serves four picture rows.
class ChromaRows {
 public:
  ChromaRows(const ConvertSide& side, const ImageRef& image, int w, int cw, bool linear)
      : side_(side), image_(image), w_(w), cw_(cw), linear_(linear) {
    for (Row& r : rows_) r.samples.resize(2 * static_cast<size_t>(w));
    raw_.resize(static_cast<size_t>(cw) + 2);
  }
  // U then V, w samples each.
  const int16_t* operator()(int sy) {
    Row& r = rows_[sy % 3];
    if (r.sy != sy) {
      r.sy = sy;
      make(1, sy, r.samples.data());
      make(2, sy, r.samples.data() + w_);
    }
    return r.samples.data();
  }

 private:
  struct Row {
    int sy = -1;
    std::vector<int16_t> samples;
  };
  void make(int component, int sy, int16_t* to) {
    const PlaneRef& plane = image_.planes[side_.plane[component]];
    const uint8_t* row =
        plane.data + static_cast<size_t>(sy) * plane.stride + side_.offset[component];
    if (side_.x_sub == 0) return gather(row, side_.step[component], w_, to);
    int16_t* c = raw_.data() + 1;  // c[-1] and c[cw] repeat the edges
    gather(row, side_.step[component], cw_, c);
    c[-1] = c[0];
    c[cw_] = c[cw_ - 1];
    const int pairs = w_ / 2;
    if (!linear_) {
      for (int i = 0; i < pairs; ++i) to[2 * i] = to[2 * i + 1] = c[i];
      if (w_ & 1) to[w_ - 1] = c[pairs];
      return;
    }
    for (int i = 0; i < pairs; ++i) {
      to[2 * i] = static_cast<int16_t>(mix31(c[i], c[i - 1]));
      to[2 * i + 1] = static_cast<int16_t>(mix31(c[i], c[i + 1]));
    }
    if (w_ & 1) to[w_ - 1] = static_cast<int16_t>(mix31(c[pairs], c[pairs - 1]));
  }

  const ConvertSide& side_;
  const ImageRef& image_;
  const int w_, cw_;
  const bool linear_;
  Row rows_[3];
  std::vector<int16_t> raw_;
};

// A row's samples for matrix_row: luma and chroma one a pixel, as 16-bit
// values, or as the input's bytes where they lie so (luma one a pixel,
// chroma one a pair of pixels: 4:2:x planes taken nearest).
struct RowIn {
  const int16_t *y = nullptr, *u = nullptr, *v = nullptr;
  const uint8_t* y8 = nullptr;                 // instead of y: luma bytes, `y_step` apart
  int y_step = 1;                              // 1, or 2 (packed 4:2:2)
  bool y_high = false;                         // y_step 2: luma is the second byte of a pair
  const uint8_t *u8 = nullptr, *v8 = nullptr;  // instead of u and v
  // With u and v: the chroma row on the far side, mixed in 3:1.
  const int16_t *u_near = nullptr, *v_near = nullptr;
  int luma(int x) const { return y8 ? y8[x * y_step] : y[x]; }
  int cb(int x) const { return u8 ? u8[x >> 1] : u_near ? mix31(u[x], u_near[x]) : u[x]; }
  int cr(int x) const { return v8 ? v8[x >> 1] : v_near ? mix31(v[x], v_near[x]) : v[x]; }
};

#if defined(__SSE2__)
// 16 pixels of 4-byte RGB from x on, in videoconvert's own 16-bit lanes:
// splat(s - 128) is the byte s ^ 0x80 in both halves of a lane, mulhsw is
// _mm_mulhi_epi16, sat8 the signed pack. kY8: luma from in.y8, kC8: chroma
// from in.u8 and in.v8, kNear: mixed with in.u_near and in.v_near. Returns
// where it stopped.
template <bool kY8, bool kC8, bool kNear>
int matrix_sse2(const int32_t* m, const RowIn& in, int w, const int* offsets, uint8_t* to) {
  const __m128i k0 = _mm_set1_epi16(static_cast<int16_t>(m[0]));
  const __m128i k1 = _mm_set1_epi16(static_cast<int16_t>(m[1]));
  const __m128i k2 = _mm_set1_epi16(static_cast<int16_t>(m[2]));
  const __m128i k3 = _mm_set1_epi16(static_cast<int16_t>(m[3]));
  const __m128i k4 = _mm_set1_epi16(static_cast<int16_t>(m[4]));
  const __m128i centre16 = _mm_set1_epi16(0x80), centre8 = _mm_set1_epi8(static_cast<char>(0x80));
  // Pixels [x, x + 16) of one component, splatted, as two vectors of 8.
  const auto words = [&](const int16_t* p, __m128i* half) {
    for (int h = 0; h < 2; ++h) {
      const __m128i v =
          _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 8 * h)), centre16);
      half[h] = _mm_or_si128(v, _mm_slli_epi16(v, 8));
    }
  };
  // mix31 of two rows' samples, 16 bits a lane, then splatted.
  const __m128i two = _mm_set1_epi16(2);
  const auto mixed = [&](const int16_t* p, const int16_t* q, __m128i* half) {
    for (int h = 0; h < 2; ++h) {
      const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 8 * h));
      const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q + 8 * h));
      const __m128i sum =
          _mm_add_epi16(_mm_add_epi16(_mm_add_epi16(a, a), a), _mm_add_epi16(b, two));
      const __m128i v = _mm_xor_si128(_mm_srli_epi16(sum, 2), centre16);
      half[h] = _mm_or_si128(v, _mm_slli_epi16(v, 8));
    }
  };
  const __m128i low = _mm_set1_epi16(0xFF);
  const auto bytes = [&](const uint8_t* p, __m128i* half) {
    if (in.y_step == 2) {
      // Every second byte: the low or high byte of each 16-bit lane.
      const uint8_t* lanes = in.y_high ? p - 1 : p;
      for (int h = 0; h < 2; ++h) {
        const __m128i words = _mm_loadu_si128(reinterpret_cast<const __m128i*>(lanes + 16 * h));
        const __m128i sample = in.y_high ? _mm_srli_epi16(words, 8) : _mm_and_si128(words, low);
        const __m128i v = _mm_xor_si128(sample, centre16);
        half[h] = _mm_or_si128(v, _mm_slli_epi16(v, 8));
      }
      return;
    }
    const __m128i s = _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)), centre8);
    half[0] = _mm_unpacklo_epi8(s, s);
    half[1] = _mm_unpackhi_epi8(s, s);
  };
  const auto pairs = [&](const uint8_t* p, __m128i* half) {
    const __m128i s = _mm_xor_si128(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)), centre8);
    const __m128i twice = _mm_unpacklo_epi8(s, s);
    half[0] = _mm_unpacklo_epi8(twice, twice);
    half[1] = _mm_unpackhi_epi8(twice, twice);
  };
  int x = 0;
  for (; x + 16 <= w; x += 16) {
    __m128i ys[2], us[2], vs[2];
    if constexpr (kY8)
      bytes(in.y8 + static_cast<size_t>(x) * in.y_step, ys);
    else
      words(in.y + x, ys);
    if constexpr (kC8) {
      pairs(in.u8 + x / 2, us);
      pairs(in.v8 + x / 2, vs);
    } else if constexpr (kNear) {
      mixed(in.u + x, in.u_near + x, us);
      mixed(in.v + x, in.v_near + x, vs);
    } else {
      words(in.u + x, us);
      words(in.v + x, vs);
    }
    __m128i rgb[3][2];
    for (int h = 0; h < 2; ++h) {
      const __m128i wy = _mm_mulhi_epi16(ys[h], k0);
      rgb[0][h] = _mm_add_epi16(wy, _mm_mulhi_epi16(vs[h], k1));
      rgb[1][h] =
          _mm_add_epi16(_mm_add_epi16(wy, _mm_mulhi_epi16(us[h], k3)), _mm_mulhi_epi16(vs[h], k4));
      rgb[2][h] = _mm_add_epi16(wy, _mm_mulhi_epi16(us[h], k2));
    }
    __m128i byte[4];
    for (int c = 0; c < 3; ++c)
      byte[offsets[c]] = _mm_xor_si128(_mm_packs_epi16(rgb[c][0], rgb[c][1]), centre8);
    byte[offsets[3]] = _mm_set1_epi8(static_cast<char>(0xFF));
    const __m128i lo01 = _mm_unpacklo_epi8(byte[0], byte[1]);
    const __m128i hi01 = _mm_unpackhi_epi8(byte[0], byte[1]);
    const __m128i lo23 = _mm_unpacklo_epi8(byte[2], byte[3]);
    const __m128i hi23 = _mm_unpackhi_epi8(byte[2], byte[3]);
    auto* p = reinterpret_cast<__m128i*>(to + 4 * static_cast<size_t>(x));
    _mm_storeu_si128(p, _mm_unpacklo_epi16(lo01, lo23));
    _mm_storeu_si128(p + 1, _mm_unpackhi_epi16(lo01, lo23));
    _mm_storeu_si128(p + 2, _mm_unpacklo_epi16(hi01, hi23));
    _mm_storeu_si128(p + 3, _mm_unpackhi_epi16(hi01, hi23));
  }
  return x;
}
#endif

// videoconvert's 8-bit matrix (convert_math::yuv_to_rgb) over a row,
// written as packed RGB of `stride` bytes with R, G, B (and alpha or
// padding, 255) at `offsets`.
void matrix_row(const int32_t* m, const RowIn& in, int w, const int* offsets, int stride,
                uint8_t* to) {
  int x = 0;
#if defined(__SSE2__)
  const bool fits = std::all_of(m, m + 5, [](int32_t c) { return c >= -32768 && c <= 32767; });
  if (stride == 4 && offsets[3] >= 0 && fits) {
    if (in.y8 && in.u8)
      x = matrix_sse2<true, true, false>(m, in, w, offsets, to);
    else if (in.y8 && in.u_near)
      x = matrix_sse2<true, false, true>(m, in, w, offsets, to);
    else if (in.y8)
      x = matrix_sse2<true, false, false>(m, in, w, offsets, to);
    else if (!in.u8 && !in.u_near)
      x = matrix_sse2<false, false, false>(m, in, w, offsets, to);
    else if (!in.u8)
      x = matrix_sse2<false, false, true>(m, in, w, offsets, to);
  }
#endif
  const int c0 = m[0], c1 = m[1], c2 = m[2], c3 = m[3], c4 = m[4];
  // splat(v - 128) for a sample v, as the 16-bit lanes hold it: the byte
  // v ^ 0x80 twice.
  const auto splat = [](int v) { return static_cast<int16_t>(((v ^ 0x80) * 257) & 0xFFFF); };
  const auto mulhsw = [](int a, int b) { return (a * b) >> 16; };
  const auto sat = [](int v) { return static_cast<uint8_t>(std::clamp(v, -128, 127) + 128); };
  for (; x < w; ++x) {
    const int wy = mulhsw(splat(in.luma(x)), c0), wu = splat(in.cb(x)), wv = splat(in.cr(x));
    uint8_t* p = to + static_cast<size_t>(x) * stride;
    p[offsets[0]] = sat(wy + mulhsw(wv, c1));
    p[offsets[2]] = sat(wy + mulhsw(wu, c2));
    p[offsets[1]] = sat(wy + mulhsw(wu, c3) + mulhsw(wv, c4));
    if (offsets[3] >= 0) p[offsets[3]] = 255;
  }
}

}  // namespace

namespace {

// The conversions convert_cpu makes by matrix: 8-bit YUV to packed RGB.
bool by_matrix(const ConvertCoefficients& k) {
  return !k.deep && k.in_family == convert_math::kYuv && k.out_family == convert_math::kPacked;
}

}  // namespace

bool convert_cpu_takes(PixelFormat in, PixelFormat out, const ConvertParams& params) {
  return !is_bayer(in) && by_matrix(convert_coefficients(in, out, params));
}

bool convert_cpu(const ImageRef& in, const ImageRef& out, const ConvertParams& params, int y0,
                 int y1) {
  if (is_bayer(in.format)) return false;
  if (convert_copies_bytes(in, out)) {
    if (y1 < 0)
      copy_reference(in, out);
    else
      copy_reference(image_rows(in, y0, y1), image_rows(out, y0, y1));
    return true;
  }
  const ConvertCoefficients k = convert_coefficients(in.format, out.format, params);
  if (!by_matrix(k)) return false;
  const ConvertSide& side = k.in_side;
  const int w = in.width, h = in.height;
  const int cw = (w + (1 << side.x_sub) - 1) >> side.x_sub;
  const int ch = (h + (1 << side.y_sub) - 1) >> side.y_sub;
  const bool down = side.y_sub == 1 && k.chroma_y == kUpLinear;
  const bool across = side.x_sub == 1 && k.chroma_x == kUpLinear;
  // Chroma read where it lies: a plane per component, taken nearest.
  const bool chroma_bytes =
      side.x_sub == 1 && !across && !down && side.step[1] == 1 && side.step[2] == 1;
  ChromaRows chroma(side, in, w, cw, across);
  std::vector<int16_t> ys(w);
  const auto row_of = [&in, &side](int component, int row) {
    const PlaneRef& plane = in.planes[side.plane[component]];
    return plane.data + static_cast<size_t>(row) * plane.stride + side.offset[component];
  };
  for (int y = y0, end = y1 < 0 ? h : y1; y < end; ++y) {
    RowIn row;
    if (side.step[0] == 1 || (side.step[0] == 2 && side.offset[0] <= 1)) {
      row.y8 = row_of(0, y);
      row.y_step = side.step[0];
      row.y_high = side.step[0] == 2 && side.offset[0] == 1;
    } else {
      gather(row_of(0, y), side.step[0], w, ys.data());
      row.y = ys.data();
    }
    const int sy = y >> side.y_sub;
    if (chroma_bytes) {
      row.u8 = row_of(1, sy);
      row.v8 = row_of(2, sy);
    } else {
      const int16_t* uv = chroma(sy);
      row.u = uv;
      row.v = uv + w;
      if (down) {
        // Mixed 3:1 with the chroma row on this picture row's side.
        const int16_t* near = chroma((y & 1) ? std::min(sy + 1, ch - 1) : std::max(sy - 1, 0));
        row.u_near = near;
        row.v_near = near + w;
      }
    }
    matrix_row(k.to_rgb, row, w, k.out_offsets, k.out_side.pixel_stride,
               out.planes[0].data + static_cast<size_t>(y) * out.planes[0].stride);
  }
  return true;
}

}  // namespace cudaoverlap
