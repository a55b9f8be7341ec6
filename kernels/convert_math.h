// The per-pixel-block arithmetic of the `convert` kernel, shared by its CPU
// reference (convert.cpp) and its CUDA kernel (convert.cu) so the two
// agree to the byte; its agreement with videoconvert is tested on real
// pipelines (tests/kernels/test_vs_gstreamer.cpp).
//
// Private to kernels/: CO_HD is __host__ __device__ under nvcc and nothing
// for the C++ compiler, so this header still builds without CUDA. Not
// included by any public header.
#pragma once

#include <cstdint>

#include "convert.h"

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

// Sample `component` (0 Y, 1 U, 2 V) of a YUV side at sample position
// (sx, sy) of its own grid.
CO_HD int sample_at(const ConvertSide& side, const ImageRef& image, int component, int sx, int sy) {
  const PlaneRef plane = plane_of(image, side.plane[component]);
  return plane.data[static_cast<size_t>(sy) * plane.stride + side.offset[component] +
                    static_cast<size_t>(sx) * side.step[component]];
}

// Chroma of a YUV input at picture position (x, y), along each subsampled
// axis as k.chroma_x / k.chroma_y say: the nearest sample, or videoconvert's
// 3:1 interpolation with the neighbouring sample (horizontal, then
// vertical, each rounded).
CO_HD int chroma_at(const ConvertCoefficients& k, const ImageRef& in, int component, int x, int y) {
  const ConvertSide& side = k.in_side;
  const int cw = (in.width + (1 << side.x_sub) - 1) >> side.x_sub;
  const int ch = (in.height + (1 << side.y_sub) - 1) >> side.y_sub;
  const int cx = x >> side.x_sub, cy = y >> side.y_sub;
  const bool lx = k.chroma_x == kUpLinear && side.x_sub == 1;
  const bool ly = k.chroma_y == kUpLinear && side.y_sub == 1;
  const int cx2 = lx ? clamp_index((x & 1) ? cx + 1 : cx - 1, cw) : cx;
  const int cy2 = ly ? clamp_index((y & 1) ? cy + 1 : cy - 1, ch) : cy;
  auto row = [&](int sy) {
    const int a = sample_at(side, in, component, cx, sy);
    return lx ? mix31(a, sample_at(side, in, component, cx2, sy)) : a;
  };
  const int first = row(cy);
  return ly ? mix31(first, row(cy2)) : first;
}

// --- videoconvert's planar fast paths between two YUV formats
// (convert_scale_planes): luma is copied and each chroma plane is scaled
// on its own from the input's chroma grid (iw x ih) to the output's
// (ow x oh) by GStreamer's 2-tap linear scaler, with its fixed-point rules.

// The vertical scaler's taps for output row j: rows i and i + 1, the
// second weighted p / 256 (half-pixel centres, clamped at the edges,
// weights rounded to 8 bits). ih >= 2.
CO_HD void vertical_tap(int ih, int oh, int j, int* i, int* p) {
  const int num = (2 * j + 1) * ih - oh, den = 2 * oh;
  if (num <= 0) {
    *i = 0, *p = 0;
    return;
  }
  *i = num / den;
  const int rem = num % den;
  if (*i >= ih - 1) {
    *i = ih - 2, *p = 256;
    return;
  }
  const int q2 = 512 * rem;
  if (q2 % den == 0 && (q2 / den) % 2 == 1)  // an exact half: the larger tap rounds up
    *p = q2 / den / 2 + (2 * rem > den ? 1 : 0);
  else
    *p = (q2 + den) / (2 * den);
}

// The horizontal scaler's step for output sample j: samples i and i + 1,
// the second weighted a / 256 (ends on ends, truncated). iw >= 2.
CO_HD void horizontal_tap(int iw, int ow, int j, int* i, int* a) {
  const int inc = ow == 1 ? 0 : ((iw - 1) << 16) / (ow - 1) - 1;
  const int t = j * inc;
  *i = t >> 16, *a = (t >> 8) & 255;
}

CO_HD int average(int a, int b) { return (a + b + 1) >> 1; }

// Output chroma sample (sx, sy) of `component` scaled from the input's
// chroma plane.
CO_HD int scaled_chroma(const ConvertCoefficients& k, const ImageRef& in, const ImageRef& out,
                        int component, int sx, int sy) {
  const ConvertSide &is = k.in_side, &os = k.out_side;
  const int iw = (in.width + (1 << is.x_sub) - 1) >> is.x_sub;
  const int ih = (in.height + (1 << is.y_sub) - 1) >> is.y_sub;
  const int ow = (out.width + (1 << os.x_sub) - 1) >> os.x_sub;
  const int oh = (out.height + (1 << os.y_sub) - 1) >> os.y_sub;
  auto at = [&](int x, int y) { return sample_at(is, in, component, x, y); };
  // Exact halvings of planar planes take the averaging shortcuts.
  const bool hh = k.scale_planar && iw == 2 * ow, vh = k.scale_planar && ih == 2 * oh;
  auto h_scaled = [&](int y) {  // row y of the input scaled across
    if (iw == ow) return at(sx, y);
    if (iw == 1) return at(0, y);
    int i, a;
    horizontal_tap(iw, ow, sx, &i, &a);
    return (at(i, y) * (256 - a) + (a ? at(i + 1, y) : 0) * a) >> 8;
  };
  auto v_scaled = [&](int x) {  // column x of the input scaled down
    if (ih == oh) return at(x, sy);
    if (ih == 1) return at(x, 0);
    int i, p;
    vertical_tap(ih, oh, sy, &i, &p);
    return (at(x, i) * (256 - p) + at(x, i + 1) * p + 128) >> 8;
  };
  if (iw == ow) return vh ? average(at(sx, 2 * sy), at(sx, 2 * sy + 1)) : v_scaled(sx);
  if (ih == oh) return hh ? average(at(2 * sx, sy), at(2 * sx + 1, sy)) : h_scaled(sy);
  if (hh && vh)
    return average(average(at(2 * sx, 2 * sy), at(2 * sx, 2 * sy + 1)),
                   average(at(2 * sx + 1, 2 * sy), at(2 * sx + 1, 2 * sy + 1)));
  // Both axes by the scaler, in the order GStreamer's 2-D scaler picks.
  int last = 0, unused;
  if (ih > 1) vertical_tap(ih, oh, oh - 1, &last, &unused);
  if (last <= oh) {  // across first, then down
    if (ih == 1) return h_scaled(0);
    int i, p;
    vertical_tap(ih, oh, sy, &i, &p);
    return (h_scaled(i) * (256 - p) + h_scaled(i + 1) * p + 128) >> 8;
  }
  if (iw == 1) return v_scaled(0);
  int i, a;
  horizontal_tap(iw, ow, sx, &i, &a);
  return (v_scaled(i) * (256 - a) + (a ? v_scaled(i + 1) : 0) * a) >> 8;
}

// Pixel (x, y) of the input.
CO_HD Pixel load(const ConvertCoefficients& k, const ImageRef& in, int x, int y) {
  Pixel p;
  switch (k.in_family) {
    case kPacked: {
      const uint8_t* s = in.planes[0].data + static_cast<size_t>(y) * in.planes[0].stride +
                         static_cast<size_t>(x) * k.in_side.pixel_stride;
      p.c[0] = s[k.in_offsets[0]];
      p.c[1] = s[k.in_offsets[1]];
      p.c[2] = s[k.in_offsets[2]];
      p.a = k.in_offsets[3] >= 0 ? s[k.in_offsets[3]] : 255;
      return p;
    }
    case kGrey:
      p.c[0] = in.planes[0].data[static_cast<size_t>(y) * in.planes[0].stride + x];
      p.c[1] = p.c[2] = 128;
      p.a = 255;
      return p;
    default:
      p.c[0] = sample_at(k.in_side, in, 0, x, y);
      p.c[1] = chroma_at(k, in, 1, x, y);
      p.c[2] = chroma_at(k, in, 2, x, y);
      p.a = 255;
      return p;
  }
}

CO_HD void store_sample(const ConvertSide& side, const ImageRef& out, int component, int sx, int sy,
                        int value) {
  const PlaneRef plane = plane_of(out, side.plane[component]);
  plane.data[static_cast<size_t>(sy) * plane.stride + side.offset[component] +
             static_cast<size_t>(sx) * side.step[component]] = static_cast<uint8_t>(value);
}

// The chroma samples the output's grid has in block (bx, by) (1, 2 or 4,
// fewer at the picture's edge), each the block's per-pixel chroma u_px,
// v_px ([row][column]) averaged in pairs, rounding up, across and then down
// where the output subsamples; emit(sx, sy, u, v) stores one.
template <typename Emit>
CO_HD void block_chroma(const ConvertSide& os, const ImageRef& out, int bx, int by,
                        const int (&u_px)[2][2], const int (&v_px)[2][2], const Emit& emit) {
  // px[r][c] with r and c chosen, not indexed (see plane_of).
  auto pick = [](const int(&px)[2][2], int r, int c) {
    return r ? (c ? px[1][1] : px[1][0]) : (c ? px[0][1] : px[0][0]);
  };
  const int nx = os.x_sub ? 1 : 2, ny = os.y_sub ? 1 : 2;
  CO_UNROLL
  for (int j = 0; j < 2; ++j) CO_UNROLL
  for (int i = 0; i < 2; ++i) {
    if (j >= ny || i >= nx) continue;
    const int sx = (2 * bx >> os.x_sub) + i, sy = (2 * by >> os.y_sub) + j;
    if ((sx << os.x_sub) >= out.width || (sy << os.y_sub) >= out.height) continue;
    int u[2], v[2];  // per row
    CO_UNROLL
    for (int r = 0; r < 2; ++r) {
      const int row = ny == 2 ? j : r;
      u[r] = nx == 2 ? pick(u_px, row, i) : average(pick(u_px, row, 0), pick(u_px, row, 1));
      v[r] = nx == 2 ? pick(v_px, row, i) : average(pick(v_px, row, 0), pick(v_px, row, 1));
    }
    emit(sx, sy, ny == 2 ? u[0] : average(u[0], u[1]), ny == 2 ? v[0] : average(v[0], v[1]));
  }
}

// The output of one 2x2 block of the picture whose top-left pixel is
// (2 * bx, 2 * by); pixels beyond the picture are skipped (odd sizes).
CO_HD void convert_block(const ConvertCoefficients& k, const ImageRef& in, const ImageRef& out,
                         int bx, int by) {
  const ConvertSide& os = k.out_side;
  // Per row of the block: U and V of each pixel, then (4:2:x output)
  // the pair averaged rounding up, as videoconvert downsamples.
  int u_px[2][2] = {{128, 128}, {128, 128}}, v_px[2][2] = {{128, 128}, {128, 128}};
  CO_UNROLL
  for (int dy = 0; dy < 2; ++dy) {
    const int y = clamp_index(2 * by + dy, in.height);
    CO_UNROLL
    for (int dx = 0; dx < 2; ++dx) {
      const int x = clamp_index(2 * bx + dx, in.width);
      const Pixel p = load(k, in, x, y);
      const bool inside = 2 * bx + dx < in.width && 2 * by + dy < in.height;
      if (k.out_family == kPacked) {
        int r = p.c[0], g = p.c[1], b = p.c[2];
        if (k.in_family == kYuv || k.grey_matrix) yuv_to_rgb(k, p.c[0], p.c[1], p.c[2], &r, &g, &b);
        if (k.in_family == kGrey && !k.grey_matrix) g = b = r;
        if (inside) {
          uint8_t* d = out.planes[0].data + static_cast<size_t>(y) * out.planes[0].stride +
                       static_cast<size_t>(x) * os.pixel_stride;
          d[k.out_offsets[0]] = static_cast<uint8_t>(r);
          d[k.out_offsets[1]] = static_cast<uint8_t>(g);
          d[k.out_offsets[2]] = static_cast<uint8_t>(b);
          if (k.out_offsets[3] >= 0) d[k.out_offsets[3]] = static_cast<uint8_t>(p.a);
        }
        continue;
      }
      // Grey or YUV output: luma first.
      int luma = p.c[0];
      int u = p.c[1], v = p.c[2];
      if (k.in_family == kPacked && k.rgb_matrix8) {
        luma = matrix8(k.matrix8[0], p.c[0], p.c[1], p.c[2]);
        u = matrix8(k.matrix8[1], p.c[0], p.c[1], p.c[2]);
        v = matrix8(k.matrix8[2], p.c[0], p.c[1], p.c[2]);
      } else if (k.in_family == kPacked) {
        luma = rgb_to(k.to_yuv[0], p.c[0], p.c[1], p.c[2]);
        u = rgb_to(k.to_yuv[1], p.c[0], p.c[1], p.c[2]);
        v = rgb_to(k.to_yuv[2], p.c[0], p.c[1], p.c[2]);
      }
      // A packed 4:2:2 row of odd width ends in a pair whose second luma is
      // past the picture: it repeats the last pixel, as the others do.
      const bool pair_luma = os.x_sub == 1 && os.plane[0] == os.plane[1] &&
                             2 * bx + dx < ((in.width + 1) & ~1) && 2 * by + dy < in.height;
      if (!inside && !(k.out_family == kYuv && pair_luma)) {
        // A clamped pixel's chroma still counts below.
      } else if (k.out_family == kGrey) {
        out.planes[0].data[static_cast<size_t>(y) * out.planes[0].stride + x] =
            static_cast<uint8_t>(luma);
      } else {
        store_sample(os, out, 0, 2 * bx + dx, y, luma);
      }
      u_px[dy][dx] = u;
      v_px[dy][dx] = v;
    }
  }
  if (k.out_family != kYuv) return;
  block_chroma(os, out, bx, by, u_px, v_px, [&](int sx, int sy, int u, int v) {
    if (k.scale_planes) {
      u = scaled_chroma(k, in, out, 1, sx, sy);
      v = scaled_chroma(k, in, out, 2, sx, sy);
    }
    store_sample(os, out, 1, sx, sy, u);
    store_sample(os, out, 2, sx, sy, v);
  });
}

// --- Sides deeper than 8 bits: the same block, on 16-bit samples.

CO_HD int clamp16(int64_t v) { return v < 0 ? 0 : (v > 65535 ? 65535 : static_cast<int>(v)); }

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

CO_HD void pack16(const ConvertSide& side, uint8_t* at, int v) {
  if (side.sample_bytes == 1) {
    at[0] = static_cast<uint8_t>(v >> 8);
    return;
  }
  const int w = side.depth == 16 ? v : (side.shift == 6 ? v & 0xFFC0 : v >> 6);
  at[0] = static_cast<uint8_t>(w);
  at[1] = static_cast<uint8_t>(w >> 8);
}

CO_HD uint8_t* sample_ptr(const ConvertSide& side, const ImageRef& image, int component, int sx,
                          int sy) {
  const PlaneRef plane = plane_of(image, side.plane[component]);
  return plane.data + static_cast<size_t>(sy) * plane.stride + side.offset[component] +
         static_cast<size_t>(sx) * side.step[component];
}

CO_HD int mix31_16(int a, int b) { return (3 * a + b + 2) >> 2; }

CO_HD int chroma16_at(const ConvertCoefficients& k, const ImageRef& in, int component, int x,
                      int y) {
  const ConvertSide& side = k.in_side;
  const int cw = (in.width + (1 << side.x_sub) - 1) >> side.x_sub;
  const int ch = (in.height + (1 << side.y_sub) - 1) >> side.y_sub;
  const int cx = x >> side.x_sub, cy = y >> side.y_sub;
  const bool lx = k.chroma_x == kUpLinear && side.x_sub == 1;
  const bool ly = k.chroma_y == kUpLinear && side.y_sub == 1;
  const int cx2 = lx ? clamp_index((x & 1) ? cx + 1 : cx - 1, cw) : cx;
  const int cy2 = ly ? clamp_index((y & 1) ? cy + 1 : cy - 1, ch) : cy;
  auto at = [&](int sx, int sy) { return unpack16(side, sample_ptr(side, in, component, sx, sy)); };
  auto row = [&](int sy) { return lx ? mix31_16(at(cx, sy), at(cx2, sy)) : at(cx, sy); };
  const int first = row(cy);
  return ly ? mix31_16(first, row(cy2)) : first;
}

CO_HD Pixel load16(const ConvertCoefficients& k, const ImageRef& in, int x, int y) {
  Pixel p;
  p.a = 65535;
  switch (k.in_family) {
    case kPacked: {
      const uint8_t* s = in.planes[0].data + static_cast<size_t>(y) * in.planes[0].stride +
                         static_cast<size_t>(x) * k.in_side.pixel_stride;
      for (int c = 0; c < 3; ++c) p.c[c] = s[k.in_offsets[c]] * 257;
      if (k.in_offsets[3] >= 0) p.a = s[k.in_offsets[3]] * 257;
      return p;
    }
    case kGrey:
      p.c[0] = unpack16(k.in_side, sample_ptr(k.in_side, in, 0, x, y));
      p.c[1] = p.c[2] = 32768;
      return p;
    default:
      p.c[0] = unpack16(k.in_side, sample_ptr(k.in_side, in, 0, x, y));
      p.c[1] = chroma16_at(k, in, 1, x, y);
      p.c[2] = chroma16_at(k, in, 2, x, y);
      return p;
  }
}

// The 2x2 block (2 * bx, 2 * by) with a side deeper than 8 bits; laid out
// as convert_block.
CO_HD void convert_block16(const ConvertCoefficients& k, const ImageRef& in, const ImageRef& out,
                           int bx, int by) {
  const ConvertSide& os = k.out_side;
  int u_px[2][2] = {{32768, 32768}, {32768, 32768}}, v_px[2][2] = {{32768, 32768}, {32768, 32768}};
  CO_UNROLL
  for (int dy = 0; dy < 2; ++dy) {
    const int y = clamp_index(2 * by + dy, in.height);
    CO_UNROLL
    for (int dx = 0; dx < 2; ++dx) {
      const int x = clamp_index(2 * bx + dx, in.width);
      const Pixel p = load16(k, in, x, y);
      const bool inside = 2 * bx + dx < in.width && 2 * by + dy < in.height;
      if (k.out_family == kPacked) {
        int r = p.c[0], g = p.c[1], b = p.c[2];
        if (k.in_family == kYuv) {
          const int yy = p.c[0] - k.to_rgb_y_offset16, u = p.c[1] - 32768, v = p.c[2] - 32768;
          r = clamp16((k.to_rgb[0] * yy + k.to_rgb[1] * v) >> 8);
          b = clamp16((k.to_rgb[0] * yy + k.to_rgb[2] * u) >> 8);
          g = clamp16((k.to_rgb[0] * yy + k.to_rgb[3] * u + k.to_rgb[4] * v) >> 8);
        }
        if (k.in_family == kGrey) g = b = r;
        if (inside) {
          uint8_t* d = out.planes[0].data + static_cast<size_t>(y) * out.planes[0].stride +
                       static_cast<size_t>(x) * os.pixel_stride;
          d[k.out_offsets[0]] = static_cast<uint8_t>(r >> 8);
          d[k.out_offsets[1]] = static_cast<uint8_t>(g >> 8);
          d[k.out_offsets[2]] = static_cast<uint8_t>(b >> 8);
          if (k.out_offsets[3] >= 0) d[k.out_offsets[3]] = static_cast<uint8_t>(p.a >> 8);
        }
        continue;
      }
      int luma = p.c[0], u = p.c[1], v = p.c[2];
      if (k.in_family == kPacked) {
        int yuv[3];
        for (int row = 0; row < 3; ++row)
          yuv[row] =
              clamp16((static_cast<int64_t>(k.to_yuv[row][0]) * p.c[0] +
                       static_cast<int64_t>(k.to_yuv[row][1]) * p.c[1] +
                       static_cast<int64_t>(k.to_yuv[row][2]) * p.c[2] + k.to_yuv_offset16[row]) >>
                      16);
        luma = yuv[0], u = yuv[1], v = yuv[2];
      }
      // As in convert_block: an odd-width packed 4:2:2 row's last pair
      // repeats the last pixel's luma.
      const bool pair_luma = os.x_sub == 1 && os.plane[0] == os.plane[1] &&
                             2 * bx + dx < ((in.width + 1) & ~1) && 2 * by + dy < in.height;
      if (inside || (k.out_family == kYuv && pair_luma))
        pack16(os, sample_ptr(os, out, 0, 2 * bx + dx, y), luma);
      u_px[dy][dx] = u;
      v_px[dy][dx] = v;
    }
  }
  if (k.out_family != kYuv) return;
  block_chroma(os, out, bx, by, u_px, v_px, [&](int sx, int sy, int u, int v) {
    pack16(os, sample_ptr(os, out, 1, sx, sy), u);
    pack16(os, sample_ptr(os, out, 2, sx, sy), v);
  });
}

}  // namespace convert_math
}  // namespace cudaoverlap
