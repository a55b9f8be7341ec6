// See resize.h.
#include "kernels/scale/resize.h"

#include <algorithm>
#include <cstring>

#include "kernels/error.h"
#include "kernels/flip/flip.h"
#include "kernels/scale/scale_taps.h"

namespace cudaoverlap {
namespace {

// The frame to turn starts its planes and rows on 256 bytes, as the
// engine's own device frames do.
constexpr size_t kTurnAlign = 256;

BorderFill fill_rows(const BorderFill& fill, PixelFormat format, int y0, int y1) {
  return y1 < 0 ? fill : border_rows(fill, format, y0, y1);
}

// The input rows outputs [o0, o1) of `axis` (whose starts are at `first`)
// reach, within the input.
RowRange reach(const ScaleTables::Axis& axis, const int32_t* first, int o0, int o1) {
  return RowRange{std::max(first[o0], 0), std::min(first[o1 - 1] + axis.taps, axis.in_size)};
}

}  // namespace

Resize::Resize(const ParamValues& values, const FrameSizes& sizes, const Colorimetry& colorimetry)
    : sizes_(sizes), colorimetry_(colorimetry) {
  if (values.has("crop-left"))
    crop_ = Crop{values.integer("crop-left"), values.integer("crop-right"),
                 values.integer("crop-top"), values.integer("crop-bottom")};
  if (values.has("border-color"))
    border_argb_ = static_cast<uint32_t>(values.number("border-color"));
  if (values.has("video-direction")) direction_ = values.choice<FlipDirection>("video-direction");
  if (!sizes_.known() || window_width() < 1 || window_height() < 1) return;
  if (sizes_.has_borders())
    for (PixelFormat f : all_pixel_formats())
      if (!is_bayer(f)) colours_.emplace_back(f, border_colour(f, border_argb_, colorimetry_));
  scales_ = window_width() != upright_width() || window_height() != upright_height();
  active_ = scales_ || crop_.any() || sizes_.has_borders() || turns();
  if (scales_) {
    const ScaleMethod method =
        values.has("method") ? values.choice<ScaleMethod>("method") : ScaleMethod::kBilinear;
    tables_ = scale_tables(
        method, FrameSizes{window_width(), window_height(), upright_width(), upright_height()});
  }
  workspace_bytes_ = tables_.bytes.size();
  if (turns()) {
    // Room for the upright frame in the largest format (the format is
    // known only per frame).
    turn_at_ = (workspace_bytes_ + kTurnAlign - 1) / kTurnAlign * kTurnAlign;
    size_t most = 0;
    for (PixelFormat f : all_pixel_formats()) {
      size_t bytes = 0;
      aligned_image(f, upright_width(), upright_height(), kTurnAlign, nullptr, &bytes);
      most = std::max(most, bytes);
    }
    workspace_bytes_ = turn_at_ + most;
  }
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
  if (!can_turn(out.format))
    return name + " cannot turn " + format_info(out.format).name +
           " by video-direction: its 4:2:2 chroma would be subsampled down instead of across";
  // The picture lies inside the output and starts on a whole group of
  // pixels of every plane (no operation makes a mosaic).
  const FormatInfo& o = format_info(out.format);
  bool whole = sizes_.dest_x >= 0 && sizes_.dest_y >= 0 &&
               sizes_.dest_x + sizes_.picture_width() <= out.width &&
               sizes_.dest_y + sizes_.picture_height() <= out.height;
  for (int p = 0; p < o.n_planes; ++p)
    whole = whole && sizes_.dest_x % (1 << o.x_shift[p]) == 0 &&
            sizes_.dest_y % (1 << o.y_shift[p]) == 0;
  if (!whole)
    return name + " cannot place a " + size(sizes_.picture_width(), sizes_.picture_height()) +
           " picture at " + std::to_string(sizes_.dest_x) + "," + std::to_string(sizes_.dest_y) +
           " in a " + size(out.width, out.height) + " " + o.name + " frame";
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

ImageRef Resize::picture(const ImageRef& out) const {
  ImageRef w = out;
  w.width = sizes_.picture_width();
  w.height = sizes_.picture_height();
  const FormatInfo& info = format_info(out.format);
  for (int p = 0; p < info.n_planes; ++p)
    w.planes[p].data += (sizes_.dest_y >> info.y_shift[p]) * out.planes[p].stride +
                        static_cast<size_t>(sizes_.dest_x >> info.x_shift[p]) * info.pixel_bytes[p];
  return w;
}

const BorderColour& Resize::colour_for(PixelFormat format) const {
  for (const auto& [f, colour] : colours_)
    if (f == format) return colour;
  throw Error(std::string("no border colour for ") + format_info(format).name);
}

void Resize::fill_borders_cuda(const ImageRef& out, CUstream_st* stream, int y0, int y1) const {
  if (sizes_.has_borders())
    CO_CUDA_ONLY(::cudaoverlap::fill_borders_cuda(
        fill_rows(border_fill(out, sizes_, colour_for(out.format)), out.format, y0, y1), stream));
}

void Resize::fill_borders_reference(const ImageRef& out, int y0, int y1) const {
  if (sizes_.has_borders())
    ::cudaoverlap::fill_borders_reference(
        fill_rows(border_fill(out, sizes_, colour_for(out.format)), out.format, y0, y1));
}

RowRange Resize::picture_rows(int y0, int y1) const {
  const int p0 = std::max(y0 - sizes_.dest_y, 0);
  const int p1 = std::min(y1 - sizes_.dest_y, sizes_.picture_height());
  return p0 < p1 ? RowRange{p0, p1} : RowRange{};
}

RowRange Resize::band_reads(PixelFormat format, int y0, int y1) const {
  if (!active_) return RowRange{y0, y1};
  if (turns()) return RowRange{0, sizes_.in_height};  // any row
  const RowRange picture = picture_rows(y0, y1);
  if (picture.first >= picture.last) return RowRange{};  // border only
  RowRange rows = picture;  // a crop alone: the same rows of the window
  if (scales_) {
    auto first = [this](int axis) {
      return reinterpret_cast<const int32_t*>(tables_.bytes.data() + tables_.axes[axis].first_at);
    };
    rows = reach(tables_.axes[1], first(1), picture.first, picture.last);
    const FormatInfo& info = format_info(format);
    if (info.n_components > 1 && info.comp[1].y_sub) {
      // 4:2:0 chroma rows, each two of the window's.
      const RowRange chroma =
          reach(tables_.axes[3], first(3), picture.first / 2, (picture.last + 1) / 2);
      rows.first = std::min(rows.first, 2 * chroma.first);
      rows.last = std::max(rows.last, std::min(2 * chroma.last, window_height()));
    }
  }
  return RowRange{crop_.top + rows.first, crop_.top + rows.last};
}

bool Resize::can_turn(PixelFormat format) const {
  return !turns() ||
         !FlipOperation(ParamValues().set("video-direction", static_cast<int>(direction_)))
              .output_formats(format)
              .empty();
}

ImageRef Resize::target(const ImageRef& out, uint8_t* workspace) const {
  if (!turns()) return picture(out);
  size_t bytes = 0;
  return aligned_image(out.format, upright_width(), upright_height(), kTurnAlign,
                       workspace + turn_at_, &bytes);
}

void Resize::turn_cuda(const ImageRef& out, uint8_t* workspace, CUstream_st* stream) const {
  if (turns()) CO_CUDA_ONLY(flip_cuda(target(out, workspace), picture(out), direction_, stream));
}

void Resize::turn_reference(const ImageRef& out, uint8_t* workspace) const {
  if (turns()) flip_reference(target(out, workspace), picture(out), direction_);
}

void Resize::prepare_cuda(uint8_t* workspace, CUstream_st* stream) const {
  if (scales_) CO_CUDA_ONLY(scale_prepare_cuda(tables_, workspace, stream));
}

void Resize::prepare_reference(uint8_t* workspace) const {
  if (scales_) std::memcpy(workspace, tables_.bytes.data(), tables_.bytes.size());
}

void Resize::scale_cuda(const ImageRef& in, const ImageRef& out, const uint8_t* workspace,
                        CUstream_st* stream, int y0, int y1) const {
  CO_CUDA_ONLY(::cudaoverlap::scale_cuda(in, out, tables_, workspace, stream, y0, y1));
}

void Resize::scale_reference(const ImageRef& in, const ImageRef& out, const uint8_t* workspace,
                             int y0, int y1) const {
  ::cudaoverlap::scale_reference(in, out, tables_, workspace, y0, y1);
}

void Resize::scale_cpu(const ImageRef& in, const ImageRef& out, const uint8_t* workspace, int y0,
                       int y1) const {
  ::cudaoverlap::scale_cpu(in, out, tables_, workspace, y0, y1);
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
           "kernel=scale and kernel=convert: rows taken off the input's bottom"),
      ParamSpec{"add-borders",
                "Add borders",
                "kernel=scale and kernel=convert: where downstream's width and height would "
                "change the display aspect ratio, scale to fit and fill the rest with "
                "border-color, as videoscale does",
                ParamSpec::Type::kBool,
                0,
                1,
                1,
                {},
                nullptr,
                false},
      ParamSpec{"border-color",
                "Border color",
                "kernel=scale and kernel=convert: the borders' colour, 0xAARRGGBB",
                ParamSpec::Type::kUInt,
                0,
                4294967295.0,
                4278190080.0,
                {},
                nullptr,
                false},
      flip_direction_param()};
  return specs;
}

}  // namespace cudaoverlap
