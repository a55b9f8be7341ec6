// Every pair no faster path of convert takes: the plane scaler and the
// repacked samples where they apply, else the reference's own block
// arithmetic by tiles (convert_tile_kernel) or a thread per 2x2 block.
//
// Every other pair with 8-bit sides and packed output (4- and 3-byte
// RGB, YUY2, UYVY), by tiles of 64x16 pixels (32x8 blocks of 2x2, one
// thread each; 256 threads). Two stages with a shared-memory tile between:
// each thread reads its block as the reference does (convert_math's load_*
// for the input's kind: chroma brought to each pixel, the four pixels'
// shared samples read once) and takes each pixel to the output's space
// (to_output); then the threads write the tile's output row by row,
// consecutive threads on consecutive words (4 pixels, or a packed 4:2:2
// pair with its chroma averaged from the tile as convert_math::block_chroma
// averages it). A thread per block writing its own pixels byte by byte left
// each warp's stores scattered and the index arithmetic per byte the larger
// cost. For planar, semi-planar and grey output, with a side deeper than
// 8 bits, and where chroma is interpolated, the tile measured slower than a
// thread per block (below).
//
// A tile pixel is one word: c0, c1, c2 and alpha in bytes 0..3. Every
// block of the picture writes all four of its pixels, clamped ones
// included (they repeat the last row or column, as in the reference), so
// an odd width's last pair reads what the reference reads.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "kernels/convert/convert_access.cuh"
#include "kernels/cuda_check.h"

namespace cudaoverlap {
namespace convert_detail {
namespace {

constexpr int kTileBlocksX = kBlockX, kTileBlocksY = kBlockY;
constexpr int kTileW = 2 * kTileBlocksX, kTileH = 2 * kTileBlocksY;

// Per launch, derived on the host from the coefficients.
struct TileOut {
  bool pairs;  // packed 4:2:2 (else packed RGB)
  // Packed RGB: byte permute from a tile pixel to the output pixel's bytes
  // (bytes past a 3-byte pixel unused).
  uint32_t rgb_perm;
  int pair_y, pair_u, pair_v;  // packed 4:2:2: byte of the first luma, U, V
};

__device__ __forceinline__ int tile_at(uint32_t w, int c) {
  return static_cast<int>((w >> (8 * c)) & 0xFF);
}

__device__ __forceinline__ bool aligned_ptr(const void* p, unsigned n) {
  return (reinterpret_cast<uintptr_t>(p) & (n - 1)) == 0;
}

// The tile's output: picture pixels x0 .. x0 + w - 1 of rows y0 .. y0 + h - 1.
__device__ __forceinline__ void store_tile(const ConvertCoefficients& k, const TileOut& o,
                                           const ImageRef& in, const ImageRef& out,
                                           const uint32_t (&tile)[kTileH][kTileW], int x0, int y0) {
  const int w = min(kTileW, in.width - x0), h = min(kTileH, in.height - y0);
  const int t = threadIdx.y * blockDim.x + threadIdx.x;
  if (!o.pairs) {
    // 4 pixels per thread: 16 rows of 16 groups.
    const int r = t / 16, g = t % 16;
    if (r >= h || 4 * g >= w) return;
    const int n = min(4, w - 4 * g);
    uint32_t px[4];
    CO_UNROLL
    for (int i = 0; i < 4; ++i) px[i] = __byte_perm(tile[r][4 * g + i], 0, o.rgb_perm);
    const int bpp = k.out_side.pixel_stride;
    uint8_t* d = out.planes[0].data + static_cast<size_t>(y0 + r) * out.planes[0].stride +
                 static_cast<size_t>(x0 + 4 * g) * bpp;
    if (bpp == 4 && n == 4 && aligned_ptr(d, 16)) {
      *reinterpret_cast<uint4*>(d) = make_uint4(px[0], px[1], px[2], px[3]);
    } else if (bpp == 4 && aligned_ptr(d, 4)) {
      for (int i = 0; i < n; ++i) reinterpret_cast<uint32_t*>(d)[i] = px[i];
    } else if (bpp == 3 && n == 4 && aligned_ptr(d, 4)) {
      store_rgb24_words(reinterpret_cast<uint32_t*>(d), px);
    } else {
      for (int i = 0; i < n; ++i)
        for (int b = 0; b < bpp; ++b) d[i * bpp + b] = static_cast<uint8_t>(px[i] >> (8 * b));
    }
    return;
  }
  // Packed 4:2:2: a word per pair of pixels, chroma averaged across; an odd
  // width's last pair takes its second luma from the clamped pixel.
  const int pairs = (w + 1) / 2;
  for (int i = t; i < kTileH * (kTileW / 2); i += kThreads) {
    const int r = i / (kTileW / 2), j = i % (kTileW / 2);
    if (r >= h || j >= pairs) continue;
    const uint32_t a = tile[r][2 * j], b = tile[r][2 * j + 1];
    const uint32_t word = static_cast<uint32_t>(tile_at(a, 0)) << (8 * o.pair_y) |
                          static_cast<uint32_t>(tile_at(b, 0)) << (8 * o.pair_y + 16) |
                          static_cast<uint32_t>(convert_math::average(tile_at(a, 1), tile_at(b, 1)))
                              << (8 * o.pair_u) |
                          static_cast<uint32_t>(convert_math::average(tile_at(a, 2), tile_at(b, 2)))
                              << (8 * o.pair_v);
    uint8_t* d = out.planes[0].data + static_cast<size_t>(y0 + r) * out.planes[0].stride +
                 static_cast<size_t>(x0 / 2 + j) * 4;
    if (aligned_ptr(d, 4))
      *reinterpret_cast<uint32_t*>(d) = word;
    else
      for (int b = 0; b < 4; ++b) d[b] = static_cast<uint8_t>(word >> (8 * b));
  }
}

__global__ void __launch_bounds__(kThreads)
    convert_tile_kernel(ConvertCoefficients k, TileOut o, ImageRef in, ImageRef out, int blocks_x,
                        int blocks_y) {
  namespace cm = convert_math;
  __shared__ __align__(16) uint32_t tile[kTileH][kTileW];
  const int bx = blockIdx.x * kTileBlocksX + threadIdx.x;
  for (int ty = blockIdx.y * kTileBlocksY; ty < blocks_y; ty += gridDim.y * kTileBlocksY) {
    const int by = ty + threadIdx.y;
    if (bx < blocks_x && by < blocks_y) {
      cm::Block b;
      cm::load_block<false>(k, cm::ImageAccess{in}, bx, by, &b);
      CO_UNROLL
      for (int dy = 0; dy < 2; ++dy) {
        uint32_t w[2];
        CO_UNROLL
        for (int dx = 0; dx < 2; ++dx) {
          cm::Pixel& p = b.px[dy][dx];
          cm::to_output<false>(k, &p);
          w[dx] = static_cast<uint32_t>(p.c[0]) | static_cast<uint32_t>(p.c[1]) << 8 |
                  static_cast<uint32_t>(p.c[2]) << 16 | static_cast<uint32_t>(p.a) << 24;
        }
        // Both pixels in one store: a warp's threads write consecutive
        // pairs, without bank conflicts.
        *reinterpret_cast<uint2*>(&tile[2 * threadIdx.y + dy][2 * threadIdx.x]) =
            make_uint2(w[0], w[1]);
      }
    }
    __syncthreads();
    store_tile(k, o, in, out, tile, blockIdx.x * kTileW, 2 * ty);
    __syncthreads();
  }
}

// The other pairs: one thread per 2x2 block running the reference's own
// block function (convert_math::convert_block). kDeep: a side deeper than
// 8 bits (16-bit arithmetic); a kernel each, so neither carries the other's
// registers.
template <bool kDeep>
__global__ void __launch_bounds__(kThreads)
    convert_block_kernel(const __grid_constant__ ConvertCoefficients k,
                         const __grid_constant__ ImageRef in, const __grid_constant__ ImageRef out,
                         int blocks_x, int blocks_y) {
  const int bx = blockIdx.x * blockDim.x + threadIdx.x;
  if (bx >= blocks_x) return;
  for (int by = blockIdx.y * blockDim.y + threadIdx.y; by < blocks_y; by += gridDim.y * blockDim.y)
    convert_math::convert_block<kDeep>(k, convert_math::ImageAccess{in},
                                       convert_math::ImageAccess{out}, bx, by);
}

// Whether the tile kernel takes `k`'s pair, and its TileOut.
bool tile_out(const ConvertCoefficients& k, TileOut* o) {
  const ConvertSide& os = k.out_side;
  const int kind = convert_math::side_kind(k.out_family, os);
  o->pairs = kind == convert_math::kSideYuv422 && os.plane[0] == os.plane[1];
  // Where a subsampled input's chroma is interpolated, a thread per block
  // is the faster of the two kernels.
  const bool interpolates =
      k.in_family == convert_math::kYuv && k.in_side.x_sub == 1 && k.chroma_x == kUpLinear;
  if (k.deep || interpolates || (kind != convert_math::kSidePacked && !o->pairs)) return false;
  o->rgb_perm = 0;
  for (int c = 0; c < 4; ++c)
    if (k.out_offsets[c] >= 0) o->rgb_perm |= static_cast<uint32_t>(c) << (4 * k.out_offsets[c]);
  o->pair_y = os.offset[0], o->pair_u = os.offset[1], o->pair_v = os.offset[2];
  return true;
}

}  // namespace

void convert_any_cuda(const ImageRef& in, const ImageRef& out, const ConvertCoefficients& k,
                      cudaStream_t stream) {
  if (k.scale_planes) {
    scale_planes_cuda(in, out, k, stream);
    return;
  }
  const bool cosited = k.cosited_x || k.cosited_y;  // the block function alone
  if (repacks_samples(out, k) && !cosited) {
    repack_samples_cuda(in, out, k, stream);
    return;
  }
  const int bw = (in.width + 1) / 2, bh = (in.height + 1) / 2;
  if (bw == 0 || bh == 0) return;
  const dim3 grid((bw + kBlockX - 1) / kBlockX,
                  static_cast<unsigned>(std::min<int>((bh + kBlockY - 1) / kBlockY, kMaxGridY)));
  // The tile kernel where it is the faster (8-bit sides to packed RGB or
  // packed 4:2:2 without interpolated chroma); a thread per block writing
  // its own samples elsewhere (see tile_out).
  TileOut o;
  if (!cosited && tile_out(k, &o)) {
    convert_tile_kernel<<<grid, dim3(kBlockX, kBlockY), 0, stream>>>(k, o, in, out, bw, bh);
  } else if (k.deep) {
    convert_block_kernel<true><<<grid, dim3(kBlockX, kBlockY), 0, stream>>>(k, in, out, bw, bh);
  } else {
    convert_block_kernel<false><<<grid, dim3(kBlockX, kBlockY), 0, stream>>>(k, in, out, bw, bh);
  }
  CO_CUDA_CHECK_LAUNCH("the convert kernel");
}

}  // namespace convert_detail
}  // namespace cudaoverlap
