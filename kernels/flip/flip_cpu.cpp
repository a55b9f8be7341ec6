// The cpu backend's `flip` (FlipOperation::run_cpu): the reference's
// mapping of output pixel groups to input ones (flip.cpp), with the group's
// size and the direction known at compile time, rows copied whole where
// they keep their order, and turns walked in tiles that stay in cache.
#include <algorithm>
#include <cstring>

#include "kernels/flip/flip.h"
#include "kernels/flip/flip_math.h"

namespace cudaoverlap {
namespace {

using D = FlipDirection;

// A plane's rows of pixel groups of N bytes: the input's base, stride and
// size in groups, and the output's.
struct Plane {
  const uint8_t* src;
  size_t src_stride;
  long in_w, in_h;
  uint8_t* dst;
  size_t dst_stride;
  long out_w, out_h;
};

template <size_t N>
void reverse_row(uint8_t* dst, const uint8_t* src, long groups) {
  const uint8_t* from = src + static_cast<size_t>(groups - 1) * N;
  for (long x = 0; x < groups; ++x, from -= N)
    std::memcpy(dst + static_cast<size_t>(x) * N, from, N);
}

// Directions that keep rows as rows (identity, horiz, vert, 180).
template <size_t N>
void flip_rows(const Plane& p, D d) {
  const bool mirror = d == D::kHoriz || d == D::k180;
  const bool upside_down = d == D::kVert || d == D::k180;
  for (long y = 0; y < p.out_h; ++y) {
    const uint8_t* src =
        p.src + static_cast<size_t>(upside_down ? p.in_h - 1 - y : y) * p.src_stride;
    uint8_t* dst = p.dst + static_cast<size_t>(y) * p.dst_stride;
    if (mirror)
      reverse_row<N>(dst, src, p.out_w);
    else
      std::memcpy(dst, src, static_cast<size_t>(p.out_w) * N);
  }
}

// Directions that turn the picture: output (x, y) from input column sx(y)
// and row sy(x), in tiles of kTile x kTile groups.
template <size_t N, D Dir>
void flip_turned(const Plane& p) {
  constexpr long kTile = 32;
  // Input column of output row y, input row of output column x.
  const auto column = [&](long y) {
    return Dir == D::k90R || Dir == D::kUlLr ? y : p.in_w - 1 - y;
  };
  const auto row = [&](long x) { return Dir == D::k90L || Dir == D::kUlLr ? x : p.in_h - 1 - x; };
  for (long ty = 0; ty < p.out_h; ty += kTile)
    for (long tx = 0; tx < p.out_w; tx += kTile) {
      const long y_end = std::min(ty + kTile, p.out_h), x_end = std::min(tx + kTile, p.out_w);
      for (long y = ty; y < y_end; ++y) {
        uint8_t* dst = p.dst + static_cast<size_t>(y) * p.dst_stride;
        const uint8_t* src = p.src + static_cast<size_t>(column(y)) * N;
        for (long x = tx; x < x_end; ++x)
          std::memcpy(dst + static_cast<size_t>(x) * N,
                      src + static_cast<size_t>(row(x)) * p.src_stride, N);
      }
    }
}

template <size_t N>
void flip_plane(const Plane& p, D d) {
  switch (d) {
    case D::k90R:
      return flip_turned<N, D::k90R>(p);
    case D::k90L:
      return flip_turned<N, D::k90L>(p);
    case D::kUlLr:
      return flip_turned<N, D::kUlLr>(p);
    case D::kUrLl:
      return flip_turned<N, D::kUrLl>(p);
    default:
      return flip_rows<N>(p, d);
  }
}

template <D Dir>
void flip_y422(const ImageRef& in, const ImageRef& out) {
  const FormatInfo& info = format_info(in.format);
  for (int y = 0; y < out.height; ++y)
    for (int x = 0; x < out.width; x += 2)
      flip_math::flip_y422_pair(in, out, Dir, info.comp[0].offset, info.comp[1].offset,
                                info.comp[2].offset, x, y);
}

void flip_y422_any(const ImageRef& in, const ImageRef& out, D d) {
  switch (d) {
    case D::k90R:
      return flip_y422<D::k90R>(in, out);
    case D::k180:
      return flip_y422<D::k180>(in, out);
    case D::k90L:
      return flip_y422<D::k90L>(in, out);
    case D::kHoriz:
      return flip_y422<D::kHoriz>(in, out);
    case D::kVert:
      return flip_y422<D::kVert>(in, out);
    case D::kUlLr:
      return flip_y422<D::kUlLr>(in, out);
    case D::kUrLl:
      return flip_y422<D::kUrLl>(in, out);
    default:
      return flip_y422<D::kIdentity>(in, out);
  }
}

}  // namespace

void flip_cpu(const ImageRef& in, const ImageRef& out, FlipDirection direction) {
  if (is_packed422(in.format) && direction != D::kIdentity)
    return flip_y422_any(in, out, direction);
  const FormatInfo& info = format_info(in.format);
  for (int p = 0; p < info.n_planes; ++p) {
    const size_t group = static_cast<size_t>(info.pixel_bytes[p]);
    const Plane plane{in.planes[p].data,
                      in.planes[p].stride,
                      static_cast<long>(plane_row_bytes(in.format, p, in.width) / group),
                      static_cast<long>(plane_rows(in.format, p, in.height)),
                      out.planes[p].data,
                      out.planes[p].stride,
                      static_cast<long>(plane_row_bytes(out.format, p, out.width) / group),
                      static_cast<long>(plane_rows(out.format, p, out.height))};
    switch (group) {
      case 1:
        flip_plane<1>(plane, direction);
        break;
      case 2:
        flip_plane<2>(plane, direction);
        break;
      case 3:
        flip_plane<3>(plane, direction);
        break;
      case 4:
        flip_plane<4>(plane, direction);
        break;
      case 8:
        flip_plane<8>(plane, direction);
        break;
      default:
        flip_reference(in, out, direction);  // no format of the table
        return;
    }
  }
}

void FlipOperation::run_cpu(const ImageRef& in, const ImageRef& out, const Workspace&) const {
  flip_cpu(in, out, direction_);
}

void FlipOperation::run_cpu_rows(const ImageRef& in, const ImageRef& out, const Workspace&, int y0,
                                 int y1) const {
  flip_cpu(image_rows(in, y0, y1), image_rows(out, y0, y1), direction_);
}

}  // namespace cudaoverlap
