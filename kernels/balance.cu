// CUDA implementation of the `balance` kernel (see balance.h).
//
// The luma table (256 bytes) travels in the kernel arguments and is copied to
// shared memory per block. The 256x256 chroma tables do not fit there, so
// chroma is computed per sample in double precision with the explicitly
// rounded intrinsics (__dmul_rn, __dadd_rn): they keep nvcc from fusing a
// multiply and an add into an FMA, which would round differently from the
// host's separate operations and break bit-exactness with the reference.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "balance.h"
#include "copy.h"
#include "cuda_check.h"

namespace cudaoverlap {
namespace {

constexpr int kThreads = 256;
constexpr unsigned kMaxGridY = 65535;

struct BalanceArgs {
  BalanceConstants k;
  int r, g, b;  // byte offsets in packed RGB
};

__device__ __forceinline__ uint8_t round_clamp(double v) {
  v = v < 0.0 ? 0.0 : (v > 255.0 ? 255.0 : v);
  return static_cast<uint8_t>(rint(v));
}

// videobalance's tableu[u][v] and tablev[u][v].
__device__ __forceinline__ void balance_chroma(const BalanceArgs& a, int u, int v, uint8_t* uo,
                                               uint8_t* vo) {
  const double i = u - 128;
  const double j = v - 128;
  const double mi = -(u - 128);
  const double su = __dadd_rn(__dmul_rn(i, a.k.hue_cos), __dmul_rn(j, a.k.hue_sin));
  const double sv = __dadd_rn(__dmul_rn(mi, a.k.hue_sin), __dmul_rn(j, a.k.hue_cos));
  *uo = round_clamp(__dadd_rn(128.0, __dmul_rn(su, a.k.saturation)));
  *vo = round_clamp(__dadd_rn(128.0, __dmul_rn(sv, a.k.saturation)));
}

__device__ __forceinline__ void load_table(const BalanceArgs& a, uint8_t* table) {
  for (int i = threadIdx.x; i < 256; i += blockDim.x) table[i] = a.k.table_y[i];
  __syncthreads();
}

// One thread per byte of luma (I420, NV12 plane 0, GRAY8).
__global__ void balance_luma_kernel(const uint8_t* __restrict__ src, size_t src_stride,
                                    uint8_t* __restrict__ dst, size_t dst_stride, int width,
                                    int rows, BalanceArgs a) {
  __shared__ uint8_t table[256];
  load_table(a, table);
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  if (x >= width) return;
  for (int y = blockIdx.y; y < rows; y += gridDim.y)
    dst[y * dst_stride + x] = table[src[y * src_stride + x]];
}

// One thread per chroma pair: NV12's interleaved UV, or I420's two planes.
__global__ void balance_chroma_kernel(const uint8_t* __restrict__ su, size_t su_stride,
                                      const uint8_t* __restrict__ sv, size_t sv_stride,
                                      uint8_t* __restrict__ du, size_t du_stride,
                                      uint8_t* __restrict__ dv, size_t dv_stride, int step,
                                      int width, int rows, BalanceArgs a) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  if (x >= width) return;
  for (int y = blockIdx.y; y < rows; y += gridDim.y) {
    const size_t xs = static_cast<size_t>(x) * step;
    balance_chroma(a, su[y * su_stride + xs], sv[y * sv_stride + xs], &du[y * du_stride + xs],
                   &dv[y * dv_stride + xs]);
  }
}

__device__ __forceinline__ int apply_matrix(int m0, int m1, int m2, int m3, int a, int b, int c) {
  return (m0 * a + m1 * b + m2 * c + m3) >> 8;
}

__device__ __forceinline__ uint8_t clamp_u8(int v) {
  return static_cast<uint8_t>(v < 0 ? 0 : (v > 255 ? 255 : v));
}

// One thread per packed 4-byte pixel; uchar4 loads when aligned.
template <bool kAligned>
__global__ void balance_rgb_kernel(const uint8_t* __restrict__ src, size_t src_stride,
                                   uint8_t* __restrict__ dst, size_t dst_stride, int width,
                                   int rows, BalanceArgs a) {
  __shared__ uint8_t table[256];
  load_table(a, table);
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  if (x >= width) return;
  for (int y = blockIdx.y; y < rows; y += gridDim.y) {
    const uint8_t* s = src + y * src_stride + static_cast<size_t>(x) * 4;
    uint8_t* d = dst + y * dst_stride + static_cast<size_t>(x) * 4;
    uint8_t p[4];
    if (kAligned) {
      const uchar4 v = *reinterpret_cast<const uchar4*>(s);
      p[0] = v.x, p[1] = v.y, p[2] = v.z, p[3] = v.w;
    } else {
      for (int c = 0; c < 4; ++c) p[c] = s[c];
    }
    const int r = p[a.r], g = p[a.g], b = p[a.b];
    const int yy = max(0, min(255, apply_matrix(66, 129, 25, 4096, r, g, b)));
    const int u0 = max(0, min(255, apply_matrix(-38, -74, 112, 32768, r, g, b)));
    const int v0 = max(0, min(255, apply_matrix(112, -94, -18, 32768, r, g, b)));
    const int y1 = table[yy];
    uint8_t u1, v1;
    balance_chroma(a, u0, v0, &u1, &v1);
    p[a.r] = clamp_u8(apply_matrix(298, 0, 409, -57068, y1, u1, v1));
    p[a.g] = clamp_u8(apply_matrix(298, -100, -208, 34707, y1, u1, v1));
    p[a.b] = clamp_u8(apply_matrix(298, 516, 0, -70870, y1, u1, v1));
    if (kAligned) {
      *reinterpret_cast<uchar4*>(d) = make_uchar4(p[0], p[1], p[2], p[3]);
    } else {
      for (int c = 0; c < 4; ++c) d[c] = p[c];
    }
  }
}

dim3 grid_for(size_t items, size_t rows, bool inject_launch_failure) {
  dim3 grid(static_cast<unsigned>((items + kThreads - 1) / kThreads),
            static_cast<unsigned>(std::min<size_t>(rows, kMaxGridY)));
  // An empty grid is an invalid configuration: CUDA reports it at launch.
  if (inject_launch_failure) grid.x = 0;
  return grid;
}

bool aligned4(const PlaneRef& p) {
  return reinterpret_cast<uintptr_t>(p.data) % 4 == 0 && p.stride % 4 == 0;
}

}  // namespace

void balance_cuda(const ImageRef& in, const ImageRef& out, const BalanceParams& params,
                  bool inject_launch_failure, CUstream_st* stream) {
  if (params.is_identity()) {
    copy_cuda(in, out, inject_launch_failure, stream);
    return;
  }
  BalanceArgs a;
  a.k = balance_constants(params);
  rgb_byte_offsets(in.format, &a.r, &a.g, &a.b);
  const FormatInfo& info = format_info(in.format);
  if (in.width == 0 || in.height == 0) return;

  if (!info.is_yuv && in.format != PixelFormat::kGRAY8) {
    const dim3 grid = grid_for(in.width, in.height, inject_launch_failure);
    if (aligned4(in.planes[0]) && aligned4(out.planes[0]))
      balance_rgb_kernel<true><<<grid, kThreads, 0, stream>>>(
          in.planes[0].data, in.planes[0].stride, out.planes[0].data, out.planes[0].stride,
          in.width, in.height, a);
    else
      balance_rgb_kernel<false><<<grid, kThreads, 0, stream>>>(
          in.planes[0].data, in.planes[0].stride, out.planes[0].data, out.planes[0].stride,
          in.width, in.height, a);
    CO_CUDA_CHECK_LAUNCH("the balance kernel (RGB)");
    return;
  }

  balance_luma_kernel<<<grid_for(in.width, in.height, inject_launch_failure), kThreads, 0,
                        stream>>>(in.planes[0].data, in.planes[0].stride, out.planes[0].data,
                                  out.planes[0].stride, in.width, in.height, a);
  CO_CUDA_CHECK_LAUNCH("the balance kernel (luma)");
  if (in.format == PixelFormat::kGRAY8) return;

  const int cw = static_cast<int>(plane_row_bytes(in.format, 1, in.width) / info.pixel_bytes[1]);
  const int ch = static_cast<int>(plane_rows(in.format, 1, in.height));
  const dim3 grid = grid_for(cw, ch, inject_launch_failure);
  if (in.format == PixelFormat::kNV12) {
    balance_chroma_kernel<<<grid, kThreads, 0, stream>>>(
        in.planes[1].data, in.planes[1].stride, in.planes[1].data + 1, in.planes[1].stride,
        out.planes[1].data, out.planes[1].stride, out.planes[1].data + 1, out.planes[1].stride, 2,
        cw, ch, a);
  } else {
    balance_chroma_kernel<<<grid, kThreads, 0, stream>>>(
        in.planes[1].data, in.planes[1].stride, in.planes[2].data, in.planes[2].stride,
        out.planes[1].data, out.planes[1].stride, out.planes[2].data, out.planes[2].stride, 1, cw,
        ch, a);
  }
  CO_CUDA_CHECK_LAUNCH("the balance kernel (chroma)");
}

}  // namespace cudaoverlap
