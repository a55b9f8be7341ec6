// The CUDA half of `scale` (scale.h). A thread makes four output pixels of
// a group, rows 8 apart (through shared memory where a block's input rows
// fit, else directly): the components that share a plane, a sample step
// and a grid (all of RGBA; NV12's interleaved U and V; YUY2's luma, then
// its chroma), so a tap's samples come in one load and the input is read
// once per plane, not once per component. The arithmetic is
// scale_math.h's, sample for sample; the vertical sums of samples up to 12
// bits are taken in 32 bits, where they cannot overflow, so the bytes are
// the CPU reference's.
#include <cuda_runtime.h>

#include <algorithm>
#include <type_traits>

#include "kernels/cuda_check.h"
#include "kernels/scale/scale_image.h"
#include "kernels/scale/scale_math.h"

namespace cudaoverlap {
namespace {

constexpr int kBlockX = 32;
constexpr int kBlockY = kScaleBlockRows;

// Up to four components scaled together, and a padding byte written with
// a constant (RGBx and the like).
struct ScaleGroup {
  ScaleComponent c;    // the shared fields, and the first component's offset
  int offset[4] = {};  // each component's byte within the pixel
  int fill_offset = -1;
  int fill = 0;
};

template <int kBytes>
__device__ __forceinline__ int sample(const uint8_t* p, int shift, int mask) {
  if (kBytes == 1) return __ldg(p);
  return ((__ldg(p) | (__ldg(p + 1) << 8)) >> shift) & mask;
}

// Output column xs's first tap along x, as the tables hold them for the
// GPU ([tap][column]): x its input sample (the edge clamped in), y its
// weight; the next tap is out_width further.
__device__ __forceinline__ const int2* x_taps(const ScaleComponent& c, int xs) {
  return reinterpret_cast<const int2*>(c.x.tap) + xs;
}

// The rounded sums along x of the kQ input rows at `lines` for the column
// whose taps start at `taps`, for each of the kN components (scale_math.h's
// row sums): a tap is loaded once for all kQ rows. kWord: the four bytes of
// a 4-byte pixel, component k the pixel's byte k, whatever it holds.
template <int kN, int kBytes, bool kWord, int kQ>
__device__ __forceinline__ void row_sums(const ScaleGroup& g, const uint8_t* const (&lines)[kQ],
                                         const int2* __restrict__ taps, int mask,
                                         int (&h)[kQ][kN]) {
  constexpr int kHalf = 1 << (kScaleWeightBits - 1);
  const ScaleComponent& c = g.c;
#pragma unroll
  for (int q = 0; q < kQ; ++q)
#pragma unroll
    for (int k = 0; k < kN; ++k) h[q][k] = 0;
  const int2* tap = taps;
#pragma unroll 2
  for (int i = 0; i < c.x.taps; ++i, tap += c.out_width) {
    const int2 t = __ldg(tap);
    const int at = t.x * (kWord ? 4 : c.pixel_stride);
#pragma unroll
    for (int q = 0; q < kQ; ++q) {
      const uint8_t* p = lines[q] + at;
      if (kWord) {
        const uint32_t v = __ldg(reinterpret_cast<const uint32_t*>(p));
#pragma unroll
        for (int k = 0; k < kN; ++k) h[q][k] += t.y * static_cast<int>((v >> (8 * k)) & 0xFF);
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
    for (int k = 0; k < kN; ++k) h[q][k] = (h[q][k] + kHalf) >> kScaleWeightBits;
}

// The kN row sums of one input row and column as the tile holds them, side
// by side, so one shared-memory access moves them all where kN is 2 or 4.
template <int kN>
struct alignas(kN == 4 ? 16 : (kN == 2 ? 8 : 4)) Sums {
  int v[kN];
};

// Rounds and clamps the vertical sums and writes output pixel (x, y): one
// word for whole 4-byte pixels (component k its byte k), else sample by
// sample; and the padding.
template <int kN, int kBytes, bool kWord, typename Acc>
__device__ __forceinline__ void store(const ScaleGroup& g, int x, int y, int mask,
                                      const Acc sum[kN]) {
  constexpr int kHalf = 1 << (kScaleWeightBits - 1);
  const ScaleComponent& c = g.c;
  uint8_t* d =
      c.dst + static_cast<size_t>(y) * c.dst_stride + static_cast<size_t>(x) * c.pixel_stride;
  uint32_t word = 0;
#pragma unroll
  for (int k = 0; k < kN; ++k) {
    const Acc r = (sum[k] + kHalf) >> kScaleWeightBits;
    const int v = r < 0 ? 0 : (r > mask ? mask : static_cast<int>(r));
    if (kWord) {
      word |= static_cast<uint32_t>(v) << (8 * k);
    } else if (kBytes == 1) {
      d[g.offset[k]] = static_cast<uint8_t>(v);
    } else {
      const int w = v << c.shift;
      d[g.offset[k]] = static_cast<uint8_t>(w);
      d[g.offset[k] + 1] = static_cast<uint8_t>(w >> 8);
    }
  }
  if (kWord) {
    if (g.fill_offset >= 0) {
      const int at = 8 * g.fill_offset;
      word = (word & ~(0xFFu << at)) | (static_cast<uint32_t>(g.fill) << at);
    }
    *reinterpret_cast<uint32_t*>(d) = word;
  } else if (g.fill_offset >= 0) {
    d[g.fill_offset] = static_cast<uint8_t>(g.fill);
  }
}

// kN components of kBytes-byte samples; kWide: vertical sums in 64 bits
// (16-bit samples); kWord: 4-byte pixels loaded and stored as one word
// (kN 4). A block makes 32 x (8 * kRows) outputs, kRows a thread (rows 8
// apart), each from the input rows its taps along y reach; a tap along x is
// loaded once for the thread's kRows rows.
template <int kN, int kBytes, bool kWide, bool kWord, int kRows>
__global__ void __launch_bounds__(kBlockX* kBlockY) scale_group_kernel(const ScaleGroup g) {
  const ScaleComponent& c = g.c;
  const int x = blockIdx.x * kBlockX + threadIdx.x;
  if (x >= c.out_samples) return;
  const int top = c.row0 + blockIdx.y * (kBlockY * kRows) + threadIdx.y;
  if (top >= c.out_rows) return;
  const int2* taps = x_taps(c, x < c.out_width ? x : c.out_width - 1);
  const int mask = (1 << c.depth) - 1;
  using Acc = typename std::conditional<kWide, long long, int>::type;
  // Rows past the bottom repeat the last, and are not stored.
  int y[kRows];
#pragma unroll
  for (int q = 0; q < kRows; ++q) y[q] = min(top + q * kBlockY, c.out_rows - 1);
  Acc sum[kRows][kN] = {};
  for (int j = 0; j < c.y.taps; ++j) {
    const uint8_t* lines[kRows];
    int wj[kRows];
#pragma unroll
    for (int q = 0; q < kRows; ++q) {
      wj[q] = c.y.weight[static_cast<size_t>(y[q]) * c.y.taps + j];
      lines[q] = c.src + static_cast<size_t>(scale_clamp(c.y.first[y[q]] + j, 0, c.y.in_size - 1)) *
                             c.src_stride;
    }
    int h[kRows][kN];
    row_sums<kN, kBytes, kWord, kRows>(g, lines, taps, mask, h);
#pragma unroll
    for (int q = 0; q < kRows; ++q)
#pragma unroll
      for (int k = 0; k < kN; ++k) sum[q][k] += static_cast<Acc>(wj[q]) * h[q][k];
  }
#pragma unroll
  for (int q = 0; q < kRows; ++q)
    if (top + q * kBlockY < c.out_rows) store<kN, kBytes, kWord, Acc>(g, x, y[q], mask, sum[q]);
}

// The same in two passes through shared memory: the block's 32 x (8 *
// kRows) outputs need input rows [first_y of its top row, first_y of its
// bottom row + taps); each of those rows is filtered along x once for the
// block's 32 columns (the rounded row sums of scale_math.h), four rows at
// a time, then each output sums its own rows' values. A tap is then read
// once per block row instead of once per output row, which is what makes
// multi-tap methods affordable.
template <int kN, int kBytes, bool kWide, bool kWord, int kRows>
__global__ void __launch_bounds__(kBlockX* kBlockY) scale_tile_kernel(const ScaleGroup g) {
  constexpr int kQ = 4;                   // rows filtered at once
  extern __shared__ int4 shared_words[];  // [row][column] of Sums<kN>
  Sums<kN>* const tile = reinterpret_cast<Sums<kN>*>(shared_words);
  const ScaleComponent& c = g.c;
  const int mask = (1 << c.depth) - 1;
  const int bx = blockIdx.x * kBlockX;
  const int by = c.row0 + blockIdx.y * (kBlockY * kRows);
  const int last = min(by + kBlockY * kRows, c.out_rows) - 1;
  const int r_first = c.y.first[by];
  const int r_count = c.y.first[last] + c.y.taps - r_first;
  // A thread filters rows of one column, kQ consecutive rows at a time
  // (chunks dealt to the block's 8 rows of threads); rows past the tile's
  // repeat its last and are not kept.
  const int xc = min(bx + static_cast<int>(threadIdx.x), c.out_samples - 1);
  const int2* taps = x_taps(c, xc < c.out_width ? xc : c.out_width - 1);
  for (int r0 = threadIdx.y * kQ; r0 < r_count; r0 += kQ * kBlockY) {
    const uint8_t* lines[kQ];
#pragma unroll
    for (int q = 0; q < kQ; ++q) {
      const int r = min(r0 + q, r_count - 1);
      lines[q] =
          c.src + static_cast<size_t>(scale_clamp(r_first + r, 0, c.y.in_size - 1)) * c.src_stride;
    }
    int h[kQ][kN];
    row_sums<kN, kBytes, kWord, kQ>(g, lines, taps, mask, h);
#pragma unroll
    for (int q = 0; q < kQ; ++q) {
      if (r0 + q >= r_count) break;
      Sums<kN> v;
#pragma unroll
      for (int k = 0; k < kN; ++k) v.v[k] = h[q][k];
      tile[(r0 + q) * kBlockX + threadIdx.x] = v;
    }
  }
  __syncthreads();
  const int x = bx + threadIdx.x;
  if (x >= c.out_samples) return;
  using Acc = typename std::conditional<kWide, long long, int>::type;
#pragma unroll
  for (int row = 0; row < kRows; ++row) {
    const int y = by + threadIdx.y + row * kBlockY;
    if (y >= c.out_rows) return;
    const int16_t* wy = c.y.weight + static_cast<size_t>(y) * c.y.taps;
    const Sums<kN>* column = tile + (c.y.first[y] - r_first) * kBlockX + threadIdx.x;
    Acc sum[kN] = {};
    for (int j = 0; j < c.y.taps; ++j) {
      const int wj = wy[j];
      const Sums<kN> v = column[j * kBlockX];
#pragma unroll
      for (int k = 0; k < kN; ++k) sum[k] += static_cast<Acc>(wj) * v.v[k];
    }
    store<kN, kBytes, kWord, Acc>(g, x, y, mask, sum);
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

// The tall tile where its rows fit in shared memory, else the short one,
// else (one tap along y, or too many rows) the direct kernel; four rows a
// thread where they can be.
template <int kN, int kBytes, bool kWide, bool kWord>
void launch(const ScaleGroup& g, TileRows rows, CUstream_st* stream) {
  constexpr int kTall = kScaleTallRows / kBlockY;
  const dim3 block(kBlockX, kBlockY);
  const unsigned columns = (g.c.out_samples + kBlockX - 1) / kBlockX;
  auto bytes = [](int tile_rows) {
    return static_cast<size_t>(tile_rows) * kBlockX * sizeof(Sums<kN>);
  };
  const int rows_made = g.c.out_rows - g.c.row0;
  if (rows_made <= 0) return;
  const dim3 tall(columns, (rows_made + kScaleTallRows - 1) / kScaleTallRows);
  if (rows.tall_rows > 0 && bytes(rows.tall_rows) <= kTileBytes) {
    scale_tile_kernel<kN, kBytes, kWide, kWord, kTall>
        <<<tall, block, bytes(rows.tall_rows), stream>>>(g);
  } else if (rows.short_rows > 0 && bytes(rows.short_rows) <= kTileBytes) {
    const dim3 grid(columns, (rows_made + kBlockY - 1) / kBlockY);
    scale_tile_kernel<kN, kBytes, kWide, kWord, 1>
        <<<grid, block, bytes(rows.short_rows), stream>>>(g);
  } else {
    scale_group_kernel<kN, kBytes, kWide, kWord, kTall><<<tall, block, 0, stream>>>(g);
  }
}

template <int kN>
void launch_n(const ScaleGroup& g, bool word, TileRows tile_rows, CUstream_st* stream) {
  if (g.c.sample_bytes == 2) {
    if (g.c.depth > 12)
      launch<kN, 2, true, false>(g, tile_rows, stream);
    else
      launch<kN, 2, false, false>(g, tile_rows, stream);
  } else if (word) {
    launch<4, 1, false, true>(g, tile_rows, stream);
  } else {
    launch<kN, 1, false, false>(g, tile_rows, stream);
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
    // Whole 4-byte pixels, aligned: loaded and stored as words.
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
