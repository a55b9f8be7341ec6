// Host side of the layouts convert's 4x2-block kernels share: ConvertLayout
// from the formats, luma copies, rows per thread, the 8-bit YUV outputs.
#include "kernels/convert/convert_layout.cuh"

namespace cudaoverlap {
namespace convert_detail {

LumaCopy luma_copy(const PlaneRef& in, const PlaneRef& out, int bytes, int rows, int band) {
  return {in.data, out.data, in.stride, out.stride,
          bytes,   rows,     band,      aligned_to(in, 16) && aligned_to(out, 16)};
}

int rows_per_thread(int bw, int bh) {
  return bw * bh >= (1 << 19) ? 4 : bw * bh >= (1 << 17) ? 2 : 1;
}

ConvertLayout layout_of(const ImageRef& in, const ImageRef& out,
                        const ConvertCoefficients& coefficients, bool rgb24, int yuv_out) {
  ConvertLayout L{};
  L.k = coefficients;
  const ConvertCoefficients& k = L.k;
  for (int c = 0; c < 3; ++c) L.in_sel[c] = 0x4440u | static_cast<uint32_t>(k.in_offsets[c]);
  L.out_rgb24 = rgb24;
  L.yuv_out = yuv_out;
  if (yuv_out == kToPacked422) {
    const ConvertSide& os = coefficients.out_side;
    const int to[4] = {os.offset[0], os.offset[1], os.offset[0] + 2, os.offset[2]};
    for (int c = 0; c < 4; ++c) L.pair_perm |= static_cast<uint32_t>(c) << (4 * to[c]);
  }
  // Packed RGB output only (grey and YUV output have no pixel words, and
  // their offsets of alpha are -1).
  for (int c = 0; c < 4 && k.out_family == convert_math::kPacked; ++c) {
    // 3-byte output has no alpha byte: byte 3 of its pixel words is unused.
    const int to = rgb24 && c == 3 ? 3 : k.out_offsets[c];
    L.out_perm |= static_cast<uint32_t>(c) << (4 * to);
    // From packed input only; 3-byte input has no alpha byte (-1).
    if (k.in_family == convert_math::kPacked && k.in_offsets[c] >= 0)
      L.repack_perm |= static_cast<uint32_t>(k.in_offsets[c]) << (4 * to);
    L.yuv_perm |= static_cast<uint32_t>(c == 1 ? 4 : c == 2 ? 2 : 2 * c) << (4 * to);
  }
  const int in_planes = format_info(in.format).n_planes;
  const int out_planes = format_info(out.format).n_planes;
  for (int p = 0; p < 3; ++p) {
    L.in_a4[p] = p < in_planes && aligned_to(in.planes[p], 4);
    L.in_a2[p] = p < in_planes && aligned_to(in.planes[p], 2);
    L.in_a8[p] = p < in_planes && aligned_to(in.planes[p], 8);
    L.out_a4[p] = p < out_planes && aligned_to(out.planes[p], 4);
    L.out_a2[p] = p < out_planes && aligned_to(out.planes[p], 2);
  }
  L.in_a16 = aligned_to(in.planes[0], 16);
  L.in_semi = in.format == PixelFormat::kNV12 || in.format == PixelFormat::kNV21 ||
              in.format == PixelFormat::kP010_10LE || in.format == PixelFormat::kNV16;
  const ConvertSide& is = coefficients.in_side;
  if (coefficients.in_family == convert_math::kYuv && is.plane[0] == is.plane[1]) {
    // packed 4:2:2: Y at offset[0] and offset[0] + 2 of each pair word
    const uint32_t y = is.offset[0], u = is.offset[1], v = is.offset[2];
    L.pair_luma_sel = y | (y + 2) << 4 | (y + 4) << 8 | (y + 6) << 12;
    L.pair_uv_sel = u | v << 4 | (u + 4) << 8 | (v + 4) << 12;
    L.pair_one_uv_sel = u | v << 4 | 0x4400u;
  }
  L.in_swap = in.format == PixelFormat::kNV21;
  L.out_semi = out.format == PixelFormat::kNV12 || out.format == PixelFormat::kNV21;
  L.out_swap = out.format == PixelFormat::kNV21;
  L.out_a16 = aligned_to(out.planes[0], 16);
  return L;
}

int yuv_out_to(PixelFormat out) {
  switch (out) {
    case PixelFormat::kYUY2:
    case PixelFormat::kUYVY:
      return kToPacked422;
    case PixelFormat::kNV16:
      return kToSemi422;
    case PixelFormat::kY42B:
      return kToPlanar422;
    case PixelFormat::kY444:
      return kToPlanar444;
    default:
      return kToRgb;
  }
}

}  // namespace convert_detail
}  // namespace cudaoverlap
