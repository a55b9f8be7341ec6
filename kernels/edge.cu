// CUDA implementation of the `edge` kernel (see edge.h).
//
// A block computes a 32x8 tile: it loads the luma of the tile and a 1-sample
// halo (clamped at the edges) into shared memory once, then every thread
// applies both Sobel kernels from there, so each input byte is read from
// device memory about once. Chroma planes are filled with 128 by
// cudaMemset2DAsync on the same stream.
#include <cuda_runtime.h>

#include <cstdint>

#include "balance.h"
#include "cuda_check.h"
#include "edge.h"
#include "error.h"

namespace cudaoverlap {
namespace {

constexpr int kTileX = 32;
constexpr int kTileY = 8;

struct EdgeLayout {
  int width, height;
  bool rgb;
  int r, g, b;  // byte offsets in packed RGB
};

__device__ __forceinline__ int luma_at(const uint8_t* src, size_t stride, const EdgeLayout& l,
                                       int x, int y) {
  x = x < 0 ? 0 : (x >= l.width ? l.width - 1 : x);
  y = y < 0 ? 0 : (y >= l.height ? l.height - 1 : y);
  const uint8_t* row = src + y * stride;
  if (!l.rgb) return row[x];
  const uint8_t* p = row + static_cast<size_t>(x) * 4;
  return (77 * p[l.r] + 150 * p[l.g] + 29 * p[l.b] + 128) >> 8;
}

__device__ __forceinline__ uint8_t magnitude(int gx, int gy) {
  const int n = gx * gx + gy * gy;
  int s = static_cast<int>(sqrt(static_cast<double>(n)));  // IEEE sqrt, then made exact
  while (s * s > n) --s;
  while ((s + 1) * (s + 1) <= n) ++s;
  return static_cast<uint8_t>(s < 255 ? s : 255);
}

__global__ void sobel_kernel(const uint8_t* __restrict__ src, size_t src_stride,
                             uint8_t* __restrict__ dst, size_t dst_stride, EdgeLayout l) {
  __shared__ int tile[kTileY + 2][kTileX + 2];
  const int x0 = blockIdx.x * kTileX, y0 = blockIdx.y * kTileY;
  const int tid = threadIdx.y * kTileX + threadIdx.x;
  for (int i = tid; i < (kTileX + 2) * (kTileY + 2); i += kTileX * kTileY) {
    const int tx = i % (kTileX + 2), ty = i / (kTileX + 2);
    tile[ty][tx] = luma_at(src, src_stride, l, x0 + tx - 1, y0 + ty - 1);
  }
  __syncthreads();
  const int x = x0 + threadIdx.x, y = y0 + threadIdx.y;
  if (x >= l.width || y >= l.height) return;
  const int tx = threadIdx.x + 1, ty = threadIdx.y + 1;
  const int gx = (tile[ty - 1][tx + 1] + 2 * tile[ty][tx + 1] + tile[ty + 1][tx + 1]) -
                 (tile[ty - 1][tx - 1] + 2 * tile[ty][tx - 1] + tile[ty + 1][tx - 1]);
  const int gy = (tile[ty + 1][tx - 1] + 2 * tile[ty + 1][tx] + tile[ty + 1][tx + 1]) -
                 (tile[ty - 1][tx - 1] + 2 * tile[ty - 1][tx] + tile[ty - 1][tx + 1]);
  const uint8_t m = magnitude(gx, gy);
  uint8_t* row = dst + y * dst_stride;
  if (!l.rgb) {
    row[x] = m;
    return;
  }
  // Alpha or padding from the input, the magnitude over R, G and B.
  const uint8_t* s = src + y * src_stride + static_cast<size_t>(x) * 4;
  uint8_t p[4] = {s[0], s[1], s[2], s[3]};
  p[l.r] = p[l.g] = p[l.b] = m;
  uint8_t* d = row + static_cast<size_t>(x) * 4;
  for (int c = 0; c < 4; ++c) d[c] = p[c];
}

}  // namespace

void edge_cuda(const ImageRef& in, const ImageRef& out, bool inject_launch_failure,
               CUstream_st* stream) {
  const FormatInfo& info = format_info(in.format);
  EdgeLayout l{in.width, in.height, !info.is_yuv && in.format != PixelFormat::kGRAY8, 0, 0, 0};
  if (l.rgb) rgb_byte_offsets(in.format, &l.r, &l.g, &l.b);
  dim3 grid((in.width + kTileX - 1) / kTileX, (in.height + kTileY - 1) / kTileY);
  if (grid.y > 65535) throw Error("edge: the image is too tall (more than 524,280 rows)");
  // An empty grid is an invalid configuration: CUDA reports it at launch.
  if (inject_launch_failure) grid.x = 0;
  sobel_kernel<<<grid, dim3(kTileX, kTileY), 0, stream>>>(
      in.planes[0].data, in.planes[0].stride, out.planes[0].data, out.planes[0].stride, l);
  CO_CUDA_CHECK_LAUNCH("the edge kernel");
  for (int p = 1; p < info.n_planes; ++p)
    CO_CUDA_CHECK(cudaMemset2DAsync(out.planes[p].data, out.planes[p].stride, 128,
                                    plane_row_bytes(in.format, p, in.width),
                                    plane_rows(in.format, p, in.height), stream));
}

}  // namespace cudaoverlap
