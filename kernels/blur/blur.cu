// CUDA implementation of the `blur` kernel (see blur.h).
//
// One block makes a tile of one plane in a single launch: `tx` bytes of
// every row of the tile (all the channels of its pixel groups, so each input
// byte is read by one block, not one block per channel) and `ty` rows. It
// runs the horizontal pass on the tile's rows plus `radius` rows of halo
// above and below, straight from device memory (clamping at the image
// edges), into a uint16 array in shared memory, then the vertical pass from
// there. Keeping the intermediate on chip avoids a device-memory temporary,
// which the engine could not allocate per frame anyway (no cudaMalloc after
// start). The integer arithmetic is the reference's; only the order of the
// additions differs, which integers without overflow do not notice.
//
// Each thread makes kRun outputs of one channel: consecutive pixel groups
// of a row in the horizontal pass, consecutive rows of a byte column in the
// vertical one, so its loads and index arithmetic serve kRun outputs. For
// the small radii a blur of a video mostly uses (up to kMaxFixedRadius) the
// radius is a template argument: the kRun + 2 * radius samples sit in
// registers, loaded without clamping away from the image edges, and each
// output takes the symmetric taps, radius + 1 multiply-adds. Larger radii
// go through a generic path that walks the samples in chunks of kRun and
// multiplies each chunk by a window of the taps (zero outside the kernel),
// so nothing is indexed at run time in registers; it spends about
// 2 * radius + kRun multiply-adds per output, where the sums are
// compute-bound anyway. The bytes per pixel group are a template argument
// too, so the offsets of the loads are constants.
//
// The uint16 intermediate (at most 255 * 4096 / 16 = 65280) halves the
// shared memory of a uint32 one, which lets the tile be taller and the halo
// rows, computed twice by neighbouring blocks, a smaller share of the work.
//
// A launch makes output rows [y0, y1) of the picture (a band of the
// engine's, or all of it): each plane's grid covers that band's rows of the
// plane, starting at its first, and the halo rows above and below are read
// from the input, clamped at the plane's own top and bottom, so a band's
// rows equal those of a whole-frame run. Nothing outside the band's rows is
// written.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "kernels/blur/blur.h"
#include "kernels/cuda_check.h"
#include "kernels/error.h"

namespace cudaoverlap {
namespace {

constexpr int kThreads = 256;
// Outputs per thread in either pass; a power of two.
constexpr int kRun = 8;
constexpr int kRunShift = 3;
static_assert(kRun == 1 << kRunShift, "kRunShift must match kRun");
// The intermediate: 44 KB of uint16, which with the taps stays within the
// 48 KB of static shared memory every GPU gives without opting in.
constexpr int kMidElems = 22528;
constexpr int kMaxTileRows = 256;
// Tile width in bytes for radii up to 16 (see tile_shape), and so for every
// fixed radius, whose kernels take it as a constant.
constexpr int kWideTile = 128;
constexpr int kWideTileShift = 7;
// Radii with a kernel of their own (sigma up to about 2.6).
constexpr int kMaxFixedRadius = 8;
static_assert(kMaxFixedRadius <= 16, "fixed radii use the wide tile (see tile_shape)");
// The generic path's window of taps: offsets -(kRun - 1) - radius up to
// 2 * kRun + radius (see blur_tile_kernel).
constexpr int kWeightSpan = 2 * kBlurMaxRadius + 3 * kRun;

// The tile of one plane, chosen on the host (see tile_shape).
struct TileShape {
  int tx;          // bytes of a row per tile, a multiple of kRun * step
  int tx_shift;    // log2(tx)
  int ty;          // output rows per tile, a multiple of kRun
  int pitch;       // uint16 elements per row of the intermediate
  int step_shift;  // log2(bytes per pixel group); picks the kernel
};

__device__ __forceinline__ int clamp_to(int v, int hi) { return v < 0 ? 0 : (v > hi ? hi : v); }

// Where byte column `col` of the tile lives in a row of the intermediate.
// A horizontal thread writes columns kRun * step apart from its warp
// neighbours of the same channel, which without the skew of one 4-byte
// word per run of columns would put several of them in one bank.
__device__ __forceinline__ int mid_col(int col, int step_shift) {
  return col + ((col >> (kRunShift + step_shift)) << 1);
}

// kR is the radius, or 0 for the generic path that takes it from `taps`;
// kStepShift is log2 of the bytes per pixel group. With both fixed, the
// offsets of a thread's loads are constants of the instructions. The alpha
// (or padding) byte of packed formats, `alpha_channel`, is copied.
template <int kR, int kStepShift>
__global__ void __launch_bounds__(kThreads)
    blur_tile_kernel(const uint8_t* __restrict__ src, size_t src_stride, uint8_t* __restrict__ dst,
                     size_t dst_stride, int width, int height, int row0, int row_end,
                     int alpha_channel, TileShape shape, BlurTaps taps) {
  __shared__ uint16_t mid[kMidElems];
  // The generic path's taps by signed offset, zero beyond the radius:
  // wspan[i] is the weight of offset i - (kRun - 1) - radius.
  __shared__ int32_t wspan[kWeightSpan];
  const int r = kR > 0 ? kR : taps.radius;
  constexpr int step_shift = kStepShift;
  constexpr int step_mask = (1 << step_shift) - 1;
  const int tx = kR > 0 ? kWideTile : shape.tx;
  const int tx_shift = kR > 0 ? kWideTileShift : shape.tx_shift;
  const int pitch = kR > 0 ? kWideTile + 2 * (kWideTile >> (kRunShift + kStepShift)) : shape.pitch;
  const int x0 = blockIdx.x * tx;  // the tile's first byte column
  // Output rows [row0, row_end) of the plane's `height` (a band, or all of
  // them); the clamping at the top and bottom is the plane's.
  const int y0 = row0 + blockIdx.y * shape.ty;
  const int rows_out = min(shape.ty, row_end - y0);
  const int rows_in = rows_out + 2 * r;
  const int row_bytes = width << step_shift;
  const int tid = threadIdx.x;

  if constexpr (kR == 0) {
    for (int i = tid; i < kWeightSpan; i += kThreads) {
      const int d = i - (kRun - 1) - r;
      wspan[i] = (d >= -r && d <= r) ? taps.weight[d < 0 ? -d : d] : 0;
    }
    __syncthreads();
  }

  // Horizontal: each row of the tile and its halo holds tx / kRun runs,
  // run q being channel q % step of kRun pixel groups starting at group
  // q / step * kRun of the tile (so a warp's loads stay close together).
  const int runs_shift = tx_shift - kRunShift;
  for (int t = tid; t < (rows_in << runs_shift); t += kThreads) {
    const int j = t >> runs_shift;
    const int q = t & ((1 << runs_shift) - 1);
    const int c = q & step_mask;
    const int g = (q >> step_shift) << kRunShift;  // first pixel group in the tile
    const int p = (x0 >> step_shift) + g;          // ...in the plane
    // The fixed-radius kernels carry the alpha byte through both passes
    // instead (see below), so that no lane of a warp idles.
    if ((kR == 0 && c == alpha_channel) || p >= width) continue;
    const int gy = clamp_to(y0 - r + j, height - 1);
    const uint8_t* row = src + gy * src_stride + c;
    // Sample k of the run is pixel group p - r + k, clamped to the row.
    const int first = p - r;
    const int last = width - 1;
    // The run's columns of the intermediate: the skew is the same for all.
    uint16_t* out = mid + j * pitch + mid_col((g << step_shift) + c, step_shift);
    if constexpr (kR > 0) {
      int x[kRun + 2 * kR];
      if (first >= 0 && first + kRun + 2 * kR - 1 <= last) {
        // Away from the edges (most runs), no clamping.
        const uint8_t* in = row + (first << step_shift);
#pragma unroll
        for (int k = 0; k < kRun + 2 * kR; ++k) x[k] = in[k << step_shift];
      } else {
#pragma unroll
        for (int k = 0; k < kRun + 2 * kR; ++k) x[k] = row[clamp_to(first + k, last) << step_shift];
      }
      int w[kR + 1];
#pragma unroll
      for (int d = 0; d <= kR; ++d) w[d] = taps.weight[d];
      // An alpha byte goes into the intermediate unblurred, with the 8
      // fractional bits of the others.
      const bool copy = c == alpha_channel;
#pragma unroll
      for (int o = 0; o < kRun; ++o) {
        int32_t acc = w[0] * x[o + kR];
#pragma unroll
        for (int d = 1; d <= kR; ++d) acc += w[d] * (x[o + kR - d] + x[o + kR + d]);
        acc = (acc + (1 << (kBlurWeightBits - 8 - 1))) >> (kBlurWeightBits - 8);
        out[o << step_shift] = static_cast<uint16_t>(copy ? x[o + kR] << 8 : acc);
      }
    } else {
      // Output o is centred on sample o + r; sample k weighs wspan[k - o +
      // kRun - 1] in it. Samples past the last one needed weigh 0.
      int32_t acc[kRun] = {};
      for (int base = 0; base < kRun + 2 * r; base += kRun) {
        int x[kRun];
#pragma unroll
        for (int k = 0; k < kRun; ++k) x[k] = row[clamp_to(first + base + k, last) << step_shift];
        int w[2 * kRun - 1];
#pragma unroll
        for (int u = 0; u < 2 * kRun - 1; ++u) w[u] = wspan[base + u];
#pragma unroll
        for (int o = 0; o < kRun; ++o)
#pragma unroll
          for (int k = 0; k < kRun; ++k) acc[o] += w[k - o + kRun - 1] * x[k];
      }
#pragma unroll
      for (int o = 0; o < kRun; ++o)
        out[o << step_shift] = static_cast<uint16_t>((acc[o] + (1 << (kBlurWeightBits - 8 - 1))) >>
                                                     (kBlurWeightBits - 8));
    }
  }
  __syncthreads();

  // Vertical: byte column i of the tile, kRun output rows from row jo. A
  // warp covers 32 neighbouring columns, so its shared loads are free of
  // bank conflicts and its stores are contiguous. Rows of the intermediate
  // past rows_in (read when rows_out is not a multiple of kRun, or by the
  // generic path's last chunk) only feed outputs that are not stored or
  // taps of weight 0; the host leaves room for them.
  constexpr int kShift = kBlurWeightBits + 8;
  const int runs_out = (rows_out + kRun - 1) >> kRunShift;
  for (int t = tid; t < (runs_out << tx_shift); t += kThreads) {
    const int i = t & (tx - 1);
    const int jo = (t >> tx_shift) << kRunShift;
    const int x = x0 + i;
    if (x >= row_bytes) continue;
    const int n = min(kRun, rows_out - jo);
    uint8_t* out = dst + (y0 + jo) * dst_stride + x;
    const bool copy = (i & step_mask) == alpha_channel;
    if (kR == 0 && copy) {
      const uint8_t* in = src + (y0 + jo) * src_stride + x;
      for (int o = 0; o < n; ++o) out[o * dst_stride] = in[o * src_stride];
      continue;
    }
    const uint16_t* column = mid + jo * pitch + mid_col(i, step_shift);
    uint32_t res[kRun];
    if constexpr (kR > 0) {
      uint32_t m[kRun + 2 * kR];
#pragma unroll
      for (int k = 0; k < kRun + 2 * kR; ++k) m[k] = column[k * pitch];
      uint32_t w[kR + 1];
#pragma unroll
      for (int d = 0; d <= kR; ++d) w[d] = static_cast<uint32_t>(taps.weight[d]);
        // An alpha byte is its row's own sample of the intermediate, scaled
        // so the rounding below gives it back.
#pragma unroll
      for (int o = 0; o < kRun; ++o) {
        uint32_t acc = w[0] * m[o + kR];
#pragma unroll
        for (int d = 1; d <= kR; ++d) acc += w[d] * (m[o + kR - d] + m[o + kR + d]);
        res[o] = copy ? (m[o + kR] >> 8) << kShift : acc;
      }
    } else {
#pragma unroll
      for (int o = 0; o < kRun; ++o) res[o] = 0;
      for (int base = 0; base < kRun + 2 * r; base += kRun) {
        uint32_t m[kRun];
#pragma unroll
        for (int k = 0; k < kRun; ++k) m[k] = column[(base + k) * pitch];
        uint32_t w[2 * kRun - 1];
#pragma unroll
        for (int u = 0; u < 2 * kRun - 1; ++u) w[u] = static_cast<uint32_t>(wspan[base + u]);
#pragma unroll
        for (int o = 0; o < kRun; ++o)
#pragma unroll
          for (int k = 0; k < kRun; ++k) res[o] += w[k - o + kRun - 1] * m[k];
      }
    }
#pragma unroll
    for (int o = 0; o < kRun; ++o)
      if (o < n)
        out[o * dst_stride] =
            static_cast<uint8_t>(min(255u, (res[o] + (1u << (kShift - 1))) >> kShift));
  }
}

// The formats blur_tile_kernel does not read: 3-byte RGB, packed 4:2:2,
// NV16 and Y42B (subsampled across but not down), and 10- and 16-bit
// samples. One launch per plane; a block makes kPlaneTileX samples of the
// plane's finest component by `ty` rows (as many as shared memory holds
// with the halo), one component after the other, so the three of RGB or
// YUY2 read the same lines while they are in cache. The horizontal pass
// stages kStageRows input rows at a time, their samples read through the
// format table's components (one warp per row, so the loads of a warp are
// neighbours), then sums the taps from there into a uint16 intermediate;
// the vertical pass sums from the intermediate. The taps are symmetric, so
// each pair of samples at +-d takes one multiply.
constexpr int kPlaneTileX = 64, kPlaneTileShift = 6;
constexpr int kStageRows = kThreads / 32;  // a warp per staged row
constexpr int kStagePitch = kPlaneTileX + 2 * kBlurMaxRadius;
// The intermediate: 40 KB of uint16, with the staging rows and the taps
// within the 48 KB of shared memory every GPU gives without opting in.
constexpr int kPlaneMidElems = 20480;

struct ComponentBlur {
  int offset, step;   // bytes in the plane's row
  int sub;            // log2 of the plane's finest samples per one of its samples
  int width, stored;  // samples of the picture, and that a row holds
  BlurTaps across;
};

struct PlaneBlur {
  const uint8_t* src;
  uint8_t* dst;
  size_t src_stride, dst_stride;
  int height;
  int row0, row_end;  // the output rows made: a band of the plane's, or all
  int ty;             // output rows per tile, a multiple of kStageRows
  int n;              // components in the plane
  ComponentBlur comp[3];
  BlurTaps down;  // alike for the components of a plane
  bool wide;      // 16-bit samples: `depth` bits `shift` up
  int shift;
  uint32_t max;
  int frac;  // blur_fraction_bits
};

__device__ __forceinline__ uint32_t plane_sample(const uint8_t* p, bool wide, int shift,
                                                 uint32_t max) {
  if (!wide) return *p;
  return ((p[0] | (static_cast<uint32_t>(p[1]) << 8)) >> shift) & max;
}

__global__ void __launch_bounds__(kThreads) blur_plane_kernel(const __grid_constant__ PlaneBlur b) {
  __shared__ uint16_t mid[kPlaneMidElems];  // (ty + 2 * radius) rows of kPlaneTileX
  __shared__ uint16_t stage[kStageRows][kStagePitch];
  __shared__ int32_t across[kBlurMaxRadius + 1], down[kBlurMaxRadius + 1];
  const int ry = b.down.radius;
  const int rows_in = b.ty + 2 * ry;
  const int y0 = b.row0 + blockIdx.y * b.ty;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  for (int i = threadIdx.x; i <= ry; i += kThreads) down[i] = b.down.weight[i];
  const int first_shift = kBlurWeightBits - b.frac;
  const int last_shift = kBlurWeightBits + b.frac;
  for (int c = 0; c < b.n; ++c) {
    const ComponentBlur& k = b.comp[c];
    const int rx = k.across.radius;
    const int tw_shift = kPlaneTileShift - k.sub;
    const int x0 = (blockIdx.x * kPlaneTileX) >> k.sub;
    const int span = (1 << tw_shift) + 2 * rx;
    for (int i = threadIdx.x; i <= rx; i += kThreads) across[i] = k.across.weight[i];
    for (int j0 = 0; j0 < rows_in; j0 += kStageRows) {
      __syncthreads();  // the taps are in; the stage is free
      if (j0 + warp < rows_in) {
        const int y = clamp_to(y0 - ry + j0 + warp, b.height - 1);
        const uint8_t* row = b.src + y * b.src_stride + k.offset;
        for (int i = lane; i < span; i += 32)
          stage[warp][i] = static_cast<uint16_t>(plane_sample(
              row + clamp_to(x0 - rx + i, k.width - 1) * k.step, b.wide, b.shift, b.max));
      }
      __syncthreads();
      for (int i = threadIdx.x; i < (kStageRows << tw_shift); i += kThreads) {
        const int r = i >> tw_shift, col = i & ((1 << tw_shift) - 1);
        if (j0 + r >= rows_in || x0 + col >= k.width) continue;
        const uint16_t* s = &stage[r][col + rx];
        int32_t acc = across[0] * s[0];
        for (int d = 1; d <= rx; ++d) acc += across[d] * (s[-d] + s[d]);
        mid[(j0 + r) * kPlaneTileX + col] =
            static_cast<uint16_t>((acc + (1 << (first_shift - 1))) >> first_shift);
      }
    }
    __syncthreads();
    for (int i = threadIdx.x; i < (b.ty << tw_shift); i += kThreads) {
      const int j = i >> tw_shift, col = i & ((1 << tw_shift) - 1);
      const int x = x0 + col, y = y0 + j;
      if (x >= k.stored || y >= b.row_end) continue;
      const size_t at = static_cast<size_t>(x) * k.step + k.offset;
      const uint8_t* s = b.src + y * b.src_stride + at;
      uint8_t* d = b.dst + y * b.dst_stride + at;
      if (x >= k.width) {  // the padding luma of an odd-width packed 4:2:2 row
        d[0] = s[0];
        continue;
      }
      const uint16_t* m = &mid[(j + ry) * kPlaneTileX + col];
      uint32_t acc = static_cast<uint32_t>(down[0]) * m[0];
      for (int t = 1; t <= ry; ++t)
        acc += static_cast<uint32_t>(down[t]) *
               (static_cast<uint32_t>(m[-t * kPlaneTileX]) + m[t * kPlaneTileX]);
      const uint32_t v = min(b.max, (acc + (1u << (last_shift - 1))) >> last_shift);
      if (!b.wide) {
        d[0] = static_cast<uint8_t>(v);
        continue;
      }
      const uint32_t word =
          ((s[0] | (static_cast<uint32_t>(s[1]) << 8)) & ~(b.max << b.shift)) | (v << b.shift);
      d[0] = static_cast<uint8_t>(word);
      d[1] = static_cast<uint8_t>(word >> 8);
    }
  }
}

// Whether blur_tile_kernel reads `format`: 8-bit samples, every plane
// subsampled alike across and down, pixel groups of 1, 2 or 4 bytes.
bool tile_path(const FormatInfo& info) {
  if (info.sample_bytes != 1) return false;
  for (int p = 0; p < info.n_planes; ++p)
    if (info.x_shift[p] != info.y_shift[p] || info.pixel_bytes[p] == 3) return false;
  return true;
}

void blur_planes_cuda(const ImageRef& in, const ImageRef& out, double sigma, int y0, int y1,
                      CUstream_st* stream) {
  const FormatInfo& info = format_info(in.format);
  for (int p = 0; p < info.n_planes; ++p) {
    PlaneBlur b{};
    b.src = in.planes[p].data;
    b.dst = out.planes[p].data;
    b.src_stride = in.planes[p].stride;
    b.dst_stride = out.planes[p].stride;
    b.height = static_cast<int>(plane_rows(in.format, p, in.height));
    b.row0 = static_cast<int>(plane_rows(in.format, p, y0));
    b.row_end = static_cast<int>(plane_rows(in.format, p, y1));
    b.wide = info.sample_bytes == 2;
    int finest = 0;  // samples of the finest component that a row holds
    int finest_sub = 31;
    for (int c = 0; c < colour_components(in.format); ++c)
      if (info.comp[c].plane == p) finest_sub = std::min(finest_sub, info.comp[c].x_sub);
    for (int c = 0; c < colour_components(in.format); ++c) {
      const Component& k = info.comp[c];
      if (k.plane != p) continue;
      ComponentBlur& e = b.comp[b.n++];
      e.offset = k.offset;
      e.step = k.pixel_stride;
      e.sub = k.x_sub - finest_sub;
      e.width = (in.width + (1 << k.x_sub) - 1) >> k.x_sub;
      e.stored = static_cast<int>(
          (plane_row_bytes(in.format, p, in.width) - k.offset + k.pixel_stride - 1) /
          k.pixel_stride);
      e.across = blur_taps(sigma, k.x_sub);
      b.down = blur_taps(sigma, k.y_sub);
      b.shift = k.shift;
      b.max = (1u << k.depth) - 1;
      b.frac = blur_fraction_bits(k.depth);
      finest = std::max(finest, e.stored << e.sub);
    }
    if (b.n == 0 || finest == 0 || b.row_end <= b.row0) continue;
    // The tallest tile the intermediate holds with its halo: 200 rows for
    // radius 60, 256 for radius 32 and less.
    b.ty =
        std::min(256, (kPlaneMidElems / kPlaneTileX - 2 * b.down.radius) / kStageRows * kStageRows);
    const dim3 grid((finest + kPlaneTileX - 1) / kPlaneTileX,
                    (b.row_end - b.row0 + b.ty - 1) / b.ty);
    if (grid.y > 65535) throw Error("blur: the image is too tall (more than 13,107,000 rows)");
    blur_plane_kernel<<<grid, kThreads, 0, stream>>>(b);
    CO_CUDA_CHECK_LAUNCH("the blur kernel");
  }
}

int log2_of(int v) {
  int s = 0;
  while ((1 << s) < v) ++s;
  return s;
}

// Wide tiles for small radii, where the horizontal halo (2 * radius pixel
// groups read, not computed) is cheap; narrower and taller ones for large
// radii, where the 2 * radius halo rows are computed twice and the tile
// should be tall to keep them a small share. The intermediate holds ty +
// 2 * radius rows plus kRun rows of slack for the vertical pass's reads
// past the last row.
TileShape tile_shape(int radius, int step) {
  TileShape shape;
  shape.tx = radius <= 16 ? kWideTile : 64;
  shape.tx_shift = log2_of(shape.tx);
  shape.step_shift = log2_of(step);
  shape.pitch = shape.tx + 2 * (shape.tx / (kRun * step));
  const int rows = kMidElems / shape.pitch - 2 * radius - kRun;
  shape.ty = std::min(kMaxTileRows, rows) / kRun * kRun;
  return shape;
}

template <int kR, int kStepShift>
void launch_step(dim3 grid, CUstream_st* stream, const PlaneRef& in, const PlaneRef& out, int width,
                 int height, int row0, int row_end, int alpha_channel, const TileShape& shape,
                 const BlurTaps& taps) {
  blur_tile_kernel<kR, kStepShift>
      <<<grid, kThreads, 0, stream>>>(in.data, in.stride, out.data, out.stride, width, height, row0,
                                      row_end, alpha_channel, shape, taps);
}

// The kernel for the plane's radius (down from kR; every radius above
// kMaxFixedRadius ends at the generic kernel, kR 0) and step.
template <int kR = kMaxFixedRadius>
void launch(dim3 grid, CUstream_st* stream, const PlaneRef& in, const PlaneRef& out, int width,
            int height, int row0, int row_end, int alpha_channel, const TileShape& shape,
            const BlurTaps& taps) {
  if constexpr (kR > 0) {
    if (taps.radius != kR) {
      launch<kR - 1>(grid, stream, in, out, width, height, row0, row_end, alpha_channel, shape,
                     taps);
      return;
    }
  }
  if (shape.step_shift == 0)
    launch_step<kR, 0>(grid, stream, in, out, width, height, row0, row_end, alpha_channel, shape,
                       taps);
  else if (shape.step_shift == 1)
    launch_step<kR, 1>(grid, stream, in, out, width, height, row0, row_end, alpha_channel, shape,
                       taps);
  else
    launch_step<kR, 2>(grid, stream, in, out, width, height, row0, row_end, alpha_channel, shape,
                       taps);
}

}  // namespace

void blur_cuda(const ImageRef& in, const ImageRef& out, double sigma, int y0, int y1,
               CUstream_st* stream) {
  const FormatInfo& info = format_info(in.format);
  if (!tile_path(info)) {
    blur_planes_cuda(in, out, sigma, y0, y1, stream);
    return;
  }
  for (int p = 0; p < info.n_planes; ++p) {
    const int step = info.pixel_bytes[p];
    const int width = static_cast<int>(plane_row_bytes(in.format, p, in.width)) / step;
    const int height = static_cast<int>(plane_rows(in.format, p, in.height));
    const int row0 = static_cast<int>(plane_rows(in.format, p, y0));
    const int row_end = static_cast<int>(plane_rows(in.format, p, y1));
    if (width == 0 || row_end <= row0) continue;
    const BlurTaps taps = blur_taps(sigma, info.x_shift[p]);
    const TileShape shape = tile_shape(taps.radius, step);
    dim3 grid((width * step + shape.tx - 1) / shape.tx, (row_end - row0 + shape.ty - 1) / shape.ty);
    // ty is at least 96 rows (1-byte samples, radius 16).
    if (grid.y > 65535) throw Error("blur: the image is too tall (more than 6,291,360 rows)");
    launch(grid, stream, in.planes[p], out.planes[p], width, height, row0, row_end, info.alpha_byte,
           shape, taps);
    CO_CUDA_CHECK_LAUNCH("the blur kernel");
  }
}

}  // namespace cudaoverlap
