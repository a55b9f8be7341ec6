// YUV to YUV of one subsampling, or grey to grey, for convert: each output
// sample the input's at the same place, repacked through 16 bits in one
// launch for every plane (repack_samples_kernel).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "kernels/convert/convert_layout.cuh"
#include "kernels/cuda_check.h"

namespace cudaoverlap {
namespace convert_detail {
namespace {

// YUV to YUV of the same subsampling, or grey to grey, where the chroma
// needs no resampling and the samples no matrix: each output sample is the
// input's sample at the same place, taken to 16 bits and back
// (convert_math::unpack16, packed16), which is what the reference's blocks
// compute there (nearest chroma, averages of equal samples). One launch
// for every output plane, each block on one plane (a launch per plane is
// slower, paying three kernels' ramps and
// tails for one frame); each thread makes 4 samples of each of the plane's
// components (one, or the two of a semi-planar pair) in each of
// kRepackRows rows, stored as a word, two or four where the plane is
// aligned for them. Packed 4:2:2
// output, whose one plane holds components of different steps, is not made
// here.
struct SamplePlane {
  int comp[2];        // output components of the plane, by their offset
  int comps;          // how many (1 or 2)
  int in_step;        // input samples per component sample: 1, or 2 (semi-planar)
  int samples, rows;  // of each component, on both sides
  bool aligned;       // for the thread's whole store
  // The input: each component's plane and its offset within a pixel group
  // (bytes), and whether every plane it reads is aligned for the thread's
  // vector load (4 samples of a component, with the other component's
  // between them where the input is semi-planar).
  int in_plane[2], in_offset[2];
  bool in_aligned;
  // convert_math::unpack16 as (w << in_shl) & 0xFFFF, then | >> in_rep, and
  // packed16 as (v >> out_shr) & out_mask, for these sides.
  int in_shl, in_rep, out_shr, out_mask;
};

// 4 samples of an input component from sx0 of row y, on the 16-bit scale:
// one vector load of the 4 (kInStep 1) or of the 4 pixel groups holding
// them (kInStep 2, semi-planar), where the plane is aligned for it and all
// 4 lie inside; else one sample at a time, as the reference reads them.
template <int kInBytes, int kInStep>
__device__ __forceinline__ void repack_fetch(const ConvertCoefficients& k, const ImageRef& in,
                                             const SamplePlane& p, int c, int sx0, int y, bool fast,
                                             uint32_t v[4]) {
  if (fast) {
    const PlaneRef& plane = in.planes[p.in_plane[c]];
    const uint8_t* row = plane.data + static_cast<size_t>(y) * plane.stride;
    const uint8_t* at = row + static_cast<size_t>(sx0) * kInStep * kInBytes;
    const int off = p.in_offset[c];  // 0, or the first component's bytes
    uint32_t w[4];
    if constexpr (kInBytes == 1 && kInStep == 1) {
      const uint32_t q = *reinterpret_cast<const uint32_t*>(at);
      for (int j = 0; j < 4; ++j) w[j] = (q >> (8 * j)) & 0xFFu;
    } else if constexpr (kInBytes == 1) {
      const uint2 q = *reinterpret_cast<const uint2*>(at);
      const uint32_t b = __byte_perm(q.x, q.y, off == 0 ? 0x6420u : 0x7531u);
      for (int j = 0; j < 4; ++j) w[j] = (b >> (8 * j)) & 0xFFu;
    } else if constexpr (kInStep == 1) {
      const uint2 q = *reinterpret_cast<const uint2*>(at);
      w[0] = q.x & 0xFFFFu, w[1] = q.x >> 16, w[2] = q.y & 0xFFFFu, w[3] = q.y >> 16;
    } else {
      const uint4 q = *reinterpret_cast<const uint4*>(at);
      const int sh = 8 * off;  // 0 or 16
      w[0] = (q.x >> sh) & 0xFFFFu, w[1] = (q.y >> sh) & 0xFFFFu;
      w[2] = (q.z >> sh) & 0xFFFFu, w[3] = (q.w >> sh) & 0xFFFFu;
    }
    CO_UNROLL
    for (int j = 0; j < 4; ++j) {
      const uint32_t s = (w[j] << p.in_shl) & 0xFFFFu;
      v[j] = s | s >> p.in_rep;
    }
    return;
  }
  for (int j = 0; j < 4; ++j) {
    const int sx = min(sx0 + j, p.samples - 1);  // the last thread reads no further
    v[j] = static_cast<uint32_t>(convert_math::unpack16(
        k.in_side, convert_math::sample_ptr(k.in_side, in, p.comp[c], sx, y)));
  }
}

// Rows per thread: the block's plane, place and layout worked out once for
// several rows' samples.
constexpr int kRepackRows = 4;

// The output planes of one launch: row blocks from first[i] up to
// first[i + 1] are on plane i, each kBlockY * kRepackRows of its rows
// (first[3]: all of them, which blockIdx.y walks with a grid-stride loop;
// blocks across past a plane skip it).
struct SamplePlanes {
  SamplePlane plane[3];
  int first[4];
};

// Row y's 4 samples from sx0 of plane p.
template <int kComps, int kBytes, int kInBytes, int kInStep>
__device__ __forceinline__ void repack_samples(const ConvertCoefficients& k, const ImageRef& in,
                                               const ImageRef& out, const SamplePlane& p, int sx0,
                                               int y) {
  const int n = min(4, p.samples - sx0);
  const bool fast = n == 4 && p.in_aligned;
  constexpr int kGroup = kComps * kBytes;  // bytes per sample position
  uint32_t v[kComps][4];
  CO_UNROLL
  for (int c = 0; c < kComps; ++c) {
    repack_fetch<kInBytes, kInStep>(k, in, p, c, sx0, y, fast, v[c]);
    CO_UNROLL
    for (int j = 0; j < 4; ++j)
      v[c][j] = (v[c][j] >> p.out_shr) & static_cast<uint32_t>(p.out_mask);
  }
  uint32_t w[4];  // the thread's 4 * kGroup bytes, little-endian
  if constexpr (kComps == 1 && kBytes == 1) {
    w[0] = v[0][0] | v[0][1] << 8 | v[0][2] << 16 | v[0][3] << 24;
  } else if constexpr (kComps == 2 && kBytes == 1) {
    w[0] = v[0][0] | v[1][0] << 8 | v[0][1] << 16 | v[1][1] << 24;
    w[1] = v[0][2] | v[1][2] << 8 | v[0][3] << 16 | v[1][3] << 24;
  } else if constexpr (kComps == 1) {
    w[0] = v[0][0] | v[0][1] << 16;
    w[1] = v[0][2] | v[0][3] << 16;
  } else {
    for (int j = 0; j < 4; ++j) w[j] = v[0][j] | v[1][j] << 16;
  }
  uint8_t* d = convert_math::sample_ptr(k.out_side, out, p.comp[0], sx0, y);
  if (n == 4 && p.aligned) {
    if constexpr (kGroup == 1)
      *reinterpret_cast<uint32_t*>(d) = w[0];
    else if constexpr (kGroup == 2)
      *reinterpret_cast<uint2*>(d) = make_uint2(w[0], w[1]);
    else
      *reinterpret_cast<uint4*>(d) = make_uint4(w[0], w[1], w[2], w[3]);
  } else {
#pragma unroll
    for (int b = 0; b < 4 * kGroup; ++b)
      if (b < n * kGroup) d[b] = static_cast<uint8_t>(w[b >> 2] >> (8 * (b & 3)));
  }
}

template <int kBytes, int kInBytes>
__global__ void __launch_bounds__(kThreads)
    repack_samples_kernel(const __grid_constant__ ConvertCoefficients k,
                          const __grid_constant__ ImageRef in, const __grid_constant__ ImageRef out,
                          const __grid_constant__ SamplePlanes planes) {
  const int sx0 = (blockIdx.x * kBlockX + threadIdx.x) * 4;
  for (int b = blockIdx.y; b < planes.first[3]; b += gridDim.y) {
    const int i = b >= planes.first[2] ? 2 : b >= planes.first[1] ? 1 : 0;
    const SamplePlane& p = planes.plane[i];
    const int y0 = ((b - planes.first[i]) * kBlockY + threadIdx.y) * kRepackRows;
    if (sx0 >= p.samples || y0 >= p.rows) continue;
    const int rows = min(kRepackRows, p.rows - y0);
    auto run = [&](auto comps, auto step) {
      CO_UNROLL
      for (int j = 0; j < kRepackRows; ++j)
        if (j < rows)
          repack_samples<decltype(comps)::value, kBytes, kInBytes, decltype(step)::value>(
              k, in, out, p, sx0, y0 + j);
    };
    using One = std::integral_constant<int, 1>;
    using Two = std::integral_constant<int, 2>;
    if (p.comps == 2) {
      if (p.in_step == 2)
        run(Two{}, Two{});
      else
        run(Two{}, One{});
    } else {
      if (p.in_step == 2)
        run(One{}, Two{});
      else
        run(One{}, One{});
    }
  }
}

}  // namespace

bool repacks_samples(const ImageRef& out, const ConvertCoefficients& k) {
  using namespace convert_math;
  if (k.in_family == kGrey && k.out_family == kGrey) return true;
  if (k.in_family != kYuv || k.out_family != kYuv) return false;
  const bool packed422_out = k.out_side.plane[0] == k.out_side.plane[1];
  // 8-bit pairs to a plane per component (Y42B, Y444) are slower here than
  // on the block kernel, and go there.
  const bool planar_out = k.out_side.plane[1] != k.out_side.plane[2];
  if (!k.deep && planar_out) return false;
  return !packed422_out && k.in_side.x_sub == k.out_side.x_sub &&
         k.in_side.y_sub == k.out_side.y_sub && out.width > 0 && out.height > 0;
}

void repack_samples_cuda(const ImageRef& in, const ImageRef& out, const ConvertCoefficients& k,
                         cudaStream_t stream) {
  const FormatInfo& info = format_info(out.format);
  const int components = info.is_yuv ? 3 : 1;
  SamplePlanes planes{};
  int blocks_y = 0, blocks_x = 0;
  for (int plane = 0; plane < info.n_planes; ++plane) {
    SamplePlane& p = planes.plane[plane];
    int n = 0;
    for (int c = 0; c < components; ++c)
      if (info.comp[c].plane == plane) p.comp[n++] = c;
    if (n == 2 && info.comp[p.comp[1]].offset < info.comp[p.comp[0]].offset) {
      const int t = p.comp[0];
      p.comp[0] = p.comp[1];
      p.comp[1] = t;
    }
    p.comps = n;
    const Component& c0 = info.comp[p.comp[0]];
    p.samples = (out.width + (1 << c0.x_sub) - 1) >> c0.x_sub;
    p.rows = (out.height + (1 << c0.y_sub) - 1) >> c0.y_sub;
    const int group = n * info.sample_bytes;
    p.aligned = aligned_to(out.planes[plane], static_cast<size_t>(4 * group)) && c0.offset == 0;
    // The input's components (the same ones, at the same subsampling).
    const ConvertSide& is = k.in_side;
    const int in_bytes = is.sample_bytes;
    p.in_step = is.step[p.comp[0]] / in_bytes;  // 1, or 2 (semi-planar)
    // Any other layout (packed 4:2:2 input, which no pair brings here)
    // reads a sample at a time.
    p.in_aligned =
        (p.in_step == 1 || p.in_step == 2) && is.step[p.comp[n - 1]] == is.step[p.comp[0]];
    if (!p.in_aligned) p.in_step = 1;
    for (int c = 0; c < n; ++c) {
      p.in_plane[c] = is.plane[p.comp[c]];
      p.in_offset[c] = is.offset[p.comp[c]];
      p.in_aligned = p.in_aligned && aligned_to(in.planes[p.in_plane[c]],
                                                static_cast<size_t>(4 * p.in_step * in_bytes));
    }
    p.in_shl = in_bytes == 1 ? 8 : (is.depth == 16 || is.shift == 6 ? 0 : 6);
    p.in_rep = in_bytes == 1 ? 8 : (is.depth == 16 ? 16 : 10);
    const ConvertSide& os = k.out_side;
    p.out_shr = os.sample_bytes == 1 ? 8 : (os.depth == 16 || os.shift == 6 ? 0 : 6);
    p.out_mask =
        os.sample_bytes == 1 ? 0xFF : (os.depth == 16 ? 0xFFFF : (os.shift == 6 ? 0xFFC0 : 0x3FF));
    blocks_x = std::max(blocks_x, (p.samples + 4 * kBlockX - 1) / (4 * kBlockX));
    planes.first[plane] = blocks_y;
    constexpr int kBlockRows = kBlockY * kRepackRows;
    blocks_y += (p.rows + kBlockRows - 1) / kBlockRows;
  }
  for (int plane = info.n_planes; plane < 4; ++plane) planes.first[plane] = blocks_y;
  if (blocks_x == 0 || blocks_y == 0) return;
  const dim3 block(kBlockX, kBlockY);
  const dim3 grid(static_cast<unsigned>(blocks_x),
                  std::min(static_cast<unsigned>(blocks_y), kMaxGridY));
  const bool wide = info.sample_bytes == 2, wide_in = k.in_side.sample_bytes == 2;
  if (wide && wide_in)
    repack_samples_kernel<2, 2><<<grid, block, 0, stream>>>(k, in, out, planes);
  else if (wide)
    repack_samples_kernel<2, 1><<<grid, block, 0, stream>>>(k, in, out, planes);
  else if (wide_in)
    repack_samples_kernel<1, 2><<<grid, block, 0, stream>>>(k, in, out, planes);
  else
    repack_samples_kernel<1, 1><<<grid, block, 0, stream>>>(k, in, out, planes);
  CO_CUDA_CHECK_LAUNCH("the convert kernel (samples repacked)");
}

}  // namespace convert_detail
}  // namespace cudaoverlap
