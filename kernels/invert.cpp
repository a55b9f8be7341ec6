// CPU reference of the `invert` kernel, written sample by sample so it
// shares no logic with the byte-mask trick of invert.cu.
#include "invert.h"

namespace cudaoverlap {

void invert_reference(const ImageRef& in, const ImageRef& out) {
  const FormatInfo& info = format_info(in.format);
  for (int p = 0; p < info.n_planes; ++p) {
    const size_t row_bytes = plane_row_bytes(in.format, p, in.width);
    const size_t rows = plane_rows(in.format, p, in.height);
    for (size_t y = 0; y < rows; ++y) {
      const uint8_t* src = in.planes[p].data + y * in.planes[p].stride;
      uint8_t* dst = out.planes[p].data + y * out.planes[p].stride;
      for (size_t x = 0; x < row_bytes; ++x) {
        const bool keep = info.alpha_byte >= 0 && static_cast<int>(x % 4) == info.alpha_byte;
        dst[x] = keep ? src[x] : static_cast<uint8_t>(255 - src[x]);
      }
    }
  }
}

bool InvertOperation::same_as(const Operation& other) const {
  return dynamic_cast<const InvertOperation*>(&other) != nullptr;
}

void InvertOperation::enqueue_cuda(const ImageRef& in, const ImageRef& out, const Workspace&,
                                   CUstream_st* stream) const {
  CO_CUDA_ONLY(invert_cuda(in, out, stream));
}

void InvertOperation::run_reference(const ImageRef& in, const ImageRef& out,
                                    const Workspace&) const {
  invert_reference(in, out);
}

}  // namespace cudaoverlap
