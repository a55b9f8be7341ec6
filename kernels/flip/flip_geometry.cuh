// Where an output pixel of `flip` comes from, for the kernels that move
// whole pixels (flip.cu's plane kernel, flip_rgb24.cu), and the alignment
// test their launchers share. Internal to flip.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace cudaoverlap {
namespace flip_detail {

struct FlipGeometry {
  int in_w, in_h, out_w, out_h;  // in pixel groups
  int direction;                 // FlipDirection
};

// Source coordinates of output pixel (x, y); the same table as flip.cpp.
__device__ __forceinline__ void source_of(const FlipGeometry& g, int x, int y, int* sx, int* sy) {
  switch (g.direction) {
    case 1:  // 90R
      *sx = y;
      *sy = g.in_h - 1 - x;
      return;
    case 2:  // 180
      *sx = g.in_w - 1 - x;
      *sy = g.in_h - 1 - y;
      return;
    case 3:  // 90L
      *sx = g.in_w - 1 - y;
      *sy = x;
      return;
    case 4:  // horiz
      *sx = g.in_w - 1 - x;
      *sy = y;
      return;
    case 5:  // vert
      *sx = x;
      *sy = g.in_h - 1 - y;
      return;
    case 6:  // ul-lr
      *sx = y;
      *sy = x;
      return;
    case 7:  // ur-ll
      *sx = g.in_w - 1 - y;
      *sy = g.in_h - 1 - x;
      return;
    default:
      *sx = x;
      *sy = y;
      return;
  }
}

// The source tile of the output tile of `tile` x `tile` pixels at (ox0,
// oy0), unclipped: its smaller coordinates, from two opposite corners.
__device__ __forceinline__ int2 source_tile(const FlipGeometry& g, int ox0, int oy0, int tile) {
  int ax, ay, bx, by;
  source_of(g, ox0, oy0, &ax, &ay);
  source_of(g, ox0 + tile - 1, oy0 + tile - 1, &bx, &by);
  return make_int2(min(ax, bx), min(ay, by));
}

inline bool aligned_to(const void* p, size_t stride, size_t n) {
  return reinterpret_cast<uintptr_t>(p) % n == 0 && stride % n == 0;
}

}  // namespace flip_detail
}  // namespace cudaoverlap
