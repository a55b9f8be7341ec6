// Plane geometry of every PixelFormat; see video_format.h.
#include "video_format.h"

namespace cudaoverlap {
namespace {

constexpr FormatInfo kPacked(const char* name, int alpha_byte) {
  return FormatInfo{name, 1, {4, 0, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 0}, alpha_byte, false};
}

// Indexed by PixelFormat.
constexpr FormatInfo kFormats[] = {
    kPacked("RGBA", 3),
    kPacked("BGRA", 3),
    kPacked("RGBx", 3),
    kPacked("BGRx", 3),
    kPacked("ARGB", 0),
    kPacked("ABGR", 0),
    {"NV12", 2, {1, 2, 0, 0}, {0, 1, 0, 0}, {0, 1, 0, 0}, -1, true},
    {"I420", 3, {1, 1, 1, 0}, {0, 1, 1, 0}, {0, 1, 1, 0}, -1, true},
    {"GRAY8", 1, {1, 0, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 0}, -1, false},
};

size_t round_up_shift(int value, int shift) {
  return (static_cast<size_t>(value) + ((size_t{1} << shift) - 1)) >> shift;
}

}  // namespace

const FormatInfo& format_info(PixelFormat format) { return kFormats[static_cast<int>(format)]; }

const std::vector<PixelFormat>& all_pixel_formats() {
  static const std::vector<PixelFormat> formats = [] {
    std::vector<PixelFormat> all;
    for (size_t i = 0; i < sizeof kFormats / sizeof kFormats[0]; ++i)
      all.push_back(static_cast<PixelFormat>(i));
    return all;
  }();
  return formats;
}

size_t plane_row_bytes(PixelFormat format, int plane, int width) {
  const FormatInfo& info = format_info(format);
  return round_up_shift(width, info.x_shift[plane]) * static_cast<size_t>(info.pixel_bytes[plane]);
}

size_t plane_rows(PixelFormat format, int plane, int height) {
  return round_up_shift(height, format_info(format).y_shift[plane]);
}

}  // namespace cudaoverlap
