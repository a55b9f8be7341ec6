// The CUDA half of `scale` (scale.h): one thread per output sample of a
// component, one launch per component, each sample by scale_math.h as the
// CPU reference computes it.
#include <cuda_runtime.h>

#include "kernels/cuda_check.h"
#include "kernels/scale/scale.h"
#include "kernels/scale/scale_math.h"

namespace cudaoverlap {
namespace {

constexpr int kBlockX = 32;
constexpr int kBlockY = 8;

__global__ void scale_kernel(ScaleComponent c) {
  const int x = blockIdx.x * kBlockX + threadIdx.x;
  const int y = blockIdx.y * kBlockY + threadIdx.y;
  if (x < c.out_samples && y < c.out_rows) scale_one(c, x, y);
}

}  // namespace

void scale_prepare_cuda(const ScaleTables& tables, uint8_t* workspace, CUstream_st* stream) {
  CO_CUDA_CHECK(cudaMemcpyAsync(workspace, tables.bytes.data(), tables.bytes.size(),
                                cudaMemcpyHostToDevice, stream));
}

void scale_cuda(const ImageRef& in, const ImageRef& out, const ScaleTables& tables,
                const uint8_t* workspace, CUstream_st* stream) {
  ScaleComponent components[kMaxComponents + 1];
  const int n = scale_components(in, out, tables, workspace, components);
  for (int c = 0; c < n; ++c) {
    const ScaleComponent& k = components[c];
    const dim3 grid((k.out_samples + kBlockX - 1) / kBlockX, (k.out_rows + kBlockY - 1) / kBlockY);
    scale_kernel<<<grid, dim3(kBlockX, kBlockY), 0, stream>>>(k);
    CO_CUDA_CHECK_LAUNCH("the scale kernel");
  }
}

}  // namespace cudaoverlap
