// Pixel formats the kernels understand, and the geometry of their planes.
//
// This is the lowest layer of the data flow: pipeline-core sizes its staging
// ring from these descriptions and the kernels read and write images laid out
// by them. Nothing here knows about GStreamer or CUDA; gst/ maps
// GstVideoFormat onto PixelFormat.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace cudaoverlap {

enum class PixelFormat {
  kRGBA,
  kBGRA,
  kRGBx,
  kBGRx,
  kARGB,
  kABGR,
  kNV12,
  kI420,
  kGRAY8,
};

// Every PixelFormat, in the enum's order.
const std::vector<PixelFormat>& all_pixel_formats();

constexpr int kMaxPlanes = 4;

// What a format looks like in memory. Packed formats have one plane of
// 4-byte pixels; planar YUV has subsampled chroma planes.
struct FormatInfo {
  const char* name;
  int n_planes;
  // Bytes one pixel group occupies in each plane (NV12's UV plane holds
  // 2 bytes per 2x2 block, so 2 with x_shift 1).
  int pixel_bytes[kMaxPlanes];
  // log2 of the horizontal and vertical subsampling of each plane.
  int x_shift[kMaxPlanes];
  int y_shift[kMaxPlanes];
  // Byte index within a packed 4-byte pixel that holds alpha or padding,
  // -1 when every byte is a colour (or luma/chroma) sample.
  int alpha_byte;
  bool is_yuv;
};

const FormatInfo& format_info(PixelFormat format);

// Bytes of image data in one row of plane p, and rows in plane p, for an
// image of width x height (odd sizes round chroma up, as GStreamer does).
size_t plane_row_bytes(PixelFormat format, int plane, int width);
size_t plane_rows(PixelFormat format, int plane, int height);

// One plane of an image somewhere in memory (host or device).
struct PlaneRef {
  uint8_t* data = nullptr;
  size_t stride = 0;  // bytes from one row to the next, >= row bytes
};

// An image: its format, size and planes. Views only; owns nothing.
struct ImageRef {
  PixelFormat format = PixelFormat::kRGBA;
  int width = 0;
  int height = 0;
  PlaneRef planes[kMaxPlanes];
};

}  // namespace cudaoverlap
