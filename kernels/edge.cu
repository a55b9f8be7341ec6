// CUDA implementation of the `edge` kernel (see edge.h).
//
// One launch does the whole image. Each warp computes a strip 128 pixels
// wide and kRows rows tall (14 for luma, 8 for packed RGB), every thread 4
// pixels side by side (a word of luma output, or 16 bytes of packed RGB) on
// each of those rows. A thread loads its own 4 columns of the kRows + 2
// input rows, all loads first so that they are in flight together; the
// neighbouring columns come from the lanes beside it by shuffle, and the
// warp's two outer columns from a halo word that lanes 0..kRows+1 (left)
// and 16..16+kRows+1 (right) load alongside. No shared memory, no barrier:
// the shared-memory tile of the previous version spent more instructions
// on staging than on the Sobel sums. Row addresses are one wide
// multiply-add of a 32-bit stride. The same threads fill the chroma planes
// of YUV with 128 in 16-byte stores before their strips; two
// cudaMemset2DAsync calls cost more in launch gaps than that data.
//
// The Sobel operator runs separably on two 16-bit lanes per register
// (columns 0 and 2, columns 1 and 3 of a thread's 4): per input row the
// horizontal difference and the horizontal [1 2 1] sum, shared by the three
// output rows that read the row; per output row their vertical [1 2 1] sum
// (gx) and difference (gy). Lanes are biased so that none goes negative or
// carries into the other, so the results are exactly the reference's
// integers. The magnitude runs on the FP32 pipe: gx and gy leave their
// lanes as exact floats, gx^2 + gy^2 + 1/2 is exact in single precision, and
// floor(sqrt(n + 1/2)) is the integer square root of n; the hardware's
// approximate square root is far closer than the distance to the next
// integer (checked for every gradient the kernel can meet by the
// edge_magnitudes_cuda test hook). Packed RGB becomes luma with one dp4a per
// pixel. Integer and FP32 work per pixel, not memory, bounded the previous
// versions.
#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include "balance.h"
#include "cuda_check.h"
#include "cuda_resources.h"
#include "edge.h"
#include "error.h"

namespace cudaoverlap {
namespace {

constexpr int kWarps = 2;  // per block, stacked vertically
constexpr int kThreads = 32 * kWarps;
constexpr int kTileX = 32 * 4;  // columns per warp and block
// Output rows per thread: the more, the fewer input rows are loaded and
// taken apart twice (kRows + 2 for kRows), up to 14 (the halo word of each
// input row lives in a lane of its own half-warp). Packed RGB holds 4 times
// the bytes per row in flight, so it takes fewer.
template <bool kRgb>
constexpr int kRows = kRgb ? 8 : 14;
template <bool kRgb>
constexpr int kTileY = kRows<kRgb>* kWarps;  // rows per block
static_assert(kRows<false> + 2 <= 16 && kRows<true> + 2 <= 16,
              "the halo word of each input row lives in its own lane");

struct EdgeLayout {
  int width, height;
  // Row strides; 32 bits, so a row's address is one wide multiply-add.
  uint32_t src_stride, dst_stride;
  uint32_t lane_base;             // 0x4B000000, in a register: see lane_lo
  uint32_t grey_coef;             // packed RGB: 77, 150, 29 at the R, G, B bytes (dp4a)
  uint32_t keep_mask;             // packed RGB: the alpha or padding byte
  uint32_t keep_pack;             // __byte_perm selector: the kept bytes of two pixels
  uint32_t keep_sel;              // __byte_perm selector of pixel 0: magnitude, kept byte
  bool src_aligned, dst_aligned;  // 4-byte (luma) or 16-byte (RGB) pointer and stride
  // Chroma planes to fill with 128 (NV12: 1, I420: 2, else 0).
  int n_chroma;
  uint8_t* chroma[2];
  size_t chroma_stride[2];
  int chroma_bytes, chroma_rows;  // per plane
  bool chroma_aligned;            // 16-byte pointers and strides
};

// Luma of the packed pixel w: (77 R + 150 G + 29 B + 128) >> 8, at most
// 65408 before the shift, so it is byte 1 of the sum.
__device__ __forceinline__ uint32_t grey_sum(uint32_t w, const EdgeLayout& l) {
  return __dp4a(w, l.grey_coef, 128u);
}

// The luma of 4 packed pixels as the bytes of a word.
__device__ __forceinline__ uint32_t grey4(const uint4& v, const EdgeLayout& l) {
  const uint32_t lo = __byte_perm(grey_sum(v.x, l), grey_sum(v.y, l), 0x0051);
  const uint32_t hi = __byte_perm(grey_sum(v.z, l), grey_sum(v.w, l), 0x0051);
  return __byte_perm(lo, hi, 0x5410);
}

// Luma of 4 pixels starting at x, clamped at the edges, as the bytes of a
// word: the slow path for words that cross an edge or planes that are not
// aligned for word loads. Not inlined, so the unrolled row loop carries one
// copy; its arguments go by value, since a reference would put the layout
// on the stack.
template <bool kRgb>
__device__ __noinline__ uint32_t luma_word_clamped(const uint8_t* row, int width,
                                                   uint32_t grey_coef, int x) {
  uint32_t w = 0;
  for (int k = 0; k < 4; ++k) {
    const int c = min(max(x + k, 0), width - 1);
    uint32_t s;
    if (kRgb) {
      const uint8_t* p = row + static_cast<size_t>(c) * 4;
      const uint32_t px = static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
                          static_cast<uint32_t>(p[2]) << 16 | static_cast<uint32_t>(p[3]) << 24;
      s = __dp4a(px, grey_coef, 128u) >> 8;
    } else {
      s = row[c];
    }
    w |= s << (8 * k);
  }
  return w;
}

// The luma word of the 4 pixels at p, which lie inside an aligned plane,
// and, for packed RGB, their kept bytes as the bytes of *keep.
template <bool kRgb>
__device__ __forceinline__ uint32_t load_luma(const uint8_t* p, const EdgeLayout& l,
                                              uint32_t* keep) {
  if (!kRgb) return *reinterpret_cast<const uint32_t*>(p);
  const uint4 v = *reinterpret_cast<const uint4*>(p);
  *keep =
      __byte_perm(__byte_perm(v.x, v.y, l.keep_pack), __byte_perm(v.z, v.w, l.keep_pack), 0x5410);
  return grey4(v, l);
}

// One input row, horizontally: the difference p(c + 1) - p(c - 1) + 256
// (1..511) and the sum p(c - 1) + 2 p(c) + p(c + 1) (0..1020), for columns
// 0 and 2 (even) and 1 and 3 (odd) of the thread's word, in 16-bit lanes.
struct RowTerms {
  uint32_t d_even, d_odd, s_even, s_odd;
};

__device__ __forceinline__ RowTerms row_terms(uint32_t left, uint32_t centre, uint32_t right) {
  const uint32_t even = __byte_perm(centre, 0, 0x4240);  // columns 0, 2
  const uint32_t odd = __byte_perm(centre, 0, 0x4341);   // columns 1, 3
  const uint32_t m = __byte_perm(odd, left, 0x1017);     // columns -1, 1
  const uint32_t p = __byte_perm(even, right, 0x1412);   // columns 2, 4
  return {odd + 0x01000100u - m, p + 0x01000100u - even, m + 2 * even + odd, even + 2 * odd + p};
}

// The lanes of a biased word as exact floats: the lane's bits placed in the
// mantissa of 2^23 (one byte permute with base = 0x4B000000, which comes
// from the layout so that it sits in a register and the selector can be
// the immediate), less 2^23 and the bias of 1024.
constexpr float kLaneBase = 8389632.0f;  // 2^23 + 1024
__device__ __forceinline__ float lane_lo(uint32_t v, uint32_t base) {
  return __uint_as_float(__byte_perm(v, base, 0x7610)) - kLaneBase;
}
__device__ __forceinline__ float lane_hi(uint32_t v, uint32_t base) {
  return __uint_as_float(__byte_perm(v, base, 0x7632)) - kLaneBase;
}

// min(floor(sqrt(gx^2 + gy^2)), 255) in the low byte of the result. With
// integer gx, gy in [-1020, 1020], n = gx^2 + gy^2 + 1/2 is exact in single
// precision (below 2^22, in halves), and for k^2 <= n < (k + 1)^2 the root
// of n + 1/2 lies at least 1/(4 (k + 1)) > 1/1100 from either integer:
// thousands of times the approximate square root's error. Adding 2^23
// rounded toward zero leaves floor(root) in the low mantissa bits.
__device__ __forceinline__ uint32_t magnitude(float gx, float gy) {
  const float n = fminf(fmaf(gx, gx, fmaf(gy, gy, 0.5f)), 65025.5f);
  float s;
  asm("sqrt.approx.ftz.f32 %0, %1;" : "=f"(s) : "f"(n));
  return __float_as_uint(__fadd_rz(s, 8388608.0f));
}

// The 4 magnitudes of one output row from the terms of its rows above (a),
// at (b) and below (c), as the bytes of a word.
__device__ __forceinline__ uint32_t sobel_row(const RowTerms& a, const RowTerms& b,
                                              const RowTerms& c, uint32_t base) {
  // gx: vertical [1 2 1] of the differences, biased by 1024 (4..2044); gy:
  // vertical difference of the sums, biased by 1024 (4..2044).
  const uint32_t gx_even = a.d_even + 2 * b.d_even + c.d_even;
  const uint32_t gx_odd = a.d_odd + 2 * b.d_odd + c.d_odd;
  const uint32_t gy_even = c.s_even + 0x04000400u - a.s_even;
  const uint32_t gy_odd = c.s_odd + 0x04000400u - a.s_odd;
  const uint32_t m0 = magnitude(lane_lo(gx_even, base), lane_lo(gy_even, base));
  const uint32_t m1 = magnitude(lane_lo(gx_odd, base), lane_lo(gy_odd, base));
  const uint32_t m2 = magnitude(lane_hi(gx_even, base), lane_hi(gy_even, base));
  const uint32_t m3 = magnitude(lane_hi(gx_odd, base), lane_hi(gy_odd, base));
  return __byte_perm(__byte_perm(m0, m1, 0x0040), __byte_perm(m2, m3, 0x0040), 0x5410);
}

// Writes the 4 magnitudes in m to d, pixels x..x+3 of an output row whose
// input row is s (both already offset to pixel x).
template <bool kRgb>
__device__ __forceinline__ void store_row(const uint8_t* s, uint8_t* d, const EdgeLayout& l, int x,
                                          bool fast, uint32_t m, uint32_t keep) {
  const int n = min(4, l.width - x);
  if (!kRgb) {
    if (fast) {
      *reinterpret_cast<uint32_t*>(d) = m;
    } else {
      for (int i = 0; i < n; ++i) d[i] = static_cast<uint8_t>(m >> (8 * i));
    }
    return;
  }
  if (fast) {
    // Pixel i: magnitude byte i in R, G and B, kept byte i in its place.
    *reinterpret_cast<uint4*>(d) = make_uint4(
        __byte_perm(m, keep, l.keep_sel), __byte_perm(m, keep, l.keep_sel + 0x1111u),
        __byte_perm(m, keep, l.keep_sel + 0x2222u), __byte_perm(m, keep, l.keep_sel + 0x3333u));
    return;
  }
  for (int i = 0; i < n; ++i) {
    const uint32_t px = static_cast<uint32_t>(s[4 * i]) | static_cast<uint32_t>(s[4 * i + 1]) << 8 |
                        static_cast<uint32_t>(s[4 * i + 2]) << 16 |
                        static_cast<uint32_t>(s[4 * i + 3]) << 24;
    const uint32_t w = (px & l.keep_mask) | (((m >> (8 * i)) & 0xFFu) * 0x01010101u & ~l.keep_mask);
    for (int c = 0; c < 4; ++c) d[4 * i + c] = static_cast<uint8_t>(w >> (8 * c));
  }
}

// Row y of a plane at p (already offset to the thread's pixel): y times a
// 32-bit stride, one wide multiply-add.
__device__ __forceinline__ const uint8_t* row_of(const uint8_t* p, int y, uint32_t stride) {
  return p + static_cast<uint64_t>(static_cast<uint32_t>(y)) * stride;
}
__device__ __forceinline__ uint8_t* row_of(uint8_t* p, int y, uint32_t stride) {
  return p + static_cast<uint64_t>(static_cast<uint32_t>(y)) * stride;
}

template <bool kRgb>
__device__ __forceinline__ void sobel_strip(const uint8_t* __restrict__ src,
                                            uint8_t* __restrict__ dst, const EdgeLayout& l) {
  constexpr int kOut = kRows<kRgb>;
  constexpr int kIn = kOut + 2;
  constexpr int kBytes = kRgb ? 4 : 1;
  const int lane = static_cast<int>(threadIdx.x);
  const int x0 = static_cast<int>(blockIdx.x) * kTileX;
  const int x = x0 + 4 * lane;
  const int y0 = (static_cast<int>(blockIdx.y) * kWarps + static_cast<int>(threadIdx.y)) * kOut;
  // Uniform per warp: the shuffles below need the whole warp, so a warp
  // wholly below the image leaves together.
  if (y0 >= l.height) return;
  auto in_row = [&](int r) { return min(max(y0 - 1 + r, 0), l.height - 1); };
  // Halo: the word left of the warp's columns (lanes 0..kIn-1) or right of
  // them (lanes 16..), of input row lane % 16.
  uint32_t halo = 0;
  if ((lane & 15) < kIn) {
    const int hx = lane < 16 ? x0 - 4 : x0 + kTileX;
    const uint8_t* row = row_of(src, in_row(lane & 15), l.src_stride);
    uint32_t unused;
    halo = l.src_aligned && hx >= 0 && hx + 4 <= l.width
               ? load_luma<kRgb>(row + static_cast<size_t>(hx) * kBytes, l, &unused)
               : luma_word_clamped<kRgb>(row, l.width, l.grey_coef, hx);
  }
  // All of a thread's loads before any use. Lanes past the right edge load
  // clamped words: their luma is the right neighbour of the last lane inside.
  const bool fast = l.src_aligned && x + 4 <= l.width;
  const uint8_t* src_x = src + static_cast<size_t>(x) * kBytes;
  uint32_t centre[kIn];
  uint32_t keep[kIn] = {};
  if (fast) {
#pragma unroll
    for (int r = 0; r < kIn; ++r)
      centre[r] = load_luma<kRgb>(row_of(src_x, in_row(r), l.src_stride), l, &keep[r]);
  } else {
#pragma unroll
    for (int r = 0; r < kIn; ++r)
      centre[r] =
          luma_word_clamped<kRgb>(row_of(src, in_row(r), l.src_stride), l.width, l.grey_coef, x);
  }

  const bool store_fast = l.dst_aligned && fast;
  uint8_t* dst_x = dst + static_cast<size_t>(x) * kBytes;
  const int halo_lane = lane == 0 ? 0 : 16;
  RowTerms t[3];
#pragma unroll
  for (int r = 0; r < kIn; ++r) {
    const uint32_t h = __shfl_sync(0xFFFFFFFFu, halo, halo_lane + r);
    uint32_t left = __shfl_up_sync(0xFFFFFFFFu, centre[r], 1);
    uint32_t right = __shfl_down_sync(0xFFFFFFFFu, centre[r], 1);
    if (lane == 0) left = h;
    if (lane == 31) right = h;
    t[r % 3] = row_terms(left, centre[r], right);
    if (r < 2) continue;
    const int y = y0 + r - 2;
    if (y >= l.height || x >= l.width) continue;
    const uint32_t m = sobel_row(t[(r - 2) % 3], t[(r - 1) % 3], t[r % 3], l.lane_base);
    store_row<kRgb>(row_of(src_x, y, l.src_stride), row_of(dst_x, y, l.dst_stride), l, x,
                    store_fast, m, keep[r - 1]);
  }
}

// Fills the chroma planes with 128, each thread of the grid 16 bytes of a
// row at a time before its Sobel strip. Stores leave without waiting, so
// this costs the strip's loads almost nothing; blocks of their own for it
// took 2 us of a 4K NV12 frame's 12.
__device__ __forceinline__ void fill_chroma(const EdgeLayout& l) {
  // 32-bit indices (the host checks that they fit): 64-bit division is a
  // long software routine.
  const int chunks = (l.chroma_bytes + 15) / 16;
  const int items = chunks * l.chroma_rows;
  const int threads = static_cast<int>(gridDim.y * gridDim.x) * kThreads;
  const int first = static_cast<int>(blockIdx.y * gridDim.x + blockIdx.x) * kThreads +
                    static_cast<int>(threadIdx.y * 32 + threadIdx.x);
  for (int p = 0; p < l.n_chroma; ++p) {
    uint8_t* plane = p == 0 ? l.chroma[0] : l.chroma[1];
    const size_t stride = p == 0 ? l.chroma_stride[0] : l.chroma_stride[1];
    for (int i = first; i < items; i += threads) {
      const int x = static_cast<int>(i % chunks) * 16;
      uint8_t* row = plane + static_cast<size_t>(i / chunks) * stride;
      if (l.chroma_aligned && x + 16 <= l.chroma_bytes) {
        *reinterpret_cast<uint4*>(row + x) =
            make_uint4(0x80808080u, 0x80808080u, 0x80808080u, 0x80808080u);
      } else {
        for (int k = x; k < x + 16 && k < l.chroma_bytes; ++k) row[k] = 128;
      }
    }
  }
}

template <bool kRgb>
__global__ void __launch_bounds__(kThreads)
    edge_kernel(const uint8_t* __restrict__ src, uint8_t* __restrict__ dst, EdgeLayout l) {
  if (!kRgb) fill_chroma(l);  // packed RGB has no chroma planes
  sobel_strip<kRgb>(src, dst, l);
}

// The test hook's kernel: the magnitude of every (gx, gy) in [-limit,
// limit]^2, through the same lanes and arithmetic as sobel_row, from the
// low lanes (out[2 i]) and the high ones (out[2 i + 1]).
__global__ void magnitude_grid_kernel(int limit, uint8_t* out) {
  const int side = 2 * limit + 1;
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= side * side) return;
  const uint32_t gx = static_cast<uint32_t>(i % side - limit + 1024);
  const uint32_t gy = static_cast<uint32_t>(i / side - limit + 1024);
  const uint32_t wx = gx | gx << 16, wy = gy | gy << 16, base = 0x4B000000u;
  out[2 * i] = static_cast<uint8_t>(magnitude(lane_lo(wx, base), lane_lo(wy, base)));
  out[2 * i + 1] = static_cast<uint8_t>(magnitude(lane_hi(wx, base), lane_hi(wy, base)));
}

// The formats the kernel above does not read (3-byte RGB, packed 4:2:2,
// 10- and 16-bit samples): a 32x8 tile of luma with a one-sample halo in
// shared memory, read through the format's components, and one thread per
// output pixel. The magnitude of deep gradients (up to 4 * 65535 a side)
// is the integer square root of a 64-bit sum.
constexpr int kGenericX = 32, kGenericY = 8;

struct EdgeComponent {
  const uint8_t* src;  // for the bits around a 10-bit sample
  uint8_t* dst;
  size_t src_stride, dst_stride;
  int offset, step;
  int samples, rows;  // that the plane's rows hold
};

struct EdgeGeneric {
  const uint8_t* src;  // plane 0
  uint8_t* dst;
  size_t src_stride, dst_stride;
  int width, height;
  bool rgb;  // luma from the 8-bit R, G, B at off[0..2]; else off[0] is luma
  int off[3];
  int step;    // bytes from one pixel's luma (or RGB) to the next
  int stored;  // luma samples a row holds (odd-width YUY2: width + 1)
  // 16-bit samples: `depth` bits `shift` up (alike for every component of
  // the formats in the table).
  bool wide;
  int shift;
  uint32_t max;  // of a sample, and of the magnitude
  int n_chroma;  // YUV: U and V, each set to `neutral` (half the maximum)
  uint32_t neutral;
  EdgeComponent chroma[2];
};

__device__ __forceinline__ uint32_t generic_sample(const uint8_t* p, bool wide, int shift,
                                                   uint32_t max) {
  if (!wide) return *p;
  return ((p[0] | (static_cast<uint32_t>(p[1]) << 8)) >> shift) & max;
}

__device__ __forceinline__ void generic_put(uint8_t* d, const uint8_t* around, bool wide, int shift,
                                            uint32_t max, uint32_t v) {
  if (!wide) {
    *d = static_cast<uint8_t>(v);
    return;
  }
  const uint32_t word =
      ((around[0] | (static_cast<uint32_t>(around[1]) << 8)) & ~(max << shift)) | (v << shift);
  d[0] = static_cast<uint8_t>(word);
  d[1] = static_cast<uint8_t>(word >> 8);
}

__device__ __forceinline__ int generic_luma(const EdgeGeneric& g, int x, int y) {
  const uint8_t* p =
      g.src + static_cast<size_t>(y) * g.src_stride + static_cast<size_t>(x) * g.step;
  if (g.rgb) return (77 * p[g.off[0]] + 150 * p[g.off[1]] + 29 * p[g.off[2]] + 128) >> 8;
  return static_cast<int>(generic_sample(p + g.off[0], g.wide, g.shift, g.max));
}

__global__ void edge_generic_kernel(const __grid_constant__ EdgeGeneric g) {
  __shared__ int tile[kGenericY + 2][kGenericX + 2];
  const int x0 = blockIdx.x * kGenericX, y0 = blockIdx.y * kGenericY;
  const int t = threadIdx.y * kGenericX + threadIdx.x;
  for (int i = t; i < (kGenericX + 2) * (kGenericY + 2); i += kGenericX * kGenericY) {
    const int ty = i / (kGenericX + 2), tx = i % (kGenericX + 2);
    const int x = min(max(x0 + tx - 1, 0), g.width - 1);
    const int y = min(max(y0 + ty - 1, 0), g.height - 1);
    tile[ty][tx] = generic_luma(g, x, y);
  }
  __syncthreads();
  const int x = x0 + threadIdx.x, y = y0 + threadIdx.y;
  if (y >= g.height) return;
  for (int c = 0; c < g.n_chroma; ++c) {
    const EdgeComponent& k = g.chroma[c];
    if (x < k.samples && y < k.rows) {
      const size_t at = static_cast<size_t>(x) * k.step + k.offset;
      generic_put(k.dst + static_cast<size_t>(y) * k.dst_stride + at,
                  k.src + static_cast<size_t>(y) * k.src_stride + at, g.wide, g.shift, g.max,
                  g.neutral);
    }
  }
  if (x >= g.stored) return;
  const size_t src_at = static_cast<size_t>(y) * g.src_stride + static_cast<size_t>(x) * g.step;
  const size_t dst_at = static_cast<size_t>(y) * g.dst_stride + static_cast<size_t>(x) * g.step;
  if (x >= g.width) {  // the padding luma of an odd-width packed 4:2:2 row
    g.dst[dst_at + g.off[0]] = g.src[src_at + g.off[0]];
    return;
  }
  const int tx = threadIdx.x + 1, ty = threadIdx.y + 1;
  const int gx = (tile[ty - 1][tx + 1] + 2 * tile[ty][tx + 1] + tile[ty + 1][tx + 1]) -
                 (tile[ty - 1][tx - 1] + 2 * tile[ty][tx - 1] + tile[ty + 1][tx - 1]);
  const int gy = (tile[ty + 1][tx - 1] + 2 * tile[ty + 1][tx] + tile[ty + 1][tx + 1]) -
                 (tile[ty - 1][tx - 1] + 2 * tile[ty - 1][tx] + tile[ty - 1][tx + 1]);
  const long long n = static_cast<long long>(gx) * gx + static_cast<long long>(gy) * gy;
  long long r = static_cast<long long>(sqrt(static_cast<double>(n)));
  while (r * r > n) --r;
  while ((r + 1) * (r + 1) <= n) ++r;
  const uint32_t m = static_cast<uint32_t>(min(r, static_cast<long long>(g.max)));
  for (int c = 0; c < (g.rgb ? 3 : 1); ++c)
    generic_put(g.dst + dst_at + g.off[c], g.src + src_at + g.off[c], g.wide, g.shift, g.max, m);
}

// Whether edge_kernel reads `format`: 8-bit samples with luma in a plane of
// its own (GRAY8 and planar or semi-planar YUV) or 4-byte RGB.
bool fast_path(const FormatInfo& info) {
  if (info.sample_bytes != 1) return false;
  return info.is_yuv ? info.pixel_bytes[0] == 1 : info.pixel_bytes[0] != 3;
}

void edge_generic_cuda(const ImageRef& in, const ImageRef& out, CUstream_st* stream) {
  const FormatInfo& info = format_info(in.format);
  EdgeGeneric g{};
  g.src = in.planes[0].data;
  g.dst = out.planes[0].data;
  g.src_stride = in.planes[0].stride;
  g.dst_stride = out.planes[0].stride;
  g.width = in.width;
  g.height = in.height;
  const Component& luma = info.comp[0];
  g.rgb = !info.is_yuv && colour_components(in.format) == 3;
  for (int c = 0; c < (g.rgb ? 3 : 1); ++c) g.off[c] = info.comp[c].offset;
  g.step = luma.pixel_stride;
  g.stored = static_cast<int>(
      (plane_row_bytes(in.format, 0, in.width) - luma.offset + luma.pixel_stride - 1) /
      luma.pixel_stride);
  g.wide = info.sample_bytes == 2;
  g.shift = luma.shift;
  g.max = (1u << luma.depth) - 1;
  if (info.is_yuv) {
    g.n_chroma = 2;
    g.neutral = 1u << (luma.depth - 1);
    for (int c = 0; c < 2; ++c) {
      const Component& k = info.comp[c + 1];
      EdgeComponent& e = g.chroma[c];
      e.src = in.planes[k.plane].data;
      e.dst = out.planes[k.plane].data;
      e.src_stride = in.planes[k.plane].stride;
      e.dst_stride = out.planes[k.plane].stride;
      e.offset = k.offset;
      e.step = k.pixel_stride;
      e.samples = static_cast<int>(
          (plane_row_bytes(in.format, k.plane, in.width) - k.offset + k.pixel_stride - 1) /
          k.pixel_stride);
      e.rows = static_cast<int>(plane_rows(in.format, k.plane, in.height));
    }
  }
  const dim3 grid((g.stored + kGenericX - 1) / kGenericX, (in.height + kGenericY - 1) / kGenericY);
  if (grid.y > 65535) throw Error("edge: the image is too tall (more than 524,280 rows)");
  edge_generic_kernel<<<grid, dim3(kGenericX, kGenericY), 0, stream>>>(g);
  CO_CUDA_CHECK_LAUNCH("the edge kernel");
}

bool aligned_to(const PlaneRef& p, size_t n) {
  return reinterpret_cast<uintptr_t>(p.data) % n == 0 && p.stride % n == 0;
}

}  // namespace

void edge_cuda(const ImageRef& in, const ImageRef& out, CUstream_st* stream) {
  const FormatInfo& info = format_info(in.format);
  if (!fast_path(info)) {
    edge_generic_cuda(in, out, stream);
    return;
  }
  EdgeLayout l{};
  l.width = in.width;
  l.height = in.height;
  const bool rgb = !info.is_yuv && in.format != PixelFormat::kGRAY8;
  if (rgb) {
    int r = 0, g = 0, b = 0;
    rgb_byte_offsets(in.format, &r, &g, &b);
    const int kept = 6 - r - g - b;
    l.grey_coef = 77u << (8 * r) | 150u << (8 * g) | 29u << (8 * b);
    l.keep_mask = 0xFFu << (8 * kept);
    // Pixel 0's selector: byte 0 of the magnitudes everywhere except the
    // kept byte, which takes byte 0 of the kept bytes (selector 4).
    l.keep_sel = 4u << (4 * kept);
    l.keep_pack = static_cast<uint32_t>(kept) | static_cast<uint32_t>(kept + 4) << 4;
  }
  if (in.planes[0].stride > UINT32_MAX || out.planes[0].stride > UINT32_MAX)
    throw Error("edge: a row stride above 4 GiB");
  l.src_stride = static_cast<uint32_t>(in.planes[0].stride);
  l.dst_stride = static_cast<uint32_t>(out.planes[0].stride);
  l.lane_base = 0x4B000000u;
  const size_t word = rgb ? 16 : 4;
  l.src_aligned = aligned_to(in.planes[0], word);
  l.dst_aligned = aligned_to(out.planes[0], word);
  const unsigned tiles_x = (in.width + kTileX - 1) / kTileX;
  const unsigned tile_y = rgb ? kTileY<true> : kTileY<false>;
  const unsigned tiles_y = (in.height + tile_y - 1) / tile_y;
  if (info.n_planes > 1) {
    l.n_chroma = info.n_planes - 1;
    l.chroma_aligned = true;
    for (int p = 1; p < info.n_planes; ++p) {
      l.chroma[p - 1] = out.planes[p].data;
      l.chroma_stride[p - 1] = out.planes[p].stride;
      l.chroma_aligned = l.chroma_aligned && aligned_to(out.planes[p], 16);
    }
    l.chroma_bytes = static_cast<int>(plane_row_bytes(in.format, 1, in.width));
    l.chroma_rows = static_cast<int>(plane_rows(in.format, 1, in.height));
    const size_t items = (static_cast<size_t>(l.chroma_bytes) + 15) / 16 * l.chroma_rows;
    if (items > 0x7FFFFFFF || static_cast<size_t>(tiles_x) * tiles_y * kThreads > 0x7FFFFFFF)
      throw Error("edge: the image is too large");
  }
  dim3 grid(tiles_x, tiles_y);
  if (grid.y > 65535) throw Error("edge: the image is too tall (more than about a million rows)");
  const dim3 block(32, kWarps);
  if (rgb)
    edge_kernel<true><<<grid, block, 0, stream>>>(in.planes[0].data, out.planes[0].data, l);
  else
    edge_kernel<false><<<grid, block, 0, stream>>>(in.planes[0].data, out.planes[0].data, l);
  CO_CUDA_CHECK_LAUNCH("the edge kernel");
}

std::vector<uint8_t> edge_magnitudes_cuda(int limit) {
  const int side = 2 * limit + 1;
  const size_t n = 2 * static_cast<size_t>(side) * side;
  const DeviceMemory device = DeviceMemory::allocate(n);
  auto* magnitudes = static_cast<uint8_t*>(device.get());
  std::vector<uint8_t> host(n);
  magnitude_grid_kernel<<<static_cast<unsigned>((n / 2 + 255) / 256), 256>>>(limit, magnitudes);
  CO_CUDA_CHECK_LAUNCH("the edge magnitude grid");
  CO_CUDA_CHECK(cudaMemcpy(host.data(), magnitudes, n, cudaMemcpyDeviceToHost));
  return host;
}

}  // namespace cudaoverlap
