// See frame_layout.h.
#include "frame_layout.h"

namespace cudaoverlap {
namespace {

size_t round_up(size_t value, size_t align) { return (value + align - 1) / align * align; }

}  // namespace

FrameLayout FrameLayout::packed(PixelFormat format, int width, int height, size_t stride_align,
                                size_t plane_align) {
  FrameLayout layout;
  layout.format = format;
  layout.width = width;
  layout.height = height;
  size_t at = 0;
  for (int p = 0; p < layout.n_planes(); ++p) {
    at = round_up(at, plane_align);
    layout.offset[p] = at;
    layout.stride[p] = round_up(layout.row_bytes(p), stride_align);
    at += layout.stride[p] * layout.rows(p);
  }
  layout.size = round_up(at, plane_align);
  return layout;
}

ImageRef FrameLayout::at(uint8_t* base) const {
  ImageRef image;
  image.format = format;
  image.width = width;
  image.height = height;
  for (int p = 0; p < n_planes(); ++p) image.planes[p] = PlaneRef{base + offset[p], stride[p]};
  return image;
}

bool FrameLayout::operator==(const FrameLayout& o) const {
  if (format != o.format || width != o.width || height != o.height || size != o.size) return false;
  for (int p = 0; p < kMaxPlanes; ++p)
    if (offset[p] != o.offset[p] || stride[p] != o.stride[p]) return false;
  return true;
}

std::string FrameLayout::validate() const {
  if (width <= 0 || height <= 0)
    return "frame size " + std::to_string(width) + "x" + std::to_string(height) + " has no pixels";
  for (int p = 0; p < n_planes(); ++p) {
    if (stride[p] < row_bytes(p))
      return "plane " + std::to_string(p) + " stride " + std::to_string(stride[p]) +
             " is smaller than its " + std::to_string(row_bytes(p)) + " bytes of pixels";
    const size_t end = offset[p] + stride[p] * (rows(p) - 1) + row_bytes(p);
    if (end > size)
      return "plane " + std::to_string(p) + " ends at byte " + std::to_string(end) +
             " but the frame has " + std::to_string(size);
  }
  return {};
}

}  // namespace cudaoverlap
