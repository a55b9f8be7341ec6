// CUDA implementation of the `edge` kernel (see edge.h).
//
// One launch does the whole image. Each warp computes a strip 128 pixels
// wide and kRows rows tall (4 for 8-bit luma planes, 6 for packed 4:2:2,
// 8 for packed RGB and 16-bit samples), every thread 4 pixels side by side
// on each of those rows. A thread loads its own 4 pixels of the kRows + 2
// input rows, all loads first so that they are in flight together, and
// takes their luma out: a word of a luma plane, two pair words of packed
// 4:2:2 (one byte permute), 16 or 12 bytes of packed RGB (one dp4a per
// pixel), or 8 bytes of 16-bit samples. The neighbouring columns come from
// the lanes beside it by shuffle, and the warp's two outer columns from a
// halo that lanes 0..kRows+1 (left) and 16..16+kRows+1 (right) load
// alongside. No shared memory, no barrier: the shared-memory tile of an
// earlier version spent more instructions on staging than on the Sobel
// sums. Row addresses are one wide multiply-add of a 32-bit stride. The
// same threads fill separate chroma planes with the neutral value in
// 16-byte stores before their strips (two cudaMemset2DAsync calls cost
// more in launch gaps than that data; 10-bit chroma keeps the bits beside
// its samples, so it is read too); packed 4:2:2 gets its chroma bytes in
// the same stores as its luma.
//
// On 8-bit samples the Sobel operator runs separably on two 16-bit lanes
// per register (columns 0 and 2, columns 1 and 3 of a thread's 4): per
// input row the horizontal difference and the horizontal [1 2 1] sum,
// shared by the three output rows that read the row; per output row their
// vertical [1 2 1] sum (gx) and difference (gy). Lanes are biased so that
// none goes negative or carries into the other, so the results are exactly
// the reference's integers. The magnitude runs on the FP32 pipe: gx and gy
// leave their lanes as exact floats, gx^2 + gy^2 + 1/2 is exact in single
// precision, and floor(sqrt(n + 1/2)) is the integer square root of n; the
// hardware's approximate square root is far closer than the distance to
// the next integer (checked for every gradient the kernel can meet by the
// edge_magnitudes_cuda test hook). 16-bit samples (10-bit YUV, GRAY16_LE)
// take the same steps on 32-bit integers per column, and their magnitude is
// the approximate root corrected by one step either way on exact squares
// (deep_magnitude, checked by edge_deep_magnitudes_cuda). Integer and FP32
// work per pixel, not memory, bounded the earlier versions.
//
// A launch makes output rows [y0, y1) of the picture (a band of the
// engine's, or all of it): the grid's strips start at y0, the input rows
// above and below are clamped at the image's own top and bottom, and the
// chroma rows filled are those of the band. Nothing outside the band's rows
// is written.
#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "kernels/balance/balance.h"
#include "kernels/cuda_check.h"
#include "kernels/cuda_resources.h"
#include "kernels/edge/edge.h"
#include "kernels/edge/edge_probe.h"
#include "kernels/error.h"

namespace cudaoverlap {
namespace {

// How a format's luma is read (and its output written).
enum Kind : int {
  kLuma8,      // an 8-bit luma (or grey) plane: GRAY8, planar and semi-planar YUV
  kRgb32,      // 4-byte packed RGB
  kRgb24,      // 3-byte packed RGB
  kPacked422,  // YUY2, UYVY: luma and chroma bytes alternate
  kDeep,       // a plane of 16-bit luma samples: P010_10LE, I420_10LE, GRAY16_LE
};

constexpr int kWarps = 2;  // per block, stacked vertically
constexpr int kThreads = 32 * kWarps;
constexpr int kTileX = 32 * 4;  // columns per warp and block
// Output rows per thread. The more, the fewer input rows are loaded and
// taken apart twice (kRows + 2 for kRows, up to 14: the halo of each input
// row lives in a lane of its own half-warp); the fewer, the more warps the
// grid has. A warp loads, then computes, then stores, so it is other warps
// that keep the memory busy while it computes: too many rows a thread
// leave a frame's grid under one wave of the GPU, every warp loading at the
// start and computing after. 4 rows for 8-bit luma and 6 for packed 4:2:2
// are the faster; packed RGB and 16-bit samples, whose rows hold more bytes
// and registers, lose at fewer than 8.
template <int K>
constexpr int kRows = K == kLuma8 ? 4 : (K == kPacked422 ? 6 : 8);
template <int K>
constexpr int kTileY = kRows<K>* kWarps;  // rows per block
// Bytes of one pixel's luma (or RGB, or 4:2:2 luma and chroma) in a row.
template <int K>
constexpr int kPixelBytes = K == kRgb32 ? 4 : (K == kRgb24 ? 3 : (K == kLuma8 ? 1 : 2));
static_assert(kRows<kLuma8> + 2 <= 16, "the halo of each input row lives in its own lane");

// A thread's 4 luma samples of a row: the bytes of a word, or for kDeep
// the four 16-bit words as stored (two per 32-bit word), bits beside the
// sample included.
template <int K>
using Luma = std::conditional_t<K == kDeep, uint2, uint32_t>;

struct EdgeLayout {
  int width, height;
  int row0, row_end;  // the output rows made: a band, or [0, height)
  int row_bytes;      // of the luma plane's picture part (packed 4:2:2's stores)
  // Row strides; 32 bits, so a row's address is one wide multiply-add.
  uint32_t src_stride, dst_stride;
  uint32_t lane_base;  // 0x4B000000, in a register: see lane_lo
  uint32_t grey_coef;  // packed RGB: 77, 150, 29 at the R, G, B bytes (dp4a)
  uint32_t keep_mask;  // 4-byte RGB: the alpha or padding byte
  uint32_t keep_pack;  // __byte_perm selector: the kept bytes of two pixels
  uint32_t keep_sel;   // __byte_perm selector of pixel 0: magnitude, kept byte
  // Packed 4:2:2: the byte of a pair's first luma (0 YUY2, 1 UYVY), the
  // byte permute that takes 4 luma out of two pair words, and the two that
  // put 4 magnitudes and neutral chroma (bytes 4..7) into them.
  int luma_byte;
  uint32_t luma_sel, out_sel[2];
  // 16-bit samples: a sample is (word >> shift) & max; lane_mask is max in
  // both 16-bit lanes, keep2 the bits beside the samples of two words.
  int shift;
  uint32_t max, lane_mask, keep2;
  bool src_aligned, dst_aligned;  // for the kind's loads and stores
  // Chroma planes to fill with the neutral value (NV12: 1, I420: 2, else 0):
  // each 32-bit word of a row becomes (input & chroma_keep) | chroma_value.
  int n_chroma;
  uint8_t* chroma[2];
  const uint8_t* chroma_src[2];
  size_t chroma_stride[2], chroma_src_stride[2];
  uint32_t chroma_keep, chroma_value;
  int chroma_bytes, chroma_rows;  // per plane
  bool chroma_aligned;            // 16-byte pointers and strides
};

// Luma of the packed pixel w: (77 R + 150 G + 29 B + 128) >> 8, at most
// 65408 before the shift, so it is byte 1 of the sum. grey_coef's byte 3
// is 0, so for 3-byte pixels byte 3 of w may hold anything.
__device__ __forceinline__ uint32_t grey_sum(uint32_t w, uint32_t coef) {
  return __dp4a(w, coef, 128u);
}

// The luma of 4 pixel words as the bytes of a word.
__device__ __forceinline__ uint32_t grey4(uint32_t p0, uint32_t p1, uint32_t p2, uint32_t p3,
                                          uint32_t coef) {
  const uint32_t lo = __byte_perm(grey_sum(p0, coef), grey_sum(p1, coef), 0x0051);
  const uint32_t hi = __byte_perm(grey_sum(p2, coef), grey_sum(p3, coef), 0x0051);
  return __byte_perm(lo, hi, 0x5410);
}

// The luma of 4 pixels starting at x, clamped at the edges: the slow path
// for loads that cross an edge or planes that are not aligned for the
// kind's loads. Not inlined, so the unrolled row loop carries one copy;
// its arguments go by value, since a reference would put the layout on the
// stack. coef: grey_coef (RGB); luma_byte: packed 4:2:2's.
template <int K>
__device__ __noinline__ Luma<K> luma_clamped(const uint8_t* row, int width, uint32_t coef,
                                             int luma_byte, int x) {
  uint32_t w[2] = {0, 0};
  for (int k = 0; k < 4; ++k) {
    const int c = min(max(x + k, 0), width - 1);
    if constexpr (K == kDeep) {
      const uint8_t* p = row + static_cast<size_t>(c) * 2;
      w[k >> 1] |= (static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8)
                   << (16 * (k & 1));
      continue;
    }
    uint32_t s;
    if constexpr (K == kRgb32 || K == kRgb24) {
      const uint8_t* p = row + static_cast<size_t>(c) * kPixelBytes<K>;
      uint32_t px = static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
                    static_cast<uint32_t>(p[2]) << 16;
      if (K == kRgb32) px |= static_cast<uint32_t>(p[3]) << 24;
      s = grey_sum(px, coef) >> 8;
    } else if constexpr (K == kPacked422) {
      s = row[static_cast<size_t>(c) * 2 + luma_byte];
    } else {
      s = row[c];
    }
    w[0] |= s << (8 * k);
  }
  if constexpr (K == kDeep)
    return make_uint2(w[0], w[1]);
  else
    return w[0];
}

// The luma of the 4 pixels at p, which lie inside a plane aligned for the
// kind's loads, and, for 4-byte RGB, their kept bytes as the bytes of *keep.
template <int K>
__device__ __forceinline__ Luma<K> load_luma(const uint8_t* p, const EdgeLayout& l,
                                             uint32_t* keep) {
  if constexpr (K == kLuma8) {
    return *reinterpret_cast<const uint32_t*>(p);
  } else if constexpr (K == kRgb32) {
    const uint4 v = *reinterpret_cast<const uint4*>(p);
    *keep =
        __byte_perm(__byte_perm(v.x, v.y, l.keep_pack), __byte_perm(v.z, v.w, l.keep_pack), 0x5410);
    return grey4(v.x, v.y, v.z, v.w, l.grey_coef);
  } else if constexpr (K == kRgb24) {
    // 4 pixels are 12 bytes: pixel words from bytes 0, 3, 6 and 9.
    const uint32_t* q = reinterpret_cast<const uint32_t*>(p);
    const uint32_t w0 = q[0], w1 = q[1], w2 = q[2];
    return grey4(w0, __byte_perm(w0, w1, 0x0543), __byte_perm(w1, w2, 0x0432), w2 >> 8,
                 l.grey_coef);
  } else if constexpr (K == kPacked422) {
    const uint2 v = *reinterpret_cast<const uint2*>(p);
    return __byte_perm(v.x, v.y, l.luma_sel);
  } else {
    return *reinterpret_cast<const uint2*>(p);
  }
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

// The same for 16-bit samples, a 32-bit integer per column: the samples
// of the thread's 4 columns (lanes of `centre`), of column -1 (the high
// lane of the left neighbour's second word) and of column 4 (the low lane
// of the right neighbour's first word).
struct DeepTerms {
  int d[4], s[4];
};

__device__ __forceinline__ DeepTerms deep_terms(uint32_t left, uint2 centre, uint32_t right,
                                                const EdgeLayout& l) {
  const uint32_t a = (left >> l.shift) & l.lane_mask;
  const uint32_t b = (centre.x >> l.shift) & l.lane_mask;
  const uint32_t c = (centre.y >> l.shift) & l.lane_mask;
  const uint32_t e = (right >> l.shift) & l.lane_mask;
  const int p[6] = {static_cast<int>(a >> 16), static_cast<int>(b & 0xFFFFu),
                    static_cast<int>(b >> 16), static_cast<int>(c & 0xFFFFu),
                    static_cast<int>(c >> 16), static_cast<int>(e & 0xFFFFu)};
  DeepTerms t;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    t.d[i] = p[i + 2] - p[i];
    t.s[i] = p[i] + 2 * p[i + 1] + p[i + 2];
  }
  return t;
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

// min(floor(sqrt(gx^2 + gy^2)), max) for the gradients of 16-bit samples,
// |gx|, |gy| <= 4 * 65535 < 2^18, max <= 65535, in 32-bit integers. gx and
// gy become exact floats as the 8-bit lanes do (lane_lo), biased by 2^18
// into the mantissa of 2^23, and the root's integer part leaves the same
// way (magnitude): the conversion instructions run at a quarter of the
// rate. The sum in single precision, f, is within 2^-24 of n = gx^2 + gy^2
// relative to it: where f >= kSaturated, n >= 65535^2 and the result is
// max; below, n < 2^32, so the 32-bit products and sum are exact. The
// approximate root of f is within 2^-21 of the true root relative to it,
// under 0.04 for every root below 65536, so its integer part r is the floor
// or one off it, and one comparison of squares each way makes it exact
// (r <= 65535, so r^2 fits; n - r^2 > 2 r says (r + 1)^2 <= n without
// forming it).
constexpr float kSaturated = 4294900000.0f;
constexpr uint32_t kDeepBias = 1u << 18;
__device__ __forceinline__ uint32_t deep_magnitude(int gx, int gy, uint32_t max) {
  const uint32_t ux = static_cast<uint32_t>(gx), uy = static_cast<uint32_t>(gy);
  constexpr float kBase = 8388608.0f + kDeepBias;
  const float fx = __uint_as_float(0x4B000000u + kDeepBias + ux) - kBase;
  const float fy = __uint_as_float(0x4B000000u + kDeepBias + uy) - kBase;
  const float f = fmaf(fx, fx, fy * fy);
  float s;
  asm("sqrt.approx.ftz.f32 %0, %1;" : "=f"(s) : "f"(f));
  uint32_t r = min(__float_as_uint(__fadd_rz(s, 8388608.0f)) - 0x4B000000u, 65535u);
  const uint32_t n = ux * ux + uy * uy;
  const uint32_t r2 = r * r;
  if (r2 > n)
    --r;
  else if (n - r2 > 2 * r)
    ++r;
  return f >= kSaturated ? max : min(r, max);
}

// What sobel_row makes: 4 magnitudes as the bytes of a word, or for kDeep
// in the 16-bit lanes of two words.
template <int K>
using Magnitudes = std::conditional_t<K == kDeep, uint2, uint32_t>;
template <int K>
using Terms = std::conditional_t<K == kDeep, DeepTerms, RowTerms>;

// The 4 magnitudes of one output row from the terms of its rows above (a),
// at (b) and below (c).
__device__ __forceinline__ uint32_t sobel_row(const RowTerms& a, const RowTerms& b,
                                              const RowTerms& c, const EdgeLayout& l) {
  // gx: vertical [1 2 1] of the differences, biased by 1024 (4..2044); gy:
  // vertical difference of the sums, biased by 1024 (4..2044).
  const uint32_t base = l.lane_base;
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

__device__ __forceinline__ uint2 sobel_row(const DeepTerms& a, const DeepTerms& b,
                                           const DeepTerms& c, const EdgeLayout& l) {
  uint32_t m[4];
#pragma unroll
  for (int i = 0; i < 4; ++i)
    m[i] = deep_magnitude(a.d[i] + 2 * b.d[i] + c.d[i], c.s[i] - a.s[i], l.max);
  return make_uint2(m[0] | m[1] << 16, m[2] | m[3] << 16);
}

// Writes the 4 magnitudes in m to d, pixels x..x+3 of an output row whose
// input row is s (both already offset to pixel x); `fast` when all 4 lie
// inside and both planes are aligned for the kind's stores. keep: 4-byte
// RGB's kept bytes (load_luma); raw: the row's 16-bit words as loaded.
template <int K>
__device__ __forceinline__ void store_row(const uint8_t* s, uint8_t* d, const EdgeLayout& l, int x,
                                          bool fast, Magnitudes<K> m, uint32_t keep, Luma<K> raw) {
  const int n = min(4, l.width - x);
  if constexpr (K == kLuma8) {
    if (fast) {
      *reinterpret_cast<uint32_t*>(d) = m;
    } else {
      for (int i = 0; i < n; ++i) d[i] = static_cast<uint8_t>(m >> (8 * i));
    }
  } else if constexpr (K == kRgb32) {
    if (fast) {
      // Pixel i: magnitude byte i in R, G and B, kept byte i in its place.
      *reinterpret_cast<uint4*>(d) = make_uint4(
          __byte_perm(m, keep, l.keep_sel), __byte_perm(m, keep, l.keep_sel + 0x1111u),
          __byte_perm(m, keep, l.keep_sel + 0x2222u), __byte_perm(m, keep, l.keep_sel + 0x3333u));
      return;
    }
    for (int i = 0; i < n; ++i) {
      const uint32_t px =
          static_cast<uint32_t>(s[4 * i]) | static_cast<uint32_t>(s[4 * i + 1]) << 8 |
          static_cast<uint32_t>(s[4 * i + 2]) << 16 | static_cast<uint32_t>(s[4 * i + 3]) << 24;
      const uint32_t w =
          (px & l.keep_mask) | (((m >> (8 * i)) & 0xFFu) * 0x01010101u & ~l.keep_mask);
      for (int c = 0; c < 4; ++c) d[4 * i + c] = static_cast<uint8_t>(w >> (8 * c));
    }
  } else if constexpr (K == kRgb24) {
    if (fast) {
      // 12 bytes: m0 m0 m0 m1 | m1 m1 m2 m2 | m2 m3 m3 m3.
      uint32_t* q = reinterpret_cast<uint32_t*>(d);
      q[0] = __byte_perm(m, 0, 0x1000);
      q[1] = __byte_perm(m, 0, 0x2211);
      q[2] = __byte_perm(m, 0, 0x3332);
      return;
    }
    for (int i = 0; i < n; ++i)
      for (int c = 0; c < 3; ++c) d[3 * i + c] = static_cast<uint8_t>(m >> (8 * i));
  } else if constexpr (K == kPacked422) {
    if (fast) {
      *reinterpret_cast<uint2*>(d) = make_uint2(__byte_perm(m, 0x80808080u, l.out_sel[0]),
                                                __byte_perm(m, 0x80808080u, l.out_sel[1]));
      return;
    }
    // Luma of the pixels inside; chroma 128; the second luma of an odd
    // width's last pair (past the picture) as it was.
    const int bytes = min(8, l.row_bytes - 2 * x);
    for (int b = 0; b < bytes; ++b) {
      const int i = b >> 1;  // pixel x + i
      if ((b & 1) != l.luma_byte)
        d[b] = 128;
      else
        d[b] = i < n ? static_cast<uint8_t>(m >> (8 * i)) : s[b];
    }
  } else {
    if (fast) {
      *reinterpret_cast<uint2*>(d) =
          make_uint2((raw.x & l.keep2) | (m.x << l.shift), (raw.y & l.keep2) | (m.y << l.shift));
      return;
    }
    for (int i = 0; i < n; ++i) {
      const uint32_t v = ((i < 2 ? m.x : m.y) >> (16 * (i & 1))) & 0xFFFFu;
      const uint32_t word =
          ((s[2 * i] | static_cast<uint32_t>(s[2 * i + 1]) << 8) & l.keep2) | (v << l.shift);
      d[2 * i] = static_cast<uint8_t>(word);
      d[2 * i + 1] = static_cast<uint8_t>(word >> 8);
    }
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

template <int K>
__device__ __forceinline__ void sobel_strip(const uint8_t* __restrict__ src,
                                            uint8_t* __restrict__ dst, const EdgeLayout& l) {
  constexpr int kOut = kRows<K>;
  constexpr int kIn = kOut + 2;
  constexpr int kBytes = kPixelBytes<K>;
  const int lane = static_cast<int>(threadIdx.x);
  const int x0 = static_cast<int>(blockIdx.x) * kTileX;
  const int x = x0 + 4 * lane;
  const int y0 =
      l.row0 + (static_cast<int>(blockIdx.y) * kWarps + static_cast<int>(threadIdx.y)) * kOut;
  // Uniform per warp: the shuffles below need the whole warp, so a warp
  // wholly below the rows it makes leaves together.
  if (y0 >= l.row_end) return;
  auto in_row = [&](int r) { return min(max(y0 - 1 + r, 0), l.height - 1); };
  // Halo: the 4 pixels left of the warp's columns (lanes 0..kIn-1) or
  // right of them (lanes 16..), of input row lane % 16.
  // 16-bit samples keep only the word the neighbour needs (the left
  // halo's second, the right one's first).
  uint32_t halo = 0;
  if ((lane & 15) < kIn) {
    const int hx = lane < 16 ? x0 - 4 : x0 + kTileX;
    const uint8_t* row = row_of(src, in_row(lane & 15), l.src_stride);
    uint32_t unused;
    const Luma<K> h = l.src_aligned && hx >= 0 && hx + 4 <= l.width
                          ? load_luma<K>(row + static_cast<size_t>(hx) * kBytes, l, &unused)
                          : luma_clamped<K>(row, l.width, l.grey_coef, l.luma_byte, hx);
    if constexpr (K == kDeep)
      halo = lane < 16 ? h.y : h.x;
    else
      halo = h;
  }
  // All of a thread's loads before any use. Lanes past the right edge load
  // clamped pixels: their luma is the right neighbour of the last lane inside.
  const bool fast = l.src_aligned && x + 4 <= l.width;
  const uint8_t* src_x = src + static_cast<size_t>(x) * kBytes;
  Luma<K> centre[kIn];
  uint32_t keep[kIn] = {};
  if (fast) {
#pragma unroll
    for (int r = 0; r < kIn; ++r)
      centre[r] = load_luma<K>(row_of(src_x, in_row(r), l.src_stride), l, &keep[r]);
  } else {
#pragma unroll
    for (int r = 0; r < kIn; ++r)
      centre[r] = luma_clamped<K>(row_of(src, in_row(r), l.src_stride), l.width, l.grey_coef,
                                  l.luma_byte, x);
  }

  const bool store_fast = l.dst_aligned && fast;
  uint8_t* dst_x = dst + static_cast<size_t>(x) * kBytes;
  const int halo_lane = lane == 0 ? 0 : 16;
  Terms<K> t[3];
#pragma unroll
  for (int r = 0; r < kIn; ++r) {
    const uint32_t h = __shfl_sync(0xFFFFFFFFu, halo, halo_lane + r);
    if constexpr (K == kDeep) {
      // Column -1 is in the left neighbour's second word, column 4 in the
      // right one's first.
      uint32_t left = __shfl_up_sync(0xFFFFFFFFu, centre[r].y, 1);
      uint32_t right = __shfl_down_sync(0xFFFFFFFFu, centre[r].x, 1);
      if (lane == 0) left = h;
      if (lane == 31) right = h;
      t[r % 3] = deep_terms(left, centre[r], right, l);
    } else {
      uint32_t left = __shfl_up_sync(0xFFFFFFFFu, centre[r], 1);
      uint32_t right = __shfl_down_sync(0xFFFFFFFFu, centre[r], 1);
      if (lane == 0) left = h;
      if (lane == 31) right = h;
      t[r % 3] = row_terms(left, centre[r], right);
    }
    if (r < 2) continue;
    const int y = y0 + r - 2;
    if (y >= l.row_end || x >= l.width) continue;
    const Magnitudes<K> m = sobel_row(t[(r - 2) % 3], t[(r - 1) % 3], t[r % 3], l);
    store_row<K>(row_of(src_x, y, l.src_stride), row_of(dst_x, y, l.dst_stride), l, x, store_fast,
                 m, keep[r - 1], centre[r - 1]);
  }
}

// Fills the chroma planes with the neutral value, each thread of the grid
// 16 bytes of a row at a time before its Sobel strip. Stores leave without
// waiting, so this costs the strip's loads almost nothing; blocks of their
// own for it are slower.
__device__ __forceinline__ void fill_chroma(const EdgeLayout& l) {
  // 32-bit indices (the host checks that they fit): 64-bit division is a
  // long software routine.
  const int chunks = (l.chroma_bytes + 15) / 16;
  const int items = chunks * l.chroma_rows;
  const int threads = static_cast<int>(gridDim.y * gridDim.x) * kThreads;
  const int first = static_cast<int>(blockIdx.y * gridDim.x + blockIdx.x) * kThreads +
                    static_cast<int>(threadIdx.y * 32 + threadIdx.x);
  const uint32_t keep = l.chroma_keep, value = l.chroma_value;
  for (int p = 0; p < l.n_chroma; ++p) {
    uint8_t* plane = p == 0 ? l.chroma[0] : l.chroma[1];
    const uint8_t* in = p == 0 ? l.chroma_src[0] : l.chroma_src[1];
    const size_t stride = p == 0 ? l.chroma_stride[0] : l.chroma_stride[1];
    const size_t in_stride = p == 0 ? l.chroma_src_stride[0] : l.chroma_src_stride[1];
    for (int i = first; i < items; i += threads) {
      const int x = static_cast<int>(i % chunks) * 16;
      const int y = i / chunks;
      uint8_t* row = plane + static_cast<size_t>(y) * stride;
      const uint8_t* in_row = in + static_cast<size_t>(y) * in_stride;
      if (l.chroma_aligned && x + 16 <= l.chroma_bytes) {
        uint4 v = make_uint4(0, 0, 0, 0);
        if (keep != 0) v = *reinterpret_cast<const uint4*>(in_row + x);
        *reinterpret_cast<uint4*>(row + x) = make_uint4((v.x & keep) | value, (v.y & keep) | value,
                                                        (v.z & keep) | value, (v.w & keep) | value);
      } else {
        for (int k = x; k < x + 16 && k < l.chroma_bytes; ++k) {
          const uint32_t kb = (keep >> (8 * (k & 3))) & 0xFFu;
          const uint32_t vb = (value >> (8 * (k & 3))) & 0xFFu;
          row[k] = static_cast<uint8_t>((kb != 0 ? in_row[k] & kb : 0) | vb);
        }
      }
    }
  }
}

template <int K>
__global__ void __launch_bounds__(kThreads)
    edge_kernel(const uint8_t* __restrict__ src, uint8_t* __restrict__ dst, EdgeLayout l) {
  if (K == kLuma8 || K == kDeep) fill_chroma(l);  // the others have no chroma planes
  sobel_strip<K>(src, dst, l);
}

// The test hooks' kernels: the magnitude of every (gx, gy) in [-limit,
// limit]^2, through the same lanes and arithmetic as sobel_row, from the
// low lanes (out[2 i]) and the high ones (out[2 i + 1]); and deep_magnitude
// of listed gradients.
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

__global__ void deep_magnitude_kernel(const int2* g, int n, uint32_t max, uint32_t* out) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = deep_magnitude(g[i].x, g[i].y, max);
}

bool aligned_to(const PlaneRef& p, size_t n) {
  return reinterpret_cast<uintptr_t>(p.data) % n == 0 && p.stride % n == 0;
}

Kind kind_of(PixelFormat format) {
  const FormatInfo& info = format_info(format);
  if (info.sample_bytes == 2) return kDeep;
  if (info.is_yuv) return info.pixel_bytes[0] == 1 ? kLuma8 : kPacked422;
  if (colour_components(format) == 1) return kLuma8;
  return info.pixel_bytes[0] == 3 ? kRgb24 : kRgb32;
}

// The kernel for kind K, its grid from K's strip height.
template <int K>
void launch(CUstream_st* stream, const ImageRef& in, const ImageRef& out, const EdgeLayout& l) {
  const dim3 grid((in.width + kTileX - 1) / kTileX,
                  (l.row_end - l.row0 + kTileY<K> - 1) / kTileY<K>);
  if (grid.y > 65535)
    throw Error("edge: the image is too tall (more than " + std::to_string(65535 * kTileY<K>) +
                " rows)");
  // fill_chroma's 32-bit thread indices.
  if (static_cast<size_t>(grid.x) * grid.y * kThreads > 0x7FFFFFFF)
    throw Error("edge: the image is too large");
  edge_kernel<K><<<grid, dim3(32, kWarps), 0, stream>>>(in.planes[0].data, out.planes[0].data, l);
}

}  // namespace

void edge_cuda(const ImageRef& in, const ImageRef& out, int y0, int y1, CUstream_st* stream) {
  const FormatInfo& info = format_info(in.format);
  const Kind kind = kind_of(in.format);
  if (y1 <= y0) return;
  EdgeLayout l{};
  l.width = in.width;
  l.height = in.height;
  l.row0 = y0;
  l.row_end = y1;
  l.row_bytes = static_cast<int>(plane_row_bytes(in.format, 0, in.width));
  if (kind == kRgb32 || kind == kRgb24) {
    int r = 0, g = 0, b = 0;
    rgb_byte_offsets(in.format, &r, &g, &b);
    l.grey_coef = 77u << (8 * r) | 150u << (8 * g) | 29u << (8 * b);
    if (kind == kRgb32) {
      const int kept = 6 - r - g - b;
      l.keep_mask = 0xFFu << (8 * kept);
      // Pixel 0's selector: byte 0 of the magnitudes everywhere except the
      // kept byte, which takes byte 0 of the kept bytes (selector 4).
      l.keep_sel = 4u << (4 * kept);
      l.keep_pack = static_cast<uint32_t>(kept) | static_cast<uint32_t>(kept + 4) << 4;
    }
  }
  if (kind == kPacked422) {
    l.luma_byte = info.comp[0].offset;  // 0 YUY2, 1 UYVY
    l.luma_sel = l.luma_byte == 0 ? 0x6420u : 0x7531u;
    l.out_sel[0] = l.luma_byte == 0 ? 0x4140u : 0x1404u;
    l.out_sel[1] = l.luma_byte == 0 ? 0x4342u : 0x3424u;
  }
  const Component& luma = info.comp[0];
  l.shift = luma.shift;
  l.max = (1u << luma.depth) - 1;
  l.lane_mask = l.max | l.max << 16;
  l.keep2 = kind == kDeep ? ~(l.lane_mask << l.shift) : 0u;
  if (in.planes[0].stride > UINT32_MAX || out.planes[0].stride > UINT32_MAX)
    throw Error("edge: a row stride above 4 GiB");
  l.src_stride = static_cast<uint32_t>(in.planes[0].stride);
  l.dst_stride = static_cast<uint32_t>(out.planes[0].stride);
  l.lane_base = 0x4B000000u;
  const size_t word = kind == kRgb32 ? 16 : (kind == kPacked422 || kind == kDeep ? 8 : 4);
  l.src_aligned = aligned_to(in.planes[0], word);
  l.dst_aligned = aligned_to(out.planes[0], word);
  if (info.n_planes > 1) {
    // Neutral chroma: half the maximum, in the sample's bits of its word.
    const Component& u = info.comp[1];
    const uint32_t sample = (1u << (u.depth - 1)) << u.shift;
    const uint32_t bits = ((1u << u.depth) - 1) << u.shift;
    l.chroma_value = info.sample_bytes == 2 ? sample * 0x00010001u : sample * 0x01010101u;
    l.chroma_keep = info.sample_bytes == 2 ? ~(bits * 0x00010001u) : 0u;
    l.n_chroma = info.n_planes - 1;
    l.chroma_aligned = true;
    // The band's chroma rows (its first a multiple of the subsampling).
    const size_t c0 = plane_rows(in.format, 1, y0);
    for (int p = 1; p < info.n_planes; ++p) {
      l.chroma[p - 1] = out.planes[p].data + c0 * out.planes[p].stride;
      l.chroma_stride[p - 1] = out.planes[p].stride;
      l.chroma_src[p - 1] = in.planes[p].data + c0 * in.planes[p].stride;
      l.chroma_src_stride[p - 1] = in.planes[p].stride;
      l.chroma_aligned = l.chroma_aligned && aligned_to(out.planes[p], 16) &&
                         (l.chroma_keep == 0 || aligned_to(in.planes[p], 16));
    }
    l.chroma_bytes = static_cast<int>(plane_row_bytes(in.format, 1, in.width));
    l.chroma_rows = static_cast<int>(plane_rows(in.format, 1, y1) - c0);
    const size_t items = (static_cast<size_t>(l.chroma_bytes) + 15) / 16 * l.chroma_rows;
    if (items > 0x7FFFFFFF) throw Error("edge: the image is too large");
  }
  switch (kind) {
    case kLuma8:
      launch<kLuma8>(stream, in, out, l);
      break;
    case kRgb32:
      launch<kRgb32>(stream, in, out, l);
      break;
    case kRgb24:
      launch<kRgb24>(stream, in, out, l);
      break;
    case kPacked422:
      launch<kPacked422>(stream, in, out, l);
      break;
    case kDeep:
      launch<kDeep>(stream, in, out, l);
      break;
  }
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

std::vector<uint32_t> edge_deep_magnitudes_cuda(const std::vector<std::pair<int, int>>& gradients,
                                                uint32_t max) {
  const size_t n = gradients.size();
  std::vector<uint32_t> host(n);
  if (n == 0) return host;
  std::vector<int2> pairs(n);
  for (size_t i = 0; i < n; ++i) pairs[i] = make_int2(gradients[i].first, gradients[i].second);
  const DeviceMemory in = DeviceMemory::allocate(n * sizeof(int2));
  const DeviceMemory out = DeviceMemory::allocate(n * sizeof(uint32_t));
  CO_CUDA_CHECK(cudaMemcpy(in.get(), pairs.data(), n * sizeof(int2), cudaMemcpyHostToDevice));
  deep_magnitude_kernel<<<static_cast<unsigned>((n + 255) / 256), 256>>>(
      static_cast<const int2*>(in.get()), static_cast<int>(n), max,
      static_cast<uint32_t*>(out.get()));
  CO_CUDA_CHECK_LAUNCH("the edge deep magnitudes");
  CO_CUDA_CHECK(cudaMemcpy(host.data(), out.get(), n * sizeof(uint32_t), cudaMemcpyDeviceToHost));
  return host;
}

}  // namespace cudaoverlap
