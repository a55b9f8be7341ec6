// The fused per-pixel launch's arguments and shape (see fused_pixels.h),
// for the built-in launch (fused_pixels.cu) and one compiled around a
// user's function (kernels/custom/custom.cu).
#include "kernels/chain/fused_pixels.h"

#include <algorithm>
#include <string>

#include "kernels/error.h"

namespace cudaoverlap {
namespace {

constexpr unsigned kMaxGridY = 65535;

bool aligned_to(const PlaneRef& p, size_t n) {
  return reinterpret_cast<uintptr_t>(p.data) % n == 0 && p.stride % n == 0;
}

}  // namespace

FusedLaunch fused_launch(const ImageRef& in, const ImageRef& out, const PixelStage* stages, int n) {
  if (n < 1 || n > kMaxFusedStages)
    throw Error("a fused launch runs 1 to " + std::to_string(kMaxFusedStages) + " stages, not " +
                std::to_string(n));
  if (!is_pixel_stage_format(in.format) || !is_pixel_stage_format(out.format) ||
      in.width != out.width || in.height != out.height)
    throw Error(std::string("a fused launch takes packed 8-bit RGB of one size, not ") +
                format_info(in.format).name + " to " + format_info(out.format).name);
  FusedLaunch l;
  FusedArgs& a = l.args;
  a.src = in.planes[0].data;
  a.src_stride = in.planes[0].stride;
  a.dst = out.planes[0].data;
  a.dst_stride = out.planes[0].stride;
  a.width = in.width;
  a.rows = in.height;
  a.n = n;
  std::copy(stages, stages + n, a.stage);
  l.in_bytes = pixel_stage_bytes(in.format);
  l.out_bytes = pixel_stage_bytes(out.format);
  l.in_words = aligned_to(in.planes[0], l.in_bytes == 4 ? 16 : 4);
  l.out_words = aligned_to(out.planes[0], l.out_bytes == 4 ? 16 : 4);
  if (in.width > 0 && in.height > 0) {
    l.grid_x = static_cast<unsigned>((in.width + 4 * kFusedThreads - 1) / (4 * kFusedThreads));
    l.grid_y =
        std::min(static_cast<unsigned>((in.height + kFusedRows - 1) / kFusedRows), kMaxGridY);
  }
  return l;
}

}  // namespace cudaoverlap
