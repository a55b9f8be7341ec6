// CPU reference of the `copy` kernel: the oracle for copy.cu, and what the
// cpu backend runs.
#include <cstring>

#include "copy.h"

namespace cudaoverlap {

void copy_reference(const ImageRef& in, const ImageRef& out) {
  const FormatInfo& info = format_info(in.format);
  for (int p = 0; p < info.n_planes; ++p) {
    const size_t row_bytes = plane_row_bytes(in.format, p, in.width);
    const size_t rows = plane_rows(in.format, p, in.height);
    for (size_t y = 0; y < rows; ++y)
      std::memcpy(out.planes[p].data + y * out.planes[p].stride,
                  in.planes[p].data + y * in.planes[p].stride, row_bytes);
  }
}

}  // namespace cudaoverlap
