// CPU reference of the `convert` kernel (see convert.h): the coefficients,
// the check, and the block loop over convert_math.h's arithmetic.
#include "convert.h"

#include <cmath>

#include "balance.h"
#include "convert_math.h"

namespace cudaoverlap {
namespace {

int family_of(PixelFormat f) {
  if (f == PixelFormat::kGRAY8) return convert_math::kGrey;
  if (format_info(f).is_yuv) return convert_math::kYuv420;
  return convert_math::kPacked;
}

void packed_offsets(PixelFormat f, int* offsets) {
  rgb_byte_offsets(f, &offsets[0], &offsets[1], &offsets[2]);
  offsets[3] = format_info(f).alpha_byte;
}

void kr_kb(YuvMatrix m, double* kr, double* kb) {
  if (m == YuvMatrix::kBT709) {
    *kr = 0.2126;
    *kb = 0.0722;
  } else {
    *kr = 0.299;
    *kb = 0.114;
  }
}

}  // namespace

ConvertCoefficients convert_coefficients(PixelFormat in, PixelFormat out,
                                         const ConvertParams& params) {
  ConvertCoefficients k;
  k.in_family = family_of(in);
  k.out_family = family_of(out);
  if (k.in_family == convert_math::kPacked) packed_offsets(in, k.in_offsets);
  if (k.out_family == convert_math::kPacked) packed_offsets(out, k.out_offsets);
  k.linear_chroma = in == PixelFormat::kNV12;

  // YUV -> RGB, as videoconvert derives its matrix: range to [0, 1], then
  // Y'CbCr to R'G'B', times 256, rounded.
  {
    double kr, kb;
    kr_kb(params.in.matrix, &kr, &kb);
    const double kg = 1 - kr - kb;
    const double ys = params.in.full_range ? 1.0 : 255.0 / 219.0;
    const double cs = params.in.full_range ? 1.0 : 255.0 / 224.0;
    const double m[5] = {ys, cs * 2 * (1 - kr), cs * 2 * (1 - kb), -cs * 2 * (1 - kb) * kb / kg,
                         -cs * 2 * (1 - kr) * kr / kg};
    for (int i = 0; i < 5; ++i) k.to_rgb[i] = static_cast<int32_t>(std::lrint(256 * m[i]));
  }
  // RGB -> YUV; GRAY8 output is full-range BT.601 luma.
  {
    Colorimetry c = params.out;
    if (out == PixelFormat::kGRAY8) c = Colorimetry{YuvMatrix::kBT601, true};
    double kr, kb;
    kr_kb(c.matrix, &kr, &kb);
    const double kg = 1 - kr - kb;
    const double ys = (c.full_range ? 255.0 : 219.0) / 255.0;
    const double cs = (c.full_range ? 255.0 : 224.0) / 255.0;
    const double y_off = c.full_range ? 0.0 : 16.0;
    const double rows[3][4] = {
        {ys * kr, ys * kg, ys * kb, y_off},
        {-cs * kr / (2 * (1 - kb)), -cs * kg / (2 * (1 - kb)), cs * 0.5, 128.0},
        {cs * 0.5, -cs * kg / (2 * (1 - kr)), -cs * kb / (2 * (1 - kr)), 128.0},
    };
    for (int r = 0; r < 3; ++r) {
      for (int c3 = 0; c3 < 3; ++c3)
        k.to_yuv[r][c3] = static_cast<int32_t>(std::lrint(rows[r][c3] * 65536));
      k.to_yuv[r][3] = static_cast<int32_t>(std::lrint(rows[r][3] * 65536)) + 32768;
    }
  }
  return k;
}

std::string convert_check(const ImageRef& in, const ImageRef& out, const ConvertParams& params) {
  if (in.width != out.width || in.height != out.height)
    return "kernel 'convert' changes the format only: input and output need the same size";
  if (format_info(in.format).is_yuv && format_info(out.format).is_yuv && !(params.in == params.out))
    return "kernel 'convert' keeps the colorimetry between two YUV formats: give both sides the "
           "same matrix and range (or convert through an RGB format)";
  // videoconvert copies luma between GRAY8 and BT.601 YUV but goes through
  // RGB for BT.709, which this kernel does not reproduce.
  const bool grey_709 = (in.format == PixelFormat::kGRAY8 && format_info(out.format).is_yuv &&
                         params.out.matrix == YuvMatrix::kBT709) ||
                        (out.format == PixelFormat::kGRAY8 && format_info(in.format).is_yuv &&
                         params.in.matrix == YuvMatrix::kBT709);
  if (grey_709)
    return "kernel 'convert' converts between GRAY8 and YUV with the BT.601 matrix only, not "
           "BT.709; convert through an RGB format or use videoconvert";
  return {};
}

void convert_reference(const ImageRef& in, const ImageRef& out, const ConvertParams& params) {
  const ConvertCoefficients k = convert_coefficients(in.format, out.format, params);
  const int bw = (in.width + 1) / 2, bh = (in.height + 1) / 2;
  for (int by = 0; by < bh; ++by)
    for (int bx = 0; bx < bw; ++bx) convert_math::convert_block(k, in, out, bx, by);
}

std::vector<PixelFormat> ConvertOperation::output_formats(PixelFormat in) const {
  const std::vector<PixelFormat>& taken = rgb32_yuv420_gray8_formats();
  if (keep_format_of(in, taken).empty()) return {};
  std::vector<PixelFormat> formats{in};
  for (PixelFormat f : taken)
    if (f != in) formats.push_back(f);
  return formats;
}

bool ConvertOperation::mixes_rows(PixelFormat in, PixelFormat out) const {
  // 4:2:0 chroma rows are shared by two picture rows, one of each field.
  return in != out && (format_info(in).y_shift[1] != 0 || format_info(out).y_shift[1] != 0);
}

std::string ConvertOperation::check(const ImageRef& in, const ImageRef& out) const {
  const std::string problem = Operation::check(in, out);
  return problem.empty() ? convert_check(in, out, params_) : problem;
}

bool ConvertOperation::same_as(const Operation& other) const {
  const auto* o = dynamic_cast<const ConvertOperation*>(&other);
  return o != nullptr && o->params_ == params_;
}

void ConvertOperation::enqueue_cuda(const ImageRef& in, const ImageRef& out, const Workspace&,
                                    CUstream_st* stream) const {
  CO_CUDA_ONLY(convert_cuda(in, out, params_, stream));
}

void ConvertOperation::run_reference(const ImageRef& in, const ImageRef& out,
                                     const Workspace&) const {
  convert_reference(in, out, params_);
}

}  // namespace cudaoverlap
