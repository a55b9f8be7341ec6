// The `invert` operation (see invert.h) and its CPU reference, written
// sample by sample through the format's components so it shares no logic
// with invert.cu's byte masks.
#include "kernels/invert/invert.h"

#include <cstring>

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

void invert_cpu(const ImageRef& in, const ImageRef& out) {
  uint32_t masks[kMaxPlanes];
  invert_masks(in.format, masks);
  for (int p = 0; p < format_info(in.format).n_planes; ++p) {
    // The plane's 4-byte pattern twice, in memory order.
    uint8_t pattern[8];
    for (int b = 0; b < 8; ++b) pattern[b] = static_cast<uint8_t>(masks[p] >> (8 * (b % 4)));
    uint64_t mask;
    std::memcpy(&mask, pattern, sizeof mask);
    const size_t row_bytes = plane_row_bytes(in.format, p, in.width);
    const size_t rows = plane_rows(in.format, p, in.height);
    for (size_t y = 0; y < rows; ++y) {
      const uint8_t* from = in.planes[p].data + y * in.planes[p].stride;
      uint8_t* to = out.planes[p].data + y * out.planes[p].stride;
      size_t x = 0;
      for (; x + 8 <= row_bytes; x += 8) {
        uint64_t v;
        std::memcpy(&v, from + x, sizeof v);
        v ^= mask;
        std::memcpy(to + x, &v, sizeof v);
      }
      for (; x < row_bytes; ++x) to[x] = from[x] ^ pattern[x % 8];
    }
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

void InvertOperation::run_cpu(const ImageRef& in, const ImageRef& out, const Workspace&) const {
  invert_cpu(in, out);
}

void InvertOperation::run_cpu_rows(const ImageRef& in, const ImageRef& out, const Workspace&,
                                   int y0, int y1) const {
  invert_cpu(image_rows(in, y0, y1), image_rows(out, y0, y1));
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
