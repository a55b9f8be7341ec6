// `convert`'s debayering of 8-bit Bayer mosaics (bggr, rggb, grbg, gbrg)
// to 4- and 3-byte RGB, shared by its CPU reference (convert.cpp) and its
// CUDA kernel (debayer.cu), so the two agree to the byte.
//
// The method is bayer2rgb's (gst-plugins-bad 1.22), pixel for pixel:
//
// - Each row is first split into its two colours, each brought to every
//   column: a sample in its own column is taken as it is; between two of
//   its samples, their average (rounded up); in column 0 and in the last
//   two columns, the one neighbour to the right (column 0) or the left.
// - A pixel's own colour comes from its row. Green at a red or blue pixel
//   is the average of (the average of the green above and below) and (the
//   row's green there). Red or blue on a row that lacks it is the average
//   of the rows above and below.
// - The first row's row above is row 1; the last row's row below is the
//   one above it (row h - 2), a mirror like the top edge's. Here bayer2rgb
//   1.22 reads a stale line of its ring buffer (row h - 4): its last row
//   differs from this one where vertical neighbours are averaged, and that
//   row is the only difference (tests/kernels/test_vs_gstreamer.cpp).
// - bayer2rgb processes pixels in pairs and leaves the last column of an
//   odd-width picture unwritten (it crashes on some odd widths); here the
//   rules above define every column.
// - Alpha (4-byte formats) is 255.
//
// Private to kernels/.
#pragma once

#include <cstdint>

#include "kernels/convert/convert_math.h"

namespace cudaoverlap {
namespace debayer_math {

CO_HD int avg(int a, int b) { return (a + b + 1) >> 1; }

// The colour of columns of parity `p` in a row of `w` samples, brought to
// column x. `row(i)` reads sample i of the row.
template <class Row>
CO_HD int along(const Row& row, int w, int x, int p) {
  if ((x & 1) == p) return row(x);
  if (x == 0) return row(w > 1 ? x + 1 : x);  // relative to x: registers on the device
  if (x >= w - 2) return row(x - 1);
  return avg(row(x - 1), row(x + 1));
}

// The rows above and below row y of an h-row mosaic (mirrored at the edges).
CO_HD int row_above(int y, int h) { return y > 0 ? y - 1 : (h > 1 ? 1 : 0); }
CO_HD int row_below(int y, int h) { return y < h - 1 ? y + 1 : (h > 1 ? h - 2 : 0); }

// R, G and B of pixel (x, y) of a mosaic whose red sits at `red` (x + 2 y
// within each 2x2 cell; FormatInfo::bayer_red), from the row above, the
// row itself and the row below.
template <class Row>
CO_HD void pixel(const Row& above, const Row& here, const Row& below, int w, int x, int y, int red,
                 int* r, int* g, int* b) {
  const int red_x = red & 1, red_y = red >> 1;
  // Rows of one parity hold the colour of the even columns (blue where red
  // is in the odd columns, else red), with green in the odd ones; the other
  // rows hold green in the even columns and the other colour.
  const bool even_colour_row = ((y ^ red_x ^ red_y) & 1) == 0;
  int even_colour, green, odd_colour;
  if (even_colour_row) {
    even_colour = along(here, w, x, 0);
    const int row_green = along(here, w, x, 1);
    green = (x & 1) ? row_green : avg(avg(along(above, w, x, 0), along(below, w, x, 0)), row_green);
    odd_colour = avg(along(above, w, x, 1), along(below, w, x, 1));
  } else {
    even_colour = avg(along(above, w, x, 0), along(below, w, x, 0));
    const int row_green = along(here, w, x, 0);
    green = (x & 1) ? avg(avg(along(above, w, x, 1), along(below, w, x, 1)), row_green) : row_green;
    odd_colour = along(here, w, x, 1);
  }
  *r = red_x ? odd_colour : even_colour;
  *g = green;
  *b = red_x ? even_colour : odd_colour;
}

}  // namespace debayer_math
}  // namespace cudaoverlap
