// CPU reference of the `flip` kernel (see flip.h): for each output pixel
// group, the input one it comes from, plane by plane.
#include "kernels/flip/flip.h"

#include <cstring>

#include "kernels/flip/flip_math.h"

namespace cudaoverlap {

bool is_packed422(PixelFormat format) {
  return format == PixelFormat::kYUY2 || format == PixelFormat::kUYVY;
}

bool flip_swaps_size(FlipDirection direction) {
  switch (direction) {
    case FlipDirection::k90R:
    case FlipDirection::k90L:
    case FlipDirection::kUlLr:
    case FlipDirection::kUrLl:
      return true;
    default:
      return false;
  }
}

void flip_reference(const ImageRef& in, const ImageRef& out, FlipDirection direction) {
  const FormatInfo& info = format_info(in.format);
  if (is_packed422(in.format) && direction != FlipDirection::kIdentity) {
    for (int y = 0; y < out.height; ++y)
      for (int x = 0; x < out.width; x += 2)
        flip_math::flip_y422_pair(in, out, direction, info.comp[0].offset, info.comp[1].offset,
                                  info.comp[2].offset, x, y);
    return;
  }
  for (int p = 0; p < info.n_planes; ++p) {
    const size_t pixel = static_cast<size_t>(info.pixel_bytes[p]);
    // Plane sizes in pixel groups.
    const long in_w = static_cast<long>(plane_row_bytes(in.format, p, in.width) / pixel);
    const long in_h = static_cast<long>(plane_rows(in.format, p, in.height));
    const long out_w = static_cast<long>(plane_row_bytes(out.format, p, out.width) / pixel);
    const long out_h = static_cast<long>(plane_rows(out.format, p, out.height));
    for (long y = 0; y < out_h; ++y) {
      uint8_t* dst = out.planes[p].data + static_cast<size_t>(y) * out.planes[p].stride;
      for (long x = 0; x < out_w; ++x) {
        long sx = x, sy = y;
        switch (direction) {
          case FlipDirection::kIdentity:
            break;
          case FlipDirection::k90R:
            sx = y;
            sy = in_h - 1 - x;
            break;
          case FlipDirection::k180:
            sx = in_w - 1 - x;
            sy = in_h - 1 - y;
            break;
          case FlipDirection::k90L:
            sx = in_w - 1 - y;
            sy = x;
            break;
          case FlipDirection::kHoriz:
            sx = in_w - 1 - x;
            break;
          case FlipDirection::kVert:
            sy = in_h - 1 - y;
            break;
          case FlipDirection::kUlLr:
            sx = y;
            sy = x;
            break;
          case FlipDirection::kUrLl:
            sx = in_w - 1 - y;
            sy = in_h - 1 - x;
            break;
        }
        const uint8_t* src = in.planes[p].data + static_cast<size_t>(sy) * in.planes[p].stride +
                             static_cast<size_t>(sx) * pixel;
        std::memcpy(dst + static_cast<size_t>(x) * pixel, src, pixel);
      }
    }
  }
}

std::vector<PixelFormat> FlipOperation::output_formats(PixelFormat in) const {
  using F = PixelFormat;
  std::vector<F> taken = rgb32_yuv420_gray8_formats();
  taken.insert(taken.end(), {F::kYUY2, F::kUYVY, F::kRGB, F::kBGR, F::kNV21, F::kY444,
                             F::kP010_10LE, F::kI420_10LE, F::kGRAY16_LE});
  // Turned, 4:2:2's chroma would be subsampled down instead of across.
  if (!flip_swaps_size(direction_)) taken.insert(taken.end(), {F::kNV16, F::kY42B});
  return keep_format_of(in, taken);
}

void FlipOperation::enqueue_cuda(const ImageRef& in, const ImageRef& out, const Workspace&,
                                 CUstream_st* stream) const {
  CO_CUDA_ONLY(flip_cuda(in, out, direction_, stream));
}

void FlipOperation::run_reference(const ImageRef& in, const ImageRef& out, const Workspace&) const {
  flip_reference(in, out, direction_);
}

const ParamSpec& flip_direction_param() {
  // GstVideoOrientationMethod's values and nicks, but auto and custom, which
  // need tags or a matrix.
  static const ParamSpec spec{
      "video-direction",
      "Video direction",
      "kernel=flip, scale and convert: rotation or mirror, as videoflip's (auto and custom are "
      "not taken); 90r, 90l, ul-lr and ur-ll swap width and height",
      ParamSpec::Type::kEnum,
      0,
      7,
      0,
      {{0, "identity", "Identity (no rotation)"},
       {1, "90r", "Rotate clockwise 90 degrees"},
       {2, "180", "Rotate 180 degrees"},
       {3, "90l", "Rotate counter-clockwise 90 degrees"},
       {4, "horiz", "Flip horizontally"},
       {5, "vert", "Flip vertically"},
       {6, "ul-lr", "Flip across upper left/lower right diagonal"},
       {7, "ur-ll", "Flip across upper right/lower left diagonal"}},
      "GstVideoOrientationMethod"};
  return spec;
}

const OperationEntry& flip_entry() {
  static const OperationEntry entry{
      "flip",
      "Flip: rotate or mirror as videoflip does, by video-direction (width and height swap "
      "for 90r, 90l, ul-lr and ur-ll)",
      true,
      {flip_direction_param()},
      [](const KernelParams& p) -> std::shared_ptr<const Operation> {
        return std::make_shared<FlipOperation>(p.values);
      }};
  return entry;
}

}  // namespace cudaoverlap
