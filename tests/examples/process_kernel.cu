// The process example's own kernel: each row of an RGBA frame mirrored,
// launched on the element's stream.
#include <cuda_runtime.h>

#include <cstdio>

#include "process_example.h"

namespace {
__global__ void mirror_rgba(const unsigned char* in, size_t in_stride, unsigned char* out,
                            size_t out_stride, int width, int height) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= width || y >= height) return;
  const uchar4 v = reinterpret_cast<const uchar4*>(in + y * in_stride)[width - 1 - x];
  reinterpret_cast<uchar4*>(out + y * out_stride)[x] = v;
}
}  // namespace

extern "C" int example_mirror_with_kernel(const CudaOverlapImage* in, const CudaOverlapImage* out,
                                          void* stream) {
  const dim3 block(32, 8);
  const dim3 grid((in->width + 31) / 32, (in->height + 7) / 8);
  mirror_rgba<<<grid, block, 0, static_cast<cudaStream_t>(stream)>>>(
      in->data[0], in->stride[0], out->data[0], out->stride[0], in->width, in->height);
  const cudaError_t status = cudaGetLastError();
  if (status != cudaSuccess) {
    std::fprintf(stderr, "mirror_rgba: %s\n", cudaGetErrorString(status));
    return -1;
  }
  return 0;
}
