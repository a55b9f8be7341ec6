// The per-pixel-block arithmetic of the `convert` kernel, shared by its CPU
// reference (convert.cpp) and its CUDA kernels (convert_*.cu) so the two
// agree to the byte; its agreement with videoconvert is tested on real
// pipelines (tests/kernels/test_vs_gstreamer.cpp).
//
// Private to kernels/: CO_HD is __host__ __device__ under nvcc and nothing
// for the C++ compiler, so this header still builds without CUDA. Not
// included by any public header.
#pragma once

#include <cstdint>

#include "kernels/convert/convert_coefficients.h"

#ifdef __CUDACC__
#define CO_HD __host__ __device__ __forceinline__
#else
#define CO_HD inline
#endif
// Loops the device must unroll (their arrays then stay in registers); the
// host compilers' passes do not know the pragma.
#ifdef __CUDA_ARCH__
#define CO_UNROLL _Pragma("unroll")
#else
#define CO_UNROLL
#endif

namespace cudaoverlap {
namespace convert_math {

enum Family : int { kPacked = 0, kGrey = 1, kYuv = 2 };  // YUV: any subsampling

CO_HD int clamp255(int v) { return v < 0 ? 0 : (v > 255 ? 255 : v); }
CO_HD int clamp_index(int v, int n) { return v < 0 ? 0 : (v >= n ? n - 1 : v); }

// videoconvert's YUV -> RGB, as its ORC code computes it: samples centred on
// 128 as signed bytes, widened by byte duplication (splatbw), multiplied
// keeping the high 16 bits (mulhsw), summed and saturated to a signed byte.
CO_HD int splat(int s) { return 257 * s + (s < 0 ? 256 : 0); }
CO_HD int mulhsw(int a, int b) { return (a * b) >> 16; }
CO_HD int sat8(int v) { return v < -128 ? -128 : (v > 127 ? 127 : v); }

CO_HD void yuv_to_rgb(const ConvertCoefficients& k, int y, int u, int v, int* r, int* g, int* b) {
  const int wy = mulhsw(splat(y - 128), k.to_rgb[0]);
  const int wu = splat(u - 128);
  const int wv = splat(v - 128);
  *r = sat8(wy + mulhsw(wv, k.to_rgb[1])) + 128;
  *b = sat8(wy + mulhsw(wu, k.to_rgb[2])) + 128;
  *g = sat8(wy + mulhsw(wu, k.to_rgb[3]) + mulhsw(wv, k.to_rgb[4])) + 128;
}

// RGB -> Y, U or V with 16-bit fixed-point coefficients (rounding included
// in the offset).
CO_HD int rgb_to(const int32_t* row, int r, int g, int b) {
  return clamp255((row[0] * r + row[1] * g + row[2] * b + row[3]) >> 16);
}

// videoconvert's video_orc_matrix8 on one pixel: samples centred on 128 and
// widened as in yuv_to_rgb, each row's three products summed and saturated
// to a signed byte; the matrix's offsets are not used.
CO_HD int matrix8(const int32_t* row, int r, int g, int b) {
  return sat8(mulhsw(splat(r - 128), row[0]) + mulhsw(splat(g - 128), row[1]) +
              mulhsw(splat(b - 128), row[2])) +
         128;
}

// One step of videoconvert's 3:1 chroma interpolation: (3 a + b) / 4,
// rounded.
CO_HD int mix31(int a, int b) { return (3 * a + b + 2) >> 2; }

// mix31 on two 16-bit lanes at once (U low, V high). With samples below 256
// no lane exceeds 1022 before the shift, so the lanes never carry into each
// other and each lane is mix31 of its own samples; the mask drops the bits
// the shift moves from the high lane into the low one.
CO_HD uint32_t mix31_lanes(uint32_t a, uint32_t b) {
  return ((3 * a + b + 0x00020002u) >> 2) & 0x3FFF3FFFu;
}

struct Pixel {
  int c[3];  // R, G, B, or Y, U, V
  int a;     // alpha or padding byte of 4-byte RGB input; 255 otherwise
};

// Plane p of an image, chosen among the three rather than indexed: an
// index known only at run time would make the device copy the kernel's
// image arguments to local memory.
CO_HD PlaneRef plane_of(const ImageRef& image, int p) {
  if (p == 0) return image.planes[0];
  return p == 1 ? image.planes[1] : image.planes[2];
}

// How the block functions below reach an image's bytes, for the reference
// and for the CUDA kernels alike: at(plane, y, byte) is byte `byte` of
// row y of a plane. Held by value, so a kernel's parameters are read into
// registers once.
struct ImageAccess {
  ImageRef image;
  CO_HD int width() const { return image.width; }
  CO_HD int height() const { return image.height; }
  // Strides fit 32 bits (GStreamer's are gint), so a row's offset is one
  // 32 x 32 -> 64-bit multiply and the byte's a 32-bit add: the device's
  // per-sample address arithmetic, more than the bytes, bounds the block
  // kernels.
  CO_HD uint8_t* at(int plane, int y, int byte) const {
    const PlaneRef p = plane_of(image, plane);
    return p.data + (static_cast<int64_t>(y) * static_cast<int32_t>(p.stride) + byte);
  }
};

// Where sample (sx, sy) of `component` (0 Y, 1 U, 2 V) of a YUV or grey
// side is, on its own grid.
CO_HD uint8_t* sample_ptr(const ConvertSide& side, const ImageAccess& image, int component, int sx,
                          int sy) {
  return image.at(side.plane[component], sy, side.offset[component] + sx * side.step[component]);
}
CO_HD uint8_t* sample_ptr(const ConvertSide& side, const ImageRef& image, int component, int sx,
                          int sy) {
  return sample_ptr(side, ImageAccess{image}, component, sx, sy);
}

// The 8-bit sample there.
CO_HD int sample_at(const ConvertSide& side, const ImageAccess& image, int component, int sx,
                    int sy) {
  return *sample_ptr(side, image, component, sx, sy);
}

// --- videoconvert's planar fast paths between two YUV formats
// (convert_scale_planes): luma is copied and each chroma plane is scaled
// on its own from the input's chroma grid (iw x ih) to the output's
// (ow x oh) by GStreamer's 2-tap linear scaler, with its fixed-point rules.

// The vertical scaler's taps for output row j: rows i and i + 1, the
// second weighted p / 256 (half-pixel centres, clamped at the edges,
// weights rounded to 8 bits). ih >= 2.
// (2 j + 1) ih and 512 rem in 64 bits: in 32, they wrapped from 46341 rows
// of doubled chroma (ih 23171).
CO_HD void vertical_tap(int ih, int oh, int j, int* i, int* p) {
  const int64_t num = static_cast<int64_t>(2 * j + 1) * ih - oh, den = 2 * static_cast<int64_t>(oh);
  if (num <= 0) {
    *i = 0, *p = 0;
    return;
  }
  *i = static_cast<int>(num / den);
  const int64_t rem = num % den;
  if (*i >= ih - 1) {
    *i = ih - 2, *p = 256;
    return;
  }
  const int64_t q2 = 512 * rem;
  if (q2 % den == 0 && (q2 / den) % 2 == 1)  // an exact half: the larger tap rounds up
    *p = static_cast<int>(q2 / den / 2 + (2 * rem > den ? 1 : 0));
  else
    *p = static_cast<int>((q2 + den) / (2 * den));
}

// n / d and n % d (n >= 0, d > 0, quotient below 2^21) from a
// single-precision estimate n * rcp (rcp = 1 / d, rounded), corrected by
// one step: the estimate is within 1 of the quotient, and the device's
// 32-bit divisions are some twenty dependent instructions each.
CO_HD int divide(int64_t n, int d, float rcp, int* rem) {
  int q = static_cast<int>(static_cast<float>(n) * rcp);
  int64_t r = n - static_cast<int64_t>(q) * d;
  if (r < 0) {
    --q;
    r += d;
  } else if (r >= d) {
    ++q;
    r -= d;
  }
  *rem = static_cast<int>(r);
  return q;
}

// vertical_tap with its divisions by den = 2 oh taken through rcp = 1 /
// den (divide): the same taps (tested against it).
CO_HD void vertical_tap_rcp(int ih, int oh, float rcp, int j, int* i, int* p) {
  const int64_t num = static_cast<int64_t>(2 * j + 1) * ih - oh;
  const int den = 2 * oh;
  if (num <= 0) {
    *i = 0, *p = 0;
    return;
  }
  int rem;
  *i = divide(num, den, rcp, &rem);
  if (*i >= ih - 1) {
    *i = ih - 2, *p = 256;
    return;
  }
  // (512 rem + den) / (2 den) is (q + 1) >> 1 for q = 512 rem / den; an
  // exact half (no remainder, q odd) rounds to the larger tap.
  int r2;
  const int q = divide(512 * static_cast<int64_t>(rem), den, rcp, &r2);
  *p = r2 == 0 && (q & 1) ? (q >> 1) + (2 * rem > den ? 1 : 0) : (q + 1) >> 1;
}

CO_HD int average(int a, int b) { return (a + b + 1) >> 1; }

// The plane scaler for one conversion, worked out once: both sides'
// chroma grids, which halving shortcuts apply, which axis is scaled first
// and the horizontal step.
struct ChromaScaler {
  int iw, ih, ow, oh;
  // Exact halvings of planar planes take the averaging shortcuts.
  bool hh, vh;
  // Both axes by the scaler: across first, then down (GStreamer's 2-D
  // scaler picks the order).
  bool across_first;
  // The horizontal scaler's step: output sample j reads samples i and
  // i + 1, the second weighted a / 256, with t = j * inc, i = t >> 16,
  // a = (t >> 8) & 255 (ends on ends, truncated). iw >= 2.
  int inc;
  // 1 / (2 oh), rounded: vertical_tap_rcp's divisor.
  float row_rcp;
};

CO_HD ChromaScaler chroma_scaler(const ConvertCoefficients& k, int in_width, int in_height,
                                 int out_width, int out_height) {
  const ConvertSide &is = k.in_side, &os = k.out_side;
  ChromaScaler s;
  s.iw = (in_width + (1 << is.x_sub) - 1) >> is.x_sub;
  s.ih = (in_height + (1 << is.y_sub) - 1) >> is.y_sub;
  s.ow = (out_width + (1 << os.x_sub) - 1) >> os.x_sub;
  s.oh = (out_height + (1 << os.y_sub) - 1) >> os.y_sub;
  s.hh = k.scale_planar && s.iw == 2 * s.ow;
  s.vh = k.scale_planar && s.ih == 2 * s.oh;
  int last = 0, unused;
  if (s.ih > 1) vertical_tap(s.ih, s.oh, s.oh - 1, &last, &unused);
  s.across_first = last <= s.oh;
  s.inc = s.ow == 1 ? 0 : ((s.iw - 1) << 16) / (s.ow - 1) - 1;
  s.row_rcp = 1.0f / static_cast<float>(2 * s.oh);
  return s;
}

// Row sy's vertical taps (vertical_tap), which every sample of the row
// shares; 0, 0 where rows are not scaled.
CO_HD void scaler_row(const ChromaScaler& s, int sy, int* i, int* p) {
  *i = 0, *p = 0;
  if (s.ih >= 2 && s.ih != s.oh) vertical_tap(s.ih, s.oh, sy, i, p);
}

// The same through vertical_tap_rcp.
CO_HD void scaler_row_rcp(const ChromaScaler& s, int sy, int* i, int* p) {
  *i = 0, *p = 0;
  if (s.ih >= 2 && s.ih != s.oh) vertical_tap_rcp(s.ih, s.oh, s.row_rcp, sy, i, p);
}

// Output chroma sample (sx, sy) scaled from an input chroma component
// whose sample (x, y) is at(x, y); vi, vp: scaler_row(s, sy).
template <typename At>
CO_HD int scaled_chroma(const ChromaScaler& s, const At& at, int sx, int sy, int vi, int vp) {
  auto h_scaled = [&](int y) {  // row y of the input scaled across
    if (s.iw == s.ow) return at(sx, y);
    if (s.iw == 1) return at(0, y);
    const int t = sx * s.inc, i = t >> 16, a = (t >> 8) & 255;
    return (at(i, y) * (256 - a) + (a ? at(i + 1, y) : 0) * a) >> 8;
  };
  auto v_scaled = [&](int x) {  // column x of the input scaled down
    if (s.ih == s.oh) return at(x, sy);
    if (s.ih == 1) return at(x, 0);
    return (at(x, vi) * (256 - vp) + at(x, vi + 1) * vp + 128) >> 8;
  };
  if (s.iw == s.ow) return s.vh ? average(at(sx, 2 * sy), at(sx, 2 * sy + 1)) : v_scaled(sx);
  if (s.ih == s.oh) return s.hh ? average(at(2 * sx, sy), at(2 * sx + 1, sy)) : h_scaled(sy);
  if (s.hh && s.vh)
    return average(average(at(2 * sx, 2 * sy), at(2 * sx, 2 * sy + 1)),
                   average(at(2 * sx + 1, 2 * sy), at(2 * sx + 1, 2 * sy + 1)));
  if (s.across_first) {
    if (s.ih == 1) return h_scaled(0);
    return (h_scaled(vi) * (256 - vp) + h_scaled(vi + 1) * vp + 128) >> 8;
  }
  if (s.iw == 1) return v_scaled(0);
  const int t = sx * s.inc, i = t >> 16, a = (t >> 8) & 255;
  return (v_scaled(i) * (256 - a) + (a ? v_scaled(i + 1) : 0) * a) >> 8;
}

CO_HD void store_sample(const ConvertSide& side, const ImageAccess& out, int component, int sx,
                        int sy, int value) {
  *sample_ptr(side, out, component, sx, sy) = static_cast<uint8_t>(value);
}
CO_HD void store_sample(const ConvertSide& side, const ImageRef& out, int component, int sx, int sy,
                        int value) {
  store_sample(side, ImageAccess{out}, component, sx, sy, value);
}

// --- Sides deeper than 8 bits: samples taken to and from 16 bits.

CO_HD int clamp16(int64_t v) { return v < 0 ? 0 : (v > 65535 ? 65535 : static_cast<int>(v)); }
// The same on a 32-bit sum, so the device compares 32 bits, not 64.
CO_HD int clamp16(int v) { return v < 0 ? 0 : (v > 65535 ? 65535 : v); }

// One row (Y, U or V) of to_output<true>'s RGB -> YUV for an 8-bit RGB
// pixel, whose samples are r, g, b times 257 on the 16-bit scale, in 32-bit
// integers: the same result as clamp16((row . (257 r, 257 g, 257 b) + off)
// >> 16) in 64 bits. With t = row . (r, g, b) (below 2^27 in magnitude),
// t = 256 th + tl and off = 65536 oh + ol, that sum is 65536 (th + oh) +
// (256 tl + t + ol), so its floor >> 16 is th + oh plus the last term's,
// and no term needs more than 32 bits. The device's 64-bit multiplies are
// several instructions each.
CO_HD int rgb8_to16(const int32_t* row, int64_t off, int r, int g, int b) {
  const int t = row[0] * r + row[1] * g + row[2] * b;
  const int oh = static_cast<int>(off >> 16), ol = static_cast<int>(off & 0xFFFF);
  return clamp16((t >> 8) + oh + ((256 * (t & 255) + t + ol) >> 16));
}

// The raw sample at `at` of a side's plane, unpacked to 16 bits as
// videoconvert unpacks it (bits beside a 10-bit sample included, as there).
CO_HD int unpack16(const ConvertSide& side, const uint8_t* at) {
  if (side.sample_bytes == 1) return at[0] * 257;
  const int w = at[0] | at[1] << 8;
  if (side.depth == 16) return w;
  // 10 bits: shifted to the top (as a 16-bit value, so bits above the 10
  // are dropped), then their top bits repeated below.
  const int v = side.shift == 6 ? w : (w << 6) & 0xFFFF;
  return v | v >> 10;
}

// What a side's sample holds for the 16-bit value v: a byte, or the
// little-endian word of a deeper sample.
CO_HD int packed16(const ConvertSide& side, int v) {
  if (side.sample_bytes == 1) return v >> 8;
  return side.depth == 16 ? v : (side.shift == 6 ? v & 0xFFC0 : v >> 6);
}

CO_HD void pack16(const ConvertSide& side, uint8_t* at, int v) {
  const int w = packed16(side, v);
  at[0] = static_cast<uint8_t>(w);
  if (side.sample_bytes == 2) at[1] = static_cast<uint8_t>(w >> 8);
}

// --- One 2x2 block of the picture (top-left pixel (2 bx, 2 by)), in two
// stages: its four input pixels (load_*: chroma brought to each pixel),
// then each pixel taken to the output's space and the block written
// (store_*: chroma averaged down where the output subsamples). Each stage
// has a version per kind of side, chosen once per block from the
// coefficients (the same for every block of a picture, so the device's
// threads never diverge on it); a YUV side's subsampling is a template
// argument, so the chroma samples the four pixels share are read once.
// kDeep: every sample on the 16-bit scale (a side deeper than 8 bits),
// as videoconvert's 16-bit path; otherwise its 8-bit arithmetic.

enum SideKind : int { kSidePacked, kSideGrey, kSideYuv444, kSideYuv422, kSideYuv420 };

CO_HD int side_kind(int family, const ConvertSide& side) {
  if (family == kPacked) return kSidePacked;
  if (family == kGrey) return kSideGrey;
  if (side.x_sub == 0) return kSideYuv444;
  return side.y_sub ? kSideYuv420 : kSideYuv422;
}

// The block's pixels [row][column], with clamped coordinates: a pixel past
// an odd size repeats the last one (its chroma still counts when averaged).
struct Block {
  Pixel px[2][2];
};

template <bool kDeep>
CO_HD int fetch(const ConvertSide& side, const ImageAccess& image, int component, int sx, int sy) {
  if constexpr (kDeep) return unpack16(side, sample_ptr(side, image, component, sx, sy));
  return sample_at(side, image, component, sx, sy);
}

// read(x, y, &p) for each of the block's pixels, at clamped coordinates.
template <typename Read>
CO_HD void each_clamped(const ImageAccess& in, int bx, int by, Block* b, const Read& read) {
  CO_UNROLL
  for (int dy = 0; dy < 2; ++dy) {
    CO_UNROLL
    for (int dx = 0; dx < 2; ++dx)
      read(clamp_index(2 * bx + dx, in.width()), clamp_index(2 * by + dy, in.height()),
           &b->px[dy][dx]);
  }
}

template <bool kDeep>
CO_HD void load_packed(const ConvertCoefficients& k, const ImageAccess& in, int bx, int by,
                       Block* b) {
  each_clamped(in, bx, by, b, [&](int x, int y, Pixel* p) {
    const int scale = kDeep ? 257 : 1;
    const uint8_t* s = in.at(0, y, x * k.in_side.pixel_stride);
    p->c[0] = s[k.in_offsets[0]] * scale;
    p->c[1] = s[k.in_offsets[1]] * scale;
    p->c[2] = s[k.in_offsets[2]] * scale;
    p->a = k.in_offsets[3] >= 0 ? s[k.in_offsets[3]] * scale : (kDeep ? 65535 : 255);
  });
}

template <bool kDeep>
CO_HD void load_grey(const ConvertCoefficients& k, const ImageAccess& in, int bx, int by,
                     Block* b) {
  each_clamped(in, bx, by, b, [&](int x, int y, Pixel* p) {
    if constexpr (kDeep)
      p->c[0] = unpack16(k.in_side, sample_ptr(k.in_side, in, 0, x, y));
    else
      p->c[0] = *in.at(0, y, x);
    p->c[1] = p->c[2] = kDeep ? 32768 : 128;
    p->a = kDeep ? 65535 : 255;
  });
}

// YUV subsampled by 2^kXs across and 2^kYs down. Chroma along each
// subsampled axis as k.chroma_x / k.chroma_y say: the nearest sample, or
// videoconvert's 3:1 interpolation with the neighbouring one (across, then
// down, each rounded). The block's pixels share their chroma column (and,
// for 4:2:0, row), so each neighbour is read once for the four.
template <int kXs, int kYs, bool kDeep>
CO_HD void load_yuv(const ConvertCoefficients& k, const ImageAccess& in, int bx, int by, Block* b) {
  const ConvertSide& side = k.in_side;
  const int x0 = 2 * bx, x1 = clamp_index(2 * bx + 1, in.width());
  const int y0 = 2 * by, y1 = clamp_index(2 * by + 1, in.height());
  const bool lx = kXs == 1 && k.chroma_x == kUpLinear;
  const bool ly = kYs == 1 && k.chroma_y == kUpLinear;
  const int cw = (in.width() + (1 << kXs) - 1) >> kXs;
  const int ch = (in.height() + (1 << kYs) - 1) >> kYs;
  b->px[0][0].c[0] = fetch<kDeep>(side, in, 0, x0, y0);
  b->px[0][1].c[0] = fetch<kDeep>(side, in, 0, x1, y0);
  b->px[1][0].c[0] = fetch<kDeep>(side, in, 0, x0, y1);
  b->px[1][1].c[0] = fetch<kDeep>(side, in, 0, x1, y1);
  CO_UNROLL
  for (int c = 1; c < 3; ++c) {
    // Chroma row sy across, for the pixel columns x0 and x1.
    auto across = [&](int sy, int* h0, int* h1) {
      if (kXs == 0) {
        *h0 = fetch<kDeep>(side, in, c, x0, sy);
        *h1 = fetch<kDeep>(side, in, c, x1, sy);
        return;
      }
      // Both columns lie in chroma column bx; x0 is even (its neighbour is
      // on the left), x1 odd unless the width clamped it onto x0.
      const int m = fetch<kDeep>(side, in, c, bx, sy);
      if (!lx) {
        *h0 = *h1 = m;
        return;
      }
      *h0 = mix31(m, fetch<kDeep>(side, in, c, clamp_index(bx - 1, cw), sy));
      *h1 = (x1 & 1) ? mix31(m, fetch<kDeep>(side, in, c, clamp_index(bx + 1, cw), sy)) : *h0;
    };
    int h[2][2];  // [pixel row][pixel column]
    if (kYs == 0) {
      across(y0, &h[0][0], &h[0][1]);
      across(y1, &h[1][0], &h[1][1]);
    } else {
      // Both rows lie in chroma row by; y0 is even, y1 odd unless the
      // height clamped it onto y0.
      int m0, m1;
      across(by, &m0, &m1);
      if (!ly) {
        h[0][0] = h[1][0] = m0;
        h[0][1] = h[1][1] = m1;
      } else {
        int a0, a1;
        across(clamp_index(by - 1, ch), &a0, &a1);
        h[0][0] = mix31(m0, a0);
        h[0][1] = mix31(m1, a1);
        if (y1 & 1) {
          across(clamp_index(by + 1, ch), &a0, &a1);
          h[1][0] = mix31(m0, a0);
          h[1][1] = mix31(m1, a1);
        } else {
          h[1][0] = h[0][0];
          h[1][1] = h[0][1];
        }
      }
    }
    CO_UNROLL
    for (int dy = 0; dy < 2; ++dy) CO_UNROLL
    for (int dx = 0; dx < 2; ++dx) b->px[dy][dx].c[c] = h[dy][dx];
  }
  CO_UNROLL
  for (int dy = 0; dy < 2; ++dy) CO_UNROLL
  for (int dx = 0; dx < 2; ++dx) b->px[dy][dx].a = kDeep ? 65535 : 255;
}

// The chroma samples the output's grid has in block (bx, by) (1, 2 or 4,
// fewer at the picture's edge; the output subsampled by 2^kXs across and
// 2^kYs down), each the block's per-pixel chroma u_px, v_px ([row][column])
// averaged in pairs, rounding up, across and then down where the output
// subsamples; emit(sx, sy, u, v) stores one.
template <int kXs, int kYs, typename Emit>
CO_HD void block_chroma(const ImageAccess& out, int bx, int by, const int (&u_px)[2][2],
                        const int (&v_px)[2][2], const Emit& emit) {
  constexpr int nx = kXs ? 1 : 2, ny = kYs ? 1 : 2;
  CO_UNROLL
  for (int j = 0; j < ny; ++j) CO_UNROLL
  for (int i = 0; i < nx; ++i) {
    const int sx = (2 * bx >> kXs) + i, sy = (2 * by >> kYs) + j;
    if ((sx << kXs) >= out.width() || (sy << kYs) >= out.height()) continue;
    int u[2], v[2];  // per row
    CO_UNROLL
    for (int r = 0; r < 2; ++r) {
      const int row = ny == 2 ? j : r;
      u[r] = nx == 2 ? u_px[row][i] : average(u_px[row][0], u_px[row][1]);
      v[r] = nx == 2 ? v_px[row][i] : average(v_px[row][0], v_px[row][1]);
    }
    emit(sx, sy, ny == 2 ? u[0] : average(u[0], u[1]), ny == 2 ? v[0] : average(v[0], v[1]));
  }
}

// block_chroma for co-sited output chroma (k.cosited_x, k.cosited_y), as
// videoconvert's chroma resampler makes it: down first (the pair of rows
// averaged, rounding up, or the first row where co-sited down), then
// across, co-sited: (left + 2 first + second + 2) >> 2 over the pair and
// the pixel left of it, (3 first + second + 2) >> 2 for a row's first
// sample, (left + 3 first + 2) >> 2 for its last; a picture one pixel wide
// keeps its pixel's chroma. u_left, v_left: the chroma of the pixel left
// of the block, per row (unused in column 0).
template <int kXs, int kYs, typename Emit>
CO_HD void block_chroma_cosited(const ConvertCoefficients& k, const ImageAccess& out, int bx,
                                int by, const int (&u_px)[2][2], const int (&v_px)[2][2],
                                const int (&u_left)[2], const int (&v_left)[2], const Emit& emit) {
  constexpr int nx = kXs ? 1 : 2, ny = kYs ? 1 : 2;
  const int last = (out.width() + 1) / 2 - 1;  // the last chroma column (kXs)
  CO_UNROLL
  for (int j = 0; j < ny; ++j) {
    const int sy = (2 * by >> kYs) + j;
    if ((sy << kYs) >= out.height()) continue;
    // Down: the three columns the row's samples come from (left, first,
    // second), as one row.
    int u[3], v[3];
    auto down = [&](int a_u, int b_u, int a_v, int b_v, int c) {
      u[c] = !kYs ? a_u : k.cosited_y ? a_u : average(a_u, b_u);
      v[c] = !kYs ? a_v : k.cosited_y ? a_v : average(a_v, b_v);
    };
    const int r0 = kYs ? 0 : j, r1 = kYs ? 1 : j;
    down(u_left[r0], u_left[r1], v_left[r0], v_left[r1], 0);
    down(u_px[r0][0], u_px[r1][0], v_px[r0][0], v_px[r1][0], 1);
    down(u_px[r0][1], u_px[r1][1], v_px[r0][1], v_px[r1][1], 2);
    CO_UNROLL
    for (int i = 0; i < nx; ++i) {
      const int sx = (2 * bx >> kXs) + i;
      if ((sx << kXs) >= out.width()) continue;
      if (!kXs) {
        emit(sx, sy, u[1 + i], v[1 + i]);
      } else if (!k.cosited_x) {
        emit(sx, sy, average(u[1], u[2]), average(v[1], v[2]));
      } else if (out.width() < 2) {
        emit(sx, sy, u[1], v[1]);
      } else if (sx == 0) {
        emit(sx, sy, (3 * u[1] + u[2] + 2) >> 2, (3 * v[1] + v[2] + 2) >> 2);
      } else if (sx == last) {
        emit(sx, sy, (u[0] + 3 * u[1] + 2) >> 2, (v[0] + 3 * v[1] + 2) >> 2);
      } else {
        emit(sx, sy, (u[0] + 2 * u[1] + u[2] + 2) >> 2, (v[0] + 2 * v[1] + v[2] + 2) >> 2);
      }
    }
  }
}

// A pixel in the output's colour space: R, G, B for packed output, Y, U, V
// otherwise (videoconvert's matrices; 8-bit or 16-bit arithmetic).
template <bool kDeep>
CO_HD void to_output(const ConvertCoefficients& k, Pixel* p) {
  const int in = k.in_family, out = k.out_family;
  if (out == kPacked) {
    if (in == kPacked) return;
    if constexpr (kDeep) {
      if (in == kYuv) {
        const int yy = p->c[0] - k.to_rgb_y_offset16, u = p->c[1] - 32768, v = p->c[2] - 32768;
        const int r = clamp16((k.to_rgb[0] * yy + k.to_rgb[1] * v) >> 8);
        const int b = clamp16((k.to_rgb[0] * yy + k.to_rgb[2] * u) >> 8);
        const int g = clamp16((k.to_rgb[0] * yy + k.to_rgb[3] * u + k.to_rgb[4] * v) >> 8);
        p->c[0] = r, p->c[1] = g, p->c[2] = b;
      } else {
        p->c[1] = p->c[2] = p->c[0];
      }
    } else {
      if (in == kYuv || k.grey_matrix) {
        int r, g, b;
        yuv_to_rgb(k, p->c[0], p->c[1], p->c[2], &r, &g, &b);
        p->c[0] = r, p->c[1] = g, p->c[2] = b;
      } else {
        p->c[1] = p->c[2] = p->c[0];
      }
    }
    return;
  }
  if (in != kPacked) return;  // grey and YUV keep luma (and chroma)
  const int r = p->c[0], g = p->c[1], b = p->c[2];
  if constexpr (kDeep) {
    int yuv[3];
    CO_UNROLL
    for (int row = 0; row < 3; ++row)
      yuv[row] = clamp16((static_cast<int64_t>(k.to_yuv[row][0]) * r +
                          static_cast<int64_t>(k.to_yuv[row][1]) * g +
                          static_cast<int64_t>(k.to_yuv[row][2]) * b + k.to_yuv_offset16[row]) >>
                         16);
    p->c[0] = yuv[0], p->c[1] = yuv[1], p->c[2] = yuv[2];
  } else if (k.rgb_matrix8) {
    p->c[0] = matrix8(k.matrix8[0], r, g, b);
    p->c[1] = matrix8(k.matrix8[1], r, g, b);
    p->c[2] = matrix8(k.matrix8[2], r, g, b);
  } else {
    p->c[0] = rgb_to(k.to_yuv[0], r, g, b);
    p->c[1] = rgb_to(k.to_yuv[1], r, g, b);
    p->c[2] = rgb_to(k.to_yuv[2], r, g, b);
  }
}

// write(x, y, p) for each of the block's pixels inside the picture, p
// taken to the output's space.
template <bool kDeep, typename Write>
CO_HD void each_inside(const ConvertCoefficients& k, const ImageAccess& in, int bx, int by,
                       const Block& b, const Write& write) {
  CO_UNROLL
  for (int dy = 0; dy < 2; ++dy) {
    if (2 * by + dy >= in.height()) continue;
    CO_UNROLL
    for (int dx = 0; dx < 2; ++dx) {
      if (2 * bx + dx >= in.width()) continue;
      Pixel p = b.px[dy][dx];
      to_output<kDeep>(k, &p);
      write(2 * bx + dx, 2 * by + dy, p);
    }
  }
}

template <bool kDeep>
CO_HD void store_packed(const ConvertCoefficients& k, const ImageAccess& in, const ImageAccess& out,
                        int bx, int by, const Block& b) {
  each_inside<kDeep>(k, in, bx, by, b, [&](int x, int y, const Pixel& p) {
    const int shift = kDeep ? 8 : 0;
    uint8_t* d = out.at(0, y, x * k.out_side.pixel_stride);
    d[k.out_offsets[0]] = static_cast<uint8_t>(p.c[0] >> shift);
    d[k.out_offsets[1]] = static_cast<uint8_t>(p.c[1] >> shift);
    d[k.out_offsets[2]] = static_cast<uint8_t>(p.c[2] >> shift);
    if (k.out_offsets[3] >= 0) d[k.out_offsets[3]] = static_cast<uint8_t>(p.a >> shift);
  });
}

template <bool kDeep>
CO_HD void store_grey(const ConvertCoefficients& k, const ImageAccess& in, const ImageAccess& out,
                      int bx, int by, const Block& b) {
  each_inside<kDeep>(k, in, bx, by, b, [&](int x, int y, const Pixel& p) {
    if constexpr (kDeep)
      pack16(k.out_side, sample_ptr(k.out_side, out, 0, x, y), p.c[0]);
    else
      *out.at(0, y, x) = static_cast<uint8_t>(p.c[0]);
  });
}

// `left`: the block left of this one, where k.cosited_x needs its chroma
// (null in column 0 and otherwise).
template <int kXs, int kYs, bool kDeep>
CO_HD void store_yuv(const ConvertCoefficients& k, const ImageAccess& in, const ImageAccess& out,
                     int bx, int by, const Block& b, const Block* left = nullptr) {
  const ConvertSide& os = k.out_side;
  int u_px[2][2], v_px[2][2];
  // A packed 4:2:2 row of odd width ends in a pair whose second luma is
  // past the picture: it repeats the last pixel, as the others do.
  const bool pair_luma = kXs == 1 && os.plane[0] == os.plane[1];
  CO_UNROLL
  for (int dy = 0; dy < 2; ++dy) {
    const int y = clamp_index(2 * by + dy, in.height());
    CO_UNROLL
    for (int dx = 0; dx < 2; ++dx) {
      Pixel p = b.px[dy][dx];
      to_output<kDeep>(k, &p);
      const bool inside = 2 * bx + dx < in.width() && 2 * by + dy < in.height();
      if (inside || (pair_luma && 2 * by + dy < in.height())) {
        if constexpr (kDeep)
          pack16(os, sample_ptr(os, out, 0, 2 * bx + dx, y), p.c[0]);
        else
          store_sample(os, out, 0, 2 * bx + dx, y, p.c[0]);
      }
      u_px[dy][dx] = p.c[1];  // a clamped pixel's chroma still counts
      v_px[dy][dx] = p.c[2];
    }
  }
  auto store = [&](int sx, int sy, int u, int v) {
    if constexpr (kDeep) {
      pack16(os, sample_ptr(os, out, 1, sx, sy), u);
      pack16(os, sample_ptr(os, out, 2, sx, sy), v);
    } else {
      if (k.scale_planes) {
        const ChromaScaler s = chroma_scaler(k, in.width(), in.height(), out.width(), out.height());
        int vi, vp;
        scaler_row(s, sy, &vi, &vp);
        u = scaled_chroma(
            s, [&](int x, int y) { return sample_at(k.in_side, in, 1, x, y); }, sx, sy, vi, vp);
        v = scaled_chroma(
            s, [&](int x, int y) { return sample_at(k.in_side, in, 2, x, y); }, sx, sy, vi, vp);
      }
      store_sample(os, out, 1, sx, sy, u);
      store_sample(os, out, 2, sx, sy, v);
    }
  };
  if (!k.cosited_x && !k.cosited_y) {
    block_chroma<kXs, kYs>(out, bx, by, u_px, v_px, store);
    return;
  }
  int u_left[2] = {0, 0}, v_left[2] = {0, 0};
  if (left != nullptr) {
    CO_UNROLL
    for (int dy = 0; dy < 2; ++dy) {
      Pixel p = left->px[dy][1];
      to_output<kDeep>(k, &p);
      u_left[dy] = p.c[1];
      v_left[dy] = p.c[2];
    }
  }
  block_chroma_cosited<kXs, kYs>(k, out, bx, by, u_px, v_px, u_left, v_left, store);
}

// The block's four pixels, read by the input's kind.
template <bool kDeep>
CO_HD void load_block(const ConvertCoefficients& k, const ImageAccess& in, int bx, int by,
                      Block* b) {
  switch (side_kind(k.in_family, k.in_side)) {
    case kSidePacked:
      load_packed<kDeep>(k, in, bx, by, b);
      break;
    case kSideGrey:
      load_grey<kDeep>(k, in, bx, by, b);
      break;
    case kSideYuv444:
      load_yuv<0, 0, kDeep>(k, in, bx, by, b);
      break;
    case kSideYuv422:
      load_yuv<1, 0, kDeep>(k, in, bx, by, b);
      break;
    default:
      load_yuv<1, 1, kDeep>(k, in, bx, by, b);
      break;
  }
}

// The output of block (bx, by); pixels beyond the picture are skipped (odd
// sizes). kDeep: when k.deep.
template <bool kDeep>
CO_HD void convert_block(const ConvertCoefficients& k, const ImageAccess& in,
                         const ImageAccess& out, int bx, int by) {
  Block b, left;
  load_block<kDeep>(k, in, bx, by, &b);
  // Co-sited chroma reaches the pixel left of the block.
  const bool reach_left = k.cosited_x && bx > 0;
  if (reach_left) load_block<kDeep>(k, in, bx - 1, by, &left);
  const Block* l = reach_left ? &left : nullptr;
  switch (side_kind(k.out_family, k.out_side)) {
    case kSidePacked:
      store_packed<kDeep>(k, in, out, bx, by, b);
      break;
    case kSideGrey:
      store_grey<kDeep>(k, in, out, bx, by, b);
      break;
    case kSideYuv444:
      store_yuv<0, 0, kDeep>(k, in, out, bx, by, b, l);
      break;
    case kSideYuv422:
      store_yuv<1, 0, kDeep>(k, in, out, bx, by, b, l);
      break;
    default:
      store_yuv<1, 1, kDeep>(k, in, out, bx, by, b, l);
      break;
  }
}

}  // namespace convert_math
}  // namespace cudaoverlap
