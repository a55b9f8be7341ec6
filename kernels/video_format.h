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
  kYUY2,
  kUYVY,
  kRGB,
  kBGR,
  kNV21,
  kNV16,
  kY42B,
  kY444,
  kP010_10LE,
  kI420_10LE,
  kGRAY16_LE,
  // 8-bit Bayer mosaics (video/x-bayer), named by their first two rows'
  // colours: input to `convert` only, which debayers them.
  kBayerBGGR,
  kBayerRGGB,
  kBayerGRBG,
  kBayerGBRG,
};

// Every PixelFormat, in the enum's order.
const std::vector<PixelFormat>& all_pixel_formats();

constexpr int kMaxPlanes = 4;
constexpr int kMaxComponents = 4;

// One component of a format (R, G, B, A; Y, U, V, A; or grey), described
// as GStreamer's GstVideoFormatInfo does, so that code can read and write a
// sample of any format without knowing which format it is.
struct Component {
  int plane;         // the plane that holds it
  int offset;        // byte of its first sample within a row of that plane
  int pixel_stride;  // bytes from one of its samples to the next along a row
  int depth;         // significant bits of a sample
  int shift;         // bits the value sits above bit 0 of its little-endian sample
  int x_sub;         // log2 of its horizontal subsampling
  int y_sub;         // log2 of its vertical subsampling
};

// What a format looks like in memory: its planes (how many bytes a row and
// how many rows each has, for the engine's staging and copies) and its
// components (where each sample is, for the kernels). GStreamer's format
// list and the element's pad templates are this table's names.
struct FormatInfo {
  const char* name;  // GStreamer's (gst_video_format_to_string)
  int n_planes;
  // Bytes one group of pixels occupies in each plane, and log2 of the
  // pixels a group spans across and down: NV12's UV plane holds 2 bytes
  // per 2x2 block (2, x_shift 1, y_shift 1), YUY2's one plane 4 bytes per
  // two pixels of a row (4, x_shift 1, y_shift 0).
  int pixel_bytes[kMaxPlanes];
  int x_shift[kMaxPlanes];
  int y_shift[kMaxPlanes];
  // Colour components first (R, G, B or Y, U, V, or grey alone), alpha
  // last where there is one.
  int n_components;
  Component comp[kMaxComponents];
  // Byte index within a packed 4-byte pixel that holds alpha or padding,
  // -1 when every byte is a colour (or luma/chroma) sample.
  int alpha_byte;
  bool is_yuv;
  bool has_alpha;    // comp[n_components - 1] is alpha
  int sample_bytes;  // 1 for 8-bit formats, 2 for deeper ones (little-endian)
  // Bayer mosaics (one 8-bit sample per pixel, GRAY8's layout): where red
  // is in each 2x2 cell, x + 2 * y (rggb 0, grbg 1, gbrg 2, bggr 3); -1 for
  // every other format.
  int bayer_red = -1;
};

const FormatInfo& format_info(PixelFormat format);

// Whether `format` is a Bayer mosaic (video/x-bayer rather than video/x-raw).
inline bool is_bayer(PixelFormat format) { return format >= PixelFormat::kBayerBGGR; }

// The colour (not alpha) components of `format`: 3, or 1 for grey.
int colour_components(PixelFormat format);

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

// Samples of `component` that a row of a `width`-pixel image of `format`
// holds: ceil(width / 2^x_sub), and for packed 4:2:2 luma one more where
// the width is odd (the second luma of the last pair, past the picture).
int stored_samples(PixelFormat format, int component, int width);

// Sample (x, y) of `component` of `image` at its depth (8 bits, or the
// `depth` bits of a little-endian word), and writing one there with the
// other bits of its word kept. Host memory; for the CPU references.
// An image of `format` and size at `data`, planes one after another, each
// plane's start and rows aligned to `align` bytes; *bytes gets its size.
// `data` may be null to learn the size alone.
ImageRef aligned_image(PixelFormat format, int width, int height, size_t align, uint8_t* data,
                       size_t* bytes);

uint32_t read_sample(const ImageRef& image, int component, int x, int y);
void write_sample(const ImageRef& image, int component, int x, int y, uint32_t value);

}  // namespace cudaoverlap
