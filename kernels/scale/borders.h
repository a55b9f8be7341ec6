// The border `add-borders` leaves around the picture when downstream's
// width and height do not keep the display aspect ratio: every byte of the
// output outside the picture's place gets the border colour, as the output
// format stores it.
#pragma once

#include <cstdint>

#include "kernels/kernel_params.h"
#include "kernels/video_format.h"

struct CUstream_st;

namespace cudaoverlap {

// What filling one output format's border takes: per plane, the bytes of
// one group of pixels (FormatInfo::pixel_bytes) in the colour, and the
// picture's place in bytes and rows. A group the picture only partly
// covers (a chroma pair at its odd right edge) is the picture's.
struct BorderFill {
  struct Plane {
    uint8_t* data = nullptr;
    size_t stride = 0;
    int row_bytes = 0, rows = 0;  // of the whole plane
    int x0 = 0, x1 = 0;           // the picture's bytes in a row
    int y0 = 0, y1 = 0;           // the picture's rows
    int unit_bytes = 1;
    uint8_t pattern[16] = {};
  };
  int n_planes = 0;
  Plane plane[kMaxPlanes];
};

// A colour as one format stores it: per plane, the bytes of one group of
// pixels.
struct BorderColour {
  uint8_t pattern[kMaxPlanes][16] = {};
};

// `argb` (0xAARRGGBB, full-range RGB) as `format` with `colorimetry`
// stores it (convert's arithmetic); made once per caps, not per frame.
BorderColour border_colour(PixelFormat format, uint32_t argb, const Colorimetry& colorimetry);

// `out`'s border around the picture at `sizes`' dest_* (FrameSizes), in
// `colour` (made for `out`'s format).
BorderFill border_fill(const ImageRef& out, const FrameSizes& sizes, const BorderColour& colour);

// `fill` kept to output rows [y0, y1) (y0 a multiple of the format's
// vertical subsampling).
BorderFill border_rows(const BorderFill& fill, PixelFormat format, int y0, int y1);

void fill_borders_reference(const BorderFill& fill);
void fill_borders_cuda(const BorderFill& fill, CUstream_st* stream);

}  // namespace cudaoverlap
