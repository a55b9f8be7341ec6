// The CUDA half of `scale` (scale.h). A thread makes four output pixels of
// a group, rows 8 apart (through shared memory where a block's input rows
// fit, else directly): the components that share a plane, a sample step
// and a grid (all of RGBA; NV12's interleaved U and V; YUY2's luma, then
// its chroma), so a tap's samples come in one load and the input is read
// once per plane, not once per component. The kernels are bound by
// instructions and load latency (not memory), so each step is chosen for
// its instruction count and a thread loads before it stores;
// the arithmetic is scale_math.h's, so the bytes are the CPU reference's:
// - along x, where the taps fit a window inside the input, four taps at a
//   time with byte dot products (scale_window_group, 8-bit samples) or
//   two-way ones (scale_window_group16); else a tap at a time;
// - 8-bit samples are otherwise summed in float, which on the GPU has
//   twice the integer units' rate, exactly (scale_value_float); deeper
//   ones in integers, vertically in 64 bits above 12 bits, where they
//   cannot overflow.
// With one tap on both axes (nearest) a sample is copied.
#include <cuda_runtime.h>

#include <algorithm>
#include <type_traits>

#include "kernels/cuda_check.h"
#include "kernels/error.h"
#include "kernels/scale/scale_image.h"
#include "kernels/scale/scale_math.h"

namespace cudaoverlap {
namespace {

constexpr int kBlockX = 32;
constexpr int kBlockY = kScaleBlockRows;
constexpr int kTall = kScaleTallRows / kBlockY;  // rows a thread makes in a tall tile

// Up to four components scaled together, and a padding byte written with
// a constant (RGBx and the like).
struct ScaleGroup {
  ScaleComponent c;    // the shared fields, and the first component's offset
  int offset[4] = {};  // each component's byte within the pixel
  int fill_offset = -1;
  int fill = 0;
  // Worked out once on the host: a 4-byte pixel's bits kept and the
  // padding's bits set; the samples' largest value; whether sums may
  // overshoot (scale_overshoots).
  uint32_t fill_keep = ~0u;
  uint32_t fill_bits = 0;
  float top = 255.0f;
  bool overshoots = true;
};

template <int kBytes>
__device__ __forceinline__ int sample(const uint8_t* p, int shift, int mask) {
  if (kBytes == 1) return __ldg(p);
  return ((__ldg(p) | (__ldg(p + 1) << 8)) >> shift) & mask;
}

// Byte k of `v` (k a constant) as a float: the byte put under the exponent
// of 2^23, then 2^23 taken off; exact.
__device__ __forceinline__ float byte_float(uint32_t v, int k) {
  return __uint_as_float(__byte_perm(v, 0x4B000000u, 0x7440 | k)) - 8388608.0f;
}

// Output column xs's first tap along x in a [tap][column] table of
// (index, weight) pairs: the input sample (the edge clamped in) and its
// weight, int or float bits; the next tap is out_width further.
__device__ __forceinline__ const int2* x_taps(const int32_t* table, int xs) {
  return reinterpret_cast<const int2*>(table) + xs;
}

// Byte offsets within a plane are 32-bit (scale_cuda refuses planes of
// 4 GiB), so that an address is one 32-bit sum added to the plane's start.
__device__ __forceinline__ uint32_t src_row(const ScaleComponent& c, int row) {
  return static_cast<uint32_t>(row) * static_cast<uint32_t>(c.src_stride);
}

// Where output pixel (x, y) of the group starts.
__device__ __forceinline__ uint8_t* out_pixel(const ScaleComponent& c, int x, int y) {
  return c.dst + (static_cast<uint32_t>(y) * static_cast<uint32_t>(c.dst_stride) +
                  static_cast<uint32_t>(x) * static_cast<uint32_t>(c.pixel_stride));
}

// The rounded sums along x of the kQ input rows at byte offsets `rows` for the column
// whose taps start at `taps`, for each of the kN components (scale_math.h's
// row sums): a tap is loaded once for all kQ rows. Float (8-bit samples,
// kWord: the four bytes of a 4-byte pixel, component k the pixel's byte k,
// whatever it holds) or int (16-bit samples).
template <int kN, int kBytes, bool kWord, int kQ, typename Sum>
__device__ __forceinline__ void row_sums(const ScaleGroup& g, const uint32_t (&rows)[kQ],
                                         const int2* __restrict__ taps, int mask,
                                         Sum (&h)[kQ][kN]) {
  constexpr bool kFloat = std::is_same<Sum, float>::value;
  constexpr int kHalf = 1 << (kScaleWeightBits - 1);
  const ScaleComponent& c = g.c;
#pragma unroll
  for (int q = 0; q < kQ; ++q)
#pragma unroll
    for (int k = 0; k < kN; ++k) h[q][k] = kFloat ? Sum(0.5f) : Sum(0);
  const int2* tap = taps;
#pragma unroll 2
  for (int i = 0; i < c.x.taps; ++i, tap += c.out_width) {
    const int2 t = __ldg(tap);
    const uint32_t at = static_cast<uint32_t>(t.x) * (kWord ? 4u : c.pixel_stride);
#pragma unroll
    for (int q = 0; q < kQ; ++q) {
      const uint8_t* p = c.src + (rows[q] + at);
      if constexpr (kFloat) {
        const float w = __int_as_float(t.y);
        if (kWord) {
          const uint32_t v = __ldg(reinterpret_cast<const uint32_t*>(p));
#pragma unroll
          for (int k = 0; k < kN; ++k) h[q][k] = fmaf(w, byte_float(v, k), h[q][k]);
        } else {
#pragma unroll
          for (int k = 0; k < kN; ++k)
            h[q][k] = fmaf(w, byte_float(__ldg(p + g.offset[k]), 0), h[q][k]);
        }
      } else {
#pragma unroll
        for (int k = 0; k < kN; ++k)
          h[q][k] += t.y * sample<kBytes>(p + g.offset[k], c.shift, mask);
      }
    }
  }
#pragma unroll
  for (int q = 0; q < kQ; ++q)
#pragma unroll
    for (int k = 0; k < kN; ++k) {
      if constexpr (kFloat)
        h[q][k] = scale_floor(h[q][k]);
      else
        h[q][k] = (h[q][k] + kHalf) >> kScaleWeightBits;
    }
}

// Stores a 4-byte pixel with its padding byte, if any, set.
__device__ __forceinline__ void put_word(const ScaleGroup& g, uint8_t* d, uint32_t word) {
  *reinterpret_cast<uint32_t*>(d) = (word & g.fill_keep) | g.fill_bits;
}

// The same through the window of output column xs (pixels of kN
// components, in byte order, that are the whole pixel;
// ScaleTables::Axis::window_groups): four taps at a time as byte dot
// products (8-bit samples, scale_window_group) or two-way ones (16-bit,
// scale_window_group16), the group's weights loaded once for the kQ rows.
template <int kN, int kBytes, bool kWord, int kQ, typename Row>
__device__ __forceinline__ void window_sums(const ScaleGroup& g, const uint32_t (&rows)[kQ], int xs,
                                            int mask, Row (&h)[kQ][kN]) {
  constexpr uint32_t kPixel = kN * kBytes;
  constexpr uint32_t kStep = 4 * kPixel;  // bytes of a group of taps
  const ScaleComponent& c = g.c;
  const int shift = kBytes == 2 ? c.shift : 0;
  const uint32_t keep = static_cast<uint32_t>(mask << shift) * 0x10001u;
  const uint32_t at =
      static_cast<uint32_t>(c.x.window_start[xs]) * kPixel + (kWord ? 0 : g.offset[0]);
  const uint2* weights = reinterpret_cast<const uint2*>(c.x.window_weight) + xs;
  int lo[kQ][kN], hi[kQ][kN];
#pragma unroll
  for (int q = 0; q < kQ; ++q)
#pragma unroll
    for (int k = 0; k < kN; ++k) {
      lo[q][k] = scale_window_low(shift);
      hi[q][k] = 0;
    }
  auto group = [&](int i) {
    const uint2 w = __ldg(weights + i * c.out_width);
#pragma unroll
    for (int q = 0; q < kQ; ++q) {
      const uint8_t* p = c.src + (rows[q] + at + i * kStep);
      if constexpr (kBytes == 1)
        scale_window_group<kN, kN>(p, w.x, w.y, lo[q], hi[q]);
      else
        scale_window_group16<kN>(p, keep, w.x, w.y, lo[q], hi[q]);
    }
  };
  // The first group outside the loop (there is always one), so that the
  // sums start from its products rather than from copies of the start.
  group(0);
  for (int i = 1; i < c.x.window_groups; ++i) group(i);
#pragma unroll
  for (int q = 0; q < kQ; ++q)
#pragma unroll
    for (int k = 0; k < kN; ++k) {
      const int r = scale_window_round(lo[q][k], hi[q][k], shift);
      if constexpr (kBytes == 1)
        h[q][k] = scale_small_float(r);
      else
        h[q][k] = r;
    }
}

// Rounds and clamps the vertical sums and writes output pixel (x, y), and
// the padding. Float (8-bit samples; kWord: one word, component k its byte
// k): scale_byte_bits leaves each value in a low byte. Int: sample by
// sample.
template <int kN, int kBytes, bool kWord, typename Acc>
__device__ __forceinline__ void store(const ScaleGroup& g, int x, int y, int mask,
                                      const Acc (&sum)[kN]) {
  const ScaleComponent& c = g.c;
  uint8_t* d = out_pixel(c, x, y);
  if constexpr (std::is_same<Acc, float>::value) {
    uint32_t b[kN];
#pragma unroll
    for (int k = 0; k < kN; ++k) b[k] = scale_byte_bits(sum[k], g.top, g.overshoots);
    if constexpr (kWord) {
      static_assert(kN == 4, "a word holds four components");
      put_word(
          g, d,
          __byte_perm(__byte_perm(b[0], b[1], 0x0040), __byte_perm(b[2], b[3], 0x0040), 0x5410));
      return;
    } else {
#pragma unroll
      for (int k = 0; k < kN; ++k) d[g.offset[k]] = static_cast<uint8_t>(b[k]);
    }
  } else {
    constexpr int kHalf = 1 << (kScaleWeightBits - 1);
#pragma unroll
    for (int k = 0; k < kN; ++k) {
      const Acc r = (sum[k] + kHalf) >> kScaleWeightBits;
      const int w = (r < 0 ? 0 : (r > mask ? mask : static_cast<int>(r))) << c.shift;
      d[g.offset[k]] = static_cast<uint8_t>(w);
      d[g.offset[k] + 1] = static_cast<uint8_t>(w >> 8);
    }
  }
  if (g.fill_offset >= 0) d[g.fill_offset] = static_cast<uint8_t>(g.fill);
}

// The arithmetic a group's kernels use: float for 8-bit samples; int for
// deeper ones, the vertical sums in 64 bits where kWide.
template <int kBytes, bool kWide>
struct Arithmetic {
  static constexpr bool kFloat = kBytes == 1;
  using Row = typename std::conditional<kFloat, float, int>::type;
  using Acc =
      typename std::conditional<kFloat, float,
                                typename std::conditional<kWide, long long, int>::type>::type;
  __device__ static const int32_t* x_table(const ScaleComponent& c) {
    return kFloat ? c.x.ftap : c.x.tap;
  }
  using Weight = typename std::conditional<kFloat, float, int16_t>::type;
  __device__ static Acc start() { return kFloat ? Acc(0.5f) : Acc(0); }
  // Output row y's weights along y.
  __device__ static const Weight* weights(const ScaleComponent& c, int y) {
    const uint32_t at = static_cast<uint32_t>(y) * c.y.taps;
    if constexpr (kFloat)
      return c.y.fweight + at;
    else
      return c.y.weight + at;
  }
  // Sum `s` plus weight `w` times `h`.
  __device__ static Acc add(Weight w, Row h, Acc s) {
    if constexpr (kFloat)
      return fmaf(w, h, s);
    else
      return s + static_cast<Acc>(w) * h;
  }
};

// The kN row sums of one input row and column as the tile holds them, side
// by side, so one shared-memory access moves them all where kN is 2 or 4.
template <int kN, typename T>
struct alignas(kN == 4 ? 16 : (kN == 2 ? 8 : 4)) Sums {
  T v[kN];
};

// One tap along both axes: output pixel (x, y) is the input's pixel under
// it, its samples cut to their bits (P010's low six cleared) and the
// padding written. The thread's rows are all loaded before any is stored,
// so their loads are in flight together (a store could alias a later load).
template <int kN, int kBytes, bool kWord>
__global__ void __launch_bounds__(kBlockX* kBlockY) scale_copy_kernel(const ScaleGroup g) {
  const ScaleComponent& c = g.c;
  const int x = blockIdx.x * kBlockX + threadIdx.x;
  if (x >= c.out_samples) return;
  const int top = c.row0 + blockIdx.y * kScaleTallRows + threadIdx.y;
  if (top >= c.out_rows) return;
  const int xs = x < c.out_width ? x : c.out_width - 1;
  const uint32_t at = static_cast<uint32_t>(__ldg(c.x.tap + 2 * xs)) * c.pixel_stride;
  const int mask = (1 << c.depth) - 1;
  // Rows past the bottom repeat the last, and are not stored.
  const uint8_t* p[kTall];
#pragma unroll
  for (int q = 0; q < kTall; ++q) {
    const int y = min(top + q * kBlockY, c.out_rows - 1);
    const int row = scale_clamp(__ldg(c.y.first + y), 0, c.y.in_size - 1);
    p[q] = c.src + (src_row(c, row) + at);
  }
  if constexpr (kWord) {
    uint32_t v[kTall];
#pragma unroll
    for (int q = 0; q < kTall; ++q) v[q] = __ldg(reinterpret_cast<const uint32_t*>(p[q]));
#pragma unroll
    for (int q = 0; q < kTall; ++q)
      if (top + q * kBlockY < c.out_rows) put_word(g, out_pixel(c, x, top + q * kBlockY), v[q]);
  } else {
    int v[kTall][kN];
#pragma unroll
    for (int q = 0; q < kTall; ++q)
#pragma unroll
      for (int k = 0; k < kN; ++k) v[q][k] = sample<kBytes>(p[q] + g.offset[k], c.shift, mask);
#pragma unroll
    for (int q = 0; q < kTall; ++q) {
      const int y = top + q * kBlockY;
      if (y >= c.out_rows) break;
      uint8_t* d = out_pixel(c, x, y);
#pragma unroll
      for (int k = 0; k < kN; ++k) {
        const int w = v[q][k] << c.shift;
        d[g.offset[k]] = static_cast<uint8_t>(w);
        if (kBytes == 2) d[g.offset[k] + 1] = static_cast<uint8_t>(w >> 8);
      }
      if (g.fill_offset >= 0) d[g.fill_offset] = static_cast<uint8_t>(g.fill);
    }
  }
}

// kN components of kBytes-byte samples; kWide: vertical sums in 64 bits
// (16-bit samples); kWord: 4-byte pixels loaded and stored as one word
// (kN 4). A block makes 32 x (8 * kRows) outputs, kRows a thread (rows 8
// apart), each from the input rows its taps along y reach; a tap along x is
// loaded once for the thread's kRows rows.
template <int kN, int kBytes, bool kWide, bool kWord, int kRows>
__global__ void __launch_bounds__(kBlockX* kBlockY) scale_group_kernel(const ScaleGroup g) {
  using A = Arithmetic<kBytes, kWide>;
  const ScaleComponent& c = g.c;
  const int x = blockIdx.x * kBlockX + threadIdx.x;
  if (x >= c.out_samples) return;
  const int top = c.row0 + blockIdx.y * (kBlockY * kRows) + threadIdx.y;
  if (top >= c.out_rows) return;
  const int2* taps = x_taps(A::x_table(c), x < c.out_width ? x : c.out_width - 1);
  const int mask = (1 << c.depth) - 1;
  // Rows past the bottom repeat the last, and are not stored.
  int y[kRows];
  const typename A::Weight* wy[kRows];
#pragma unroll
  for (int q = 0; q < kRows; ++q) {
    y[q] = min(top + q * kBlockY, c.out_rows - 1);
    wy[q] = A::weights(c, y[q]);
  }
  typename A::Acc sum[kRows][kN];
#pragma unroll
  for (int q = 0; q < kRows; ++q)
#pragma unroll
    for (int k = 0; k < kN; ++k) sum[q][k] = A::start();
  for (int j = 0; j < c.y.taps; ++j) {
    uint32_t rows[kRows];
#pragma unroll
    for (int q = 0; q < kRows; ++q)
      rows[q] = src_row(c, scale_clamp(c.y.first[y[q]] + j, 0, c.y.in_size - 1));
    typename A::Row h[kRows][kN];
    row_sums<kN, kBytes, kWord, kRows>(g, rows, taps, mask, h);
#pragma unroll
    for (int q = 0; q < kRows; ++q)
#pragma unroll
      for (int k = 0; k < kN; ++k) sum[q][k] = A::add(__ldg(wy[q] + j), h[q][k], sum[q][k]);
  }
#pragma unroll
  for (int q = 0; q < kRows; ++q)
    if (top + q * kBlockY < c.out_rows) store<kN, kBytes, kWord>(g, x, y[q], mask, sum[q]);
}

// The same in two passes through shared memory: the block's 32 x (8 *
// kRows) outputs need input rows [first_y of its top row, first_y of its
// bottom row + taps); each of those rows is filtered along x once for the
// block's 32 columns (the rounded row sums of scale_math.h), four rows at
// a time, then each output sums its own rows' values. A tap is then read
// once per block row instead of once per output row, which is what makes
// multi-tap methods affordable. kWindow: the rows filtered through the
// columns' windows (window_sums).
template <int kN, int kBytes, bool kWide, bool kWord, int kRows, bool kWindow>
__global__ void __launch_bounds__(kBlockX* kBlockY) scale_tile_kernel(const ScaleGroup g) {
  using A = Arithmetic<kBytes, kWide>;
  using Row = typename A::Row;
  constexpr int kQ = 4;                   // rows filtered at once
  extern __shared__ int4 shared_words[];  // [row][column] of Sums<kN, Row>
  Sums<kN, Row>* const tile = reinterpret_cast<Sums<kN, Row>*>(shared_words);
  const ScaleComponent& c = g.c;
  const int mask = (1 << c.depth) - 1;
  const int bx = blockIdx.x * kBlockX;
  const int by = c.row0 + blockIdx.y * (kBlockY * kRows);
  const int last = min(by + kBlockY * kRows, c.out_rows) - 1;
  const int r_first = __ldg(c.y.first + by);
  const int r_count = __ldg(c.y.first + last) + c.y.taps - r_first;
  // The thread's output rows (past the bottom: the last again, not
  // stored): their first input rows are loaded here, so that their wait
  // overlaps the first pass's.
  int first[kRows];
#pragma unroll
  for (int row = 0; row < kRows; ++row)
    first[row] = __ldg(c.y.first + min(by + static_cast<int>(threadIdx.y) + row * kBlockY, last));
  // A thread filters rows of one column, kQ consecutive rows at a time
  // (chunks dealt to the block's 8 rows of threads); rows past the tile's
  // repeat its last and are not kept.
  const int xc = min(bx + static_cast<int>(threadIdx.x), c.out_samples - 1);
  const int xs = xc < c.out_width ? xc : c.out_width - 1;
  const int2* taps = x_taps(A::x_table(c), xs);
  for (int r0 = threadIdx.y * kQ; r0 < r_count; r0 += kQ * kBlockY) {
    uint32_t rows[kQ];
#pragma unroll
    for (int q = 0; q < kQ; ++q)
      rows[q] = src_row(c, scale_clamp(r_first + min(r0 + q, r_count - 1), 0, c.y.in_size - 1));
    Row h[kQ][kN];
    if constexpr (kWindow)
      window_sums<kN, kBytes, kWord, kQ>(g, rows, xs, mask, h);
    else
      row_sums<kN, kBytes, kWord, kQ>(g, rows, taps, mask, h);
#pragma unroll
    for (int q = 0; q < kQ; ++q) {
      if (r0 + q >= r_count) break;
      Sums<kN, Row> v;
#pragma unroll
      for (int k = 0; k < kN; ++k) v.v[k] = h[q][k];
      tile[(r0 + q) * kBlockX + threadIdx.x] = v;
    }
  }
  __syncthreads();
  const int x = bx + threadIdx.x;
  if (x >= c.out_samples) return;
  // Every row's sums before any store, so that no store (which could
  // alias a table) holds back the next row's loads.
  typename A::Acc sum[kRows][kN];
#pragma unroll
  for (int row = 0; row < kRows; ++row) {
    const int y = min(by + static_cast<int>(threadIdx.y) + row * kBlockY, last);
    const Sums<kN, Row>* column = tile + (first[row] - r_first) * kBlockX + threadIdx.x;
    const typename A::Weight* wy = A::weights(c, y);
    // The first tap outside the loop (every axis has one), as above.
    const Sums<kN, Row> v0 = *column;
    const typename A::Weight w0 = __ldg(wy);
#pragma unroll
    for (int k = 0; k < kN; ++k) sum[row][k] = A::add(w0, v0.v[k], A::start());
    for (int j = 1; j < c.y.taps; ++j) {
      const typename A::Weight w = __ldg(wy + j);
      const Sums<kN, Row> v = column[j * kBlockX];
#pragma unroll
      for (int k = 0; k < kN; ++k) sum[row][k] = A::add(w, v.v[k], sum[row][k]);
    }
  }
#pragma unroll
  for (int row = 0; row < kRows; ++row) {
    const int y = by + threadIdx.y + row * kBlockY;
    if (y > last) return;
    store<kN, kBytes, kWord>(g, x, y, mask, sum[row]);
  }
}

// Shared memory a block may use: the default limit, with no opt-in.
constexpr size_t kTileBytes = 48 * 1024;

// The rows a block's tile needs (ScaleTables::Axis), short and tall; 0
// where the direct kernel runs.
struct TileRows {
  int short_rows = 0;
  int tall_rows = 0;
};

// One tap on both axes: the copy; else the tall tile where its rows fit in
// shared memory, else the short one, else (one tap along y, or too many
// rows) the direct kernel; four rows a thread where they can be. `window`:
// the tiles filter through the columns' windows (8-bit samples, four bytes
// a pixel or one).
template <int kN, int kBytes, bool kWide, bool kWord>
void launch(const ScaleGroup& g, TileRows rows, bool window, CUstream_st* stream) {
  using Row = typename Arithmetic<kBytes, kWide>::Row;
  constexpr bool kWindowed = kWord || kN <= 2;  // what windows serve
  const dim3 block(kBlockX, kBlockY);
  const unsigned columns = (g.c.out_samples + kBlockX - 1) / kBlockX;
  auto bytes = [](int tile_rows) {
    return static_cast<size_t>(tile_rows) * kBlockX * sizeof(Sums<kN, Row>);
  };
  const int rows_made = g.c.out_rows - g.c.row0;
  if (rows_made <= 0) return;
  const dim3 tall(columns, (rows_made + kScaleTallRows - 1) / kScaleTallRows);
  if (g.c.x.taps == 1 && g.c.y.taps == 1) {
    scale_copy_kernel<kN, kBytes, kWord><<<tall, block, 0, stream>>>(g);
  } else if (rows.tall_rows > 0 && bytes(rows.tall_rows) <= kTileBytes) {
    auto kernel = scale_tile_kernel<kN, kBytes, kWide, kWord, kTall, false>;
    if constexpr (kWindowed) {
      if (window) kernel = scale_tile_kernel<kN, kBytes, kWide, kWord, kTall, true>;
    }
    kernel<<<tall, block, bytes(rows.tall_rows), stream>>>(g);
  } else if (rows.short_rows > 0 && bytes(rows.short_rows) <= kTileBytes) {
    const dim3 grid(columns, (rows_made + kBlockY - 1) / kBlockY);
    auto kernel = scale_tile_kernel<kN, kBytes, kWide, kWord, 1, false>;
    if constexpr (kWindowed) {
      if (window) kernel = scale_tile_kernel<kN, kBytes, kWide, kWord, 1, true>;
    }
    kernel<<<grid, block, bytes(rows.short_rows), stream>>>(g);
  } else {
    scale_group_kernel<kN, kBytes, kWide, kWord, kTall><<<tall, block, 0, stream>>>(g);
  }
}

// Whether a group other than 8-bit whole words can be filtered through
// windows: pixels that are one sample or two (NV12's or P010's chroma),
// aligned for their loads (2-byte loads, or 4-byte for two 16-bit
// samples), 16-bit sums within int32.
bool window_fits(const ScaleGroup& g, int members) {
  const ScaleComponent& c = g.c;
  const int bytes = c.sample_bytes;
  if (c.x.window_groups == 0 || c.pixel_stride != members * bytes || members > 2) return false;
  if (bytes == 2 && !scale_window16_fits(c)) return false;
  const int align = members * bytes >= 4 ? 4 : members * bytes;
  if (reinterpret_cast<uintptr_t>(c.src) % align != 0 || c.src_stride % align != 0) return false;
  return members == 1 || (g.offset[0] == 0 && g.offset[1] == bytes);
}

template <int kN>
void launch_n(const ScaleGroup& g, bool word, TileRows tile_rows, CUstream_st* stream) {
  if (g.c.sample_bytes == 2) {
    const bool window = window_fits(g, kN);
    if (g.c.depth > 12)
      launch<kN, 2, true, false>(g, tile_rows, window, stream);
    else
      launch<kN, 2, false, false>(g, tile_rows, window, stream);
  } else if (word) {
    launch<4, 1, false, true>(g, tile_rows, g.c.x.window_groups > 0, stream);
  } else {
    launch<kN, 1, false, false>(g, tile_rows, window_fits(g, kN), stream);
  }
}

// The rows a block needs on the axis whose device starts are at `first`
// (worked out with the tables).
TileRows tile_rows(const ScaleTables& tables, const uint8_t* workspace, const int32_t* first) {
  for (const ScaleTables::Axis& a : tables.axes)
    if (reinterpret_cast<const int32_t*>(workspace + a.first_at) == first)
      return {a.block_rows, a.tall_rows};
  return {};
}

bool same_group(const ScaleComponent& a, const ScaleComponent& b) {
  return a.src == b.src && a.dst == b.dst && a.pixel_stride == b.pixel_stride &&
         a.x.first == b.x.first && a.y.first == b.y.first && a.out_samples == b.out_samples;
}

bool aligned4(const void* p, size_t stride) {
  return reinterpret_cast<uintptr_t>(p) % 4 == 0 && stride % 4 == 0;
}

}  // namespace

void scale_prepare_cuda(const ScaleTables& tables, uint8_t* workspace, CUstream_st* stream) {
  CO_CUDA_CHECK(cudaMemcpyAsync(workspace, tables.bytes.data(), tables.bytes.size(),
                                cudaMemcpyHostToDevice, stream));
}

void scale_cuda(const ImageRef& in, const ImageRef& out, const ScaleTables& tables,
                const uint8_t* workspace, CUstream_st* stream, int y0, int y1) {
  ScaleComponent components[kMaxComponents + 1];
  const int n = scale_components(in, out, tables, workspace, components, y0, y1);
  for (int k = 0; k < n; ++k) {
    const ScaleComponent& c = components[k];
    if (uint64_t{c.src_stride} * c.y.in_size > UINT32_MAX ||
        uint64_t{c.dst_stride} * c.out_rows > UINT32_MAX)
      throw Error("scale: planes of 4 GiB or more are not supported");
    // Every filter of scale_taps.h passes (a test holds them to it).
    if (c.sample_bytes == 1 && !tables.float_exact)
      throw Error("scale: the filter's weights are too large to be summed exactly on the GPU");
  }
  bool done[kMaxComponents + 1] = {};
  for (int first = 0; first < n; ++first) {
    if (done[first] || components[first].fill >= 0) continue;
    ScaleGroup g;
    g.c = components[first];
    int members = 0;
    for (int k = first; k < n; ++k) {
      if (done[k] || !same_group(components[first], components[k])) continue;
      done[k] = true;
      if (components[k].fill >= 0) {
        g.fill_offset = components[k].offset;
        g.fill = components[k].fill;
      } else {
        g.offset[members++] = components[k].offset;
      }
    }
    // In byte order (NV21's chroma too), as windows read them; the order
    // is otherwise free, each component read and written at its offset.
    std::sort(g.offset, g.offset + members);
    // Whole 4-byte pixels, aligned: loaded and stored as words.
    if (g.fill_offset >= 0) {
      g.fill_keep = ~(0xFFu << (8 * g.fill_offset));
      g.fill_bits = static_cast<uint32_t>(g.fill) << (8 * g.fill_offset);
    }
    g.top = static_cast<float>((1 << g.c.depth) - 1);
    g.overshoots = scale_overshoots(g.c);
    const bool word = g.c.sample_bytes == 1 && g.c.pixel_stride == 4 &&
                      members + (g.fill_offset >= 0 ? 1 : 0) == 4 &&
                      aligned4(g.c.src, g.c.src_stride) && aligned4(g.c.dst, g.c.dst_stride);
    const TileRows rows = tile_rows(tables, workspace, g.c.y.first);
    switch (members) {
      case 1:
        launch_n<1>(g, false, rows, stream);
        break;
      case 2:
        launch_n<2>(g, false, rows, stream);
        break;
      case 3:
        launch_n<3>(g, word, rows, stream);
        break;
      default:
        launch_n<4>(g, word, rows, stream);
        break;
    }
    CO_CUDA_CHECK_LAUNCH("the scale kernel");
  }
}

}  // namespace cudaoverlap
