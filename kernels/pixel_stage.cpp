// Pixel stages (see pixel_stage.h): which formats they work on, and the
// byte reordering of convert between packed RGB formats.
#include "kernels/pixel_stage.h"

namespace cudaoverlap {

bool is_pixel_stage_format(PixelFormat format) {
  const FormatInfo& info = format_info(format);
  if (info.is_yuv || is_bayer(format) || info.n_planes != 1 || info.n_components < 3 ||
      info.sample_bytes != 1)
    return false;
  const int bytes = info.comp[0].pixel_stride;
  return (bytes == 3 || bytes == 4) && info.comp[0].depth == 8;
}

int pixel_stage_bytes(PixelFormat format) { return format_info(format).comp[0].pixel_stride; }

PixelStage rgb_shuffle_stage(PixelFormat in, PixelFormat out) {
  const FormatInfo& a = format_info(in);
  const FormatInfo& b = format_info(out);
  PixelStage stage;
  stage.selector = 0;
  // Byte k of the output: R, G or B from its byte of the input; the alpha
  // or padding byte from the input's, or 255 (byte k of `constant`, selector
  // 4 + k) where the input has none; byte 3 of a 3-byte pixel, nothing
  // (the input's byte 3, never stored).
  for (int k = 0; k < 4; ++k) {
    uint32_t from = static_cast<uint32_t>(k);
    for (int c = 0; c < 3; ++c)
      if (b.comp[c].offset == k) from = static_cast<uint32_t>(a.comp[c].offset);
    if (k == b.alpha_byte) {
      if (a.alpha_byte >= 0) {
        from = static_cast<uint32_t>(a.alpha_byte);
      } else {
        from = 4u + static_cast<uint32_t>(k);
        stage.constant |= 0xFFu << (8 * k);
      }
    }
    stage.selector |= from << (4 * k);
  }
  return stage;
}

PixelStage compose_shuffles(const PixelStage& first, const PixelStage& then) {
  const auto byte = [](uint32_t word, uint32_t k) { return (word >> (8 * k)) & 0xFFu; };
  const auto nibble = [](uint32_t selector, uint32_t k) { return (selector >> (4 * k)) & 7u; };
  PixelStage stage;
  stage.selector = 0;
  for (uint32_t k = 0; k < 4; ++k) {
    // Output byte k: a constant, or input byte `from` with bits flipped.
    uint32_t from = nibble(then.selector, k);
    uint32_t flip = byte(then.mask, k);
    bool constant = from >= 4;
    uint32_t value = constant ? byte(then.constant, from - 4) : 0;
    if (!constant) {
      flip ^= byte(first.mask, from);
      const uint32_t before = nibble(first.selector, from);
      constant = before >= 4;
      if (constant) value = byte(first.constant, before - 4);
      from = before;
    }
    if (constant) {
      stage.selector |= (4u + k) << (4 * k);
      stage.constant |= (value ^ flip) << (8 * k);
    } else {
      stage.selector |= from << (4 * k);
      stage.mask |= flip << (8 * k);
    }
  }
  return stage;
}

uint32_t apply_shuffle(const PixelStage& stage, uint32_t pixel) {
  uint32_t out = 0;
  for (int k = 0; k < 4; ++k) {
    const uint32_t from = (stage.selector >> (4 * k)) & 7u;
    const uint32_t source = from < 4 ? pixel : stage.constant;
    out |= ((source >> (8 * (from & 3u))) & 0xFFu) << (8 * k);
  }
  return out ^ stage.mask;
}

}  // namespace cudaoverlap
