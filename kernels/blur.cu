// CUDA implementation of the `blur` kernel (see blur.h).
//
// One block makes a 32x32 tile of one channel of one plane in a single
// launch: it reads the tile plus a halo of `radius` samples on each side
// into shared memory (clamping at the image edges), runs the horizontal pass
// into a second shared array, then the vertical pass. Keeping the
// intermediate on chip avoids a device-memory temporary, which the engine
// could not allocate per frame anyway (no cudaMalloc after start). The
// integer arithmetic is the reference's, operation for operation.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "blur.h"
#include "cuda_check.h"
#include "error.h"

namespace cudaoverlap {
namespace {

constexpr int kTile = 32;
constexpr int kThreads = 256;

__device__ __forceinline__ int clamp_to(int v, int hi) { return v < 0 ? 0 : (v > hi ? hi : v); }

size_t tile_bytes(int radius) {
  const size_t padded = static_cast<size_t>(kTile + 2 * radius);
  return (padded * padded + 3) / 4 * 4;  // uint8 input tile, padded to 4 bytes
}

size_t shared_bytes(int radius) {
  return tile_bytes(radius) + static_cast<size_t>(kTile + 2 * radius) * kTile * sizeof(uint32_t);
}

// blockIdx.z is the channel within a pixel group; the alpha (or padding)
// channel of packed formats is copied.
__global__ void blur_tile_kernel(const uint8_t* __restrict__ src, size_t src_stride,
                                 uint8_t* __restrict__ dst, size_t dst_stride, int step, int width,
                                 int height, int alpha_channel, BlurTaps taps) {
  const int c = blockIdx.z;
  const int x0 = blockIdx.x * kTile;
  const int y0 = blockIdx.y * kTile;
  const int tid = threadIdx.x;
  const uint8_t* s = src + c;
  uint8_t* d = dst + c;
  if (c == alpha_channel) {  // uniform across the block: no barrier is skipped unevenly
    for (int i = tid; i < kTile * kTile; i += blockDim.x) {
      const int x = x0 + i % kTile, y = y0 + i / kTile;
      if (x < width && y < height)
        d[y * dst_stride + static_cast<size_t>(x) * step] =
            s[y * src_stride + static_cast<size_t>(x) * step];
    }
    return;
  }
  const int r = taps.radius;
  const int tw = kTile + 2 * r;  // tile width and height with the halo
  // The taps in shared memory: the loops below index them by a loop
  // counter, which on kernel parameters would make a per-thread local copy.
  __shared__ int32_t weight[kBlurMaxRadius + 1];
  for (int i = tid; i <= r; i += blockDim.x) weight[i] = taps.weight[i];
  extern __shared__ uint8_t shared[];
  uint8_t* tile = shared;
  uint32_t* mid = reinterpret_cast<uint32_t*>(shared + ((tw * tw + 3) / 4 * 4));

  for (int i = tid; i < tw * tw; i += blockDim.x) {
    const int gx = clamp_to(x0 - r + i % tw, width - 1);
    const int gy = clamp_to(y0 - r + i / tw, height - 1);
    tile[i] = s[gy * src_stride + static_cast<size_t>(gx) * step];
  }
  __syncthreads();
  // Horizontal: every row of the haloed tile, the tile's columns.
  for (int i = tid; i < tw * kTile; i += blockDim.x) {
    const int ty = i / kTile, tx = i % kTile;
    const uint8_t* row = tile + ty * tw + tx + r;
    int32_t acc = 0;
    for (int k = -r; k <= r; ++k) acc += weight[k < 0 ? -k : k] * row[k];
    mid[i] =
        static_cast<uint32_t>((acc + (1 << (kBlurWeightBits - 8 - 1))) >> (kBlurWeightBits - 8));
  }
  __syncthreads();
  // Vertical: the tile's rows.
  for (int i = tid; i < kTile * kTile; i += blockDim.x) {
    const int ty = i / kTile, tx = i % kTile;
    const int x = x0 + tx, y = y0 + ty;
    if (x >= width || y >= height) continue;
    uint32_t acc = 0;
    for (int k = -r; k <= r; ++k)
      acc += static_cast<uint32_t>(weight[k < 0 ? -k : k]) * mid[(ty + r + k) * kTile + tx];
    constexpr int kShift = kBlurWeightBits + 8;
    d[y * dst_stride + static_cast<size_t>(x) * step] =
        static_cast<uint8_t>(min(255u, (acc + (1u << (kShift - 1))) >> kShift));
  }
}

}  // namespace

void blur_cuda(const ImageRef& in, const ImageRef& out, double sigma, bool inject_launch_failure,
               CUstream_st* stream) {
  const FormatInfo& info = format_info(in.format);
  for (int p = 0; p < info.n_planes; ++p) {
    const int step = info.pixel_bytes[p];
    const int width = static_cast<int>(plane_row_bytes(in.format, p, in.width)) / step;
    const int height = static_cast<int>(plane_rows(in.format, p, in.height));
    if (width == 0 || height == 0) continue;
    const BlurTaps taps = blur_taps(sigma, info.x_shift[p]);
    dim3 grid((width + kTile - 1) / kTile, (height + kTile - 1) / kTile, step);
    if (grid.y > 65535) throw Error("blur: the image is too tall (more than 2,097,120 rows)");
    // An empty grid is an invalid configuration: CUDA reports it at launch.
    if (inject_launch_failure) grid.x = 0;
    // At most 42.6 KB (radius 60), plus 244 bytes of taps: within the 48 KB
    // every GPU gives without opting in.
    blur_tile_kernel<<<grid, kThreads, shared_bytes(taps.radius), stream>>>(
        in.planes[p].data, in.planes[p].stride, out.planes[p].data, out.planes[p].stride, step,
        width, height, info.alpha_byte, taps);
    CO_CUDA_CHECK_LAUNCH("the blur kernel");
  }
}

}  // namespace cudaoverlap
