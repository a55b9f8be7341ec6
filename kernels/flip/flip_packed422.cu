// flip for packed 4:2:2 (YUY2, UYVY, YVYU) where a pair's two pixels do
// not stay together: turned, and mirrored at an odd width (see
// flip_launch.h).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "kernels/cuda_check.h"
#include "kernels/error.h"
#include "kernels/flip/flip_launch.h"
#include "kernels/flip/flip_math.h"

namespace cudaoverlap {
namespace flip_detail {
namespace {

__global__ void flip_y422_kernel(const ImageRef in, const ImageRef out, FlipDirection direction,
                                 int y_off, int u_off, int v_off, int pairs) {
  const int pair = blockIdx.x * blockDim.x + threadIdx.x;
  if (pair >= pairs) return;
  for (int y = blockIdx.y * blockDim.y + threadIdx.y; y < out.height; y += gridDim.y * blockDim.y)
    flip_math::flip_y422_pair(in, out, direction, y_off, u_off, v_off, 2 * pair, y);
}

// Packed 4:2:2 turned (90R, 90L, ul-lr, ur-ll): the output pair (x, y)
// takes two input rows (x and x + 1 counted from the top or the bottom) at
// one input column (y counted from the left or the right), so a thread per
// output pair gathers bytes from rows a stride apart. Instead each block
// copies the input words its output tile needs into shared memory, rows
// and words along them coalesced, and makes the tile's output pairs from
// there, flip_math::flip_y422_pair's rule, a word per pair, a warp on one
// output row. Output tile: kTurnPairs pairs x kTurnRows rows, from
// 2 kTurnPairs input rows of kTurnWords pair words (one more than
// kTurnRows / 2: a tile counted from the right may start at an odd column).
constexpr int kTurnPairs = 32, kTurnRows = 64, kTurnWords = kTurnRows / 2 + 1;
constexpr int kTurnThreads = 256;
constexpr int kTurnTileWords = 2 * kTurnPairs * kTurnWords;
constexpr int kTurnLoads = (kTurnTileWords + kTurnThreads - 1) / kTurnThreads;

__global__ void __launch_bounds__(kTurnThreads)
    turn_y422_kernel(const ImageRef in, const ImageRef out, FlipDirection direction, int y_off,
                     int u_off, int v_off, bool in_a4, bool out_a4) {
  // Input rows 2m and 2m + 1 of the tile side by side: an output pair's
  // two input words are one 8-byte shared load (conflict-free: a half-warp
  // reads 16 pairs of rows at one word).
  __shared__ uint2 tile[kTurnPairs][kTurnWords];
  const int sw = in.width, sh = in.height, dw = out.width, dh = out.height;
  const int p0 = blockIdx.x * kTurnPairs, y0 = blockIdx.y * kTurnRows;
  // Rows counted from the bottom for 90R and ur-ll, columns from the right
  // for 90L and ur-ll (flip_y422_pair).
  const bool rows_up = direction == FlipDirection::k90R || direction == FlipDirection::kUrLl;
  const bool cols_left = direction == FlipDirection::k90L || direction == FlipDirection::kUrLl;
  // Input row of output pixel x: x or sh - 1 - x; tile row = that - r0.
  const int r0 = rows_up ? sh - 2 * kTurnPairs - 2 * p0 : 2 * p0;
  // Input column of output row y: y or sw - 1 - y; tile word = col / 2 - w0.
  const int w0 = cols_left ? max(sw - kTurnRows - y0, 0) >> 1 : y0 >> 1;
  const int in_pairs = (sw + 1) >> 1;
  const int t = threadIdx.x;
  // Every load of a thread is issued before its first shared store: a loop
  // that stored each word before loading the next kept 4 bytes a thread in
  // flight, too few to cover the memory's latency.
  uint32_t v[kTurnLoads];
#pragma unroll
  for (int k = 0; k < kTurnLoads; ++k) {
    const int i = t + k * kTurnThreads;
    const int r = i / kTurnWords, w = i % kTurnWords;
    const int row = r0 + r, word = w0 + w;
    v[k] = 0;
    if (i < kTurnTileWords && row >= 0 && row < sh && word < in_pairs) {
      const uint8_t* p = in.planes[0].data + static_cast<size_t>(row) * in.planes[0].stride +
                         static_cast<size_t>(word) * 4;
      v[k] = in_a4 ? __ldg(reinterpret_cast<const uint32_t*>(p))
                   : static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
                         static_cast<uint32_t>(p[2]) << 16 | static_cast<uint32_t>(p[3]) << 24;
    }
  }
#pragma unroll
  for (int k = 0; k < kTurnLoads; ++k) {
    const int i = t + k * kTurnThreads;
    if (i >= kTurnTileWords) break;
    const int r = i / kTurnWords;
    uint32_t* pair = reinterpret_cast<uint32_t*>(&tile[r >> 1][i % kTurnWords]);
    pair[r & 1] = v[k];
  }
  __syncthreads();
  // A thread makes the output pair p0 + lane of rows y0 + warp + 8 j: its
  // input rows are fixed, its input column steps 8 a row (4 pair words),
  // so the luma byte it takes (the column's parity) is fixed too.
  const int lane = t & 31;
  const int p = p0 + lane, x = 2 * p;
  if (x >= dw) return;
  const bool second = x + 1 < dw;
  // Input rows x and x + 1 (or sh - 1 - x and sh - 2 - x) are tile rows
  // 2m and 2m + 1 (the first of them the odd one counting up).
  const int m = rows_up ? kTurnPairs - 1 - lane : lane;
  const int y_first = y0 + (t >> 5);
  const int col0 = cols_left ? sw - 1 - y_first : y_first;
  const int lw0 = (col0 >> 1) - w0;
  const int lw_step = cols_left ? -kTurnThreads / 32 / 2 : kTurnThreads / 32 / 2;
  const int luma = (col0 & 1) * 2 + y_off;
  // a: the pair word of input row x, b: of row x + 1 (a again at the last
  // column of an odd width). Luma: a's at y_off, b's at y_off + 2 (in
  // lum's other bytes: anything); chroma: the bytewise mean, rounded down.
  const uint32_t sel_luma = static_cast<uint32_t>(luma) << (4 * y_off) |
                            static_cast<uint32_t>(luma + 4) << (4 * (y_off + 2));
  uint32_t sel_word = 0;
  sel_word |= static_cast<uint32_t>(y_off) << (4 * y_off);
  sel_word |= static_cast<uint32_t>(y_off + 2) << (4 * (y_off + 2));
  sel_word |= static_cast<uint32_t>(4 + u_off) << (4 * u_off);
  sel_word |= static_cast<uint32_t>(4 + v_off) << (4 * v_off);
  uint8_t* d = out.planes[0].data + static_cast<size_t>(y_first) * out.planes[0].stride +
               static_cast<size_t>(p) * 4;
  const size_t d_step = (kTurnThreads / 32) * out.planes[0].stride;
#pragma unroll
  for (int j = 0; j < kTurnRows / (kTurnThreads / 32); ++j) {
    if (y_first + j * (kTurnThreads / 32) >= dh) break;
    const uint2 e = tile[m][lw0 + j * lw_step];
    const uint32_t a = rows_up ? e.y : e.x;
    const uint32_t b = second ? (rows_up ? e.x : e.y) : a;
    const uint32_t mean = (a & b) + (((a ^ b) >> 1) & 0x7F7F7F7Fu);
    const uint32_t word = __byte_perm(__byte_perm(a, b, sel_luma), mean, sel_word);
    if (out_a4) {
      *reinterpret_cast<uint32_t*>(d) = word;
    } else {
      for (int k = 0; k < 4; ++k) d[k] = static_cast<uint8_t>(word >> (8 * k));
    }
    d += d_step;
  }
}

}  // namespace

void turn_y422_cuda(const ImageRef& in, const ImageRef& out, FlipDirection direction,
                    CUstream_st* stream) {
  const FormatInfo& info = format_info(in.format);
  const int pairs = (out.width + 1) / 2;
  if (pairs == 0 || out.height == 0) return;
  auto aligned4 = [](const PlaneRef& p) {
    return reinterpret_cast<uintptr_t>(p.data) % 4 == 0 && p.stride % 4 == 0;
  };
  const dim3 grid((pairs + kTurnPairs - 1) / kTurnPairs,
                  static_cast<unsigned>((out.height + kTurnRows - 1) / kTurnRows));
  if (grid.y > 65535) throw Error("flip: a packed 4:2:2 picture too wide to turn");
  turn_y422_kernel<<<grid, kTurnThreads, 0, stream>>>(
      in, out, direction, info.comp[0].offset, info.comp[1].offset, info.comp[2].offset,
      aligned4(in.planes[0]), aligned4(out.planes[0]));
  CO_CUDA_CHECK_LAUNCH("the flip kernel (packed 4:2:2 turned)");
}

void flip_y422_odd_cuda(const ImageRef& in, const ImageRef& out, FlipDirection direction,
                        CUstream_st* stream) {
  const FormatInfo& info = format_info(in.format);
  const int pairs = (out.width + 1) / 2;
  if (pairs == 0 || out.height == 0) return;
  // Odd widths: a mirrored pair takes its two pixels from two input
  // pairs, and the last pair's second luma repeats its first.
  const dim3 block(32, 8);
  const dim3 grid((pairs + 31) / 32, static_cast<unsigned>(std::min((out.height + 7) / 8, 65535)));
  flip_y422_kernel<<<grid, block, 0, stream>>>(in, out, direction, info.comp[0].offset,
                                               info.comp[1].offset, info.comp[2].offset, pairs);
  CO_CUDA_CHECK_LAUNCH("the flip kernel (packed 4:2:2)");
}

}  // namespace flip_detail
}  // namespace cudaoverlap
