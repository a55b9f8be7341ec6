// What convert's CUDA files share for their launches: the thread blocks'
// shape, the per-launch layout of the 4x2-block kernels (ConvertLayout,
// made on the host by layout_of) and luma copied by blocks of a launch.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "kernels/convert/convert.h"
#include "kernels/convert/convert_launch.h"
#include "kernels/convert/convert_math.h"
#include "kernels/operation.h"

namespace cudaoverlap {
namespace convert_detail {

using convert_math::clamp_index;
using convert_math::mix31_lanes;

constexpr int kBlockX = 32;
constexpr int kBlockY = 8;
constexpr int kThreads = kBlockX * kBlockY;
constexpr unsigned kMaxGridY = 65535;

// Everything per launch beyond the coefficients, derived on the host.
struct ConvertLayout {
  ConvertCoefficients k;
  // __byte_perm selectors: byte c (R, G, B) of a packed input pixel into
  // the low byte of a word.
  uint32_t in_sel[3];
  // Canonical pixel word (R, G, B, alpha in bytes 0..3) -> packed output.
  uint32_t out_perm;
  // Packed input pixel -> packed output pixel.
  uint32_t repack_perm;
  // yuv_pixel's lanes (R, B, G, alpha at bytes 0, 2, 4, 6) -> packed output.
  uint32_t yuv_perm;
  // Pointer and stride of each plane a multiple of 4 (a4), 16 (a16; plane
  // 0 only: packed pixels, or luma copied 16 bytes a thread) or 2 (a2; for
  // 2-byte chroma loads and stores).
  bool in_a4[3], in_a2[3], in_a16;
  // 4:2:0 chroma in one plane of (U, V) pairs (NV12), or (V, U) pairs
  // (NV21: swapped as it is read and written), rather than in two (I420).
  bool in_semi, in_swap, out_semi, out_swap;
  bool out_a4[3], out_a2[3], out_a16;
  // 3-byte RGB output (4:2:0 YUV input only): the perms above place R, G, B
  // in bytes 0..2 of each pixel word, and store_rgb24 packs 4 pixels into
  // 3 words.
  bool out_rgb24;
  // 4:2:0 input to 4:2:2 or 4:4:4 YUV (YuvOut, below; kToRgb otherwise),
  // and for packed 4:2:2 the byte permute from a pair word laid out
  // Y0 U Y1 V to the output's order.
  int yuv_out;
  uint32_t pair_perm;
  // Packed 4:2:2 input (rows_kernel): byte permutes from two consecutive
  // pair words to their 4 luma samples (pair_luma_sel) and to U0 V0 U1 V1
  // (pair_uv_sel), and from one pair word to its U, V in bytes 0 and 1
  // (pair_one_uv_sel).
  uint32_t pair_luma_sel, pair_uv_sel, pair_one_uv_sel;
  // Pointer and stride of each input plane a multiple of 8 (16-bit
  // samples' 8-byte loads: deep420_kernel's chroma words,
  // grey_packed_kernel's GRAY16 rows).
  bool in_a8[3];
};

// Luma copied where a kernel's output luma is its input's: by blocks of
// its own in the launch, 16 bytes a thread (both planes aligned to 16
// bytes; else a byte at a time), `band` rows per blockIdx.y, kBlockY rows
// apart within a band, and by a grid-stride loop past gridDim.y bands.
struct LumaCopy {
  const uint8_t* in;
  uint8_t* out;
  size_t in_stride, out_stride;
  int bytes, rows, band;
  bool vec;
};

// Blocks across per band of a LumaCopy.
__host__ __device__ __forceinline__ int luma_blocks(const LumaCopy& c) {
  return (c.bytes + 16 * kBlockX - 1) / (16 * kBlockX);
}

// The part of a LumaCopy that block `bx` (across) makes.
__device__ __forceinline__ void copy_luma(const LumaCopy& c, int bx) {
  const int x = (bx * kBlockX + threadIdx.x) * 16;
  if (x >= c.bytes) return;
  const bool vec = c.vec && x + 16 <= c.bytes;
  for (int y0 = blockIdx.y * c.band; y0 < c.rows; y0 += gridDim.y * c.band) {
    const int end = min(y0 + c.band, c.rows);
#pragma unroll 4
    for (int y = y0 + threadIdx.y; y < end; y += kBlockY) {
      const uint8_t* from = c.in + static_cast<size_t>(y) * c.in_stride + x;
      uint8_t* to = c.out + static_cast<size_t>(y) * c.out_stride + x;
      if (vec) {
        *reinterpret_cast<uint4*>(to) = *reinterpret_cast<const uint4*>(from);
      } else {
        for (int i = 0; i < min(16, c.bytes - x); ++i) to[i] = from[i];
      }
    }
  }
}

// Whether a plane's pointer and stride are multiples of n bytes.
inline bool aligned_to(const PlaneRef& p, size_t n) {
  return reinterpret_cast<uintptr_t>(p.data) % n == 0 && p.stride % n == 0;
}

// A LumaCopy of `rows` rows of `bytes` bytes from plane `in` to `out`,
// `band` rows per blockIdx.y (convert_layout.cu).
LumaCopy luma_copy(const PlaneRef& in, const PlaneRef& out, int bytes, int rows, int band);

// Block rows per thread of the kernels that go down a column of 4x2 blocks
// (yuv_to_packed_kernel, deep420_kernel): 4 where the picture still gives
// several waves of thread blocks on a large GPU (4K gives about a
// thousand), fewer for smaller pictures, down to one (yuv_to_packed_kernel
// takes at most 2: see its launch).
int rows_per_thread(int bw, int bh);

// f(std::integral_constant<int, K>{}) for the YuvOut K that yuv_out names:
// one switch from the run-time choice to the kernels' template argument.
// k420: the 4:2:0 outputs are among the choices (rows_kernel's).
template <bool k420 = false, typename F>
void with_yuv_out(int yuv_out, const F& f) {
  if constexpr (k420) {
    if (yuv_out == kToSemi420) return f(std::integral_constant<int, kToSemi420>{});
    if (yuv_out == kToPlanar420) return f(std::integral_constant<int, kToPlanar420>{});
    if (yuv_out == kToP010) return f(std::integral_constant<int, kToP010>{});
    if (yuv_out == kToI420_10) return f(std::integral_constant<int, kToI420_10>{});
    if (yuv_out == kToGrey8) return f(std::integral_constant<int, kToGrey8>{});
    if (yuv_out == kToGrey16) return f(std::integral_constant<int, kToGrey16>{});
  }
  switch (yuv_out) {
    case kToPacked422:
      f(std::integral_constant<int, kToPacked422>{});
      break;
    case kToSemi422:
      f(std::integral_constant<int, kToSemi422>{});
      break;
    case kToPlanar422:
      f(std::integral_constant<int, kToPlanar422>{});
      break;
    case kToPlanar444:
      f(std::integral_constant<int, kToPlanar444>{});
      break;
    default:
      f(std::integral_constant<int, kToRgb>{});
      break;
  }
}

// Whether the output side lets yuv_to_packed_fast run (convert_rgb_yuv.cu,
// where yuv_fast adds the input's part); deep_fast shares it.
bool yuv_fast_out(const ConvertLayout& L);

// The layout the 4x2-block kernels take: permutes and alignments derived
// from the formats (rgb24: 3-byte RGB output; yuv_out: YuvOut).
ConvertLayout layout_of(const ImageRef& in, const ImageRef& out,
                        const ConvertCoefficients& coefficients, bool rgb24, int yuv_out);

// The YuvOut that writes `out` when it is 8-bit 4:2:2 or 4:4:4 YUV; kToRgb
// for every other format.
int yuv_out_to(PixelFormat out);

}  // namespace convert_detail
}  // namespace cudaoverlap
