// The CUDA half of borders.h: a block per row of a plane, its threads
// writing that row's border bytes (the whole row above and below the
// picture, the two sides beside it).
#include <cuda_runtime.h>

#include "kernels/cuda_check.h"
#include "kernels/scale/borders.h"

namespace cudaoverlap {
namespace {

__global__ void fill_border_rows(BorderFill::Plane f) {
  const int y = blockIdx.x;
  uint8_t* row = f.data + static_cast<size_t>(y) * f.stride;
  const bool whole = y < f.y0 || y >= f.y1;
  const int count = whole ? f.row_bytes : f.x0 + (f.row_bytes - f.x1);
  for (int i = threadIdx.x; i < count; i += blockDim.x) {
    const int x = whole || i < f.x0 ? i : f.x1 + (i - f.x0);
    row[x] = f.pattern[x % f.unit_bytes];
  }
}

}  // namespace

void fill_borders_cuda(const BorderFill& fill, CUstream_st* stream) {
  for (int p = 0; p < fill.n_planes; ++p) {
    const BorderFill::Plane& f = fill.plane[p];
    if (f.rows < 1) continue;
    fill_border_rows<<<f.rows, 128, 0, stream>>>(f);
    CO_CUDA_CHECK(cudaGetLastError());
  }
}

}  // namespace cudaoverlap
