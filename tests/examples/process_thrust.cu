// The process example's library half: Thrust, from the CUDA toolkit,
// inverting each plane on the element's stream, only enqueued (par_nosync:
// no wait after it). Where both frames' rows are equally far apart, a plane
// is one range (the padding between rows is inverted too, and never shown);
// else each row is one.
#include <cuda_runtime.h>
#include <thrust/execution_policy.h>
#include <thrust/transform.h>

#include <cstdio>

#include "process_example.h"

namespace {
struct Invert {
  __device__ unsigned char operator()(unsigned char v) const { return 255 - v; }
};
}  // namespace

extern "C" int example_have_cuda_device(void) {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

extern "C" int example_invert_with_thrust(const CudaOverlapImage* in, const CudaOverlapImage* out,
                                          void* stream) {
  const auto policy = thrust::cuda::par_nosync.on(static_cast<cudaStream_t>(stream));
  for (int p = 0; p < in->n_planes; ++p) {
    if (in->stride[p] == out->stride[p]) {
      const size_t bytes = in->stride[p] * (in->rows[p] - 1) + in->row_bytes[p];
      thrust::transform(policy, in->data[p], in->data[p] + bytes, out->data[p], Invert());
      continue;
    }
    for (int y = 0; y < in->rows[p]; ++y) {
      const unsigned char* from = in->data[p] + y * in->stride[p];
      thrust::transform(policy, from, from + in->row_bytes[p], out->data[p] + y * out->stride[p],
                        Invert());
    }
  }
  const cudaError_t status = cudaGetLastError();
  if (status != cudaSuccess) {
    std::fprintf(stderr, "thrust: %s\n", cudaGetErrorString(status));
    return -1;
  }
  return 0;
}
