// Helpers of the kernel suites: images with random pixels in any layout,
// pixel-byte comparison (row and plane padding ignored), and a GPU run of a
// kernel through the Device interface the engine uses, so these tests need
// no CUDA headers and skip where no device exists.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "cuda_device.h"
#include "device.h"
#include "frame_layout.h"
#include "kernels/error.h"
#include "kernels/operation_registry.h"
#include "kernels/run_reference.h"
#include "tests/sanitized.h"

namespace cudaoverlap::test {

// The formats `kernel` takes (with default parameters).
inline std::vector<PixelFormat> formats_of(const char* kernel) {
  return make_operation(kernel)->input_formats();
}

// A side of `matrix` (full range or not) with the Kr and Kb GStreamer
// gives that matrix (tests/kernels/test_vs_gstreamer.cpp holds these to
// gst_video_color_matrix_get_Kr_Kb).
inline Colorimetry colorimetry(YuvMatrix matrix, bool full_range = false,
                               bool rgb_limited = false) {
  struct Weights {
    YuvMatrix matrix;
    double kr, kb;
  };
  static const Weights kWeights[] = {{YuvMatrix::kBT601, 0.2990, 0.1140},
                                     {YuvMatrix::kBT709, 0.2126, 0.0722},
                                     {YuvMatrix::kFCC, 0.30, 0.11},
                                     {YuvMatrix::kSMPTE240M, 0.212, 0.087},
                                     {YuvMatrix::kBT2020, 0.2627, 0.0593}};
  Colorimetry c(full_range, rgb_limited);
  for (const Weights& w : kWeights)
    if (w.matrix == matrix) c.set_matrix(matrix, w.kr, w.kb);
  return c;
}

inline const FlipDirection kAllDirections[] = {
    FlipDirection::kIdentity, FlipDirection::k90R,  FlipDirection::k180,  FlipDirection::k90L,
    FlipDirection::kHoriz,    FlipDirection::kVert, FlipDirection::kUlLr, FlipDirection::kUrLl};

inline const char* direction_name(FlipDirection d) {
  static const char* names[] = {"identity", "90r", "180", "90l", "horiz", "vert", "ul_lr", "ur_ll"};
  return names[static_cast<int>(d)];
}

// An image that owns its bytes. Rows carry `pad` bytes of padding so that
// every kernel has to honour strides.
struct OwnedImage {
  OwnedImage(PixelFormat format, int width, int height, size_t pad = 12)
      : layout(FrameLayout::packed(format, width, height)) {
    size_t at = 0;
    for (int p = 0; p < layout.n_planes(); ++p) {
      layout.offset[p] = at;
      layout.stride[p] = layout.row_bytes(p) + pad;
      at += layout.stride[p] * layout.rows(p);
    }
    layout.size = at;
    bytes.assign(layout.size, 0xA5);
    image = layout.at(bytes.data());
  }
  void fill_random(uint32_t seed) {
    std::mt19937 random(seed);
    for (auto& b : bytes) b = static_cast<uint8_t>(random());
  }
  FrameLayout layout;
  std::vector<uint8_t> bytes;
  ImageRef image;
};

// Byte x of row y of `plane`.
inline uint8_t at(const OwnedImage& image, int plane, int x, int y) {
  return image.image.planes[plane].data[y * image.image.planes[plane].stride + x];
}

// The output geometry `kernel` makes from `in` with `params`.
inline void output_size(const char* kernel, const KernelParams& params, int in_w, int in_h, int* w,
                        int* h) {
  const bool swap = make_operation(kernel, params)->swaps_axes();
  *w = swap ? in_h : in_w;
  *h = swap ? in_w : in_h;
}

// The same for a walk over every operation: one whose size is
// downstream's choice (scale) is given a wider and shorter output, which
// *params then carries.
inline void output_size(const char* kernel, KernelParams* params, int in_w, int in_h, int* w,
                        int* h) {
  if (!make_operation(kernel, *params)->size_from_downstream())
    return output_size(kernel, *params, in_w, in_h, w, h);
  *w = in_w * 3 / 2 + 1;
  *h = std::max(1, in_h * 2 / 3);
  params->sizes = FrameSizes{in_w, in_h, *w, *h};
}

// Empty when the pixel bytes of `a` and `b` (same format and size) differ by
// at most `tolerance`, else where the first larger difference is.
inline std::string compare_images(const ImageRef& a, const ImageRef& b, int tolerance = 0,
                                  int* max_diff = nullptr) {
  int worst = 0;
  std::string first;
  const FormatInfo& info = format_info(a.format);
  for (int p = 0; p < info.n_planes; ++p)
    for (size_t y = 0; y < plane_rows(a.format, p, a.height); ++y)
      for (size_t x = 0; x < plane_row_bytes(a.format, p, a.width); ++x) {
        const int va = a.planes[p].data[y * a.planes[p].stride + x];
        const int vb = b.planes[p].data[y * b.planes[p].stride + x];
        const int d = std::abs(va - vb);
        worst = std::max(worst, d);
        if (d > tolerance && first.empty())
          first = std::string(info.name) + " plane " + std::to_string(p) + " byte (" +
                  std::to_string(x) + "," + std::to_string(y) + "): " + std::to_string(va) +
                  " vs " + std::to_string(vb);
      }
  if (max_diff) *max_diff = worst;
  return first;
}

// Calls visit(component, x, y, value in a, value in b) for every sample of
// two images of one format and size, the values on the 8-bit scale: a
// 10-bit sample's value counts in quarters, a 16-bit one's in 257ths, and
// bits beside a 10-bit sample are not read.
template <typename Visit>
void for_each_sample(const ImageRef& a, const ImageRef& b, Visit visit) {
  const FormatInfo& info = format_info(a.format);
  for (int c = 0; c < info.n_components; ++c) {
    const Component& k = info.comp[c];
    const int w = (a.width + (1 << k.x_sub) - 1) >> k.x_sub;
    const int h = (a.height + (1 << k.y_sub) - 1) >> k.y_sub;
    const uint32_t max = (1u << k.depth) - 1;
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < w; ++x) {
        auto value = [&](const ImageRef& im) {
          const uint8_t* p = im.planes[k.plane].data +
                             static_cast<size_t>(y) * im.planes[k.plane].stride + k.offset +
                             static_cast<size_t>(x) * k.pixel_stride;
          const uint32_t word = info.sample_bytes == 1 ? p[0] : (p[0] | p[1] << 8);
          return static_cast<double>((word >> k.shift) & max) * 255.0 / max;
        };
        visit(c, x, y, value(a), value(b));
      }
  }
}

// Like compare_images, but sample by sample on the 8-bit scale
// (for_each_sample). For formats deeper than 8 bits.
inline std::string compare_samples(const ImageRef& a, const ImageRef& b, int tolerance,
                                   int* max_diff = nullptr) {
  double worst = 0;
  std::string first;
  for_each_sample(a, b, [&](int c, int x, int y, double va, double vb) {
    const double d = std::abs(va - vb);
    worst = std::max(worst, d);
    if (d > tolerance + 1e-9 && first.empty())
      first = std::string(format_info(a.format).name) + " component " + std::to_string(c) +
              " sample (" + std::to_string(x) + "," + std::to_string(y) +
              "): " + std::to_string(va) + " vs " + std::to_string(vb) + " on the 8-bit scale";
  });
  if (max_diff) *max_diff = static_cast<int>(std::ceil(worst));
  return first;
}

inline std::vector<int> band_cuts(int height, int bands, int step);

// Runs `op` on `device` from host image `in` into host image `out`,
// through device planes aligned to `align` bytes (256: the vector paths; 4:
// the narrowest strides GStreamer makes); with `bands` > 1, band by band
// (Operation::enqueue_cuda_rows) as the engine cuts them.
inline void run_on_device(Device& device, const std::shared_ptr<const Operation>& op,
                          const OwnedImage& in, OwnedImage& out, size_t align, int bands = 1) {
  const std::string problem = op->check(in.image, out.image);
  if (!problem.empty()) throw Error(problem);
  const FrameLayout din_layout =
      FrameLayout::packed(in.layout.format, in.layout.width, in.layout.height, align, align);
  const FrameLayout dout_layout =
      FrameLayout::packed(out.layout.format, out.layout.width, out.layout.height, align, align);
  auto pinned_in = device.alloc_pinned(in.layout.size);
  auto pinned_out = device.alloc_pinned(out.layout.size);
  auto dev_in = device.alloc_device(din_layout.size);
  auto dev_out = device.alloc_device(dout_layout.size);
  std::memcpy(pinned_in->data(), in.bytes.data(), in.layout.size);
  auto stream = device.create_stream();
  std::unique_ptr<Buffer> workspace_memory;
  Workspace workspace;
  if (op->workspace_bytes() > 0) {
    workspace_memory = device.alloc_device(op->workspace_bytes());
    workspace = Workspace{workspace_memory->data(), workspace_memory->size()};
  }
  stream->prepare(*op, workspace);
  const ImageRef src = in.layout.at(pinned_in->data());
  const ImageRef din = din_layout.at(dev_in->data());
  const ImageRef dout = dout_layout.at(dev_out->data());
  const ImageRef dst = out.layout.at(pinned_out->data());
  for (int p = 0; p < in.layout.n_planes(); ++p)
    stream->copy_2d(din.planes[p].data, din.planes[p].stride, src.planes[p].data,
                    src.planes[p].stride, in.layout.row_bytes(p), in.layout.rows(p),
                    CopyKind::kHostToDevice);
  if (bands <= 1) {
    stream->launch(*op, din, dout, workspace);
  } else {
    const std::vector<int> rows =
        band_cuts(out.layout.height, bands, band_row_step(in.layout.format, out.layout.format));
    for (size_t k = 0; k + 1 < rows.size(); ++k)
      stream->launch_rows(*op, din, dout, workspace, rows[k], rows[k + 1]);
  }
  for (int p = 0; p < out.layout.n_planes(); ++p)
    stream->copy_2d(dst.planes[p].data, dst.planes[p].stride, dout.planes[p].data,
                    dout.planes[p].stride, out.layout.row_bytes(p), out.layout.rows(p),
                    CopyKind::kDeviceToHost);
  stream->synchronize();
  std::memcpy(out.bytes.data(), pinned_out->data(), out.layout.size);
}

// The same for the operation `kernel` makes with `params`.
inline void run_on_device(Device& device, const char* kernel, const KernelParams& params,
                          const OwnedImage& in, OwnedImage& out, size_t align, int bands = 1) {
  run_on_device(device, make_operation(kernel, params), in, out, align, bands);
}

// Bands (EngineConfig::bands): the rows the engine cuts a frame of `height`
// rows into `bands` bands at, each a multiple of `step`
// (band_row_step), then `height`.
inline std::vector<int> band_cuts(int height, int bands, int step) {
  std::vector<int> rows;
  for (int k = 0; k < bands; ++k)
    rows.push_back(static_cast<int>(int64_t{k} * height / bands / step * step));
  rows.push_back(height);
  return rows;
}

// Inverts every byte of the plane rows of `image` that do not lie wholly
// within picture rows [lo, hi) (clamped to the picture): an inverted
// sample changes any sum it has a weight in. Inverting again undoes it.
inline void poison_outside(OwnedImage& image, int lo, int hi) {
  const ImageRef& im = image.image;
  lo = std::max(lo, 0);
  hi = std::min(hi, im.height);
  const FormatInfo& info = format_info(im.format);
  for (int p = 0; p < info.n_planes; ++p) {
    const int s = info.y_shift[p];
    for (size_t r = 0; r < image.layout.rows(p); ++r) {
      const int top = static_cast<int>(r) << s;
      const int bottom = std::min(static_cast<int>(r + 1) << s, im.height);
      if (top >= lo && bottom <= hi) continue;
      uint8_t* row = im.planes[p].data + r * im.planes[p].stride;
      for (size_t x = 0; x < image.layout.row_bytes(p); ++x) row[x] ^= 0xFF;
    }
  }
}

// The operations with a halo that the band tests run: blur at sigmas from
// the smallest to the largest (radii 2, 3, 6, 22 and 60 on full-resolution
// planes) and edge.
struct BandedOperation {
  std::string name;
  const char* kernel;
  KernelParams params;
};

inline std::vector<BandedOperation> banded_operations() {
  std::vector<BandedOperation> ops;
  for (double sigma : {0.5, 1.0, 2.0, 7.3, 20.0}) {
    BandedOperation op{"blur sigma " + std::to_string(sigma), "blur", {}};
    op.params.set("sigma", sigma);
    ops.push_back(op);
  }
  ops.push_back({"edge", "edge", {}});
  return ops;
}

// Empty when every byte of the plane rows that lie outside picture rows
// [y0, y1), row padding included, is the same in frames `a` and `b` of
// `layout`; else where the first difference is.
inline std::string compare_outside_rows(const FrameLayout& layout, const uint8_t* a,
                                        const uint8_t* b, int y0, int y1) {
  for (int p = 0; p < layout.n_planes(); ++p) {
    const size_t r0 = plane_rows(layout.format, p, y0), r1 = plane_rows(layout.format, p, y1);
    for (size_t r = 0; r < layout.rows(p); ++r) {
      if (r >= r0 && r < r1) continue;
      const size_t at = layout.offset[p] + r * layout.stride[p];
      for (size_t x = 0; x < layout.stride[p]; ++x)
        if (a[at + x] != b[at + x])
          return std::string(format_info(layout.format).name) + " plane " + std::to_string(p) +
                 " row " + std::to_string(r) + " byte " + std::to_string(x) + ": " +
                 std::to_string(a[at + x]) + " vs " + std::to_string(b[at + x]) + " (band rows " +
                 std::to_string(y0) + ".." + std::to_string(y1) + ")";
    }
  }
  return {};
}

// The CPU reference of `kernel` made with `params` (checked first: throws
// Error with the operation's sentence when it cannot do `in` -> `out`).
inline void reference(const char* kernel, const KernelParams& params, const ImageRef& in,
                      const ImageRef& out) {
  run_reference(*make_operation(kernel, params), in, out);
}

// The operation's own check.
inline std::string check(const char* kernel, const KernelParams& params, const ImageRef& in,
                         const ImageRef& out) {
  return make_operation(kernel, params)->check(in, out);
}

}  // namespace cudaoverlap::test
