// CUDA implementation of the `invert` kernel (see invert.h).
#include "byte_mask_kernel.cuh"
#include "invert.h"

namespace cudaoverlap {

void invert_cuda(const ImageRef& in, const ImageRef& out, CUstream_st* stream) {
  const FormatInfo& info = format_info(in.format);
  uint32_t masks[kMaxPlanes] = {0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu};
  if (info.alpha_byte >= 0) masks[0] &= ~(0xFFu << (8 * info.alpha_byte));
  launch_byte_mask(in, out, masks, stream);
}

}  // namespace cudaoverlap
