// What every operation shares (see operation.h): the size and format check
// from its own answers, and the answers derived from them.
#include "kernels/operation.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <typeinfo>

#include "kernels/error.h"
#include "kernels/kernel_timing.h"

namespace cudaoverlap {

std::vector<PixelFormat> Operation::input_formats() const {
  std::vector<PixelFormat> taken;
  for (PixelFormat f : all_pixel_formats())
    if (!output_formats(f).empty()) taken.push_back(f);
  return taken;
}

bool Operation::same_as(const Operation& other) const {
  return typeid(*this) == typeid(other) && declared_ == other.declared_;
}

bool same_operation(const std::shared_ptr<const Operation>& a,
                    const std::shared_ptr<const Operation>& b) {
  if (!a || !b) return !a && !b;
  return a->same_as(*b);
}

std::string Operation::check(const ImageRef& in, const ImageRef& out) const {
  const std::string kernel = std::string("kernel '") + name() + "'";
  if (in.width <= 0 || in.height <= 0) return "the image has no pixels";
  const std::vector<PixelFormat> outputs = output_formats(in.format);
  if (outputs.empty())
    return kernel + " takes " + format_list(input_formats()) + ", not " +
           format_info(in.format).name;
  if (std::find(outputs.begin(), outputs.end(), out.format) == outputs.end())
    return kernel + " makes " + format_list(outputs) + " from " + format_info(in.format).name +
           ", not " + format_info(out.format).name;
  // The kernels address rows with 32-bit strides (GStreamer's own strides
  // are gint). The element asks with the geometry alone (strides 0), so a
  // row's bytes count as its stride, with room for the engine's alignment
  // of device rows: a row that could not be addressed is refused at caps
  // time, not wrapped at run time.
  constexpr size_t kMaxRowBytes = static_cast<size_t>(INT32_MAX) - 4095;
  for (const ImageRef* image : {&in, &out})
    for (int p = 0; p < format_info(image->format).n_planes; ++p) {
      const size_t stride =
          std::max(image->planes[p].stride, plane_row_bytes(image->format, p, image->width));
      if (stride > kMaxRowBytes)
        return kernel + " takes rows of at most 2 GiB, not " + std::to_string(stride) +
               " bytes (plane " + std::to_string(p) + " of the " +
               (image == &in ? "input" : "output") + ")";
    }
  const int width = swaps_axes() ? in.height : in.width;
  const int height = swaps_axes() ? in.width : in.height;
  if (out.width != width || out.height != height)
    return kernel + " makes " + std::to_string(width) + "x" + std::to_string(height) + " from " +
           std::to_string(in.width) + "x" + std::to_string(in.height) + ", not " +
           std::to_string(out.width) + "x" + std::to_string(out.height);
  return {};
}

int Operation::band_halo(PixelFormat, PixelFormat) const { return -1; }

bool Operation::cpu_rows_at_once(PixelFormat in, PixelFormat out) const {
  return band_halo(in, out) >= 0 && !bands_by_view(in, out);
}

std::vector<std::string> Operation::parts(PixelFormat, PixelFormat) const { return {}; }

void Operation::enqueue_cuda_part(size_t, const ImageRef& in, const ImageRef& out,
                                  const Workspace& workspace, CUstream_st* stream) const {
  enqueue_cuda(in, out, workspace, stream);
}

void Operation::run_reference_part(size_t, const ImageRef& in, const ImageRef& out,
                                   const Workspace& workspace) const {
  run_reference(in, out, workspace);
}

void Operation::run_cpu(const ImageRef& in, const ImageRef& out, const Workspace& workspace) const {
  run_reference(in, out, workspace);
}

void Operation::run_cpu_rows(const ImageRef& in, const ImageRef& out, const Workspace& workspace,
                             int y0, int y1) const {
  run_reference_rows(in, out, workspace, y0, y1);
}

void Operation::run_cpu_part(size_t part, const ImageRef& in, const ImageRef& out,
                             const Workspace& workspace) const {
  run_reference_part(part, in, out, workspace);
}

bool Operation::pixel_stage(PixelFormat, PixelFormat, const Workspace&, PixelStage*) const {
  return false;
}

RowRange Operation::band_reads(PixelFormat in, PixelFormat out, int y0, int y1,
                               int in_height) const {
  const int halo = band_halo(in, out);
  if (halo < 0) return RowRange{0, in_height};
  return RowRange{std::max(y0 - halo, 0), std::min(y1 + halo, in_height)};
}

void Operation::enqueue_cuda_rows(const ImageRef& in, const ImageRef& out,
                                  const Workspace& workspace, int y0, int y1,
                                  CUstream_st* stream) const {
  enqueue_cuda(image_rows(in, y0, y1), image_rows(out, y0, y1), workspace, stream);
}

void Operation::run_reference_rows(const ImageRef& in, const ImageRef& out,
                                   const Workspace& workspace, int y0, int y1) const {
  run_reference(image_rows(in, y0, y1), image_rows(out, y0, y1), workspace);
}

ImageRef image_rows(const ImageRef& image, int y0, int y1) {
  ImageRef rows = image;
  rows.height = y1 - y0;
  for (int p = 0; p < format_info(image.format).n_planes; ++p)
    rows.planes[p].data += plane_rows(image.format, p, y0) * image.planes[p].stride;
  return rows;
}

int band_row_step(PixelFormat in, PixelFormat out) {
  int step = 1;
  for (PixelFormat f : {in, out}) {
    const FormatInfo& info = format_info(f);
    for (int p = 0; p < info.n_planes; ++p) step = std::max(step, 1 << info.y_shift[p]);
    if (is_bayer(f)) step = std::max(step, 2);
  }
  return step;
}

RowRange band_view(int y0, int y1, int halo, int step, int height) {
  RowRange rows;
  rows.first = std::max(0, y0 - halo) / step * step;
  rows.last = std::min(height, (y1 + halo + step - 1) / step * step);
  return rows;
}

void Operation::prepare_cuda(const Workspace&, CUstream_st*) const {}
void Operation::prepare_reference(const Workspace&) const {}

std::vector<PixelFormat> keep_format(PixelFormat in) {
  if (is_bayer(in)) return {};
  return {in};
}

std::vector<PixelFormat> keep_format_of(PixelFormat in, const std::vector<PixelFormat>& taken) {
  if (std::find(taken.begin(), taken.end(), in) == taken.end()) return {};
  return {in};
}

const std::vector<PixelFormat>& rgb32_yuv420_gray8_formats() {
  static const std::vector<PixelFormat> formats = {
      PixelFormat::kRGBA, PixelFormat::kBGRA, PixelFormat::kRGBx,
      PixelFormat::kBGRx, PixelFormat::kARGB, PixelFormat::kABGR,
      PixelFormat::kNV12, PixelFormat::kI420, PixelFormat::kGRAY8};
  return formats;
}

std::string format_list(const std::vector<PixelFormat>& formats) {
  std::string list;
  for (size_t i = 0; i < formats.size(); ++i) {
    if (i > 0) list += i + 1 == formats.size() ? " and " : ", ";
    list += format_info(formats[i]).name;
  }
  return list;
}

void throw_built_without_cuda() {
  throw Error("cudaoverlap was built without CUDA; rebuild with -Dcuda=enabled");
}

#ifdef CUDAOVERLAP_HAVE_CUDA
bool kernels_have_cuda() { return true; }
#else
bool kernels_have_cuda() { return false; }

double time_operation_cuda(const Operation&, const std::vector<ImageRef>&,
                           const std::vector<ImageRef>&, int, bool) {
  throw_built_without_cuda();
}

double time_device_copy_cuda(void*, const void*, size_t, int) { throw_built_without_cuda(); }
#endif

}  // namespace cudaoverlap
