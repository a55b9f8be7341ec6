// flip for packed 24-bit RGB on planes aligned to 16 bytes (see
// flip_launch.h): a square tile of pixels in every direction (RgbTile).
// A 3-byte pixel has no word type, and moved as bytes
// (flip_plane_kernel<Bytes<3>>) each pixel took three loads and three
// stores a side. Here the block reads its source rows as 16-byte chunks
// into shared memory (a row's chunks start at the 16-byte boundary at or
// below the tile's first byte, `shift` bytes before it) and writes its
// output rows as 16-byte chunks, each gathered from shared memory byte by
// byte. Output pixel p of the tile's row r reads shared memory at
// origin(r) + step * p: every direction is linear in p.
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "kernels/cuda_check.h"
#include "kernels/error.h"
#include "kernels/flip/flip_geometry.cuh"
#include "kernels/flip/flip_launch.h"

namespace cudaoverlap {
namespace flip_detail {
namespace {

template <int kTileSize, int kThreadCount>
struct RgbTile {
  static constexpr int kTile = kTileSize;                    // pixels, both ways
  static constexpr int kChunks = (3 * kTile + 15) / 16 + 1;  // 16-byte loads a source row
  static constexpr int kPitch = 16 * kChunks + 4;            // bytes; an odd number of words
  static constexpr int kThreads = kThreadCount;
  static constexpr int kLoads = (kTile * kChunks + kThreads - 1) / kThreads;  // a thread
  static constexpr int kOutChunks = 3 * kTile / 16;              // 16-byte stores an output row
  static constexpr int kStores = kTile * kOutChunks / kThreads;  // a thread
  static_assert(kTile * kOutChunks % kThreads == 0, "whole stores a thread");
  static_assert((kPitch / 4) % 2 == 1, "rows a column apart fall in different banks");
};

// 16 output bytes from shared memory: pixel j's component c at
// s[j * step + c], starting kPhase bytes into pixel 0.
template <int kPhase>
__device__ __forceinline__ uint4 gather_rgb24(const uint8_t* s, int step) {
  uint32_t w[4] = {0, 0, 0, 0};
#pragma unroll
  for (int b = 0; b < 16; ++b) {
    const int j = (b + kPhase) / 3, c = (b + kPhase) % 3;
    w[b / 4] |= static_cast<uint32_t>(s[j * step + c]) << (8 * (b % 4));
  }
  return make_uint4(w[0], w[1], w[2], w[3]);
}

template <class S>
__global__ void __launch_bounds__(S::kThreads)
    flip_rgb24_kernel(const uint8_t* __restrict__ src, size_t src_stride, uint8_t* __restrict__ dst,
                      size_t dst_stride, FlipGeometry g) {
  constexpr int kRgbTile = S::kTile, kRgbChunks = S::kChunks, kRgbPitch = S::kPitch,
                kRgbThreads = S::kThreads, kRgbLoads = S::kLoads, kRgbOutChunks = S::kOutChunks,
                kRgbStores = S::kStores;
  __shared__ __align__(16) uint8_t tile[kRgbTile * kRgbPitch];
  const int ox0 = blockIdx.x * kRgbTile;
  const int oy0 = blockIdx.y * kRgbTile;
  const int2 s0 = source_tile(g, ox0, oy0, kRgbTile);
  const int sx0 = s0.x, sy0 = s0.y;
  const int first = 3 * sx0;
  const int base = first & ~15;  // rounds down, also below 0
  const int shift = first - base;
  const int row_bytes = 3 * g.in_w;

  // Every load before the first store to shared memory.
  uint4 v[kRgbLoads];
#pragma unroll
  for (int i = 0; i < kRgbLoads; ++i) {
    const int k = threadIdx.x + i * kRgbThreads;
    const int sy = sy0 + k / kRgbChunks;
    const int p = base + 16 * (k % kRgbChunks);
    v[i] = make_uint4(0, 0, 0, 0);
    if (k >= kRgbTile * kRgbChunks || sy < 0 || sy >= g.in_h || p + 16 <= 0 || p >= row_bytes)
      continue;
    const uint8_t* row = src + static_cast<size_t>(sy) * src_stride;
    if (p >= 0 && p + 16 <= row_bytes) {
      v[i] = *reinterpret_cast<const uint4*>(row + p);
    } else {
      uint32_t w[4] = {0, 0, 0, 0};
      for (int b = max(0, -p); b < 16 && p + b < row_bytes; ++b)
        w[b / 4] |= static_cast<uint32_t>(row[p + b]) << (8 * (b % 4));
      v[i] = make_uint4(w[0], w[1], w[2], w[3]);
    }
  }
#pragma unroll
  for (int i = 0; i < kRgbLoads; ++i) {
    const int k = threadIdx.x + i * kRgbThreads;
    if (k >= kRgbTile * kRgbChunks) break;
    uint32_t* s =
        reinterpret_cast<uint32_t*>(tile + (k / kRgbChunks) * kRgbPitch + 16 * (k % kRgbChunks));
    s[0] = v[i].x;
    s[1] = v[i].y;
    s[2] = v[i].z;
    s[3] = v[i].w;
  }
  __syncthreads();

  // Shared offset of the source of output (ox0 + p, oy0 + r): origin(r) + step * p.
  int x00, y00, x10, y10, x01, y01;
  source_of(g, ox0, oy0, &x00, &y00);
  source_of(g, ox0 + 1, oy0, &x10, &y10);
  source_of(g, ox0, oy0 + 1, &x01, &y01);
  const int step = (y10 - y00) * kRgbPitch + 3 * (x10 - x00);
  const int origin0 = (y00 - sy0) * kRgbPitch + 3 * (x00 - sx0) + shift;
  const int row_step = (y01 - y00) * kRgbPitch + 3 * (x01 - x00);
  const int out_bytes = 3 * g.out_w;
#pragma unroll
  for (int i = 0; i < kRgbStores; ++i) {
    const int k = threadIdx.x + i * kRgbThreads;
    const int r = k / kRgbOutChunks;
    const int q = k % kRgbOutChunks;
    const int y = oy0 + r;
    const int o = 3 * ox0 + 16 * q;  // the chunk's first byte in its output row
    if (y >= g.out_h || o >= out_bytes) continue;
    // Bytes 16q .. 16q + 15 of the tile's row: pixels from p0, the first
    // `phase` bytes into it.
    const int p0 = 16 * q / 3;
    const int phase = 16 * q - 3 * p0;
    const uint8_t* s = tile + origin0 + r * row_step + p0 * step;
    const uint4 w = phase == 0   ? gather_rgb24<0>(s, step)
                    : phase == 1 ? gather_rgb24<1>(s, step)
                                 : gather_rgb24<2>(s, step);
    uint8_t* d = dst + static_cast<size_t>(y) * dst_stride + o;
    if (o + 16 <= out_bytes) {
      *reinterpret_cast<uint4*>(d) = w;
    } else {
      const uint32_t words[4] = {w.x, w.y, w.z, w.w};
      for (int b = 0; o + b < out_bytes; ++b)
        d[b] = static_cast<uint8_t>(words[b / 4] >> (8 * (b % 4)));
    }
  }
}

}  // namespace

void flip_rgb24_cuda(const PlaneRef& in, const PlaneRef& out, const FlipGeometry& g,
                     CUstream_st* stream) {
  auto go = [&](auto shape) {
    using S = decltype(shape);
    const dim3 grid((g.out_w + S::kTile - 1) / S::kTile, (g.out_h + S::kTile - 1) / S::kTile);
    if (grid.y > 65535)
      throw Error("flip: the image is too tall (more than " + std::to_string(65535 * S::kTile) +
                  " rows)");
    flip_rgb24_kernel<S>
        <<<grid, S::kThreads, 0, stream>>>(in.data, in.stride, out.data, out.stride, g);
  };
  // 64-pixel tiles (192-byte rows) where rows are kept, 32 where they turn:
  // the faster of the shapes tried on each.
  if (flip_swaps_size(static_cast<FlipDirection>(g.direction)))
    go(RgbTile<32, 96>{});
  else
    go(RgbTile<64, 256>{});
  CO_CUDA_CHECK_LAUNCH("the flip kernel (24-bit RGB)");
}

// Packed 4:2:2 turned or mirrored: one thread per output pair, running
// flip_math's rule (its gathers are cached reads; the writes coalesce).

}  // namespace flip_detail
}  // namespace cudaoverlap
