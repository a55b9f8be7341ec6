// See resize.h.
#include "kernels/scale/resize.h"

#include <cstring>

#include "kernels/scale/scale_taps.h"

namespace cudaoverlap {

Resize::Resize(const ParamValues& values, const FrameSizes& sizes) : sizes_(sizes) {
  if (values.has("crop-left"))
    crop_ = Crop{values.integer("crop-left"), values.integer("crop-right"),
                 values.integer("crop-top"), values.integer("crop-bottom")};
  if (!sizes_.known() || window_width() < 1 || window_height() < 1) return;
  scales_ = window_width() != sizes_.out_width || window_height() != sizes_.out_height;
  active_ = scales_ || crop_.any();
  if (!scales_) return;
  const ScaleMethod method =
      values.has("method") ? values.choice<ScaleMethod>("method") : ScaleMethod::kBilinear;
  tables_ = scale_tables(
      method, FrameSizes{window_width(), window_height(), sizes_.out_width, sizes_.out_height});
}

std::string Resize::check(const char* kernel, const ImageRef& in, const ImageRef& out) const {
  const std::string name = kernel;
  auto size = [](int w, int h) { return std::to_string(w) + "x" + std::to_string(h); };
  if (!sizes_.known()) return {};
  if (window_width() < 1 || window_height() < 1)
    return "crop-left " + std::to_string(crop_.left) + ", crop-right " +
           std::to_string(crop_.right) + ", crop-top " + std::to_string(crop_.top) +
           " and crop-bottom " + std::to_string(crop_.bottom) + " leave nothing of a " +
           size(sizes_.in_width, sizes_.in_height) + " frame";
  if (in.width != sizes_.in_width || in.height != sizes_.in_height ||
      out.width != sizes_.out_width || out.height != sizes_.out_height)
    return name + " was made for " + size(sizes_.in_width, sizes_.in_height) + " to " +
           size(sizes_.out_width, sizes_.out_height) + ", not " + size(in.width, in.height) +
           " to " + size(out.width, out.height);
  // The window starts on a whole chroma sample (and a whole mosaic cell).
  const FormatInfo& info = format_info(in.format);
  const bool pairs_x = is_bayer(in.format) || (info.n_components > 1 && info.comp[1].x_sub);
  const bool pairs_y = is_bayer(in.format) || (info.n_components > 1 && info.comp[1].y_sub);
  if ((pairs_x && crop_.left % 2) || (pairs_y && crop_.top % 2))
    return std::string(pairs_x && crop_.left % 2 ? "crop-left" : "crop-top") +
           " must be even for " + info.name +
           (is_bayer(in.format) ? ", a mosaic of 2x2 cells"
                                : ", whose chroma is shared by pairs of pixels");
  return {};
}

ImageRef Resize::window(const ImageRef& in) const {
  ImageRef w = in;
  w.width = window_width();
  w.height = window_height();
  const FormatInfo& info = format_info(in.format);
  for (int p = 0; p < info.n_planes; ++p)
    w.planes[p].data += (crop_.top >> info.y_shift[p]) * in.planes[p].stride +
                        static_cast<size_t>(crop_.left >> info.x_shift[p]) * info.pixel_bytes[p];
  return w;
}

void Resize::prepare_cuda(uint8_t* workspace, CUstream_st* stream) const {
  if (scales_) CO_CUDA_ONLY(scale_prepare_cuda(tables_, workspace, stream));
}

void Resize::prepare_reference(uint8_t* workspace) const {
  if (scales_) std::memcpy(workspace, tables_.bytes.data(), tables_.bytes.size());
}

void Resize::scale_cuda(const ImageRef& in, const ImageRef& out, const uint8_t* workspace,
                        CUstream_st* stream) const {
  CO_CUDA_ONLY(::cudaoverlap::scale_cuda(in, out, tables_, workspace, stream));
}

void Resize::scale_reference(const ImageRef& in, const ImageRef& out,
                             const uint8_t* workspace) const {
  ::cudaoverlap::scale_reference(in, out, tables_, workspace);
}

const std::vector<ParamSpec>& resize_params() {
  auto edge = [](const char* name, const char* nick, const char* edge_name) {
    return ParamSpec{name, nick, edge_name, ParamSpec::Type::kInt, 0, 65535, 0, {}, nullptr, false};
  };
  static const std::vector<ParamSpec> specs = {
      scale_method_param(),
      edge("crop-left", "Crop left",
           "kernel=scale and kernel=convert: pixels taken off the input's left edge (even where "
           "chroma or a mosaic pairs columns)"),
      edge("crop-right", "Crop right",
           "kernel=scale and kernel=convert: pixels taken off the input's right edge"),
      edge("crop-top", "Crop top",
           "kernel=scale and kernel=convert: rows taken off the input's top (even where chroma or "
           "a mosaic pairs rows)"),
      edge("crop-bottom", "Crop bottom",
           "kernel=scale and kernel=convert: rows taken off the input's bottom")};
  return specs;
}

}  // namespace cudaoverlap
