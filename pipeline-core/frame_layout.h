// Where each plane of a frame lives inside one block of memory: the
// format-agnostic description the engine stages, uploads and downloads by.
// NV12, I420 and packed RGB all go through the same code as a list of planes
// (offset, stride, row bytes, rows).
#pragma once

#include <cstddef>
#include <string>

#include "kernels/video_format.h"

namespace cudaoverlap {

struct FrameLayout {
  PixelFormat format = PixelFormat::kRGBA;
  int width = 0;
  int height = 0;
  size_t offset[kMaxPlanes] = {};
  size_t stride[kMaxPlanes] = {};
  size_t size = 0;  // bytes the whole frame occupies

  // Planes one after another, each row padded to a multiple of
  // `stride_align` and each plane starting on a multiple of `plane_align`.
  // stride_align 4 gives GStreamer's default layout for every format here.
  static FrameLayout packed(PixelFormat format, int width, int height, size_t stride_align = 4,
                            size_t plane_align = 1);

  int n_planes() const { return format_info(format).n_planes; }
  size_t row_bytes(int plane) const { return plane_row_bytes(format, plane, width); }
  size_t rows(int plane) const { return plane_rows(format, plane, height); }
  // The bytes of the frame's pixels, row padding left out: what a copy of
  // it moves.
  size_t pixel_bytes() const {
    size_t bytes = 0;
    for (int p = 0; p < n_planes(); ++p) bytes += row_bytes(p) * rows(p);
    return bytes;
  }
  // Views of the planes when the frame starts at `base`.
  ImageRef at(uint8_t* base) const;
  bool operator==(const FrameLayout& o) const;
  bool operator!=(const FrameLayout& o) const { return !(*this == o); }

  // Empty when the layout is consistent (strides cover rows, planes fit in
  // `size`), else a sentence saying what is wrong.
  std::string validate() const;
};

}  // namespace cudaoverlap
