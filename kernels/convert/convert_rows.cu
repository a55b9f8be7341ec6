// Row-wise conversions: one thread per 4x2 block, as
// yuv_to_packed_kernel, for inputs whose chroma rows are luma rows (8-bit
// 4:2:2: NV16, Y42B, YUY2, UYVY; 4:4:4: Y444) or that have no chroma (8-bit
// packed RGB, 4- and 3-byte), to packed RGB (YUV input), 4:2:0 (8- and
// 10-bit), 4:4:4 and 4:2:2 YUV, and grey (RGB input: luma alone). Each row
// gives its 4 luma samples and each
// pixel's chroma: 4:2:2 chroma brought across only (horizontal_step, or
// the nearest sample), 4:4:4 as stored, RGB through the matrix; no row is
// shared between blocks. 4:2:0 output averages each row's pairs, then the
// two rows (convert_math::block_chroma's order).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "kernels/convert/convert_rgb_words.cuh"
#include "kernels/cuda_check.h"
#include "kernels/rgb24_words.cuh"

namespace cudaoverlap {
namespace convert_detail {
namespace {

// Where rows_kernel's rows come from.
enum RowSource : int { kFromPacked422, kFromPlanes422, kFrom444, kFromRgb32, kFromRgb24 };

// Row y's luma samples x0 .. x0 + 3 (clamped to the picture, as the
// reference's pixels are) and the chroma around them (see ChromaRow).
struct Row422 {
  uint32_t luma;
  ChromaRow chroma;
};

// fetch422_row for planar and semi-planar 4:2:2 in rows_kernel's kFast
// instance: 4 columns inside the picture and aligned planes, so every
// access is one load; rows reached by one 32 x 32-bit multiply, and the
// chroma neighbours at offsets `left` and `right` (in columns, clamped to
// the plane) worked out once per thread.
template <bool kLinear>
__device__ __forceinline__ Row422 fetch422_fast(const ConvertLayout& L, const ImageRef& in, int y,
                                                int x0, int left, int right) {
  auto row = [&](int p) {
    return in.planes[p].data + static_cast<size_t>(static_cast<uint32_t>(y)) *
                                   static_cast<uint32_t>(in.planes[p].stride);
  };
  const int c0 = x0 >> 1;
  Row422 r{};
  r.luma = *reinterpret_cast<const uint32_t*>(row(0) + x0);
  if (L.in_semi) {  // NV16: (U, V) pairs
    const uint8_t* p = row(1) + 2 * c0;
    r.chroma.mid = *reinterpret_cast<const uint32_t*>(p);
    if (kLinear) {
      r.chroma.left = *reinterpret_cast<const uint16_t*>(p + 2 * left);
      r.chroma.right = *reinterpret_cast<const uint16_t*>(p + 2 * right);
    }
  } else {
    const uint8_t* u = row(1) + c0;
    const uint8_t* v = row(2) + c0;
    r.chroma.mid = __byte_perm(*reinterpret_cast<const uint16_t*>(u),
                               *reinterpret_cast<const uint16_t*>(v), 0x5140);
    if (kLinear) {
      r.chroma.left = static_cast<uint32_t>(u[left]) | static_cast<uint32_t>(v[left]) << 8;
      r.chroma.right = static_cast<uint32_t>(u[right]) | static_cast<uint32_t>(v[right]) << 8;
    }
  }
  return r;
}

template <bool kPackedIn, bool kLinear>
__device__ __forceinline__ Row422 fetch422_row(const ConvertLayout& L, const ImageRef& in, int y,
                                               int x0, bool full, int cw) {
  const int width = in.width, c0 = x0 >> 1;
  Row422 r{};
  if constexpr (!kPackedIn) {
    r.luma = load_luma(in.planes[0].data + static_cast<size_t>(y) * in.planes[0].stride, x0, width,
                       full, L.in_a4[0]);
    r.chroma = fetch_chroma_row<kLinear>(L, in, L.in_semi, c0, y, cw);
    return r;
  }
  // Pair words c0 - 1 .. c0 + 2 (w[0] .. w[3]), clamped to the row.
  const uint8_t* row = in.planes[0].data + static_cast<size_t>(y) * in.planes[0].stride;
  auto word = [&](int pair) {
    const uint8_t* p = row + 4 * static_cast<size_t>(pair);
    if (L.in_a4[0]) return *reinterpret_cast<const uint32_t*>(p);
    return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
           static_cast<uint32_t>(p[2]) << 16 | static_cast<uint32_t>(p[3]) << 24;
  };
  uint32_t w[4];
  if (c0 + 1 < cw && L.in_a16) {
    const uint2 m = *reinterpret_cast<const uint2*>(row + 4 * static_cast<size_t>(c0));
    w[1] = m.x, w[2] = m.y;
  } else {
    w[1] = word(c0);
    w[2] = word(min(c0 + 1, cw - 1));
  }
  if (kLinear) {
    w[0] = word(max(c0 - 1, 0));
    w[3] = word(min(c0 + 2, cw - 1));
  }
  r.luma = __byte_perm(w[1], w[2], L.pair_luma_sel);
  if (!full) {
    // Pixels past the width repeat the last one (an odd width's last pair
    // holds a second luma the reference does not read).
    const int last = width - 1 - x0;
    uint32_t sel = 0;
    for (int i = 0; i < 4; ++i) sel |= static_cast<uint32_t>(min(i, last)) << (4 * i);
    r.luma = __byte_perm(r.luma, 0, sel);
  }
  r.chroma.mid = __byte_perm(w[1], w[2], L.pair_uv_sel);
  if (kLinear) {
    r.chroma.left = __byte_perm(w[0], 0, L.pair_one_uv_sel);
    r.chroma.right = __byte_perm(w[3], 0, L.pair_one_uv_sel);
  }
  return r;
}

// 10-bit 4:2:0 output (kToP010, kToI420_10) and GRAY16_LE (kToGrey16):
// row y's 4 luma samples and the chroma samples c0 and c0 + 1 (the first n
// inside the plane) of chroma row `by`, U and V, all on the 16-bit scale,
// each packed as convert_math::packed16 packs it.
template <int kOut>
__device__ __forceinline__ void store_deep420_luma(const ConvertLayout& L, const ImageRef& out,
                                                   int y, int x0, int width, bool full,
                                                   const int (&luma)[4]) {
  uint32_t w[4];
  CO_UNROLL
  for (int i = 0; i < 4; ++i) {
    const uint32_t v = static_cast<uint32_t>(luma[i]);
    w[i] = kOut == kToP010 ? v & 0xFFC0u : (kOut == kToGrey16 ? v : v >> 6);
  }
  uint8_t* d = out.planes[0].data + static_cast<size_t>(y) * out.planes[0].stride + 2 * x0;
  if (full && L.out_a16) {
    *reinterpret_cast<uint2*>(d) = make_uint2(w[0] | w[1] << 16, w[2] | w[3] << 16);
    return;
  }
  for (int i = 0; i < 4 && x0 + i < width; ++i) {
    if (L.out_a2[0]) {
      reinterpret_cast<uint16_t*>(d)[i] = static_cast<uint16_t>(w[i]);
    } else {
      d[2 * i] = static_cast<uint8_t>(w[i]);
      d[2 * i + 1] = static_cast<uint8_t>(w[i] >> 8);
    }
  }
}

template <int kOut>
__device__ __forceinline__ void store_deep420_chroma(const ConvertLayout& L, const ImageRef& out,
                                                     int by, int c0, int n, const int (&u)[2],
                                                     const int (&v)[2]) {
  auto pack = [](int s) {
    return kOut == kToP010 ? static_cast<uint32_t>(s) & 0xFFC0u : static_cast<uint32_t>(s) >> 6;
  };
  auto store16 = [](uint8_t* d, uint32_t w, bool a2) {
    if (a2) {
      *reinterpret_cast<uint16_t*>(d) = static_cast<uint16_t>(w);
    } else {
      d[0] = static_cast<uint8_t>(w);
      d[1] = static_cast<uint8_t>(w >> 8);
    }
  };
  if constexpr (kOut == kToP010) {
    uint8_t* d = out.planes[1].data + static_cast<size_t>(by) * out.planes[1].stride + 4 * c0;
    for (int j = 0; j < n; ++j) {
      const uint32_t w = pack(u[j]) | pack(v[j]) << 16;  // (U, V) words
      if (L.out_a4[1]) {
        reinterpret_cast<uint32_t*>(d)[j] = w;
      } else {
        store16(d + 4 * j, w, false);
        store16(d + 4 * j + 2, w >> 16, false);
      }
    }
  } else {
    uint8_t* du = out.planes[1].data + static_cast<size_t>(by) * out.planes[1].stride + 2 * c0;
    uint8_t* dv = out.planes[2].data + static_cast<size_t>(by) * out.planes[2].stride + 2 * c0;
    if (n == 2 && L.out_a4[1] && L.out_a4[2]) {
      *reinterpret_cast<uint32_t*>(du) = pack(u[0]) | pack(u[1]) << 16;
      *reinterpret_cast<uint32_t*>(dv) = pack(v[0]) | pack(v[1]) << 16;
    } else {
      for (int j = 0; j < n; ++j) {
        store16(du + 2 * j, pack(u[j]), L.out_a2[1]);
        store16(dv + 2 * j, pack(v[j]), L.out_a2[2]);
      }
    }
  }
}

// The 16-bit chroma (convert_math's kDeep arithmetic: samples * 257, 3:1
// across, pairs averaged) of a 4:2:2 row's two output pairs, U in u[j] and
// V in v[j]; the pixel past an odd width is the last one.
template <bool kLinear>
__device__ __forceinline__ void deep422_pairs(const ChromaRow& row, int x0, int width, int (&u)[2],
                                              int (&v)[2]) {
  using convert_math::average;
  using convert_math::mix31;
  auto at = [](uint32_t w, int b) { return static_cast<int>((w >> (8 * b)) & 0xFFu) * 257; };
  const int su[4] = {at(row.left, 0), at(row.mid, 0), at(row.mid, 2), at(row.right, 0)};
  const int sv[4] = {at(row.left, 1), at(row.mid, 1), at(row.mid, 3), at(row.right, 1)};
  int hu[4], hv[4];
  if (kLinear) {
    deep_across(su, hu);
    deep_across(sv, hv);
  } else {
    hu[0] = hu[1] = su[1], hu[2] = hu[3] = su[2];
    hv[0] = hv[1] = sv[1], hv[2] = hv[3] = sv[2];
  }
  if (x0 + 1 >= width) hu[1] = hu[0], hv[1] = hv[0];
  if (x0 + 3 >= width) hu[3] = hu[2], hv[3] = hv[2];
  u[0] = average(hu[0], hu[1]), u[1] = average(hu[2], hu[3]);
  v[0] = average(hv[0], hv[1]), v[1] = average(hv[2], hv[3]);
}

// Row y's 4 pixels from x0 for rows_kernel: luma in the bytes of `luma`,
// each pixel's chroma U | V << 16 (8 bits each) in c[i]; a pixel past the
// width repeats the last one, as the reference's clamped pixels do.
struct RowPixels {
  uint32_t luma, c[4];
};

// Row y's 4 packed RGB pixels from x0 (3-byte: kRgb24), each a word with
// the pixel's bytes from byte 0; past the width the last one repeats.
template <bool kRgb24>
__device__ __forceinline__ void load_rgb_pixels(const ConvertLayout& L, const ImageRef& in, int y,
                                                int x0, bool full, uint32_t px[4]) {
  const int width = in.width;
  const uint8_t* row = in.planes[0].data + static_cast<size_t>(y) * in.planes[0].stride;
  if constexpr (!kRgb24) {
    load_packed(row, x0, width, full, L.in_a16, L.in_a4[0], px);
  } else if (full && L.in_a4[0]) {
    const uint32_t* q = reinterpret_cast<const uint32_t*>(row + static_cast<size_t>(x0) * 3);
    const uint32_t w[3] = {q[0], q[1], q[2]};
    rgb24::unpack(w, px);
  } else {
    CO_UNROLL
    for (int i = 0; i < 4; ++i) {
      const uint8_t* p = row + static_cast<size_t>(min(x0 + i, width - 1)) * 3;
      px[i] = static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
              static_cast<uint32_t>(p[2]) << 16;
    }
  }
}

// kFast: rows_kernel's kFast instance (fetch422_fast for planar and
// semi-planar 4:2:2).
template <int kSrc, bool kLinear, bool kFast = false>
__device__ __forceinline__ RowPixels fetch_row_pixels(const ConvertLayout& L, const ImageRef& in,
                                                      int y, int x0, bool full, int cw) {
  const int width = in.width;
  RowPixels r;
  if constexpr (kSrc == kFromPacked422 || kSrc == kFromPlanes422) {
    const int c0 = x0 >> 1;
    const Row422 s =
        kFast && kSrc == kFromPlanes422
            ? fetch422_fast<kLinear>(L, in, y, x0, c0 >= 1 ? -1 : 0, c0 + 2 < cw ? 2 : 1)
            : fetch422_row<kSrc == kFromPacked422, kLinear>(L, in, y, x0, full, cw);
    r.luma = s.luma;
    if (kLinear) {
      horizontal_step(s.chroma, r.c);
    } else {
      r.c[0] = r.c[1] = __byte_perm(s.chroma.mid, 0, 0x4140);
      r.c[2] = r.c[3] = __byte_perm(s.chroma.mid, 0, 0x4342);
    }
    // A pixel past an odd width is the last one clamped (see
    // yuv_to_packed_kernel).
    if (x0 + 1 >= width) r.c[1] = r.c[0];
    if (x0 + 3 >= width) r.c[3] = r.c[2];
  } else if constexpr (kSrc == kFrom444) {
    auto plane = [&](int p) {
      return load_luma(in.planes[p].data + static_cast<size_t>(y) * in.planes[p].stride, x0, width,
                       full, L.in_a4[p]);
    };
    r.luma = plane(0);
    const uint32_t u = plane(1), v = plane(2);
    CO_UNROLL
    for (int i = 0; i < 4; ++i)
      r.c[i] = __byte_perm(u, v, 0x0400u + static_cast<uint32_t>(i * 0x0101)) & 0x00FF00FFu;
  } else {
    uint32_t px[4];
    load_rgb_pixels<kSrc == kFromRgb24>(L, in, y, x0, full, px);
    const ConvertCoefficients& k = L.k;
    r.luma = 0;
    CO_UNROLL
    for (int i = 0; i < 4; ++i) {
      const int cr = byte_of(px[i], L.in_sel[0]), cg = byte_of(px[i], L.in_sel[1]),
                cb = byte_of(px[i], L.in_sel[2]);
      r.luma |= static_cast<uint32_t>(convert_math::rgb_to(k.to_yuv[0], cr, cg, cb)) << (8 * i);
      r.c[i] = static_cast<uint32_t>(convert_math::rgb_to(k.to_yuv[1], cr, cg, cb)) |
               static_cast<uint32_t>(convert_math::rgb_to(k.to_yuv[2], cr, cg, cb)) << 16;
    }
  }
  return r;
}

// Row y's 4 luma samples (l[i]) and its two output pairs' chroma (u[j],
// v[j]) on the 16-bit scale, for 10-bit 4:2:0 output (convert_math's
// kDeep arithmetic): 8-bit YUV samples * 257, 4:2:2 chroma 3:1 across on
// that scale; RGB through to_output<true>; pairs averaged.
template <int kSrc, bool kLinear, bool kFast = false>
__device__ __forceinline__ void fetch_deep_row(const ConvertLayout& L, const ImageRef& in, int y,
                                               int x0, bool full, int cw, int (&l)[4], int (&u)[2],
                                               int (&v)[2]) {
  using convert_math::average;
  if constexpr (kSrc == kFromRgb32 || kSrc == kFromRgb24) {
    uint32_t px[4];
    load_rgb_pixels<kSrc == kFromRgb24>(L, in, y, x0, full, px);
    // to_output<true>'s matrix on the samples times 257, in 32 bits.
    const ConvertCoefficients& k = L.k;
    int cu[4], cv[4];
    CO_UNROLL
    for (int i = 0; i < 4; ++i) {
      const int r = byte_of(px[i], L.in_sel[0]), g = byte_of(px[i], L.in_sel[1]),
                b = byte_of(px[i], L.in_sel[2]);
      l[i] = convert_math::rgb8_to16(k.to_yuv[0], k.to_yuv_offset16[0], r, g, b);
      cu[i] = convert_math::rgb8_to16(k.to_yuv[1], k.to_yuv_offset16[1], r, g, b);
      cv[i] = convert_math::rgb8_to16(k.to_yuv[2], k.to_yuv_offset16[2], r, g, b);
    }
    CO_UNROLL
    for (int j = 0; j < 2; ++j) {
      u[j] = average(cu[2 * j], cu[2 * j + 1]);
      v[j] = average(cv[2 * j], cv[2 * j + 1]);
    }
    return;
  }
  uint32_t luma;
  if constexpr (kSrc == kFrom444) {
    const RowPixels r = fetch_row_pixels<kSrc, kLinear, kFast>(L, in, y, x0, full, cw);
    luma = r.luma;
    auto at = [](uint32_t w, int b) { return static_cast<int>((w >> (8 * b)) & 0xFFu) * 257; };
    CO_UNROLL
    for (int j = 0; j < 2; ++j) {
      u[j] = average(at(r.c[2 * j], 0), at(r.c[2 * j + 1], 0));
      v[j] = average(at(r.c[2 * j], 2), at(r.c[2 * j + 1], 2));
    }
  } else {
    const int c0 = x0 >> 1;
    const Row422 r =
        kFast && kSrc == kFromPlanes422
            ? fetch422_fast<kLinear>(L, in, y, x0, c0 >= 1 ? -1 : 0, c0 + 2 < cw ? 2 : 1)
            : fetch422_row<kSrc == kFromPacked422, kLinear>(L, in, y, x0, full, cw);
    luma = r.luma;
    deep422_pairs<kLinear>(r.chroma, x0, in.width, u, v);
  }
  CO_UNROLL
  for (int i = 0; i < 4; ++i) l[i] = static_cast<int>((luma >> (8 * i)) & 0xFFu) * 257;
}

// kFast: the picture's width is a multiple of 4 and every plane of both
// sides is aligned to 4 bytes, plane 0 to 16 (rows_fast): each thread's 4
// columns lie inside the picture and every access can be a word, so the
// loads' and stores' byte-wise and clamped fallbacks drop out of the
// kernel (see rows_kernel).
template <int kSrc, bool kLinear, int kOut, bool kFast>
__device__ __forceinline__ void rows_body(const ConvertLayout& L, const ImageRef& in,
                                          const ImageRef& out, int blocks_x, int blocks_y) {
  constexpr bool k420 = kOut == kToSemi420 || kOut == kToPlanar420;
  constexpr bool kGrey = kOut == kToGrey8 || kOut == kToGrey16;
  constexpr bool kDeep = kOut == kToP010 || kOut == kToI420_10 || kOut == kToGrey16;
  const int bx4 = blockIdx.x * blockDim.x + threadIdx.x;
  if (bx4 >= blocks_x) return;
  const int width = in.width, x0 = 4 * bx4, c0 = x0 >> 1;
  const bool full = kFast || x0 + 4 <= width;
  // Both rows read before either is written (the kFast instance, planar
  // and semi-planar 4:2:2): the compiler cannot move a load above a store
  // that may alias it, so the second row's loads would wait for the first
  // row's stores. The other sources are slower that way.
  constexpr bool kAhead = kFast && kSrc == kFromPlanes422;
  const int cw = (width + 1) >> 1;
  for (int by = blockIdx.y * blockDim.y + threadIdx.y; by < blocks_y;
       by += gridDim.y * blockDim.y) {
    uint32_t avg[2][2];      // 4:2:0 output: each row's two pair averages
    int du[2][2], dv[2][2];  // the same on the 16-bit scale (kDeep)
    // 8-bit output: row y's stores from its pixels (4:2:0: its luma; the
    // block row's chroma goes below, from average_row's pair averages).
    auto write_row = [&](int y, const RowPixels& r) {
      if constexpr (kOut == kToGrey8 || k420) {
        store_luma(out.planes[0].data + static_cast<size_t>(y) * out.planes[0].stride, x0, width,
                   full, L.out_a4[0], r.luma);
      } else if constexpr (kOut == kToRgb) {
        uint32_t uv[4];
        CO_UNROLL
        for (int i = 0; i < 4; ++i) uv[i] = r.c[i] ^ 0x00800080u;  // splats in bytes 0 and 2
        store_rgb_row(L, out, y, x0, width, full, r.luma, uv);
      } else if constexpr (!kDeep) {
        store_yuv_row<kOut>(L, out, y, x0, width, full, r.luma, r.c, pair_average(r.c[0], r.c[1]),
                            pair_average(r.c[2], r.c[3]));
      }
    };
    auto average_row = [&](int dy, const RowPixels& r) {
      if constexpr (k420) {
        avg[dy][0] = pair_average(r.c[0], r.c[1]);
        avg[dy][1] = pair_average(r.c[2], r.c[3]);
      }
    };
    if constexpr (kAhead) {
      // An odd height's last block row reads its one row twice (the clamped
      // row repeats it, as in the reference) and writes it once.
      const int y0 = 2 * by, y1 = min(2 * by + 1, in.height - 1);
      const bool second = 2 * by + 1 < in.height;
      if constexpr (kDeep) {
        int luma[2][4];
        fetch_deep_row<kSrc, kLinear, kFast>(L, in, y0, x0, full, cw, luma[0], du[0], dv[0]);
        fetch_deep_row<kSrc, kLinear, kFast>(L, in, y1, x0, full, cw, luma[1], du[1], dv[1]);
        store_deep420_luma<kOut>(L, out, y0, x0, width, full, luma[0]);
        if (second) store_deep420_luma<kOut>(L, out, y1, x0, width, full, luma[1]);
      } else {
        const RowPixels rows[2] = {fetch_row_pixels<kSrc, kLinear, kFast>(L, in, y0, x0, full, cw),
                                   fetch_row_pixels<kSrc, kLinear, kFast>(L, in, y1, x0, full, cw)};
        CO_UNROLL
        for (int dy = 0; dy < 2; ++dy) {
          average_row(dy, rows[dy]);
          if (dy == 0 || second) write_row(dy == 0 ? y0 : y1, rows[dy]);
        }
      }
    } else {
      CO_UNROLL
      for (int dy = 0; dy < 2; ++dy) {
        const int y = 2 * by + dy;
        if (y >= in.height) {  // odd height: the clamped row repeats the last
          avg[1][0] = avg[0][0], avg[1][1] = avg[0][1];
          du[1][0] = du[0][0], du[1][1] = du[0][1];
          dv[1][0] = dv[0][0], dv[1][1] = dv[0][1];
          continue;
        }
        if constexpr (kDeep) {
          int luma[4];
          fetch_deep_row<kSrc, kLinear>(L, in, y, x0, full, cw, luma, du[dy], dv[dy]);
          store_deep420_luma<kOut>(L, out, y, x0, width, full, luma);
          continue;
        }
        const RowPixels r = fetch_row_pixels<kSrc, kLinear>(L, in, y, x0, full, cw);
        write_row(y, r);
        average_row(dy, r);
      }
    }
    if constexpr (k420)
      store_chroma_pairs<kOut == kToSemi420>(
          L, out.planes[1].data + static_cast<size_t>(by) * out.planes[1].stride,
          out.planes[2].data + static_cast<size_t>(by) * out.planes[2].stride,
          L.out_swap ? 0x4602 : 0x6420, c0, min(2, cw - c0), pair_average(avg[0][0], avg[1][0]),
          pair_average(avg[0][1], avg[1][1]));
    if constexpr (kDeep && !kGrey) {
      using convert_math::average;
      const int u[2] = {average(du[0][0], du[1][0]), average(du[0][1], du[1][1])};
      const int v[2] = {average(dv[0][0], dv[1][0]), average(dv[0][1], dv[1][1])};
      store_deep420_chroma<kOut>(L, out, by, c0, min(2, cw - c0), u, v);
    }
  }
}

template <int kSrc, bool kLinear, int kOut, bool kFast>
__global__ void __launch_bounds__(kThreads)
    rows_kernel(const __grid_constant__ ConvertLayout L, const __grid_constant__ ImageRef in,
                const __grid_constant__ ImageRef out, int blocks_x, int blocks_y) {
  if constexpr (kFast) {
    // The alignments rows_fast checked, as constants the compiler folds.
    ConvertLayout f = L;
    for (int p = 0; p < 3; ++p) {
      f.in_a4[p] = f.in_a2[p] = f.out_a4[p] = f.out_a2[p] = true;
    }
    f.in_a16 = f.out_a16 = true;
    rows_body<kSrc, kLinear, kOut, true>(f, in, out, blocks_x, blocks_y);
  } else {
    rows_body<kSrc, kLinear, kOut, false>(L, in, out, blocks_x, blocks_y);
  }
}

// Whether rows_kernel's kFast instance may run (see rows_body).
bool rows_fast(const ImageRef& in, const ImageRef& out) {
  if (in.width % 4 != 0) return false;
  for (const ImageRef* image : {&in, &out}) {
    const FormatInfo& info = format_info(image->format);
    for (int p = 0; p < info.n_planes; ++p)
      if (!aligned_to(image->planes[p], p == 0 ? 16 : 4)) return false;
  }
  return true;
}

}  // namespace

bool rows_takes(PixelFormat in, PixelFormat out, const ConvertCoefficients& k, int* source,
                int* yuv_out) {
  using F = PixelFormat;
  if (k.scale_planes || k.rgb_matrix8 || k.grey_matrix) return false;
  const FormatInfo& i = format_info(in);
  const bool yuv_in =
      in == F::kNV16 || in == F::kY42B || in == F::kYUY2 || in == F::kUYVY || in == F::kY444;
  const bool rgb_in = k.in_family == convert_math::kPacked && i.sample_bytes == 1 && !is_bayer(in);
  if (!yuv_in && !rgb_in) return false;
  *source = in == F::kYUY2 || in == F::kUYVY ? kFromPacked422
            : in == F::kY444                 ? kFrom444
            : yuv_in                         ? kFromPlanes422
            : i.comp[0].pixel_stride == 3    ? kFromRgb24
                                             : kFromRgb32;
  switch (out) {
    case F::kP010_10LE:
      *yuv_out = kToP010;
      return true;
    case F::kI420_10LE:
      *yuv_out = kToI420_10;
      return true;
    case F::kNV12:
    case F::kNV21:
      *yuv_out = kToSemi420;
      return *source != kFromRgb32;
    case F::kI420:
      *yuv_out = kToPlanar420;
      return *source != kFromRgb32;
    // 4-byte RGB to GRAY8 is one of the first nine formats' pairs.
    case F::kGRAY8:
      *yuv_out = kToGrey8;
      return *source == kFromRgb24;
    case F::kGRAY16_LE:
      *yuv_out = kToGrey16;
      return rgb_in;
    default:
      break;
  }
  if (k.deep) return false;
  if (k.out_family == convert_math::kPacked) {
    *yuv_out = kToRgb;
    return yuv_in;
  }
  *yuv_out = yuv_out_to(out);
  return *yuv_out != kToRgb;
}

bool rows_cuda(const ImageRef& in, const ImageRef& out, const ConvertCoefficients& k, int source,
               int yuv_out, cudaStream_t stream) {
  const bool rgb24 = out.format == PixelFormat::kRGB || out.format == PixelFormat::kBGR;
  const ConvertLayout L = layout_of(in, out, k, rgb24, yuv_out);
  const int bw = (in.width + 3) / 4, bh = (in.height + 1) / 2;
  if (bw == 0 || bh == 0) return true;
  const dim3 grid((bw + kBlockX - 1) / kBlockX,
                  static_cast<unsigned>(std::min<int>((bh + kBlockY - 1) / kBlockY, kMaxGridY)));
  const dim3 block(kBlockX, kBlockY);
  const bool linear = k.chroma_x == kUpLinear;
  bool ran = false;
  const bool fast = rows_fast(in, out);
  // kernel(std::true_type) and kernel(std::false_type): the kFast instance
  // and the other (the same for sources without a kFast one: planar and
  // semi-planar 4:2:2 have it, the others are near enough the memory bound
  // without it).
  auto run = [&](auto kernel) {
    if (fast)
      kernel(std::true_type{})<<<grid, block, 0, stream>>>(L, in, out, bw, bh);
    else
      kernel(std::false_type{})<<<grid, block, 0, stream>>>(L, in, out, bw, bh);
    ran = true;
  };
  with_yuv_out<true>(yuv_out, [&](auto kind) {
    constexpr int kOut = decltype(kind)::value;
    // Only the kernels some pair runs are built (see chroma_path and
    // rows_takes): 4:2:2 chroma is taken from the nearest sample between
    // equal subsamplings, and from packed 4:2:2 to I420 and Y444;
    // interpolated everywhere else.
    constexpr bool k422 = kOut == kToPacked422 || kOut == kToSemi422 || kOut == kToPlanar422;
    constexpr bool kGrey = kOut == kToGrey8 || kOut == kToGrey16;  // from RGB only
    if constexpr (!k422 && !kGrey) {
      if (linear && source == kFromPacked422)
        run([](auto) { return rows_kernel<kFromPacked422, true, kOut, false>; });
      else if (linear && source == kFromPlanes422)
        run([](auto f) { return rows_kernel<kFromPlanes422, true, kOut, decltype(f)::value>; });
    }
    if constexpr (k422 || kOut == kToPlanar420 || kOut == kToPlanar444) {
      if (!linear && source == kFromPacked422)
        run([](auto) { return rows_kernel<kFromPacked422, false, kOut, false>; });
    }
    if constexpr (k422) {
      if (!linear && source == kFromPlanes422)
        run([](auto f) { return rows_kernel<kFromPlanes422, false, kOut, decltype(f)::value>; });
    }
    if constexpr (kOut != kToPlanar420 && kOut != kToPlanar422 && kOut != kToPlanar444 && !kGrey) {
      if (source == kFrom444) run([](auto) { return rows_kernel<kFrom444, false, kOut, false>; });
    }
    if constexpr (kOut != kToRgb && kOut != kToSemi420 && kOut != kToPlanar420 &&
                  kOut != kToGrey8) {
      if (source == kFromRgb32)
        run([](auto) { return rows_kernel<kFromRgb32, false, kOut, false>; });
    }
    if constexpr (kOut != kToRgb) {
      if (source == kFromRgb24)
        run([](auto) { return rows_kernel<kFromRgb24, false, kOut, false>; });
    }
  });
  if (ran) CO_CUDA_CHECK_LAUNCH("the convert kernel (by rows)");
  return ran;
}

}  // namespace convert_detail
}  // namespace cudaoverlap
