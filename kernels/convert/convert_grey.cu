// Grey (GRAY8, GRAY16_LE) to packed RGB: every output pixel is a
// function of one 8-bit value (the sample, or a 16-bit sample's high byte:
// the reference replicates it on the 16-bit scale and keeps the top 8
// bits), so each block first makes the 256 pixels of a table in shared
// memory with the reference's own to_output (videoconvert's matrix where
// the RGB side is limited range, k.grey_matrix; else the sample
// replicated), thread t entry t, and each thread then looks up 4 pixels of
// each of kGreyRows rows: one word or 8-byte load, 4 table reads, one
// 16-byte store or three word stores (3-byte RGB).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "kernels/convert/convert_access.cuh"
#include "kernels/cuda_check.h"

namespace cudaoverlap {
namespace convert_detail {
namespace {

constexpr int kGreyRows = 4;

template <bool kDeep, bool kRgb24>
__global__ void __launch_bounds__(kThreads)
    grey_packed_kernel(const __grid_constant__ ConvertLayout L, const __grid_constant__ ImageRef in,
                       const __grid_constant__ ImageRef out, int blocks_x) {
  __shared__ uint32_t table[256];
  {
    const int t = threadIdx.y * blockDim.x + threadIdx.x;  // 256 threads
    convert_math::Pixel p;
    p.c[0] = kDeep ? t * 257 : t;
    p.c[1] = p.c[2] = kDeep ? 32768 : 128;
    p.a = kDeep ? 65535 : 255;
    convert_math::to_output<kDeep>(L.k, &p);
    constexpr int shift = kDeep ? 8 : 0;
    uint32_t w = 0;
    for (int c = 0; c < 3; ++c)
      w |= static_cast<uint32_t>((p.c[c] >> shift) & 0xFF) << (8 * L.k.out_offsets[c]);
    if (!kRgb24 && L.k.out_offsets[3] >= 0)
      w |= static_cast<uint32_t>((p.a >> shift) & 0xFF) << (8 * L.k.out_offsets[3]);
    table[t] = w;
  }
  __syncthreads();
  const int bx4 = blockIdx.x * blockDim.x + threadIdx.x;
  if (bx4 >= blocks_x) return;
  const int width = in.width, x0 = 4 * bx4;
  const bool full = x0 + 4 <= width;
  const int y_first = (blockIdx.y * blockDim.y + threadIdx.y) * kGreyRows;
  const int y_end = min(in.height, y_first + kGreyRows);
  for (int y = y_first; y < y_end; ++y) {
    const uint8_t* row = in.planes[0].data + static_cast<size_t>(y) * in.planes[0].stride;
    uint32_t g;  // the 4 pixels' 8-bit values
    if constexpr (kDeep) {
      if (full && L.in_a8[0]) {
        const uint2 v = *reinterpret_cast<const uint2*>(row + 2 * x0);
        g = __byte_perm(v.x, v.y, 0x7531);
      } else {
        g = 0;
        for (int i = 0; i < 4; ++i)
          g |= static_cast<uint32_t>(row[2 * min(x0 + i, width - 1) + 1]) << (8 * i);
      }
    } else {
      g = load_luma(row, x0, width, full, L.in_a4[0]);
    }
    uint32_t px[4];
    CO_UNROLL
    for (int i = 0; i < 4; ++i) px[i] = table[(g >> (8 * i)) & 0xFFu];
    uint8_t* orow = out.planes[0].data + static_cast<size_t>(y) * out.planes[0].stride;
    if constexpr (kRgb24)
      store_rgb24(orow, x0, width, full, L.out_a4[0], px);
    else
      store_packed(orow, x0, width, full, L.out_a16, L.out_a4[0], px);
  }
}

}  // namespace

void grey_packed_cuda(const ImageRef& in, const ImageRef& out, const ConvertCoefficients& k,
                      cudaStream_t stream) {
  const bool rgb24 = out.format == PixelFormat::kRGB || out.format == PixelFormat::kBGR;
  const ConvertLayout L = layout_of(in, out, k, rgb24, kToRgb);
  const int bw = (in.width + 3) / 4, bh = (in.height + kGreyRows - 1) / kGreyRows;
  if (bw == 0 || bh == 0) return;
  const dim3 grid((bw + kBlockX - 1) / kBlockX, (bh + kBlockY - 1) / kBlockY);
  if (grid.y > kMaxGridY) throw Error("convert: the image is too tall (more than 2,097,120 rows)");
  const dim3 block(kBlockX, kBlockY);
  if (k.deep && rgb24)
    grey_packed_kernel<true, true><<<grid, block, 0, stream>>>(L, in, out, bw);
  else if (k.deep)
    grey_packed_kernel<true, false><<<grid, block, 0, stream>>>(L, in, out, bw);
  else if (rgb24)
    grey_packed_kernel<false, true><<<grid, block, 0, stream>>>(L, in, out, bw);
  else
    grey_packed_kernel<false, false><<<grid, block, 0, stream>>>(L, in, out, bw);
  CO_CUDA_CHECK_LAUNCH("the convert kernel (grey to packed RGB)");
}

}  // namespace convert_detail
}  // namespace cudaoverlap
