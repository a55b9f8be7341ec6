// `flip` on packed 4:2:2 (YUY2, UYVY), shared by its CPU reference
// (flip.cpp) and its CUDA kernel (flip.cu), so the two agree to the byte.
//
// videoflip 1.22 (gst_video_flip_y422), pair by pair of the output: each
// luma sample comes from the input pixel the direction maps it to; the
// pair's chroma from the input pair holding the first pixel's source. Where
// a direction turns the picture, the output pair's two pixels come from two
// input rows, and its chroma is their two samples averaged (rounding down);
// a last pair of one pixel (odd output width) takes its one sample. The
// second luma of that last pair is past the picture: it repeats the first
// (videoflip leaves whatever the buffer held there). Identity is a copy.
//
// Private to kernels/.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/kernel_params.h"
#include "kernels/video_format.h"

#ifdef __CUDACC__
#define CO_FLIP_HD __host__ __device__ __forceinline__
#else
#define CO_FLIP_HD inline
#endif

namespace cudaoverlap {
namespace flip_math {

// Output pair starting at column x (even) of row y; y_off, u_off and v_off
// are the format's component offsets within a pair's 4 bytes.
CO_FLIP_HD void flip_y422_pair(const ImageRef& in, const ImageRef& out, FlipDirection d, int y_off,
                               int u_off, int v_off, int x, int y) {
  const int sw = in.width, sh = in.height, dw = out.width;
  const bool second = x + 1 < dw;
  // Input (row, column) of output pixels x and x + 1, and the input
  // column whose pair holds the chroma.
  int r0 = y, c0 = x, r1 = y, c1 = x + 1, chroma_col = x;
  bool turned = false;
  switch (d) {
    case FlipDirection::k90R:
      r0 = sh - 1 - x, r1 = sh - 2 - x, c0 = c1 = chroma_col = y, turned = true;
      break;
    case FlipDirection::k90L:
      r0 = x, r1 = x + 1, c0 = c1 = chroma_col = sw - 1 - y, turned = true;
      break;
    case FlipDirection::kUlLr:
      r0 = x, r1 = x + 1, c0 = c1 = chroma_col = y, turned = true;
      break;
    case FlipDirection::kUrLl:
      r0 = sh - 1 - x, r1 = sh - 2 - x, c0 = c1 = chroma_col = sw - 1 - y, turned = true;
      break;
    case FlipDirection::k180:
      r0 = r1 = sh - 1 - y, c0 = chroma_col = sw - 1 - x, c1 = sw - 2 - x;
      break;
    case FlipDirection::kHoriz:
      c0 = chroma_col = sw - 1 - x, c1 = sw - 2 - x;
      break;
    case FlipDirection::kVert:
      r0 = r1 = sh - 1 - y;
      break;
    default:
      break;
  }
  const uint8_t* s = in.planes[0].data;
  const size_t ss = in.planes[0].stride;
  auto at = [&](int row, size_t byte) { return s[static_cast<size_t>(row) * ss + byte]; };
  const size_t pair = static_cast<size_t>(chroma_col & ~1) * 2;
  int u = at(r0, pair + u_off), v = at(r0, pair + v_off);
  if (turned && second) {
    u = (u + at(r1, pair + u_off)) >> 1;
    v = (v + at(r1, pair + v_off)) >> 1;
  }
  const int y0 = at(r0, static_cast<size_t>(c0) * 2 + y_off);
  const int y1 = second ? at(r1, static_cast<size_t>(c1) * 2 + y_off) : y0;
  uint8_t* d8 = out.planes[0].data + static_cast<size_t>(y) * out.planes[0].stride +
                static_cast<size_t>(x) * 2;
  d8[y_off] = static_cast<uint8_t>(y0);
  d8[y_off + 2] = static_cast<uint8_t>(y1);
  d8[u_off] = static_cast<uint8_t>(u);
  d8[v_off] = static_cast<uint8_t>(v);
}

}  // namespace flip_math
}  // namespace cudaoverlap
