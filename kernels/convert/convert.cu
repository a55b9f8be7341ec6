// CUDA implementation of the `convert` kernel (see convert.h): the dispatch
// that picks, for a pair of formats, the path that makes it. Each path is a
// file of its own, declared in convert_launch.h:
//
// - Bayer input: debayer.cu.
// - A format to itself, where the reference is a copy: the copy kernel.
// - 8-bit YUV to YUV of one subsampling between planar and semi-planar
//   layouts: convert_move_chroma.cu.
// - Inputs whose chroma rows are their luma rows, or which have no chroma
//   (8-bit 4:2:2 and 4:4:4 YUV, 8-bit packed RGB), to the outputs its
//   kernel makes: convert_rows.cu.
// - Grey to packed RGB through a table: convert_grey.cu.
// - 10-bit 4:2:0 to 8-bit RGB, 4:2:2 and 4:4:4: convert_deep.cu.
// - Between the first nine formats and NV21, and 8-bit 4:2:0 to 3-byte
//   RGB, 4:2:2 and 4:4:4: convert_rgb_yuv.cu.
// - Every other pair: convert_any.cu, which takes YUV to YUV through the
//   plane scaler (convert_planes.cu) and YUV to YUV of one subsampling
//   with a deeper side (convert_repack.cu) before the generic kernels.
//
// The device code they share: convert_math.h (the reference's arithmetic),
// convert_layout.cuh, convert_access.cuh and convert_rgb_words.cuh.
#include <algorithm>
#include <vector>

#include "kernels/convert/convert.h"
#include "kernels/convert/convert_launch.h"
#include "kernels/convert/convert_math.h"
#include "kernels/copy/copy.h"
#include "kernels/operation.h"

namespace cudaoverlap {

void convert_cuda(const ImageRef& in, const ImageRef& out, const ConvertParams& params,
                  CUstream_st* stream) {
  using namespace convert_detail;
  if (is_bayer(in.format)) {
    debayer_cuda(in, out, stream);
    return;
  }
  // The first nine formats, and NV21 as NV12 with its pairs swapped.
  const std::vector<PixelFormat>& nine = rgb32_yuv420_gray8_formats();
  auto fast = [&nine](PixelFormat f) {
    return f == PixelFormat::kNV21 || std::find(nine.begin(), nine.end(), f) != nine.end();
  };
  const ConvertCoefficients coefficients = convert_coefficients(in.format, out.format, params);
  if (convert_copies_bytes(in, out)) {  // a format to itself
    copy_cuda(in, out, stream);
    return;
  }
  // Co-sited output chroma: the reference's own block function.
  if (coefficients.cosited_x || coefficients.cosited_y) {
    convert_any_cuda(in, out, coefficients, stream);
    return;
  }
  if (moves_chroma(in.format, out.format, coefficients)) {
    move_chroma_cuda(in, out, coefficients, stream);
    return;
  }
  int source = 0, rows_out = 0;
  if (rows_takes(in.format, out.format, coefficients, &source, &rows_out) &&
      rows_cuda(in, out, coefficients, source, rows_out, stream))
    return;
  // GRAY8 to 4-byte RGB is one of the first nine formats' pairs (measured
  // a little faster there).
  if ((in.format == PixelFormat::kGRAY16_LE ||
       (in.format == PixelFormat::kGRAY8 &&
        (out.format == PixelFormat::kRGB || out.format == PixelFormat::kBGR))) &&
      coefficients.out_family == convert_math::kPacked) {
    grey_packed_cuda(in, out, coefficients, stream);
    return;
  }
  int deep_out = kToRgb;
  if (deep420_takes(in.format, out.format, coefficients, &deep_out)) {
    deep420_cuda(in, out, coefficients, deep_out, stream);
    return;
  }
  // 4:2:0 YUV to 3-byte RGB through yuv_to_packed_kernel too.
  const bool rgb24 = (out.format == PixelFormat::kRGB || out.format == PixelFormat::kBGR) &&
                     coefficients.in_family == convert_math::kYuv;
  // 8-bit 4:2:0 YUV to 4:2:2 and 4:4:4 (not through the plane scaler)
  // through it as well.
  const int yuv_out = yuv_out_of(in.format, out.format, coefficients);
  // Those kernels run neither of the arithmetics of limited-range RGB
  // (convert_math::matrix8, grey through the matrix).
  if (!fast(in.format) || !(fast(out.format) || rgb24 || yuv_out != kToRgb) ||
      coefficients.rgb_matrix8 || coefficients.grey_matrix) {
    convert_any_cuda(in, out, coefficients, stream);
    return;
  }
  rgb_yuv_cuda(in, out, coefficients, rgb24, yuv_out, stream);
}

}  // namespace cudaoverlap
