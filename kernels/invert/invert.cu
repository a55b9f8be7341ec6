// CUDA implementation of the `invert` kernel (see invert.h): one byte-mask
// launch over every plane, with the masks the format's components give.
#include "kernels/byte_mask_kernel.cuh"
#include "kernels/invert/invert.h"

namespace cudaoverlap {

void invert_cuda(const ImageRef& in, const ImageRef& out, CUstream_st* stream) {
  uint32_t masks[kMaxPlanes];
  invert_masks(in.format, masks);
  launch_byte_mask(in, out, masks, stream);
}

}  // namespace cudaoverlap
