// YUV to YUV through the plane scaler for convert: luma copied and each
// chroma plane scaled, in one launch (scale_window_kernel) where it
// applies, else by scale_planes_kernel after a copy of luma.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "kernels/convert/convert_layout.cuh"
#include "kernels/copy/copy.h"
#include "kernels/cuda_check.h"

namespace cudaoverlap {
namespace convert_detail {
namespace {

// YUV to YUV through the plane scaler (k.scale_planes; both sides 8-bit,
// planar or semi-planar): luma is copied and each chroma plane scaled on
// its own, as videoconvert's fast paths do, with the scaler's geometry
// worked out once per launch (convert_math::ChromaScaler). The window
// kernel (below) does both in one launch; where it does not apply,
// scale_planes_kernel makes 4 bytes of a row of an output chroma plane a
// thread (4 samples of one component, or 2 U, V pairs), after the copy
// kernel's launch for luma.
struct ScaledPlane {
  // Input chroma: where U and V start, their step and the row stride.
  const uint8_t* in[2];
  int in_step;
  size_t in_stride[2];
  // Output chroma plane z (planar: U, then V; semi-planar: the
  // one plane of pairs, U at byte u_byte of each).
  uint8_t* out[2];
  size_t out_stride[2];
  bool planar;
  int u_byte;
  int row_bytes, rows;
  bool aligned;  // 4-byte stores
  // For scale_window_kernel: input bytes per row (the window's columns)
  // and rows, and whether the input planes' pointers and strides are
  // 4-byte words.
  int in_cols, in_rows;
  bool in_a4;
  // scale_window_kernel copies luma in the same launch: its first
  // luma_blocks(luma) blocks across; the blocks after them are
  // chroma_blocks per chroma plane.
  LumaCopy luma;
  int chroma_blocks;
};

__global__ void __launch_bounds__(kThreads)
    scale_planes_kernel(const convert_math::ChromaScaler s, const ScaledPlane p) {
  const int x = (blockIdx.x * kBlockX + threadIdx.x) * 4;
  if (x >= p.row_bytes) return;
  const int n = min(4, p.row_bytes - x);
  uint8_t* const out = blockIdx.z == 0 ? p.out[0] : p.out[1];
  const size_t out_stride = blockIdx.z == 0 ? p.out_stride[0] : p.out_stride[1];
  for (int y = blockIdx.y * kBlockY + threadIdx.y; y < p.rows; y += gridDim.y * kBlockY) {
    int vi, vp;
    convert_math::scaler_row(s, y, &vi, &vp);
    uint32_t word = 0;
    for (int b = 0; b < n; ++b) {
      const int byte = x + b;
      const bool u = p.planar ? blockIdx.z == 0 : (byte & 1) == p.u_byte;
      const uint8_t* src = u ? p.in[0] : p.in[1];
      const size_t stride = u ? p.in_stride[0] : p.in_stride[1];
      auto at = [&](int sx, int sy) {
        return static_cast<int>(src[sy * stride + static_cast<size_t>(sx) * p.in_step]);
      };
      const int sx = p.planar ? byte : byte >> 1;
      word |= static_cast<uint32_t>(convert_math::scaled_chroma(s, at, sx, y, vi, vp)) << (8 * b);
    }
    uint8_t* d = out + static_cast<size_t>(y) * out_stride + x;
    if (n == 4 && p.aligned) {
      *reinterpret_cast<uint32_t*>(d) = word;
    } else {
      for (int b = 0; b < n; ++b) d[b] = static_cast<uint8_t>(word >> (8 * b));
    }
  }
}

// The same scaler where each axis is kept, halved or scaled by taps (kH,
// kV: ScaleAxis), a word of 4 output bytes at a time. Planar planes, and
// semi-planar ones scaled down only (their U, V bytes then stay where they
// are, so a row's bytes scale as one plane).
//
// A thread's 4 outputs of a row come from one window of the input row: the
// 4 columns under them (kept), 8 (halved), or, scaled by taps, the columns
// from the first one's left tap to the last one's right tap (taps step
// less than a column, so 5 at most), read as the two aligned words that
// hold them where the plane allows. Scaled across, output k is one dot
// product of 4 window bytes (a byte permute) and its taps, both made once
// per thread. Down, two rows' words are averaged or blended as whole
// words: each half of a word's bytes takes one multiply in 16-bit lanes (a
// sum up to 255 * 256 + 128 stays in its lane).
//
// A thread makes kScaleRows consecutive output rows, and so does the whole
// warp (a block's rows are its warps). It reads the input rows they take
// from one pointer stepped a stride at a time, all before using any, and
// scales each across once, however many outputs it feeds:
// - rows doubled (4:2:0 to 4:2:2 or 4:4:4 at even heights, kAxisDouble)
//   take the 4 input rows under them with the taps' fixed pattern
//   (vertical_tap): output row 2m - 1 is input rows m - 1 and m weighted
//   192 and 64, row 2m the same rows weighted 64 and 192, and the first
//   and last rows, the input's, are what the same rule gives on rows
//   clamped to the plane;
// - other rows scaled by taps take theirs from the lanes that worked them
//   out, one row each (vertical_tap_rcp).
// The order is the reference's: kVFirst, down then across; else across,
// then down. Cases fixed per kernel, several rows a thread and taps shared
// among lanes: faster than scaled_chroma's choice per sample, and than a
// thread per row that works out every row's taps itself.
enum ScaleAxis : int { kAxisKeep, kAxisHalf, kAxisTaps, kAxisDouble };

constexpr int kScaleRows = 4;
constexpr int kScaleBand = kBlockY * kScaleRows;  // output rows per block and band

// Rows a and b blended down, byte by byte: (a (256 - p) + b p + 128) >> 8.
__device__ __forceinline__ uint32_t blend_rows(uint32_t a, uint32_t b, uint32_t p) {
  const uint32_t q = 256 - p;
  const uint32_t even = (a & 0x00FF00FFu) * q + (b & 0x00FF00FFu) * p + 0x00800080u;
  const uint32_t odd = ((a >> 8) & 0x00FF00FFu) * q + ((b >> 8) & 0x00FF00FFu) * p + 0x00800080u;
  return ((even >> 8) & 0x00FF00FFu) | (odd & 0xFF00FF00u);
}

template <int kH, int kV, bool kVFirst>
__global__ void __launch_bounds__(kThreads)
    scale_window_kernel(const convert_math::ChromaScaler s, const ScaledPlane p) {
  const int luma_x = luma_blocks(p.luma);
  if (static_cast<int>(blockIdx.x) < luma_x) {
    copy_luma(p.luma, static_cast<int>(blockIdx.x));
    return;
  }
  const int cx = static_cast<int>(blockIdx.x) - luma_x;
  const bool z = cx >= p.chroma_blocks;
  const int x = ((z ? cx - p.chroma_blocks : cx) * kBlockX + threadIdx.x) * 4;
  const bool live = x < p.row_bytes;
  const int n = min(4, p.row_bytes - x);
  uint8_t* const out = z ? p.out[1] : p.out[0];
  const size_t out_stride = z ? p.out_stride[1] : p.out_stride[0];
  const uint8_t* const src = z ? p.in[1] : p.in[0];
  const size_t in_stride = z ? p.in_stride[1] : p.in_stride[0];
  // The window: 8 bytes from `base` (4 kept).
  int base = kH == kAxisHalf ? 2 * x : x;
  // Output k is one unsigned dot product of 4 bytes, (l, r, l, l) . (255 -
  // a, a, 1, 0) = l (256 - a) + r a, the bytes picked from the window by
  // sel[k] and the weights in taps[k].
  uint32_t sel[4] = {}, taps[4] = {};
  if constexpr (kH == kAxisTaps) {
    const int c0 = (x * s.inc) >> 16;
    base = c0 & ~3;
    CO_UNROLL
    for (int k = 0; k < 4; ++k) {
      const int t = (x + k) * s.inc;
      const uint32_t left = static_cast<uint32_t>((t >> 16) - base), a = (t >> 8) & 255;
      sel[k] = left * 0x1101u + ((left + 1) << 4);
      taps[k] = (255 - a) | a << 8 | 1u << 16;
    }
  }
  constexpr int kBytes = kH == kAxisKeep ? 4 : 8;
  const bool words = p.in_a4 && base + kBytes <= p.in_cols;
  struct Window {
    uint32_t w[2];
  };
  auto window = [&](int row) {
    Window v{};
    const uint8_t* r = src + static_cast<size_t>(row) * in_stride;
    if (words) {
      v.w[0] = *reinterpret_cast<const uint32_t*>(r + base);
      if (kBytes == 8) v.w[1] = *reinterpret_cast<const uint32_t*>(r + base + 4);
    } else {
      // Columns past the row are clamped: they reach an output only with
      // a weight of 0, or for samples past the output row.
      CO_UNROLL
      for (int j = 0; j < kBytes; ++j)
        v.w[j >> 2] |= static_cast<uint32_t>(r[min(base + j, p.in_cols - 1)]) << (8 * (j & 3));
    }
    return v;
  };
  auto across = [&](const Window& v) -> uint32_t {
    if constexpr (kH == kAxisKeep) {
      return v.w[0];
    } else if constexpr (kH == kAxisHalf) {
      // (b0 + b1 + 1) >> 1 for each pair of bytes, in 16-bit lanes.
      const uint32_t h0 =
          ((v.w[0] & 0x00FF00FFu) + ((v.w[0] >> 8) & 0x00FF00FFu) + 0x00010001u) >> 1;
      const uint32_t h1 =
          ((v.w[1] & 0x00FF00FFu) + ((v.w[1] >> 8) & 0x00FF00FFu) + 0x00010001u) >> 1;
      return __byte_perm(h0, h1, 0x6420);
    } else {
      uint32_t sum[4];
      CO_UNROLL
      for (int k = 0; k < 4; ++k) sum[k] = __dp4a(__byte_perm(v.w[0], v.w[1], sel[k]), taps[k], 0u);
      // Each output is its sum's second byte (the sum >> 8).
      return __byte_perm(__byte_perm(sum[0], sum[1], 0x51u), __byte_perm(sum[2], sum[3], 0x51u),
                         0x5410u);
    }
  };
  // The windows of kN consecutive input rows from row i0, clamped to the
  // plane: words from one pointer stepped a stride at a time where the
  // rows are all in the plane.
  auto windows = [&](int i0, auto& w) {
    constexpr int kN = sizeof(w) / sizeof(w[0]);
    if (words && i0 >= 0 && i0 + kN <= p.in_rows) {
      const uint8_t* r = src + static_cast<size_t>(i0) * in_stride + base;
      CO_UNROLL
      for (int j = 0; j < kN; ++j, r += in_stride) {
        w[j].w[0] = *reinterpret_cast<const uint32_t*>(r);
        w[j].w[1] = kBytes == 8 ? *reinterpret_cast<const uint32_t*>(r + 4) : 0u;
      }
    } else {
      CO_UNROLL
      for (int j = 0; j < kN; ++j) w[j] = window(min(max(i0 + j, 0), p.in_rows - 1));
    }
  };
  const int lane = threadIdx.x;
  for (int band = blockIdx.y * kScaleBand; band < p.rows; band += gridDim.y * kScaleBand) {
    const int first = band + threadIdx.y * kScaleRows;
    if (first >= p.rows) continue;  // the whole warp
    const int rows = min(kScaleRows, p.rows - first);
    uint32_t word[kScaleRows];
    if constexpr (kV == kAxisKeep) {
      if (!live) continue;
      Window w[kScaleRows];
      windows(first, w);
      CO_UNROLL
      for (int j = 0; j < kScaleRows; ++j) word[j] = across(w[j]);
    } else if constexpr (kV == kAxisHalf) {
      if (!live) continue;
      Window w[2 * kScaleRows];
      windows(2 * first, w);
      CO_UNROLL
      for (int j = 0; j < kScaleRows; ++j) {
        const Window &upper = w[2 * j], &lower = w[2 * j + 1];
        word[j] = kVFirst ? across(Window{{__vavgu4(upper.w[0], lower.w[0]),
                                           __vavgu4(upper.w[1], lower.w[1])}})
                          : __vavgu4(across(upper), across(lower));
      }
    } else if constexpr (kV == kAxisDouble) {
      // Input rows first / 2 - 1 to first / 2 + 2 (first is even).
      if (!live) continue;
      Window w[kScaleRows];
      windows((first >> 1) - 1, w);
      uint32_t r[kScaleRows];
      CO_UNROLL
      for (int j = 0; j < kScaleRows; ++j) r[j] = across(w[j]);
      word[0] = blend_rows(r[0], r[1], 192);
      word[1] = blend_rows(r[1], r[2], 64);
      word[2] = blend_rows(r[1], r[2], 192);
      word[3] = blend_rows(r[2], r[3], 64);
    } else {
      int r[kScaleRows], vp[kScaleRows];
      int ti = 0, tp = 0;
      if (lane < kScaleRows)
        convert_math::scaler_row_rcp(s, min(first + lane, p.rows - 1), &ti, &tp);
      CO_UNROLL
      for (int j = 0; j < kScaleRows; ++j) {
        r[j] = __shfl_sync(0xFFFFFFFFu, ti, j);
        vp[j] = __shfl_sync(0xFFFFFFFFu, tp, j);
      }
      if (!live) continue;
      const int last = r[rows - 1] + 1;  // the last input row taken
      if (!kVFirst && last - r[0] < kScaleRows + 1) {
        // Scaled up: every input row the outputs take, read and scaled
        // across once, then picked for each output.
        Window w[kScaleRows + 1];
        windows(r[0], w);
        uint32_t h[kScaleRows + 1];
        CO_UNROLL
        for (int i = 0; i <= kScaleRows; ++i) h[i] = across(w[i]);
        auto pick = [&](int i) {
          uint32_t v = h[0];
          CO_UNROLL
          for (int k = 1; k <= kScaleRows; ++k) v = i == k ? h[k] : v;
          return v;
        };
        CO_UNROLL
        for (int j = 0; j < kScaleRows; ++j)
          word[j] = blend_rows(pick(r[j] - r[0]), pick(r[j] + 1 - r[0]), vp[j]);
      } else {
        CO_UNROLL
        for (int j = 0; j < kScaleRows; ++j) {
          word[j] = 0;
          if (j >= rows) continue;
          const Window w0 = window(r[j]), w1 = window(r[j] + 1);
          word[j] = kVFirst ? across(Window{{blend_rows(w0.w[0], w1.w[0], vp[j]),
                                             blend_rows(w0.w[1], w1.w[1], vp[j])}})
                            : blend_rows(across(w0), across(w1), vp[j]);
        }
      }
    }
    if (n == 4 && p.aligned) {
      uint8_t* dst = out + static_cast<size_t>(first) * out_stride + x;
      CO_UNROLL
      for (int j = 0; j < kScaleRows; ++j, dst += out_stride)
        if (j < rows) *reinterpret_cast<uint32_t*>(dst) = word[j];
      continue;
    }
    CO_UNROLL
    for (int j = 0; j < kScaleRows; ++j) {
      if (j >= rows) break;
      uint8_t* dst = out + static_cast<size_t>(first + j) * out_stride + x;
      for (int b = 0; b < n; ++b) dst[b] = static_cast<uint8_t>(word[j] >> (8 * b));
    }
  }
}

}  // namespace

void scale_planes_cuda(const ImageRef& in, const ImageRef& out, const ConvertCoefficients& k,
                       cudaStream_t stream) {
  const ConvertSide &is = k.in_side, &os = k.out_side;
  ScaledPlane p{};
  for (int c = 0; c < 2; ++c) {
    p.in[c] = in.planes[is.plane[c + 1]].data + is.offset[c + 1];
    p.in_stride[c] = in.planes[is.plane[c + 1]].stride;
  }
  p.in_step = is.step[1];
  p.planar = os.plane[1] != os.plane[2];
  const int chroma_planes = p.planar ? 2 : 1;
  p.aligned = true;
  for (int c = 0; c < chroma_planes; ++c) {
    p.out[c] = out.planes[1 + c].data;
    p.out_stride[c] = out.planes[1 + c].stride;
    p.aligned = p.aligned && aligned_to(out.planes[1 + c], 4);
  }
  p.u_byte = os.offset[1];
  p.row_bytes = static_cast<int>(plane_row_bytes(out.format, 1, out.width));
  p.rows = static_cast<int>(plane_rows(out.format, 1, out.height));
  if (p.row_bytes == 0 || p.rows == 0) return;
  const dim3 grid((p.row_bytes + 4 * kBlockX - 1) / (4 * kBlockX),
                  std::min<unsigned>((p.rows + kBlockY - 1) / kBlockY, kMaxGridY), chroma_planes);
  const convert_math::ChromaScaler s =
      convert_math::chroma_scaler(k, in.width, in.height, out.width, out.height);
  // Each axis kept, halved (the planar shortcuts) or scaled by taps, as
  // convert_math::scaled_chroma decides.
  int h = s.iw == s.ow ? kAxisKeep : s.ih == s.oh && s.hh ? kAxisHalf : kAxisTaps;
  int v = s.ih == s.oh ? kAxisKeep : s.iw == s.ow && s.vh ? kAxisHalf : kAxisTaps;
  if (s.hh && s.vh && s.iw != s.ow && s.ih != s.oh) h = v = kAxisHalf;  // down, then across
  if (v == kAxisTaps && s.oh == 2 * s.ih && s.across_first) v = kAxisDouble;
  // Semi-planar: U, V bytes where the output has them, scaled down only.
  const bool same_bytes = is.step[1] == 1 || (h == kAxisKeep && is.offset[2] == is.offset[1] + 1 &&
                                              p.u_byte == 0 && is.plane[1] == is.plane[2]);
  const bool window = same_bytes && (h != kAxisTaps || (s.iw >= 2 && s.inc < 65536)) &&
                      ((v != kAxisTaps && v != kAxisDouble) || s.ih >= 2);
  p.in_cols = p.planar ? s.iw : 2 * s.iw;
  p.in_rows = s.ih;
  p.in_a4 = true;
  for (int c = 0; c < chroma_planes; ++c)
    p.in_a4 = p.in_a4 && reinterpret_cast<uintptr_t>(p.in[c]) % 4 == 0 && p.in_stride[c] % 4 == 0;
  const dim3 block(kBlockX, kBlockY);
  bool ran = false;
  // A window kernel's block makes kScaleBand rows at a time, and luma
  // comes in the same launch: a launch of the copy kernel of its own for
  // it is slower.
  const int band_count = (p.rows + kScaleBand - 1) / kScaleBand;
  p.luma = luma_copy(in.planes[0], out.planes[0],
                     static_cast<int>(plane_row_bytes(out.format, 0, out.width)), out.height,
                     (out.height + band_count - 1) / band_count);
  p.chroma_blocks = static_cast<int>(grid.x);
  const dim3 bands(luma_blocks(p.luma) + p.chroma_blocks * chroma_planes,
                   std::min<unsigned>(band_count, kMaxGridY));
  auto run = [&](auto kernel) {
    kernel<<<bands, block, 0, stream>>>(s, p);
    ran = true;
  };
  if (window) {
    if (h == kAxisHalf && v == kAxisHalf)
      run(scale_window_kernel<kAxisHalf, kAxisHalf, true>);
    else if (h == kAxisKeep && v == kAxisDouble)
      run(scale_window_kernel<kAxisKeep, kAxisDouble, false>);
    else if (h == kAxisTaps && v == kAxisDouble)
      run(scale_window_kernel<kAxisTaps, kAxisDouble, false>);
    else if (h == kAxisKeep && v == kAxisTaps)
      run(scale_window_kernel<kAxisKeep, kAxisTaps, false>);
    else if (h == kAxisKeep && v == kAxisHalf)
      run(scale_window_kernel<kAxisKeep, kAxisHalf, false>);
    else if (h == kAxisTaps && v == kAxisKeep)
      run(scale_window_kernel<kAxisTaps, kAxisKeep, false>);
    else if (h == kAxisHalf && v == kAxisKeep)
      run(scale_window_kernel<kAxisHalf, kAxisKeep, false>);
    else if (h == kAxisTaps && v == kAxisTaps && s.across_first)
      run(scale_window_kernel<kAxisTaps, kAxisTaps, false>);
    else if (h == kAxisTaps && v == kAxisTaps)
      run(scale_window_kernel<kAxisTaps, kAxisTaps, true>);
  }
  if (!ran) {
    // Luma: the copy kernel on the Y planes as GRAY8 images.
    ImageRef in_y{PixelFormat::kGRAY8, in.width, in.height, {in.planes[0]}};
    ImageRef out_y{PixelFormat::kGRAY8, out.width, out.height, {out.planes[0]}};
    copy_cuda(in_y, out_y, stream);
    scale_planes_kernel<<<grid, block, 0, stream>>>(s, p);
  }
  CO_CUDA_CHECK_LAUNCH("the convert kernel (chroma planes scaled)");
}

}  // namespace convert_detail
}  // namespace cudaoverlap
