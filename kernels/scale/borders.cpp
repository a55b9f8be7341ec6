// See borders.h.
#include "kernels/scale/borders.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/convert/convert.h"

namespace cudaoverlap {
namespace {

int groups(int size, int shift) { return (size + (1 << shift) - 1) >> shift; }

}  // namespace

BorderColour border_colour(PixelFormat format, uint32_t argb, const Colorimetry& colorimetry) {
  // The colour as two by two pixels of the format (every group spans at
  // most two pixels each way), converted as convert would.
  uint8_t rgba[2 * 2 * 4];
  for (int i = 0; i < 4; ++i) {
    rgba[4 * i + 0] = static_cast<uint8_t>(argb >> 16);
    rgba[4 * i + 1] = static_cast<uint8_t>(argb >> 8);
    rgba[4 * i + 2] = static_cast<uint8_t>(argb);
    rgba[4 * i + 3] = static_cast<uint8_t>(argb >> 24);
  }
  ImageRef from;
  from.format = PixelFormat::kRGBA;
  from.width = from.height = 2;
  from.planes[0] = {rgba, 8};
  size_t bytes = 0;
  aligned_image(format, 2, 2, 16, nullptr, &bytes);
  std::vector<uint8_t> storage(bytes);
  const ImageRef image = aligned_image(format, 2, 2, 16, storage.data(), &bytes);
  ConvertParams params;
  params.out = colorimetry;
  if (!convert_check(from, image, params).empty()) params.out.rgb_limited = false;
  convert_reference(from, image, params);
  BorderColour colour;
  const FormatInfo& info = format_info(format);
  for (int p = 0; p < info.n_planes; ++p)
    std::memcpy(colour.pattern[p], image.planes[p].data, static_cast<size_t>(info.pixel_bytes[p]));
  return colour;
}

BorderFill border_fill(const ImageRef& out, const FrameSizes& sizes, const BorderColour& colour) {
  BorderFill fill;
  const FormatInfo& info = format_info(out.format);
  fill.n_planes = info.n_planes;
  for (int p = 0; p < info.n_planes; ++p) {
    BorderFill::Plane& f = fill.plane[p];
    const int xs = info.x_shift[p], ys = info.y_shift[p];
    f.data = out.planes[p].data;
    f.stride = out.planes[p].stride;
    f.unit_bytes = info.pixel_bytes[p];
    f.row_bytes = groups(out.width, xs) * f.unit_bytes;
    f.rows = groups(out.height, ys);
    f.x0 = (sizes.dest_x >> xs) * f.unit_bytes;
    f.x1 = groups(sizes.dest_x + sizes.picture_width(), xs) * f.unit_bytes;
    f.y0 = sizes.dest_y >> ys;
    f.y1 = groups(sizes.dest_y + sizes.picture_height(), ys);
    std::memcpy(f.pattern, colour.pattern[p], static_cast<size_t>(f.unit_bytes));
  }
  return fill;
}

BorderFill border_rows(const BorderFill& fill, PixelFormat format, int y0, int y1) {
  BorderFill rows = fill;
  const FormatInfo& info = format_info(format);
  for (int p = 0; p < fill.n_planes; ++p) {
    BorderFill::Plane& f = rows.plane[p];
    const int ys = info.y_shift[p];
    const int r0 = std::min(y0 >> ys, f.rows), r1 = std::min(groups(y1, ys), f.rows);
    f.data += static_cast<size_t>(r0) * f.stride;
    f.rows = std::max(r1 - r0, 0);
    f.y0 = std::clamp(f.y0 - r0, 0, f.rows);
    f.y1 = std::clamp(f.y1 - r0, 0, f.rows);
  }
  return rows;
}

void fill_borders_reference(const BorderFill& fill) {
  for (int p = 0; p < fill.n_planes; ++p) {
    const BorderFill::Plane& f = fill.plane[p];
    for (int y = 0; y < f.rows; ++y) {
      uint8_t* row = f.data + static_cast<size_t>(y) * f.stride;
      const bool whole = y < f.y0 || y >= f.y1;
      for (int x = 0; x < f.row_bytes; ++x)
        if (whole || x < f.x0 || x >= f.x1) row[x] = f.pattern[x % f.unit_bytes];
    }
  }
}

}  // namespace cudaoverlap
