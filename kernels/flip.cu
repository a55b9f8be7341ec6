// CUDA implementation of the `flip` kernel (see flip.h).
//
// Every direction maps an axis-aligned square of the output onto an
// axis-aligned square of the input, so one tiled kernel serves all eight: a
// block reads its 32x32 source tile row by row into shared memory (coalesced)
// and writes its output tile row by row (coalesced), doing the rearrangement
// in shared memory. A naive gather would read columns for the 90-degree
// directions and waste most of every memory transaction.
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda_check.h"
#include "error.h"
#include "flip.h"

namespace cudaoverlap {
namespace {

constexpr int kTile = 32;
constexpr int kRowsPerPass = 8;  // block of 32x8 threads, 4 rows each

// A pixel group of N bytes with byte alignment, for planes whose pointers or
// strides do not allow the natural word type.
template <int N>
struct Bytes {
  uint8_t b[N];
};

struct FlipGeometry {
  int in_w, in_h, out_w, out_h;  // in pixel groups
  int direction;                 // FlipDirection
};

// Source coordinates of output pixel (x, y); the same table as flip_ref.cpp.
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

template <typename T>
__global__ void flip_plane_kernel(const uint8_t* __restrict__ src, size_t src_stride,
                                  uint8_t* __restrict__ dst, size_t dst_stride, FlipGeometry g) {
  __shared__ T tile[kTile][kTile + 1];  // +1: no bank conflicts on column reads
  const int ox0 = blockIdx.x * kTile;
  const int oy0 = blockIdx.y * kTile;
  // The source tile is the image of the whole (unclipped) output tile: the
  // smaller coordinates of two opposite corners.
  int ax, ay, bx, by;
  source_of(g, ox0, oy0, &ax, &ay);
  source_of(g, ox0 + kTile - 1, oy0 + kTile - 1, &bx, &by);
  const int sx0 = min(ax, bx);
  const int sy0 = min(ay, by);

  for (int ly = threadIdx.y; ly < kTile; ly += kRowsPerPass) {
    const int sx = sx0 + threadIdx.x;
    const int sy = sy0 + ly;
    if (sx >= 0 && sx < g.in_w && sy >= 0 && sy < g.in_h)
      tile[ly][threadIdx.x] =
          reinterpret_cast<const T*>(src + static_cast<size_t>(sy) * src_stride)[sx];
  }
  __syncthreads();
  for (int ly = threadIdx.y; ly < kTile; ly += kRowsPerPass) {
    const int x = ox0 + threadIdx.x;
    const int y = oy0 + ly;
    if (x >= g.out_w || y >= g.out_h) continue;
    int sx, sy;
    source_of(g, x, y, &sx, &sy);
    reinterpret_cast<T*>(dst + static_cast<size_t>(y) * dst_stride)[x] = tile[sy - sy0][sx - sx0];
  }
}

bool aligned_to(const void* p, size_t stride, size_t n) {
  return reinterpret_cast<uintptr_t>(p) % n == 0 && stride % n == 0;
}

template <typename Word, typename Unaligned>
void launch_plane(const PlaneRef& in, const PlaneRef& out, size_t n, const FlipGeometry& g,
                  bool inject_launch_failure, cudaStream_t stream) {
  dim3 grid((g.out_w + kTile - 1) / kTile, (g.out_h + kTile - 1) / kTile);
  if (grid.y > 65535) throw Error("flip: the image is too tall (more than 2,097,120 rows)");
  // An empty grid is an invalid configuration: CUDA reports it at launch.
  if (inject_launch_failure) grid.x = 0;
  const dim3 block(kTile, kRowsPerPass);
  if (aligned_to(in.data, in.stride, n) && aligned_to(out.data, out.stride, n))
    flip_plane_kernel<Word>
        <<<grid, block, 0, stream>>>(in.data, in.stride, out.data, out.stride, g);
  else
    flip_plane_kernel<Unaligned>
        <<<grid, block, 0, stream>>>(in.data, in.stride, out.data, out.stride, g);
  CO_CUDA_CHECK_LAUNCH("the flip kernel");
}

}  // namespace

void flip_cuda(const ImageRef& in, const ImageRef& out, FlipDirection direction,
               bool inject_launch_failure, CUstream_st* stream) {
  const FormatInfo& info = format_info(in.format);
  for (int p = 0; p < info.n_planes; ++p) {
    const size_t n = static_cast<size_t>(info.pixel_bytes[p]);
    FlipGeometry g;
    g.in_w = static_cast<int>(plane_row_bytes(in.format, p, in.width) / n);
    g.in_h = static_cast<int>(plane_rows(in.format, p, in.height));
    g.out_w = static_cast<int>(plane_row_bytes(out.format, p, out.width) / n);
    g.out_h = static_cast<int>(plane_rows(out.format, p, out.height));
    g.direction = static_cast<int>(direction);
    if (g.out_w == 0 || g.out_h == 0) continue;
    switch (n) {
      case 1:
        launch_plane<uint8_t, uint8_t>(in.planes[p], out.planes[p], n, g, inject_launch_failure,
                                       stream);
        break;
      case 2:
        launch_plane<uint16_t, Bytes<2>>(in.planes[p], out.planes[p], n, g, inject_launch_failure,
                                         stream);
        break;
      default:
        launch_plane<uint32_t, Bytes<4>>(in.planes[p], out.planes[p], n, g, inject_launch_failure,
                                         stream);
        break;
    }
  }
}

}  // namespace cudaoverlap
