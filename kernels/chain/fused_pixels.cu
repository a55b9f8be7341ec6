// The fused per-pixel launch (see fused_pixels.h). The stages travel in the
// launch's arguments (read in place, __grid_constant__); each thread takes 4
// pixels of each of kRows rows, loaded as words where the rows are aligned
// for it, all loaded before any is stored, and runs every stage on each in
// order: a shuffle is one byte_perm and an XOR, a balance balance.cu's own
// pixel arithmetic against its luma table, copied to shared memory per
// block.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "kernels/balance/balance_pixel.cuh"
#include "kernels/chain/fused_pixels.h"
#include "kernels/cuda_check.h"
#include "kernels/error.h"
#include "kernels/rgb24_words.cuh"

namespace cudaoverlap {
namespace {

constexpr int kThreads = 256;
constexpr int kRows = 2;
constexpr unsigned kMaxGridY = 65535;

struct FusedArgs {
  const uint8_t* src;
  size_t src_stride;
  uint8_t* dst;
  size_t dst_stride;
  int width, rows;
  int n;
  PixelStage stage[kMaxFusedStages];
};

// Every stage on the kPixels pixels a thread holds: each stage's words read
// once (the same for the whole warp) and applied to all of them.
template <int kPixels>
__device__ __forceinline__ void run_stages(const FusedArgs& a, const uint8_t (*tables)[256],
                                           uint32_t (&px)[kPixels]) {
  for (int i = 0; i < a.n; ++i) {
    const PixelStage& s = a.stage[i];
    if (s.kind == PixelStage::Kind::kShuffle) {
      const uint32_t selector = s.selector, constant = s.constant, mask = s.mask;
#pragma unroll
      for (int p = 0; p < kPixels; ++p) px[p] = __byte_perm(px[p], constant, selector) ^ mask;
    } else {
      const RgbBalanceWords words = s.balance;
#pragma unroll
      for (int p = 0; p < kPixels; ++p) px[p] = balance_pixel(words, tables[i], px[p]);
    }
  }
}

// 4 pixels of `bytes` bytes from p: as words where `words` (p aligned to
// 16 for 4-byte pixels, to 4 for 3-byte ones) and all 4 lie in the row,
// else byte by byte.
template <int kBytes>
__device__ __forceinline__ void load4(const uint8_t* p, int n, bool words, uint32_t px[4]) {
  if (words && n == 4) {
    if constexpr (kBytes == 4) {
      const uint4 v = *reinterpret_cast<const uint4*>(p);
      px[0] = v.x, px[1] = v.y, px[2] = v.z, px[3] = v.w;
    } else {
      const uint32_t* q = reinterpret_cast<const uint32_t*>(p);
      const uint32_t w[3] = {q[0], q[1], q[2]};
      rgb24::unpack(w, px);
    }
    return;
  }
  for (int i = 0; i < 4; ++i) {
    px[i] = 0;
    if (i < n)
      for (int b = 0; b < kBytes; ++b) px[i] |= static_cast<uint32_t>(p[kBytes * i + b]) << (8 * b);
  }
}

template <int kBytes>
__device__ __forceinline__ void store4(uint8_t* p, int n, bool words, const uint32_t px[4]) {
  if (words && n == 4) {
    if constexpr (kBytes == 4) {
      *reinterpret_cast<uint4*>(p) = make_uint4(px[0], px[1], px[2], px[3]);
    } else {
      uint32_t w[3];
      rgb24::pack(px, w);
      uint32_t* q = reinterpret_cast<uint32_t*>(p);
      q[0] = w[0], q[1] = w[1], q[2] = w[2];
    }
    return;
  }
  for (int i = 0; i < n; ++i)
    for (int b = 0; b < kBytes; ++b) p[kBytes * i + b] = static_cast<uint8_t>(px[i] >> (8 * b));
}

// No __restrict__: `src` and `dst` may be the same frame.
template <int kIn, int kOut>
__global__ void __launch_bounds__(kThreads)
    fused_pixels_kernel(const __grid_constant__ FusedArgs a, bool in_words, bool out_words) {
  __shared__ uint8_t tables[kMaxFusedStages][256];
  const int x0 = (blockIdx.x * blockDim.x + threadIdx.x) * 4;
  const int n = min(4, a.width - x0);  // < 1: a thread past the row's end
  uint32_t px[kRows * 4] = {};
  const auto load = [&](int y0) {
#pragma unroll
    for (int r = 0; r < kRows; ++r)
      if (y0 + r < a.rows)
        load4<kIn>(
            a.src + static_cast<size_t>(y0 + r) * a.src_stride + static_cast<size_t>(x0) * kIn, n,
            in_words, px + 4 * r);
  };
  // The first loads are in flight while the block copies the luma tables.
  int y0 = blockIdx.y * kRows;
  if (n > 0) load(y0);
  for (int i = 0; i < a.n; ++i)
    if (a.stage[i].kind == PixelStage::Kind::kBalance)
      for (int j = threadIdx.x; j < 256; j += blockDim.x) tables[i][j] = a.stage[i].table_y[j];
  __syncthreads();
  if (n <= 0) return;
  while (y0 < a.rows) {
    run_stages(a, tables, px);
#pragma unroll
    for (int r = 0; r < kRows; ++r)
      if (y0 + r < a.rows)
        store4<kOut>(
            a.dst + static_cast<size_t>(y0 + r) * a.dst_stride + static_cast<size_t>(x0) * kOut, n,
            out_words, px + 4 * r);
    y0 += gridDim.y * kRows;
    if (y0 < a.rows) load(y0);
  }
}

bool aligned_to(const PlaneRef& p, size_t n) {
  return reinterpret_cast<uintptr_t>(p.data) % n == 0 && p.stride % n == 0;
}

template <int kIn, int kOut>
void launch(const FusedArgs& a, bool in_words, bool out_words, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>((a.width + 4 * kThreads - 1) / (4 * kThreads)),
                  static_cast<unsigned>(std::min<int>((a.rows + kRows - 1) / kRows, kMaxGridY)));
  fused_pixels_kernel<kIn, kOut><<<grid, kThreads, 0, stream>>>(a, in_words, out_words);
}

}  // namespace

void fused_pixels_cuda(const ImageRef& in, const ImageRef& out, const PixelStage* stages, int n,
                       CUstream_st* stream) {
  if (n < 1 || n > kMaxFusedStages)
    throw Error("a fused launch runs 1 to " + std::to_string(kMaxFusedStages) + " stages, not " +
                std::to_string(n));
  if (!is_pixel_stage_format(in.format) || !is_pixel_stage_format(out.format) ||
      in.width != out.width || in.height != out.height)
    throw Error(std::string("a fused launch takes packed 8-bit RGB of one size, not ") +
                format_info(in.format).name + " to " + format_info(out.format).name);
  if (in.width == 0 || in.height == 0) return;
  FusedArgs a{};
  a.src = in.planes[0].data;
  a.src_stride = in.planes[0].stride;
  a.dst = out.planes[0].data;
  a.dst_stride = out.planes[0].stride;
  a.width = in.width;
  a.rows = in.height;
  a.n = n;
  std::copy(stages, stages + n, a.stage);
  const int in_bytes = pixel_stage_bytes(in.format), out_bytes = pixel_stage_bytes(out.format);
  const bool in_words = aligned_to(in.planes[0], in_bytes == 4 ? 16 : 4);
  const bool out_words = aligned_to(out.planes[0], out_bytes == 4 ? 16 : 4);
  if (in_bytes == 4 && out_bytes == 4)
    launch<4, 4>(a, in_words, out_words, stream);
  else if (in_bytes == 4)
    launch<4, 3>(a, in_words, out_words, stream);
  else if (out_bytes == 4)
    launch<3, 4>(a, in_words, out_words, stream);
  else
    launch<3, 3>(a, in_words, out_words, stream);
  CO_CUDA_CHECK_LAUNCH("the fused per-pixel kernel");
}

}  // namespace cudaoverlap
