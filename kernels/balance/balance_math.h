// videobalance's per-sample arithmetic, shared by balance's CPU reference
// (balance.cpp) and its CUDA kernel for the formats beyond the first nine
// (balance.cu), and how balance finds the samples of any format (the
// components of the format table, in a form the device can read).
//
// Private to kernels/: CO_HD is __host__ __device__ under nvcc and nothing
// for the C++ compiler, so this header still builds without CUDA.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/video_format.h"

#ifdef __CUDACC__
#define CO_BALANCE_HD __host__ __device__ __forceinline__
#else
#define CO_BALANCE_HD inline
#endif

namespace cudaoverlap {
namespace balance_math {

CO_BALANCE_HD int clamp255(int v) { return v < 0 ? 0 : (v > 255 ? 255 : v); }

// videobalance's 8-bit fixed-point BT.601 limited-range matrices, row by
// row (>> on a negative int is an arithmetic shift with GCC, Clang and
// nvcc, as in videobalance's C).
CO_BALANCE_HD int rgb_to_yuv(int row, int r, int g, int b) {
  switch (row) {
    case 0:
      return (66 * r + 129 * g + 25 * b + 4096) >> 8;
    case 1:
      return (-38 * r - 74 * g + 112 * b + 32768) >> 8;
    default:
      return (112 * r - 94 * g - 18 * b + 32768) >> 8;
  }
}
CO_BALANCE_HD int yuv_to_rgb(int row, int y, int u, int v) {
  switch (row) {
    case 0:
      return (298 * y + 409 * v - 57068) >> 8;
    case 1:
      return (298 * y - 100 * u - 208 * v + 34707) >> 8;
    default:
      return (298 * y + 516 * u - 70870) >> 8;
  }
}

// Where a format's samples are.
struct Layout {
  bool rgb = false;          // packed RGB (3- or 4-byte pixels)
  bool chroma = false;       // YUV: has U and V
  int pixel_stride = 4;      // packed RGB
  int rgb_offset[3] = {};    // packed RGB: bytes of R, G and B
  int plane[3] = {0, 1, 2};  // luma or grey, U, V
  int offset[3] = {};
  int step[3] = {1, 1, 1};
  int x_sub = 0, y_sub = 0;  // of U and V
};

inline Layout layout_of(PixelFormat format) {
  const FormatInfo& info = format_info(format);
  Layout l;
  l.rgb = !info.is_yuv && info.n_components >= 3;
  l.chroma = info.is_yuv;
  l.pixel_stride = info.comp[0].pixel_stride;
  for (int c = 0; c < 3 && c < info.n_components; ++c) {
    l.rgb_offset[c] = info.comp[c].offset;
    l.plane[c] = info.comp[c].plane;
    l.offset[c] = info.comp[c].offset;
    l.step[c] = info.comp[c].pixel_stride;
  }
  if (l.chroma) l.x_sub = info.comp[1].x_sub, l.y_sub = info.comp[1].y_sub;
  return l;
}

// One RGB pixel through the luma table and the chroma table of its YUV:
// videobalance's packed-RGB path. `chroma(index)` gives the table's (u', v')
// (u' low byte, v' high byte) for index u * 256 + v.
template <typename Chroma>
CO_BALANCE_HD void balance_rgb(const uint8_t* table_y, const Chroma& chroma, uint8_t* r, uint8_t* g,
                               uint8_t* b) {
  const int y = clamp255(rgb_to_yuv(0, *r, *g, *b));
  const int u = clamp255(rgb_to_yuv(1, *r, *g, *b));
  const int v = clamp255(rgb_to_yuv(2, *r, *g, *b));
  const uint32_t uv = chroma(u * 256 + v);
  const int y1 = table_y[y], u1 = static_cast<int>(uv & 0xFF), v1 = static_cast<int>(uv >> 8);
  *r = static_cast<uint8_t>(clamp255(yuv_to_rgb(0, y1, u1, v1)));
  *g = static_cast<uint8_t>(clamp255(yuv_to_rgb(1, y1, u1, v1)));
  *b = static_cast<uint8_t>(clamp255(yuv_to_rgb(2, y1, u1, v1)));
}

// Samples of component c (0 luma, 1 chroma) in a row of a picture `width`
// wide: the second luma of an odd-width YUY2 row's last pair is no pixel,
// and videobalance leaves it as it came.
inline int samples_per_row(const Layout& l, int c, int width) {
  const int sub = c == 0 ? 0 : l.x_sub;
  return (width + (1 << sub) - 1) >> sub;
}

}  // namespace balance_math
}  // namespace cudaoverlap
