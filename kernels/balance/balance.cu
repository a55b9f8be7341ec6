// CUDA implementation of the `balance` kernel (see balance.h).
//
// The luma table (256 bytes) travels in the kernel arguments and is copied to
// shared memory per block. The chroma result depends only on the (u, v) pair
// and the parameters, so, as videobalance does, it comes from a 256x256
// table: built on the GPU in double precision with the explicitly rounded
// intrinsics (__dmul_rn, __dadd_rn), which keep nvcc from fusing a multiply
// and an add into an FMA that would round differently from the host's
// separate operations. Computing it per sample cost a dozen double-precision
// operations and conversions per pair, which bounded the kernel; a lookup
// costs one cached 2-byte load. The table lives in the operation's workspace,
// built once when an engine starts (balance_prepare_cuda, one small launch
// on the stream that then runs the frames) and only read afterwards.
//
// Every thread handles a 16-byte word (4 RGB pixels, 16 luma samples, 8
// chroma pairs) of one row (packed RGB) or of kRowsPerThread rows (planar),
// and planar formats do luma and chroma in a single launch. A thread issues
// its first global loads before the block copies the luma table to shared
// memory and meets at the barrier, so that the memory latency overlaps the
// copy rather than following it.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "kernels/balance/balance.h"
#include "kernels/balance/balance_math.h"
#include "kernels/balance/balance_pixel.cuh"
#include "kernels/copy/copy.h"
#include "kernels/cuda_check.h"
#include "kernels/operation.h"
#include "kernels/rgb24_words.cuh"

namespace cudaoverlap {
namespace {

constexpr int kThreads = 256;
constexpr unsigned kMaxGridY = 65535;

// A launch's arguments: the luma table and chroma constants, and for packed
// RGB the words balance_pixel reads (the chroma table is every format's).
struct BalanceArgs : RgbBalanceWords {
  BalanceConstants k;
};

// Entries of the chroma table: u' in the low byte, v' in the high one,
// indexed by u * 256 + v.
constexpr int kChromaEntries = 256 * 256;

__device__ __forceinline__ uint32_t round_clamp(double v) {
  v = v < 0.0 ? 0.0 : (v > 255.0 ? 255.0 : v);
  return static_cast<uint32_t>(rint(v));
}

// videobalance's tableu[u][v] and tablev[u][v], for u = blockIdx.x and
// v = threadIdx.x.
__global__ void chroma_table_kernel(double hue_cos, double hue_sin, double saturation,
                                    uint16_t* table) {
  const int u = blockIdx.x, v = threadIdx.x;
  const double i = u - 128;
  const double j = v - 128;
  const double mi = -(u - 128);
  const double su = __dadd_rn(__dmul_rn(i, hue_cos), __dmul_rn(j, hue_sin));
  const double sv = __dadd_rn(__dmul_rn(mi, hue_sin), __dmul_rn(j, hue_cos));
  const uint32_t uo = round_clamp(__dadd_rn(128.0, __dmul_rn(su, saturation)));
  const uint32_t vo = round_clamp(__dadd_rn(128.0, __dmul_rn(sv, saturation)));
  table[u * 256 + v] = static_cast<uint16_t>(uo | vo << 8);
}

// Two NV12 (u, v) pairs in a word. A pair read as a 16-bit value is its
// table index byte-swapped, and the entry is the output pair as stored.
// NV21's (v, u) pairs (kSwap) read as 16-bit values are their indices, and
// their entries are stored byte-swapped.
template <bool kSwap>
__device__ __forceinline__ uint32_t nv12_pairs(const uint16_t* __restrict__ table, uint32_t w) {
  if constexpr (kSwap)
    return __byte_perm(balance_chroma(table, w & 0xFFFF), balance_chroma(table, w >> 16), 0x4501);
  return balance_chroma(table, __byte_perm(w, 0, 0x4401)) |
         balance_chroma(table, __byte_perm(w, 0, 0x4423)) << 16;
}

__device__ __forceinline__ void load_table(const BalanceArgs& a, uint8_t* table) {
  for (int i = threadIdx.x; i < 256; i += blockDim.x) table[i] = a.k.table_y[i];
  __syncthreads();
}

// Bytes (luma) or pixels (packed RGB) one thread handles: a 16-byte word of
// luma or RGB when aligned. One byte or pixel per thread left each warp
// moving 32 or 128 bytes and spent as much time on indexing as on data.
constexpr int kLumaChunk = 16;
constexpr int kRgbChunk = 4;
// Chroma pairs per thread: 16 bytes of NV12's UV, 8 of each I420 plane, so
// a chroma row needs as many threads as a luma row.
constexpr int kChromaChunk = 8;

__device__ __forceinline__ uint32_t map_word(const uint8_t* table, uint32_t w) {
  return static_cast<uint32_t>(table[w & 0xFF]) |
         static_cast<uint32_t>(table[(w >> 8) & 0xFF]) << 8 |
         static_cast<uint32_t>(table[(w >> 16) & 0xFF]) << 16 |
         static_cast<uint32_t>(table[w >> 24]) << 24;
}

struct PlanarArgs {
  // Luma plane.
  const uint8_t* sy;
  size_t sy_stride;
  uint8_t* dy;
  size_t dy_stride;
  int y_bytes, y_rows;
  // Chroma: U and V samples at su[x * step], sv[x * step] (NV12, NV16: one
  // plane, sv = su + 1, step 2; NV21: su = sv + 1; I420, Y42B, Y444: two
  // planes, step 1). Planes of a third of the frame (4:2:0), two thirds
  // (4:2:2) or all of it (4:4:4).
  // `pairs` is in the chroma rows' samples.
  const uint8_t* su;
  size_t su_stride;
  const uint8_t* sv;
  size_t sv_stride;
  uint8_t* du;
  size_t du_stride;
  uint8_t* dv;
  size_t dv_stride;
  int pairs, c_rows;
  bool nv12;       // one plane of pairs
  bool swap;       // NV21: (v, u) pairs
  bool vector_ok;  // every plane pointer and stride 16-byte aligned
};

// Rows per thread in the planar kernel. The loads of all of them go out
// together, so each thread keeps 64 bytes in flight instead of 16, and four
// rows share a block's table copy and barrier. One row per thread left the
// GRAY8 kernel waiting on memory latency at a fifth of the DRAM bandwidth.
constexpr int kRowsPerThread = 4;
// Chroma rows per thread: half as many, for planes of half the height, so
// that the chroma blocks of a 4:2:0 frame line up with the luma blocks (none
// idle) and hold fewer table lookups, hence registers, at once.
constexpr int kChromaRowsPerThread = kRowsPerThread / 2;

// Four I420 pairs, u_i and v_i in byte i of the U and V words; returns the
// new U word in .x and the new V word in .y.
__device__ __forceinline__ uint2 i420_pairs(const uint16_t* __restrict__ table, uint32_t u4,
                                            uint32_t v4) {
  uint32_t t[4];
#pragma unroll
  for (int i = 0; i < 4; ++i)
    // Byte i of the V word and of the U word: index u * 256 + v.
    t[i] = balance_chroma(table, __byte_perm(v4, u4, 0x40 + 0x11 * i) & 0xFFFF);
  // Each entry holds (u', v') in its low two bytes: (u'0, u'1, v'0, v'1) and
  // (u'2, u'3, v'2, v'3), then the U and V words from those.
  const uint32_t t01 = __byte_perm(t[0], t[1], 0x5140);
  const uint32_t t23 = __byte_perm(t[2], t[3], 0x5140);
  return make_uint2(__byte_perm(t01, t23, 0x5410), __byte_perm(t01, t23, 0x7632));
}

// Luma (blockIdx.z == 0) and chroma (blockIdx.z == 1) of planar YUV or GRAY8
// in one launch: the chroma planes are small, and a launch of their own
// costs about as much as their data. Block row blockIdx.y handles
// kRowsPerThread luma rows from kRowsPerThread * blockIdx.y, then those
// kRowsPerThread * gridDim.y rows further on, and so on (chroma likewise
// with kChromaRowsPerThread). GRAY8 (kChroma false) gets an instance of its
// own without the chroma code, whose many lookups in flight need more
// registers than the luma code: at 48 registers, five blocks fit on an SM,
// and all of a 4K frame's blocks on the GPU at once. The chroma instance is
// held to 64, four blocks, which it fits without spilling.
template <bool kChroma>
__global__ void __launch_bounds__(kThreads, kChroma ? 4 : 5)
    balance_planar_kernel(PlanarArgs p, BalanceArgs a) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (!kChroma || blockIdx.z == 0) {
    __shared__ uint8_t table[256];
    const int begin = t * kLumaChunk;
    const bool vec = p.vector_ok && begin + kLumaChunk <= p.y_bytes;
    int y0 = blockIdx.y * kRowsPerThread;
    uint4 v[kRowsPerThread];
    // Rows y0 .. y0 + kRowsPerThread - 1 that lie in the plane.
    auto load = [&] {
#pragma unroll
      for (int k = 0; k < kRowsPerThread; ++k)
        if (y0 + k < p.y_rows)
          v[k] = *reinterpret_cast<const uint4*>(p.sy + static_cast<size_t>(y0 + k) * p.sy_stride +
                                                 begin);
    };
    // The first rows' loads go out before the table copy and its barrier.
    if (vec) load();
    load_table(a, table);
    if (begin >= p.y_bytes) return;
    for (;;) {
      if (vec) {
#pragma unroll
        for (int k = 0; k < kRowsPerThread; ++k) {
          if (y0 + k >= p.y_rows) break;
          v[k].x = map_word(table, v[k].x);
          v[k].y = map_word(table, v[k].y);
          v[k].z = map_word(table, v[k].z);
          v[k].w = map_word(table, v[k].w);
          *reinterpret_cast<uint4*>(p.dy + static_cast<size_t>(y0 + k) * p.dy_stride + begin) =
              v[k];
        }
      } else {
        const int end = min(begin + kLumaChunk, p.y_bytes);
        const int y_end = min(y0 + kRowsPerThread, p.y_rows);
        for (int y = y0; y < y_end; ++y) {
          const uint8_t* s = p.sy + static_cast<size_t>(y) * p.sy_stride;
          uint8_t* d = p.dy + static_cast<size_t>(y) * p.dy_stride;
          for (int x = begin; x < end; ++x) d[x] = table[s[x]];
        }
      }
      y0 += gridDim.y * kRowsPerThread;
      if (y0 >= p.y_rows) return;
      if (vec) load();
    }
  }
  if (!kChroma) return;
  const int begin = t * kChromaChunk;
  if (begin >= p.pairs) return;
  const bool vec = p.vector_ok && begin + kChromaChunk <= p.pairs;
  for (int y0 = blockIdx.y * kChromaRowsPerThread; y0 < p.c_rows;
       y0 += gridDim.y * kChromaRowsPerThread) {
    const int rows = min(kChromaRowsPerThread, p.c_rows - y0);
    const size_t su = static_cast<size_t>(y0) * p.su_stride,
                 sv = static_cast<size_t>(y0) * p.sv_stride;
    const size_t du = static_cast<size_t>(y0) * p.du_stride,
                 dv = static_cast<size_t>(y0) * p.dv_stride;
    if (vec && p.nv12) {
      // All rows' words first, then their lookups, which can all be in
      // flight together. The plane starts at su (NV12) or sv (NV21).
      const uint8_t* sp = p.swap ? p.sv + sv : p.su + su;
      uint8_t* dp = p.swap ? p.dv + dv : p.du + du;
      uint4 w[kChromaRowsPerThread];
#pragma unroll
      for (int k = 0; k < kChromaRowsPerThread; ++k)
        if (k < rows) w[k] = *reinterpret_cast<const uint4*>(sp + k * p.su_stride + 2 * begin);
#pragma unroll
      for (int k = 0; k < kChromaRowsPerThread; ++k) {
        if (k >= rows) break;
        const auto pairs = [&](uint32_t x) {
          return p.swap ? nv12_pairs<true>(a.chroma, x) : nv12_pairs<false>(a.chroma, x);
        };
        w[k].x = pairs(w[k].x);
        w[k].y = pairs(w[k].y);
        w[k].z = pairs(w[k].z);
        w[k].w = pairs(w[k].w);
        *reinterpret_cast<uint4*>(dp + k * p.du_stride + 2 * begin) = w[k];
      }
    } else if (vec) {
      uint2 wu[kChromaRowsPerThread], wv[kChromaRowsPerThread];
#pragma unroll
      for (int k = 0; k < kChromaRowsPerThread; ++k)
        if (k < rows) {
          wu[k] = *reinterpret_cast<const uint2*>(p.su + su + k * p.su_stride + begin);
          wv[k] = *reinterpret_cast<const uint2*>(p.sv + sv + k * p.sv_stride + begin);
        }
#pragma unroll
      for (int k = 0; k < kChromaRowsPerThread; ++k) {
        if (k >= rows) break;
        const uint2 lo = i420_pairs(a.chroma, wu[k].x, wv[k].x);
        const uint2 hi = i420_pairs(a.chroma, wu[k].y, wv[k].y);
        *reinterpret_cast<uint2*>(p.du + du + k * p.du_stride + begin) = make_uint2(lo.x, hi.x);
        *reinterpret_cast<uint2*>(p.dv + dv + k * p.dv_stride + begin) = make_uint2(lo.y, hi.y);
      }
    } else {
      const int end = min(begin + kChromaChunk, p.pairs);
      const int step = p.nv12 ? 2 : 1;
      for (int k = 0; k < rows; ++k) {
        const uint8_t* su_row = p.su + su + k * p.su_stride;
        const uint8_t* sv_row = p.sv + sv + k * p.sv_stride;
        uint8_t* du_row = p.du + du + k * p.du_stride;
        uint8_t* dv_row = p.dv + dv + k * p.dv_stride;
        for (int x = begin; x < end; ++x) {
          const uint32_t t = balance_chroma(a.chroma, su_row[x * step] << 8 | sv_row[x * step]);
          du_row[x * step] = static_cast<uint8_t>(t);
          dv_row[x * step] = static_cast<uint8_t>(t >> 8);
        }
      }
    }
  }
}

// Rows per thread in the packed RGB kernel. The words of both are loaded
// before either is processed, so each thread keeps 32 bytes in flight: with
// the arithmetic now light, one 16-byte word per thread would leave the
// kernel waiting on memory latency.
constexpr int kRgbRowsPerThread = 2;

// kRgbChunk packed pixels per thread in each of kRgbRowsPerThread rows (from
// kRgbRowsPerThread * blockIdx.y, then kRgbRowsPerThread * gridDim.y rows
// further on, and so on): one 16-byte word when the plane is 16-byte
// aligned, else pixel by pixel (4-byte words when 4-byte aligned).
template <int kAlign>
__global__ void balance_rgb_kernel(const uint8_t* __restrict__ src, size_t src_stride,
                                   uint8_t* __restrict__ dst, size_t dst_stride, int width,
                                   int rows, BalanceArgs a) {
  __shared__ uint8_t table[256];
  const int begin = (blockIdx.x * blockDim.x + threadIdx.x) * kRgbChunk;
  const bool vec = kAlign == 16 && begin + kRgbChunk <= width;
  const size_t offset = static_cast<size_t>(begin) * 4;
  int y0 = blockIdx.y * kRgbRowsPerThread;
  uint4 v[kRgbRowsPerThread];
  // Rows y0 .. y0 + kRgbRowsPerThread - 1 that lie in the plane.
  auto load = [&] {
#pragma unroll
    for (int k = 0; k < kRgbRowsPerThread; ++k)
      if (y0 + k < rows)
        v[k] = *reinterpret_cast<const uint4*>(src + static_cast<size_t>(y0 + k) * src_stride +
                                               offset);
  };
  // The first rows' words are loaded before the table copy and its barrier.
  if (vec) load();
  load_table(a, table);
  if (begin >= width) return;
  const int end = min(begin + kRgbChunk, width);
  for (;;) {
    if (vec) {
#pragma unroll
      for (int k = 0; k < kRgbRowsPerThread; ++k) {
        if (y0 + k >= rows) break;
        v[k].x = balance_pixel(a, table, v[k].x);
        v[k].y = balance_pixel(a, table, v[k].y);
        v[k].z = balance_pixel(a, table, v[k].z);
        v[k].w = balance_pixel(a, table, v[k].w);
        *reinterpret_cast<uint4*>(dst + static_cast<size_t>(y0 + k) * dst_stride + offset) = v[k];
      }
    } else {
      const int y_end = min(y0 + kRgbRowsPerThread, rows);
      for (int y = y0; y < y_end; ++y) {
        const uint8_t* s = src + static_cast<size_t>(y) * src_stride;
        uint8_t* d = dst + static_cast<size_t>(y) * dst_stride;
        for (int x = begin; x < end; ++x) {
          const uint8_t* sp = s + static_cast<size_t>(x) * 4;
          uint8_t* dp = d + static_cast<size_t>(x) * 4;
          if (kAlign >= 4) {
            *reinterpret_cast<uint32_t*>(dp) =
                balance_pixel(a, table, *reinterpret_cast<const uint32_t*>(sp));
          } else {
            uint32_t w = 0;
            for (int c = 0; c < 4; ++c) w |= static_cast<uint32_t>(sp[c]) << (8 * c);
            w = balance_pixel(a, table, w);
            for (int c = 0; c < 4; ++c) dp[c] = static_cast<uint8_t>(w >> (8 * c));
          }
        }
      }
    }
    y0 += gridDim.y * kRgbRowsPerThread;
    if (y0 >= rows) return;
    if (vec) load();
  }
}

// 3-byte RGB (RGB, BGR): each thread balances 4 pixels of a row, its 12
// bytes loaded and stored as three words where both planes are 4-byte
// aligned, through balance_pixel on a word per pixel (rgb_balance_words'
// layout of the format, whose fourth byte has no coefficient and is dropped
// again).
template <bool kWords>
__global__ void __launch_bounds__(kThreads)
    balance_rgb24_kernel(const uint8_t* __restrict__ src, size_t src_stride,
                         uint8_t* __restrict__ dst, size_t dst_stride, int width, int rows,
                         BalanceArgs a) {
  __shared__ uint8_t table[256];
  load_table(a, table);
  const int x0 = (blockIdx.x * blockDim.x + threadIdx.x) * 4;
  if (x0 >= width) return;
  const int n = min(4, width - x0);
  for (int y = blockIdx.y; y < rows; y += gridDim.y) {
    const uint8_t* s = src + static_cast<size_t>(y) * src_stride + static_cast<size_t>(x0) * 3;
    uint8_t* d = dst + static_cast<size_t>(y) * dst_stride + static_cast<size_t>(x0) * 3;
    if (kWords && n == 4) {
      const uint32_t* s32 = reinterpret_cast<const uint32_t*>(s);
      const uint32_t q[3] = {s32[0], s32[1], s32[2]};
      uint32_t px[4];
      rgb24::unpack(q, px);
      for (int i = 0; i < 4; ++i) px[i] = balance_pixel(a, table, px[i]);
      uint32_t r[3];
      rgb24::pack(px, r);
      uint32_t* d32 = reinterpret_cast<uint32_t*>(d);
      d32[0] = r[0], d32[1] = r[1], d32[2] = r[2];
      continue;
    }
    for (int i = 0; i < n; ++i) {
      const uint8_t* sp = s + 3 * i;
      const uint32_t w = balance_pixel(
          a, table, sp[0] | static_cast<uint32_t>(sp[1]) << 8 | static_cast<uint32_t>(sp[2]) << 16);
      for (int c = 0; c < 3; ++c) d[3 * i + c] = static_cast<uint8_t>(w >> (8 * c));
    }
  }
}

dim3 grid_for(size_t items, size_t rows) {
  dim3 grid(static_cast<unsigned>((items + kThreads - 1) / kThreads),
            static_cast<unsigned>(std::min<size_t>(rows, kMaxGridY)));
  return grid;
}

bool aligned_to(const PlaneRef& p, size_t n) {
  return reinterpret_cast<uintptr_t>(p.data) % n == 0 && p.stride % n == 0;
}

}  // namespace

static_assert(kBalanceChromaTableBytes == kChromaEntries * sizeof(uint16_t), "table size");

namespace {

// --- Packed 4:2:2 (YUY2, UYVY): a pair of pixels is one 4-byte word (two
// luma samples, one (U, V) pair at the format's byte offsets y, y + 2, u,
// v); each thread maps 4 of a row's words, one 16-byte load and store where
// both planes are 16-byte aligned. An odd-width row's last pair carries its
// second luma (no pixel) as it came, as the reference does.
struct Packed422Args {
  const uint8_t* src;
  size_t src_stride;
  uint8_t* dst;
  size_t dst_stride;
  int pairs, rows;
  bool odd_width, vector_ok;
  int y_at, u_at, v_at;  // byte offsets in the word
};

__global__ void __launch_bounds__(kThreads)
    balance_packed422_kernel(Packed422Args p, BalanceArgs a) {
  __shared__ uint8_t table[256];
  load_table(a, table);
  const int begin = (blockIdx.x * blockDim.x + threadIdx.x) * 4;
  if (begin >= p.pairs) return;
  const bool vec = p.vector_ok && begin + 4 <= p.pairs;
  // The table index u * 256 + v of a word, and where each output byte
  // comes from.
  const uint32_t index_sel = 0x4400u | static_cast<uint32_t>(p.u_at) << 4 | p.v_at;
  const auto map = [&](uint32_t w, bool keep_second_luma) {
    const uint32_t t = balance_chroma(a.chroma, __byte_perm(w, 0, index_sel));
    const uint32_t y0 = table[(w >> (8 * p.y_at)) & 0xFF];
    const uint32_t y1 =
        keep_second_luma ? (w >> (8 * p.y_at + 16)) & 0xFF : table[(w >> (8 * p.y_at + 16)) & 0xFF];
    return y0 << (8 * p.y_at) | y1 << (8 * p.y_at + 16) | (t & 0xFF) << (8 * p.u_at) |
           (t >> 8) << (8 * p.v_at);
  };
  for (int y = blockIdx.y; y < p.rows; y += gridDim.y) {
    const uint8_t* s =
        p.src + static_cast<size_t>(y) * p.src_stride + 4 * static_cast<size_t>(begin);
    uint8_t* d = p.dst + static_cast<size_t>(y) * p.dst_stride + 4 * static_cast<size_t>(begin);
    if (vec) {
      uint4 w = *reinterpret_cast<const uint4*>(s);
      const bool last = p.odd_width && begin + 4 == p.pairs;
      w.x = map(w.x, false);
      w.y = map(w.y, false);
      w.z = map(w.z, false);
      w.w = map(w.w, last);
      *reinterpret_cast<uint4*>(d) = w;
      continue;
    }
    for (int i = 0; i < 4 && begin + i < p.pairs; ++i) {
      const uint8_t* sw = s + 4 * i;
      const uint32_t w = static_cast<uint32_t>(sw[0]) | static_cast<uint32_t>(sw[1]) << 8 |
                         static_cast<uint32_t>(sw[2]) << 16 | static_cast<uint32_t>(sw[3]) << 24;
      const uint32_t m = map(w, p.odd_width && begin + i == p.pairs - 1);
      for (int b = 0; b < 4; ++b) d[4 * i + b] = static_cast<uint8_t>(m >> (8 * b));
    }
  }
}

// --- 3-byte RGB: one thread per sample, the arithmetic of balance_math.h
// as the reference runs it.
__global__ void __launch_bounds__(kThreads)
    balance_any_kernel(balance_math::Layout l, ImageRef in, ImageRef out, BalanceConstants k,
                       const uint16_t* __restrict__ chroma, int luma_w, int luma_h, int pairs_w,
                       int pairs_h) {
  // The luma table in shared memory, as the other balance kernels keep it.
  __shared__ uint8_t table_y[256];
  for (int i = threadIdx.x; i < 256; i += blockDim.x) table_y[i] = k.table_y[i];
  __syncthreads();
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const auto table = [chroma](int index) { return static_cast<uint32_t>(__ldg(chroma + index)); };
  // Planes chosen, not indexed: an index known only at run time makes the
  // device copy both image arguments to each thread's local memory, many
  // times slower.
  const auto plane = [](const ImageRef& image, int p) {
    return p == 0 ? image.planes[0] : (p == 1 ? image.planes[1] : image.planes[2]);
  };
  if (blockIdx.z == 0) {
    const PlaneRef src = plane(in, l.plane[0]), dst = plane(out, l.plane[0]);
    for (int y = blockIdx.y; y < luma_h; y += gridDim.y) {
      if (x >= luma_w) return;
      const uint8_t* s = src.data + static_cast<size_t>(y) * src.stride;
      uint8_t* d = dst.data + static_cast<size_t>(y) * dst.stride;
      if (l.rgb) {
        s += static_cast<size_t>(x) * l.pixel_stride;
        d += static_cast<size_t>(x) * l.pixel_stride;
        uint8_t r = s[l.rgb_offset[0]], g = s[l.rgb_offset[1]], b = s[l.rgb_offset[2]];
        balance_math::balance_rgb(table_y, table, &r, &g, &b);
        for (int c = 0; c < l.pixel_stride; ++c) d[c] = s[c];  // padding of 4-byte pixels
        d[l.rgb_offset[0]] = r;
        d[l.rgb_offset[1]] = g;
        d[l.rgb_offset[2]] = b;
      } else {
        const size_t at = l.offset[0] + static_cast<size_t>(x) * l.step[0];
        d[at] = table_y[s[at]];
        // An odd-width packed 4:2:2 row ends in a pair whose second luma is
        // no pixel: carried as it came, as the reference does.
        if (x == luma_w - 1 && l.plane[0] == l.plane[1] && (luma_w & 1))
          d[at + l.step[0]] = s[at + l.step[0]];
      }
    }
    return;
  }
  for (int y = blockIdx.y; y < pairs_h; y += gridDim.y) {
    if (x >= pairs_w) return;
    const PlaneRef su = plane(in, l.plane[1]), sv = plane(in, l.plane[2]);
    const PlaneRef du = plane(out, l.plane[1]), dv = plane(out, l.plane[2]);
    const size_t at_u =
        static_cast<size_t>(y) * su.stride + l.offset[1] + static_cast<size_t>(x) * l.step[1];
    const size_t at_v =
        static_cast<size_t>(y) * sv.stride + l.offset[2] + static_cast<size_t>(x) * l.step[2];
    const uint32_t uv = table(su.data[at_u] * 256 + sv.data[at_v]);
    du.data[static_cast<size_t>(y) * du.stride + l.offset[1] + static_cast<size_t>(x) * l.step[1]] =
        static_cast<uint8_t>(uv);
    dv.data[static_cast<size_t>(y) * dv.stride + l.offset[2] + static_cast<size_t>(x) * l.step[2]] =
        static_cast<uint8_t>(uv >> 8);
  }
}

void balance_any_cuda(const ImageRef& in, const ImageRef& out, const BalanceParams& params,
                      const uint8_t* chroma_table, cudaStream_t stream) {
  const balance_math::Layout l = balance_math::layout_of(in.format);
  const int luma_w = l.rgb ? in.width : balance_math::samples_per_row(l, 0, in.width);
  const int luma_h = static_cast<int>(plane_rows(in.format, l.plane[0], in.height));
  const int pairs_w = l.chroma ? balance_math::samples_per_row(l, 1, in.width) : 0;
  const int pairs_h = l.chroma ? static_cast<int>(plane_rows(in.format, l.plane[1], in.height)) : 0;
  // Each block walks a stride of rows, so its table fill (and barrier) is
  // paid once per 32 rows rather than once per row.
  const dim3 grid((std::max(luma_w, pairs_w) + kThreads - 1) / kThreads,
                  static_cast<unsigned>(std::max(1, std::min<int>((luma_h + 31) / 32, kMaxGridY))),
                  l.chroma ? 2 : 1);
  balance_any_kernel<<<grid, kThreads, 0, stream>>>(l, in, out, balance_constants(params),
                                                    reinterpret_cast<const uint16_t*>(chroma_table),
                                                    luma_w, luma_h, pairs_w, pairs_h);
  CO_CUDA_CHECK_LAUNCH("the balance kernel");
}

}  // namespace

void balance_prepare_cuda(const BalanceParams& params, uint8_t* chroma_table, CUstream_st* stream) {
  if (params.is_identity()) return;  // a copy: no table read
  const BalanceConstants k = balance_constants(params);
  chroma_table_kernel<<<256, 256, 0, stream>>>(k.hue_cos, k.hue_sin, k.saturation,
                                               reinterpret_cast<uint16_t*>(chroma_table));
  CO_CUDA_CHECK_LAUNCH("the balance chroma table kernel");
}

void balance_cuda(const ImageRef& in, const ImageRef& out, const BalanceParams& params,
                  const uint8_t* chroma_table, CUstream_st* stream) {
  if (params.is_identity()) {
    copy_cuda(in, out, stream);
    return;
  }
  // The planar kernel takes every 8-bit planar and semi-planar YUV format.
  const std::vector<PixelFormat>& nine = rgb32_yuv420_gray8_formats();
  const bool planar = in.format == PixelFormat::kNV21 || in.format == PixelFormat::kNV16 ||
                      in.format == PixelFormat::kY42B || in.format == PixelFormat::kY444;
  const bool packed422 = in.format == PixelFormat::kYUY2 || in.format == PixelFormat::kUYVY;
  const bool rgb24 = in.format == PixelFormat::kRGB || in.format == PixelFormat::kBGR;
  if (!planar && !packed422 && !rgb24 &&
      std::find(nine.begin(), nine.end(), in.format) == nine.end()) {
    balance_any_cuda(in, out, params, chroma_table, stream);
    return;
  }
  BalanceArgs a{};
  a.k = balance_constants(params);
  const FormatInfo& info = format_info(in.format);
  if (!info.is_yuv && colour_components(in.format) == 3) rgb_balance_words(in.format, &a);
  if (in.width == 0 || in.height == 0) return;
  a.chroma =
      in.format == PixelFormat::kGRAY8 ? nullptr : reinterpret_cast<const uint16_t*>(chroma_table);

  if (packed422) {
    const balance_math::Layout l = balance_math::layout_of(in.format);
    Packed422Args p{
        in.planes[0].data,   in.planes[0].stride,
        out.planes[0].data,  out.planes[0].stride,
        (in.width + 1) / 2,  in.height,
        (in.width & 1) != 0, aligned_to(in.planes[0], 16) && aligned_to(out.planes[0], 16),
        l.offset[0],         l.offset[1],
        l.offset[2]};
    const dim3 grid(
        static_cast<unsigned>((p.pairs + 4 * kThreads - 1) / (4 * kThreads)),
        static_cast<unsigned>(std::max(1, std::min<int>((in.height + 7) / 8, kMaxGridY))));
    balance_packed422_kernel<<<grid, kThreads, 0, stream>>>(p, a);
    CO_CUDA_CHECK_LAUNCH("the balance kernel (packed 4:2:2)");
    return;
  }
  if (rgb24) {
    const dim3 grid = grid_for((static_cast<size_t>(in.width) + 3) / 4, in.height);
    const PlaneRef& s = in.planes[0];
    const PlaneRef& d = out.planes[0];
    if (aligned_to(s, 4) && aligned_to(d, 4))
      balance_rgb24_kernel<true><<<grid, kThreads, 0, stream>>>(s.data, s.stride, d.data, d.stride,
                                                                in.width, in.height, a);
    else
      balance_rgb24_kernel<false><<<grid, kThreads, 0, stream>>>(s.data, s.stride, d.data, d.stride,
                                                                 in.width, in.height, a);
    CO_CUDA_CHECK_LAUNCH("the balance kernel (3-byte RGB)");
    return;
  }
  if (!info.is_yuv && in.format != PixelFormat::kGRAY8) {
    const size_t chunks = (static_cast<size_t>(in.width) + kRgbChunk - 1) / kRgbChunk;
    const dim3 grid = grid_for(
        chunks, (static_cast<size_t>(in.height) + kRgbRowsPerThread - 1) / kRgbRowsPerThread);
    const PlaneRef& s = in.planes[0];
    const PlaneRef& d = out.planes[0];
    if (aligned_to(s, 16) && aligned_to(d, 16))
      balance_rgb_kernel<16><<<grid, kThreads, 0, stream>>>(s.data, s.stride, d.data, d.stride,
                                                            in.width, in.height, a);
    else if (aligned_to(s, 4) && aligned_to(d, 4))
      balance_rgb_kernel<4><<<grid, kThreads, 0, stream>>>(s.data, s.stride, d.data, d.stride,
                                                           in.width, in.height, a);
    else
      balance_rgb_kernel<1><<<grid, kThreads, 0, stream>>>(s.data, s.stride, d.data, d.stride,
                                                           in.width, in.height, a);
    CO_CUDA_CHECK_LAUNCH("the balance kernel (RGB)");
    return;
  }

  PlanarArgs p{};
  p.sy = in.planes[0].data;
  p.sy_stride = in.planes[0].stride;
  p.dy = out.planes[0].data;
  p.dy_stride = out.planes[0].stride;
  p.y_bytes = static_cast<int>(plane_row_bytes(in.format, 0, in.width));
  p.y_rows = static_cast<int>(plane_rows(in.format, 0, in.height));
  p.vector_ok = aligned_to(in.planes[0], 16) && aligned_to(out.planes[0], 16);
  size_t chunks = (static_cast<size_t>(p.y_bytes) + kLumaChunk - 1) / kLumaChunk;
  // Block rows enough for every plane's rows at its rows per thread.
  size_t block_rows = (static_cast<size_t>(p.y_rows) + kRowsPerThread - 1) / kRowsPerThread;
  unsigned planes = 1;
  if (in.format != PixelFormat::kGRAY8) {
    planes = 2;
    p.nv12 = info.n_planes == 2;
    p.swap = in.format == PixelFormat::kNV21;
    const int v_plane = p.nv12 ? 1 : 2;
    // Byte of U and of V in a pair (semi-planar) or plane (planar).
    const int u_at = p.swap ? 1 : 0, v_at = p.nv12 && !p.swap ? 1 : 0;
    p.su = in.planes[1].data + u_at;
    p.su_stride = in.planes[1].stride;
    p.sv = in.planes[v_plane].data + v_at;
    p.sv_stride = in.planes[v_plane].stride;
    p.du = out.planes[1].data + u_at;
    p.du_stride = out.planes[1].stride;
    p.dv = out.planes[v_plane].data + v_at;
    p.dv_stride = out.planes[v_plane].stride;
    p.pairs = static_cast<int>(plane_row_bytes(in.format, 1, in.width) / info.pixel_bytes[1]);
    p.c_rows = static_cast<int>(plane_rows(in.format, 1, in.height));
    for (int i = 1; i < info.n_planes; ++i)
      p.vector_ok = p.vector_ok && aligned_to(in.planes[i], 16) && aligned_to(out.planes[i], 16);
    chunks = std::max(chunks, (static_cast<size_t>(p.pairs) + kChromaChunk - 1) / kChromaChunk);
    block_rows = std::max(block_rows, (static_cast<size_t>(p.c_rows) + kChromaRowsPerThread - 1) /
                                          kChromaRowsPerThread);
  }
  dim3 grid = grid_for(chunks, block_rows);
  grid.z = planes;
  if (planes == 1)
    balance_planar_kernel<false><<<grid, kThreads, 0, stream>>>(p, a);
  else
    balance_planar_kernel<true><<<grid, kThreads, 0, stream>>>(p, a);
  CO_CUDA_CHECK_LAUNCH("the balance kernel (planar)");
}

}  // namespace cudaoverlap
