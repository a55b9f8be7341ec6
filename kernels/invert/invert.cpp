// The `invert` operation (see invert.h) and its CPU reference, written
// sample by sample through the format's components so it shares no logic
// with invert.cu's byte masks.
#include "kernels/invert/invert.h"

#include "kernels/copy/copy.h"
#include "kernels/error.h"
#include "kernels/pixel_stage.h"

namespace cudaoverlap {

void invert_reference(const ImageRef& in, const ImageRef& out) {
  // Alpha, padding and the bits around a 10-bit sample come from here.
  copy_reference(in, out);
  const FormatInfo& info = format_info(in.format);
  for (int c = 0; c < colour_components(in.format); ++c) {
    const Component& k = info.comp[c];
    const uint32_t max = (uint32_t{1} << k.depth) - 1;
    const int rows = static_cast<int>(plane_rows(in.format, k.plane, in.height));
    // Every sample the plane's rows hold, the second luma of an odd-width
    // YUY2 row's last pair included (copy carries it too).
    const int samples = stored_samples(in.format, c, in.width);
    for (int y = 0; y < rows; ++y)
      for (int x = 0; x < samples; ++x) write_sample(out, c, x, y, max - read_sample(in, c, x, y));
  }
}

void invert_masks(PixelFormat format, uint32_t masks[kMaxPlanes]) {
  const FormatInfo& info = format_info(format);
  // 12 bytes hold a whole number of pixels of every stride (1, 2, 3, 4).
  constexpr int kWindow = 12;
  uint8_t bits[kMaxPlanes][kWindow] = {};
  for (int c = 0; c < colour_components(format); ++c) {
    const Component& k = info.comp[c];
    const uint32_t sample = ((uint32_t{1} << k.depth) - 1) << k.shift;
    for (int b = k.offset; b < kWindow; ++b) {
      const int byte = (b - k.offset) % k.pixel_stride;
      if (byte < info.sample_bytes) bits[k.plane][b] |= static_cast<uint8_t>(sample >> (8 * byte));
    }
  }
  for (int p = 0; p < kMaxPlanes; ++p) {
    masks[p] = 0;
    for (int b = 0; b < 4; ++b) masks[p] |= uint32_t{bits[p][b]} << (8 * b);
    for (int b = 4; b < kWindow; ++b)
      if (bits[p][b] != bits[p][b % 4])
        throw Error(std::string("invert has no 4-byte mask for ") + info.name);
  }
}

void InvertOperation::enqueue_cuda(const ImageRef& in, const ImageRef& out, const Workspace&,
                                   CUstream_st* stream) const {
  CO_CUDA_ONLY(invert_cuda(in, out, stream));
}

bool InvertOperation::pixel_stage(PixelFormat in, PixelFormat out, const Workspace&,
                                  PixelStage* stage) const {
  if (in != out || !is_pixel_stage_format(in)) return false;
  *stage = PixelStage{};
  for (int c = 0; c < 3; ++c) stage->mask |= 0xFFu << (8 * format_info(in).comp[c].offset);
  return true;
}

void InvertOperation::run_reference(const ImageRef& in, const ImageRef& out,
                                    const Workspace&) const {
  invert_reference(in, out);
}

const OperationEntry& invert_entry() {
  static const OperationEntry entry{
      "invert",
      "Invert: max - v on every colour, luma and chroma sample; alpha and padding kept",
      true,
      {},
      [](const KernelParams&) -> std::shared_ptr<const Operation> {
        return std::make_shared<InvertOperation>();
      }};
  return entry;
}

}  // namespace cudaoverlap
