// Plane geometry of every PixelFormat; see video_format.h.
#include "kernels/video_format.h"

namespace cudaoverlap {
namespace {

// Components: plane, offset, pixel stride, depth, shift, x and y subsampling.
constexpr Component c8(int plane, int offset, int stride, int x_sub = 0, int y_sub = 0) {
  return Component{plane, offset, stride, 8, 0, x_sub, y_sub};
}
constexpr Component c16(int plane, int offset, int stride, int depth, int shift, int x_sub = 0,
                        int y_sub = 0) {
  return Component{plane, offset, stride, depth, shift, x_sub, y_sub};
}

// 4-byte RGB with R, G, B and the alpha (or padding) byte at these offsets.
constexpr FormatInfo rgb32(const char* name, int r, int g, int b, int a, bool alpha) {
  return FormatInfo{name,
                    1,
                    {4, 0, 0, 0},
                    {0, 0, 0, 0},
                    {0, 0, 0, 0},
                    alpha ? 4 : 3,
                    {c8(0, r, 4), c8(0, g, 4), c8(0, b, 4), c8(0, a, 4)},
                    a,
                    false,
                    alpha,
                    1};
}

constexpr FormatInfo rgb24(const char* name, int r, int g, int b) {
  return FormatInfo{name,
                    1,
                    {3, 0, 0, 0},
                    {0, 0, 0, 0},
                    {0, 0, 0, 0},
                    3,
                    {c8(0, r, 3), c8(0, g, 3), c8(0, b, 3), {}},
                    -1,
                    false,
                    false,
                    1};
}

// 8-bit planar YUV, chroma subsampled by (xs, ys) in each direction.
constexpr FormatInfo planar8(const char* name, int xs, int ys) {
  return FormatInfo{name,
                    3,
                    {1, 1, 1, 0},
                    {0, xs, xs, 0},
                    {0, ys, ys, 0},
                    3,
                    {c8(0, 0, 1), c8(1, 0, 1, xs, ys), c8(2, 0, 1, xs, ys), {}},
                    -1,
                    true,
                    false,
                    1};
}

// 8-bit Y plane and interleaved chroma, U at byte u and V at byte v of each pair.
constexpr FormatInfo semi8(const char* name, int u, int v, int ys) {
  return FormatInfo{name,
                    2,
                    {1, 2, 0, 0},
                    {0, 1, 0, 0},
                    {0, ys, 0, 0},
                    3,
                    {c8(0, 0, 1), c8(1, u, 2, 1, ys), c8(1, v, 2, 1, ys), {}},
                    -1,
                    true,
                    false,
                    1};
}

// 4:2:2 packed in one plane, two pixels in 4 bytes, Y and U, V at these bytes.
constexpr FormatInfo packed422(const char* name, int y, int u, int v) {
  return FormatInfo{name,
                    1,
                    {4, 0, 0, 0},
                    {1, 0, 0, 0},
                    {0, 0, 0, 0},
                    3,
                    {c8(0, y, 2), c8(0, u, 4, 1, 0), c8(0, v, 4, 1, 0), {}},
                    -1,
                    true,
                    false,
                    1};
}

// One 8-bit sample per pixel in one plane: GRAY8, and the Bayer mosaics
// (red at x + 2 y of each 2x2 cell; -1 for grey).
constexpr FormatInfo one_byte(const char* name, int bayer_red = -1) {
  return FormatInfo{
      name,  1, {1, 0, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 0}, 1, {c8(0, 0, 1), {}, {}, {}}, -1, false,
      false, 1, bayer_red};
}

constexpr FormatInfo bayer8(const char* name, int red_x, int red_y) {
  return one_byte(name, red_x + 2 * red_y);
}

// Indexed by PixelFormat.
constexpr FormatInfo kFormats[] = {
    rgb32("RGBA", 0, 1, 2, 3, true),
    rgb32("BGRA", 2, 1, 0, 3, true),
    rgb32("RGBx", 0, 1, 2, 3, false),
    rgb32("BGRx", 2, 1, 0, 3, false),
    rgb32("ARGB", 1, 2, 3, 0, true),
    rgb32("ABGR", 3, 2, 1, 0, true),
    semi8("NV12", 0, 1, 1),
    planar8("I420", 1, 1),
    one_byte("GRAY8"),
    packed422("YUY2", 0, 1, 3),
    packed422("UYVY", 1, 0, 2),
    rgb24("RGB", 0, 1, 2),
    rgb24("BGR", 2, 1, 0),
    semi8("NV21", 1, 0, 1),
    semi8("NV16", 0, 1, 0),
    planar8("Y42B", 1, 0),
    planar8("Y444", 0, 0),
    {"P010_10LE",
     2,
     {2, 4, 0, 0},
     {0, 1, 0, 0},
     {0, 1, 0, 0},
     3,
     {c16(0, 0, 2, 10, 6), c16(1, 0, 4, 10, 6, 1, 1), c16(1, 2, 4, 10, 6, 1, 1), {}},
     -1,
     true,
     false,
     2},
    {"I420_10LE",
     3,
     {2, 2, 2, 0},
     {0, 1, 1, 0},
     {0, 1, 1, 0},
     3,
     {c16(0, 0, 2, 10, 0), c16(1, 0, 2, 10, 0, 1, 1), c16(2, 0, 2, 10, 0, 1, 1), {}},
     -1,
     true,
     false,
     2},
    {"GRAY16_LE",
     1,
     {2, 0, 0, 0},
     {0, 0, 0, 0},
     {0, 0, 0, 0},
     1,
     {c16(0, 0, 2, 16, 0), {}, {}, {}},
     -1,
     false,
     false,
     2},
    // GStreamer's names for video/x-bayer's format field.
    bayer8("bggr", 1, 1),
    bayer8("rggb", 0, 0),
    bayer8("grbg", 1, 0),
    bayer8("gbrg", 0, 1),
};
static_assert(sizeof kFormats / sizeof kFormats[0] ==
                  static_cast<size_t>(PixelFormat::kBayerGBRG) + 1,
              "one row per PixelFormat, in the enum's order");

size_t round_up_shift(int value, int shift) {
  return (static_cast<size_t>(value) + ((size_t{1} << shift) - 1)) >> shift;
}

}  // namespace

const FormatInfo& format_info(PixelFormat format) { return kFormats[static_cast<int>(format)]; }

int colour_components(PixelFormat format) {
  const FormatInfo& info = format_info(format);
  return info.has_alpha ? info.n_components - 1 : info.n_components;
}

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

ImageRef aligned_image(PixelFormat format, int width, int height, size_t align, uint8_t* data,
                       size_t* bytes) {
  ImageRef image;
  image.format = format;
  image.width = width;
  image.height = height;
  auto up = [align](size_t v) { return (v + align - 1) / align * align; };
  size_t at = 0;
  for (int p = 0; p < format_info(format).n_planes; ++p) {
    at = up(at);
    image.planes[p].stride = up(plane_row_bytes(format, p, width));
    image.planes[p].data = data ? data + at : nullptr;
    at += image.planes[p].stride * plane_rows(format, p, height);
  }
  *bytes = up(at);
  return image;
}

int stored_samples(PixelFormat format, int component, int width) {
  const Component& k = format_info(format).comp[component];
  const size_t row_bytes = plane_row_bytes(format, k.plane, width);
  return static_cast<int>((row_bytes - static_cast<size_t>(k.offset) + k.pixel_stride - 1) /
                          static_cast<size_t>(k.pixel_stride));
}

namespace {

uint8_t* sample_address(const ImageRef& image, const Component& k, int x, int y) {
  const PlaneRef& p = image.planes[k.plane];
  return p.data + static_cast<size_t>(y) * p.stride + k.offset +
         static_cast<size_t>(x) * k.pixel_stride;
}

}  // namespace

uint32_t read_sample(const ImageRef& image, int component, int x, int y) {
  const FormatInfo& info = format_info(image.format);
  const Component& k = info.comp[component];
  const uint8_t* s = sample_address(image, k, x, y);
  if (info.sample_bytes == 1) return *s;
  return ((s[0] | (uint32_t{s[1]} << 8)) >> k.shift) & ((uint32_t{1} << k.depth) - 1);
}

void write_sample(const ImageRef& image, int component, int x, int y, uint32_t value) {
  const FormatInfo& info = format_info(image.format);
  const Component& k = info.comp[component];
  uint8_t* d = sample_address(image, k, x, y);
  if (info.sample_bytes == 1) {
    *d = static_cast<uint8_t>(value);
    return;
  }
  const uint32_t mask = ((uint32_t{1} << k.depth) - 1) << k.shift;
  const uint32_t word = ((d[0] | (uint32_t{d[1]} << 8)) & ~mask) | (value << k.shift);
  d[0] = static_cast<uint8_t>(word);
  d[1] = static_cast<uint8_t>(word >> 8);
}

}  // namespace cudaoverlap
