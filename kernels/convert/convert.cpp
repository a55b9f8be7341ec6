// CPU reference of the `convert` kernel (see convert.h): the coefficients,
// the check, and the block loop over convert_math.h's arithmetic.
#include "kernels/convert/convert.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/convert/convert_math.h"
#include "kernels/convert/debayer_math.h"
#include "kernels/error.h"
#include "kernels/pixel_stage.h"

namespace cudaoverlap {
namespace {

int family_of(PixelFormat f) {
  const FormatInfo& info = format_info(f);
  if (info.is_yuv) return convert_math::kYuv;
  return info.n_components == 1 ? convert_math::kGrey : convert_math::kPacked;
}

// Where `f`'s samples are, from its components.
void side_of(PixelFormat f, int* offsets, ConvertSide* side) {
  const FormatInfo& info = format_info(f);
  side->pixel_stride = info.comp[0].pixel_stride;
  for (int c = 0; c < 3 && c < info.n_components; ++c) {
    offsets[c] = info.comp[c].offset;
    side->plane[c] = info.comp[c].plane;
    side->offset[c] = info.comp[c].offset;
    side->step[c] = info.comp[c].pixel_stride;
  }
  // The alpha or padding byte of 4-byte RGB; none in 3-byte RGB.
  offsets[3] = info.alpha_byte;
  side->x_sub = info.n_components == 3 ? info.comp[1].x_sub : 0;
  side->y_sub = info.n_components == 3 ? info.comp[1].y_sub : 0;
  side->sample_bytes = info.sample_bytes;
  side->depth = info.comp[0].depth;
  side->shift = info.comp[0].shift;
}

// What videoconvert 1.22 does to chroma between `in` and `out` (dither=none,
// chroma not cosited, as caps without a chroma-site at SD sizes say): its
// generic path interpolates 3:1 wherever the input is subsampled; its fast
// paths take the nearest sample (I420 to RGB, and the pairs below, whose
// output averages or copies rows) or scale chroma planes
// (convert_scale_planes, between planar and between semi-planar formats).
// Formats deeper than 8 bits are on none of those fast paths: they meet
// only the generic path and the copy between equal subsamplings.
void chroma_path(PixelFormat in, PixelFormat out, ConvertCoefficients* k) {
  using F = PixelFormat;
  const FormatInfo &i = format_info(in), &o = format_info(out);
  auto is = [](F f, std::initializer_list<F> set) {
    return std::find(set.begin(), set.end(), f) != set.end();
  };
  k->chroma_x = k->chroma_y = kUpLinear;
  const bool same = i.is_yuv && o.is_yuv && i.comp[1].x_sub == o.comp[1].x_sub &&
                    i.comp[1].y_sub == o.comp[1].y_sub;
  if (same || (in == F::kI420 && !o.is_yuv) || (in == F::kI420 && is(out, {F::kYUY2, F::kUYVY})) ||
      (is(in, {F::kYUY2, F::kUYVY}) && is(out, {F::kI420, F::kY444})))
    k->chroma_x = k->chroma_y = kUpNearest;
  const bool both_planar =
      is(in, {F::kI420, F::kY42B, F::kY444}) && is(out, {F::kI420, F::kY42B, F::kY444});
  const bool both_semi = is(in, {F::kNV12, F::kNV16}) && is(out, {F::kNV12, F::kNV16});
  k->scale_planes = !same && (both_planar || both_semi);
  k->scale_planar = both_planar;
}

}  // namespace

ConvertCoefficients convert_coefficients(PixelFormat in, PixelFormat out,
                                         const ConvertParams& params) {
  ConvertCoefficients k;
  k.in_family = family_of(in);
  k.out_family = family_of(out);
  side_of(in, k.in_offsets, &k.in_side);
  side_of(out, k.out_offsets, &k.out_side);
  // videoconvert's fast paths for I420 take the nearest chroma sample; its
  // generic path interpolates.
  chroma_path(in, out, &k);
  k.deep = format_info(in).sample_bytes > 1 || format_info(out).sample_bytes > 1;
  // Siting matters where the output subsamples chroma the input has per
  // pixel, and not through the plane scaler.
  const bool per_pixel = !k.scale_planes && k.out_family == convert_math::kYuv;
  k.cosited_x = params.cosited_x && per_pixel && k.out_side.x_sub == 1 && k.in_side.x_sub == 0;
  k.cosited_y = params.cosited_y && per_pixel && k.out_side.y_sub == 1 && k.in_side.y_sub == 0;

  // YUV -> RGB, as videoconvert derives its matrix: range to [0, 1], then
  // Y'CbCr to R'G'B', times 256, rounded.
  {
    const double kr = params.in.kr(), kb = params.in.kb();
    const double kg = 1 - kr - kb;
    const double ys = params.in.full_range ? 1.0 : 255.0 / 219.0;
    const double cs = params.in.full_range ? 1.0 : 255.0 / 224.0;
    const double m[5] = {ys, cs * 2 * (1 - kr), cs * 2 * (1 - kb), -cs * 2 * (1 - kb) * kb / kg,
                         -cs * 2 * (1 - kr) * kr / kg};
    for (int i = 0; i < 5; ++i) k.to_rgb[i] = static_cast<int32_t>(std::lrint(256 * m[i]));
    k.to_rgb_y_offset16 = params.in.full_range ? 0 : 16 << 8;
  }
  // RGB -> YUV; GRAY8 output is full-range BT.601 luma.
  {
    Colorimetry c = params.out;
    if (family_of(out) == convert_math::kGrey) c = Colorimetry(true);
    const double kr = c.kr(), kb = c.kb();
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
      k.to_yuv_offset16[r] = std::llrint(rows[r][3] * 256 * 65536) + 32768;
    }
  }
  // RGB on 16..235 (caps with range 16-235), as videoconvert builds its
  // matrix: the input's range undone with 1 / (float) scale, the matrices
  // and the output's range in double, then x256 and rint. Its offsets are
  // not needed: the ORC code that runs these drops them.
  auto inverse = [](int scale) { return static_cast<double>(1.0f / static_cast<float>(scale)); };
  if (k.out_family == convert_math::kPacked && k.in_family != convert_math::kPacked &&
      params.out.rgb_limited) {
    // YUV, or GRAY8 as full-range BT.601 luma, to RGB on 16..235.
    const bool grey = k.in_family == convert_math::kGrey;
    const Colorimetry c = grey ? Colorimetry(true) : params.in;
    const double kr = c.kr(), kb = c.kb();
    const double kg = 1.0 - kr - kb;
    const double yi = inverse(c.full_range ? 255 : 219), ci = inverse(c.full_range ? 255 : 224);
    const double m[5] = {1.0 * yi, 2 * (1 - kr) * ci, 2 * (1 - kb) * ci,
                         -2 * kb * (1 - kb) / kg * ci, -2 * kr * (1 - kr) / kg * ci};
    for (int i = 0; i < 5; ++i)
      k.to_rgb[i] = static_cast<int32_t>(std::lrint(256.0 * (219.0 * m[i])));
    k.grey_matrix = grey;
  }
  if (k.in_family == convert_math::kPacked && k.out_family != convert_math::kPacked &&
      params.in.rgb_limited) {
    // RGB on 16..235 to YUV, or to GRAY8's full-range BT.601 luma.
    const Colorimetry c = k.out_family == convert_math::kGrey ? Colorimetry(true) : params.out;
    const double kr = c.kr(), kb = c.kb();
    const double kg = 1.0 - kr - kb;
    const double xb = 1 / (2 * (1 - kb)), xr = 1 / (2 * (1 - kr));
    const double t[3][3] = {
        {kr, kg, kb}, {-xb * kr, -xb * kg, xb * (1 - kb)}, {xr * (1 - kr), -xr * kg, -xr * kb}};
    const double scale[3] = {c.full_range ? 255.0 : 219.0, c.full_range ? 255.0 : 224.0,
                             c.full_range ? 255.0 : 224.0};
    const double ri = inverse(219);
    for (int r = 0; r < 3; ++r)
      for (int j = 0; j < 3; ++j)
        k.matrix8[r][j] = static_cast<int32_t>(std::lrint(256.0 * (scale[r] * (t[r][j] * ri))));
    k.rgb_matrix8 = true;
  }
  return k;
}

std::string convert_check(const ImageRef& in, const ImageRef& out, const ConvertParams& params) {
  if (in.width != out.width || in.height != out.height)
    return "kernel 'convert' changes the format only: input and output need the same size";
  const bool limited_rgb =
      (family_of(in.format) == convert_math::kPacked && params.in.rgb_limited) ||
      (family_of(out.format) == convert_math::kPacked && params.out.rgb_limited);
  if (limited_rgb && !is_bayer(in.format) &&
      (format_info(in.format).sample_bytes > 1 || format_info(out.format).sample_bytes > 1))
    return std::string(
               "kernel 'convert' takes RGB with range 16-235 only to and from 8-bit "
               "formats, not ") +
           format_info(format_info(in.format).sample_bytes > 1 ? in.format : out.format).name +
           "; give the RGB side full range (colorimetry=sRGB) or use videoconvert";
  if (format_info(in.format).is_yuv && format_info(out.format).is_yuv && !(params.in == params.out))
    return "kernel 'convert' keeps the colorimetry between two YUV formats: give both sides the "
           "same matrix and range (or convert through an RGB format)";
  // videoconvert copies luma between GRAY8 and BT.601 YUV but goes through
  // RGB for BT.709, which this kernel does not reproduce.
  const bool grey_in = family_of(in.format) == convert_math::kGrey;
  const bool grey_out = family_of(out.format) == convert_math::kGrey;
  const bool grey_other =
      (grey_in && format_info(out.format).is_yuv && params.out.matrix() != YuvMatrix::kBT601) ||
      (grey_out && format_info(in.format).is_yuv && params.in.matrix() != YuvMatrix::kBT601);
  if (grey_other)
    return std::string("kernel 'convert' converts between ") +
           format_info(grey_in ? in.format : out.format).name +
           " and YUV with the BT.601 matrix only; convert through an RGB format or "
           "use videoconvert";
  return {};
}

namespace {

void debayer_reference(const ImageRef& in, const ImageRef& out) {
  const FormatInfo& o = format_info(out.format);
  const int red = format_info(in.format).bayer_red;
  const int w = in.width, h = in.height;
  auto row = [&in](int y) {
    const uint8_t* s = in.planes[0].data + static_cast<size_t>(y) * in.planes[0].stride;
    return [s](int i) { return static_cast<int>(s[i]); };
  };
  for (int y = 0; y < h; ++y) {
    const auto above = row(debayer_math::row_above(y, h));
    const auto here = row(y);
    const auto below = row(debayer_math::row_below(y, h));
    uint8_t* d = out.planes[0].data + static_cast<size_t>(y) * out.planes[0].stride;
    for (int x = 0; x < w; ++x) {
      int rgb[3];
      debayer_math::pixel(above, here, below, w, x, y, red, &rgb[0], &rgb[1], &rgb[2]);
      uint8_t* p = d + static_cast<size_t>(x) * o.comp[0].pixel_stride;
      for (int c = 0; c < 3; ++c) p[o.comp[c].offset] = static_cast<uint8_t>(rgb[c]);
      if (o.alpha_byte >= 0) p[o.alpha_byte] = 255;
    }
  }
}

}  // namespace

bool convert_copies_bytes(const ImageRef& in, const ImageRef& out) {
  if (in.format != out.format || in.width != out.width || in.height != out.height) return false;
  const FormatInfo& info = format_info(in.format);
  const bool deep_changes = info.sample_bytes > 1 && info.comp[0].depth != 16;
  const bool packed422 = info.is_yuv && info.n_planes == 1;
  return !deep_changes && !(packed422 && (in.width & 1));
}

void convert_reference(const ImageRef& in, const ImageRef& out, const ConvertParams& params) {
  if (is_bayer(in.format)) {
    debayer_reference(in, out);
    return;
  }
  const ConvertCoefficients k = convert_coefficients(in.format, out.format, params);
  const int bw = (in.width + 1) / 2, bh = (in.height + 1) / 2;
  for (int by = 0; by < bh; ++by)
    for (int bx = 0; bx < bw; ++bx) {
      if (k.deep)
        convert_math::convert_block<true>(k, convert_math::ImageAccess{in},
                                          convert_math::ImageAccess{out}, bx, by);
      else
        convert_math::convert_block<false>(k, convert_math::ImageAccess{in},
                                           convert_math::ImageAccess{out}, bx, by);
    }
}

// The formats it converts between.
const std::vector<PixelFormat>& convert_formats() {
  static const std::vector<PixelFormat> formats = [] {
    std::vector<PixelFormat> all = rgb32_yuv420_gray8_formats();
    for (PixelFormat f :
         {PixelFormat::kYUY2, PixelFormat::kUYVY, PixelFormat::kRGB, PixelFormat::kBGR,
          PixelFormat::kNV21, PixelFormat::kNV16, PixelFormat::kY42B, PixelFormat::kY444,
          PixelFormat::kP010_10LE, PixelFormat::kI420_10LE, PixelFormat::kGRAY16_LE})
      all.push_back(f);
    return all;
  }();
  return formats;
}

// What a Bayer mosaic debayers to: the RGB formats, 4- and 3-byte.
const std::vector<PixelFormat>& debayer_formats() {
  static const std::vector<PixelFormat> formats = {
      PixelFormat::kRGBA, PixelFormat::kBGRA, PixelFormat::kRGBx, PixelFormat::kBGRx,
      PixelFormat::kARGB, PixelFormat::kABGR, PixelFormat::kRGB,  PixelFormat::kBGR};
  return formats;
}

std::vector<PixelFormat> ConvertOperation::output_formats(PixelFormat in) const {
  if (is_bayer(in)) return debayer_formats();
  const std::vector<PixelFormat>& taken = convert_formats();
  if (keep_format_of(in, taken).empty()) return {};
  std::vector<PixelFormat> formats;
  if (resize_.can_turn(in)) formats.push_back(in);
  for (PixelFormat f : taken)
    if (f != in && resize_.can_turn(f)) formats.push_back(f);
  return formats;
}

namespace {

// Planes and rows of the frame between the two steps start on 256 bytes,
// as the engine's own device frames do.
constexpr size_t kBetweenAlign = 256;

}  // namespace

ConvertOperation::ConvertOperation(const ConvertParams& params, const ParamValues& values,
                                   const FrameSizes& sizes)
    : ResizingOperation(values, sizes, params.out), params_(params) {
  workspace_bytes_ = resize_.workspace_bytes();
  if (!resize_.scales()) return;
  // Room for the frame between the steps in the largest format, at the
  // larger of the two sizes (the formats are known only per frame).
  between_at_ = (resize_.workspace_bytes() + kBetweenAlign - 1) / kBetweenAlign * kBetweenAlign;
  size_t most = 0;
  for (PixelFormat f : output_formats(PixelFormat::kRGBA))
    for (auto [w, h] : {std::pair{resize_.window_width(), resize_.window_height()},
                        {resize_.upright_width(), resize_.upright_height()}}) {
      size_t bytes = 0;
      aligned_image(f, w, h, kBetweenAlign, nullptr, &bytes);
      most = std::max(most, bytes);
    }
  workspace_bytes_ = between_at_ + most;
}

ImageRef ConvertOperation::between(const ImageRef& window, const ImageRef& out, uint8_t* workspace,
                                   bool* scale_first) const {
  *scale_first = !is_bayer(window.format) && static_cast<int64_t>(out.width) * out.height <=
                                                 static_cast<int64_t>(window.width) * window.height;
  size_t bytes = 0;
  return *scale_first ? aligned_image(window.format, out.width, out.height, kBetweenAlign,
                                      workspace + between_at_, &bytes)
                      : aligned_image(out.format, window.width, window.height, kBetweenAlign,
                                      workspace + between_at_, &bytes);
}

void ConvertOperation::prepare_cuda(const Workspace& workspace, CUstream_st* stream) const {
  resize_.prepare_cuda(workspace.data, stream);
}

void ConvertOperation::prepare_reference(const Workspace& workspace) const {
  resize_.prepare_reference(workspace.data);
}

bool ConvertOperation::mixes_rows(PixelFormat in, PixelFormat out) const {
  // 4:2:0 chroma rows are shared by two picture rows, one of each field;
  // debayering interpolates between rows; so does scaling to another
  // height, and turns move them.
  if (is_bayer(in) || resize_.moves_rows()) return true;
  const FormatInfo &i = format_info(in), &o = format_info(out);
  return in != out && ((i.is_yuv && i.comp[1].y_sub != 0) || (o.is_yuv && o.comp[1].y_sub != 0));
}

bool ConvertOperation::uses_matrix(PixelFormat in, PixelFormat out) const {
  return !is_bayer(in) && format_info(in).is_yuv != format_info(out).is_yuv;
}

int ConvertOperation::band_halo(PixelFormat in, PixelFormat out) const {
  const std::vector<PixelFormat> outs = output_formats(in);
  if (resize_.active() || std::find(outs.begin(), outs.end(), out) == outs.end()) return -1;
  // The plane scaler's taps depend on the planes' whole heights (an odd
  // height scales 2n-1 rows from n), so a view of fewer rows would be
  // scaled otherwise: whole frames.
  ConvertCoefficients k;
  chroma_path(in, out, &k);
  if (k.scale_planes) return -1;
  return mixes_rows(in, out) ? kConvertBandHalo : 0;
}

std::string ConvertOperation::check(const ImageRef& in, const ImageRef& out) const {
  if (!resize_.active()) {
    const std::string problem = Operation::check(in, out);
    return problem.empty() ? convert_check(in, out, params_) : problem;
  }
  // The formats as at one size, then the sizes and crop it was made for.
  ImageRef same = out;
  same.width = swaps_axes() ? in.height : in.width;
  same.height = swaps_axes() ? in.width : in.height;
  std::string problem = Operation::check(in, same);
  ImageRef upright = same;
  upright.width = in.width;
  upright.height = in.height;
  if (problem.empty()) problem = convert_check(in, upright, params_);
  return problem.empty() ? resize_.check("convert", in, out) : problem;
}

bool ConvertOperation::same_as(const Operation& other) const {
  const auto* o = dynamic_cast<const ConvertOperation*>(&other);
  return o != nullptr && o->params_ == params_ && o->declared() == declared() &&
         o->resize_ == resize_;
}

bool ConvertOperation::pixel_stage(PixelFormat in, PixelFormat out, const Workspace&,
                                   PixelStage* stage) const {
  if (resize_.active() || !is_pixel_stage_format(in) || !is_pixel_stage_format(out)) return false;
  *stage = rgb_shuffle_stage(in, out);
  return true;
}

void ConvertOperation::enqueue_cuda(const ImageRef& in, const ImageRef& whole_out,
                                    const Workspace& workspace, CUstream_st* stream) const {
  if (!resize_.active()) {
    CO_CUDA_ONLY(convert_cuda(in, whole_out, params_, stream));
    return;
  }
  resize_.fill_borders_cuda(whole_out, stream);
  const ImageRef window = resize_.window(in);
  const ImageRef out = resize_.target(whole_out, workspace.data);
  if (!resize_.scales()) {
    CO_CUDA_ONLY(convert_cuda(window, out, params_, stream));
  } else if (in.format == out.format) {
    resize_.scale_cuda(window, out, workspace.data, stream);
  } else {
    bool scale_first = false;
    const ImageRef mid = between(window, out, workspace.data, &scale_first);
    if (scale_first) {
      resize_.scale_cuda(window, mid, workspace.data, stream);
      CO_CUDA_ONLY(convert_cuda(mid, out, params_, stream));
    } else {
      CO_CUDA_ONLY(convert_cuda(window, mid, params_, stream));
      resize_.scale_cuda(mid, out, workspace.data, stream);
    }
  }
  resize_.turn_cuda(whole_out, workspace.data, stream);
}

void ConvertOperation::run_reference(const ImageRef& in, const ImageRef& whole_out,
                                     const Workspace& workspace) const {
  run_host(in, whole_out, workspace, false);
}

void ConvertOperation::run_cpu(const ImageRef& in, const ImageRef& whole_out,
                               const Workspace& workspace) const {
  run_host(in, whole_out, workspace, true);
}

void ConvertOperation::run_host(const ImageRef& in, const ImageRef& whole_out,
                                const Workspace& workspace, bool fast) const {
  // `fast`: each conversion by convert_cpu where it takes the pair, each
  // scaling by the cpu backend's pass.
  const auto convert = [this, fast](const ImageRef& from, const ImageRef& to) {
    if (!fast || !convert_cpu(from, to, params_)) convert_reference(from, to, params_);
  };
  const auto scale = [this, fast, &workspace](const ImageRef& from, const ImageRef& to) {
    if (fast)
      resize_.scale_cpu(from, to, workspace.data);
    else
      resize_.scale_reference(from, to, workspace.data);
  };
  if (!resize_.active()) return convert(in, whole_out);
  resize_.fill_borders_reference(whole_out);
  const ImageRef window = resize_.window(in);
  const ImageRef out = resize_.target(whole_out, workspace.data);
  if (!resize_.scales()) {
    convert(window, out);
  } else if (in.format == out.format) {
    scale(window, out);
  } else {
    bool scale_first = false;
    const ImageRef mid = between(window, out, workspace.data, &scale_first);
    if (scale_first) {
      scale(window, mid);
      convert(mid, out);
    } else {
      convert(window, mid);
      scale(mid, out);
    }
  }
  resize_.turn_reference(whole_out, workspace.data);
}

bool ConvertOperation::cpu_rows_at_once(PixelFormat in, PixelFormat out) const {
  return Operation::cpu_rows_at_once(in, out) ||
         (band_halo(in, out) >= 0 && convert_cpu_takes(in, out, params_));
}

void ConvertOperation::run_cpu_rows(const ImageRef& in, const ImageRef& out,
                                    const Workspace& workspace, int y0, int y1) const {
  if (!bands_by_view(in.format, out.format))
    return run_cpu(image_rows(in, y0, y1), image_rows(out, y0, y1), workspace);  // halo 0
  // Rows that read their neighbours: made from the whole frame.
  if (!convert_cpu(in, out, params_, y0, y1))
    throw OperationError(std::string("convert: no rows path from ") + format_info(in.format).name +
                         " to " + format_info(out.format).name);
}

const OperationEntry& convert_entry() {
  static const OperationEntry entry{
      "convert",
      "Convert: to the format and size downstream asks for, with the caps' colorimetry "
      "(matrix, range, chroma siting) as videoconvert converts and scaled as videoscale "
      "scales; e.g. cudaoverlap kernel=convert ! video/x-raw,format=NV12,width=1280,height=720",
      true, resize_params(), [](const KernelParams& p) -> std::shared_ptr<const Operation> {
        return std::make_shared<ConvertOperation>(p.convert, p.values, p.sizes);
      }};
  return entry;
}

}  // namespace cudaoverlap
