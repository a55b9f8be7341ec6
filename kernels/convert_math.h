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

namespace cudaoverlap {
namespace convert_math {

enum Family : int { kPacked = 0, kGrey = 1, kYuv420 = 2 };

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
  int a;     // alpha or padding byte of packed input; 255 otherwise
};

// Chroma of a 4:2:0 input at picture position (x, y): the nearest sample
// (videoconvert's I420 fast paths), or the linear 3:1 interpolation its
// generic path uses for NV12 (horizontal, then vertical, each rounded).
CO_HD int chroma_at(const ConvertCoefficients& k, const ImageRef& in, int component, int x, int y) {
  const int cw = (in.width + 1) >> 1, ch = (in.height + 1) >> 1;
  const bool nv12 = in.format == PixelFormat::kNV12;
  const int plane = nv12 ? 1 : 1 + component;
  const int step = nv12 ? 2 : 1;
  const int offset = nv12 ? component : 0;
  auto sample = [&](int cx, int cy) {
    return static_cast<int>(
        in.planes[plane]
            .data[static_cast<size_t>(cy) * in.planes[plane].stride + cx * step + offset]);
  };
  const int cx = x >> 1, cy = y >> 1;
  if (!k.linear_chroma) return sample(cx, cy);
  const int cy2 = clamp_index((y & 1) ? cy + 1 : cy - 1, ch);
  const int cx2 = clamp_index((x & 1) ? cx + 1 : cx - 1, cw);
  const int row1 = mix31(sample(cx, cy), sample(cx2, cy));
  const int row2 = mix31(sample(cx, cy2), sample(cx2, cy2));
  return mix31(row1, row2);
}

CO_HD Pixel load(const ConvertCoefficients& k, const ImageRef& in, int x, int y) {
  Pixel p;
  const uint8_t* row0 = in.planes[0].data + static_cast<size_t>(y) * in.planes[0].stride;
  switch (k.in_family) {
    case kPacked: {
      const uint8_t* s = row0 + x * 4;
      p.c[0] = s[k.in_offsets[0]];
      p.c[1] = s[k.in_offsets[1]];
      p.c[2] = s[k.in_offsets[2]];
      p.a = s[k.in_offsets[3]];
      return p;
    }
    case kGrey:
      p.c[0] = row0[x];
      p.c[1] = p.c[2] = 128;
      p.a = 255;
      return p;
    default:
      p.c[0] = row0[x];
      p.c[1] = chroma_at(k, in, 0, x, y);
      p.c[2] = chroma_at(k, in, 1, x, y);
      p.a = 255;
      return p;
  }
}

// The output of one 2x2 block of the picture whose top-left pixel is
// (2 * bx, 2 * by); pixels beyond the picture are skipped (odd sizes).
CO_HD void convert_block(const ConvertCoefficients& k, const ImageRef& in, const ImageRef& out,
                         int bx, int by) {
  int u_sum[2] = {0, 0}, v_sum[2] = {0, 0};  // per row of the block, for 4:2:0 output
  for (int dy = 0; dy < 2; ++dy) {
    const int y = clamp_index(2 * by + dy, in.height);
    int row_u[2] = {0, 0}, row_v[2] = {0, 0};
    for (int dx = 0; dx < 2; ++dx) {
      const int x = clamp_index(2 * bx + dx, in.width);
      const Pixel p = load(k, in, x, y);
      const bool inside = 2 * bx + dx < in.width && 2 * by + dy < in.height;
      uint8_t* row = out.planes[0].data + static_cast<size_t>(y) * out.planes[0].stride;
      if (k.out_family == kPacked) {
        int r = p.c[0], g = p.c[1], b = p.c[2];
        int a = p.a;
        if (k.in_family == kYuv420) yuv_to_rgb(k, p.c[0], p.c[1], p.c[2], &r, &g, &b);
        if (k.in_family == kGrey) g = b = r;
        if (inside) {
          uint8_t* d = row + x * 4;
          d[k.out_offsets[0]] = static_cast<uint8_t>(r);
          d[k.out_offsets[1]] = static_cast<uint8_t>(g);
          d[k.out_offsets[2]] = static_cast<uint8_t>(b);
          d[k.out_offsets[3]] = static_cast<uint8_t>(a);
        }
        continue;
      }
      // Grey or 4:2:0 output: luma first.
      int luma = p.c[0];
      int u = 128, v = 128;
      if (k.in_family == kPacked) {
        luma = rgb_to(k.to_yuv[0], p.c[0], p.c[1], p.c[2]);
        u = rgb_to(k.to_yuv[1], p.c[0], p.c[1], p.c[2]);
        v = rgb_to(k.to_yuv[2], p.c[0], p.c[1], p.c[2]);
      }
      if (inside) row[x] = static_cast<uint8_t>(luma);
      row_u[dx] = u;
      row_v[dx] = v;
    }
    // videoconvert's chroma downsampling: pairs averaged rounding up,
    // horizontally then vertically.
    u_sum[dy] = (row_u[0] + row_u[1] + 1) >> 1;
    v_sum[dy] = (row_v[0] + row_v[1] + 1) >> 1;
  }
  if (k.out_family != kYuv420) return;
  int u = 128, v = 128;  // grey input: neutral chroma
  if (k.in_family == kPacked) {
    u = (u_sum[0] + u_sum[1] + 1) >> 1;
    v = (v_sum[0] + v_sum[1] + 1) >> 1;
  }
  if (k.in_family == kYuv420) {
    // Same subsampling on both sides: the input's samples, unfiltered.
    const bool nv12 = in.format == PixelFormat::kNV12;
    const uint8_t* su = in.planes[1].data + static_cast<size_t>(by) * in.planes[1].stride;
    const uint8_t* sv =
        in.planes[nv12 ? 1 : 2].data + static_cast<size_t>(by) * in.planes[nv12 ? 1 : 2].stride;
    u = nv12 ? su[bx * 2] : su[bx];
    v = nv12 ? sv[bx * 2 + 1] : sv[bx];
  }
  if (out.format == PixelFormat::kNV12) {
    uint8_t* d = out.planes[1].data + static_cast<size_t>(by) * out.planes[1].stride + bx * 2;
    d[0] = static_cast<uint8_t>(u);
    d[1] = static_cast<uint8_t>(v);
  } else {
    out.planes[1].data[static_cast<size_t>(by) * out.planes[1].stride + bx] =
        static_cast<uint8_t>(u);
    out.planes[2].data[static_cast<size_t>(by) * out.planes[2].stride + bx] =
        static_cast<uint8_t>(v);
  }
}

}  // namespace convert_math
}  // namespace cudaoverlap
