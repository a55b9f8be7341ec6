// CUDA implementation of the `convert` kernel (see convert.h): one thread
// per 2x2 block of the picture (a chroma sample of 4:2:0 formats), running
// the arithmetic of convert_math.h that the CPU reference also runs.
#include <cuda_runtime.h>

#include <algorithm>

#include "convert.h"
#include "convert_math.h"
#include "cuda_check.h"

namespace cudaoverlap {
namespace {

constexpr int kBlockX = 32;
constexpr int kBlockY = 8;
constexpr unsigned kMaxGridY = 65535;

__global__ void convert_kernel(ConvertCoefficients k, ImageRef in, ImageRef out, int blocks_x,
                               int blocks_y) {
  const int bx = blockIdx.x * blockDim.x + threadIdx.x;
  if (bx >= blocks_x) return;
  for (int by = blockIdx.y * blockDim.y + threadIdx.y; by < blocks_y; by += gridDim.y * blockDim.y)
    convert_math::convert_block(k, in, out, bx, by);
}

}  // namespace

void convert_cuda(const ImageRef& in, const ImageRef& out, const ConvertParams& params,
                  bool inject_launch_failure, CUstream_st* stream) {
  const ConvertCoefficients k = convert_coefficients(in.format, out.format, params);
  const int bw = (in.width + 1) / 2, bh = (in.height + 1) / 2;
  if (bw == 0 || bh == 0) return;
  dim3 grid((bw + kBlockX - 1) / kBlockX,
            static_cast<unsigned>(std::min<int>((bh + kBlockY - 1) / kBlockY, kMaxGridY)));
  // An empty grid is an invalid configuration: CUDA reports it at launch.
  if (inject_launch_failure) grid.x = 0;
  convert_kernel<<<grid, dim3(kBlockX, kBlockY), 0, stream>>>(k, in, out, bw, bh);
  CO_CUDA_CHECK_LAUNCH("the convert kernel");
}

}  // namespace cudaoverlap
