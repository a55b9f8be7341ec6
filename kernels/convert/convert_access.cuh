// Device helpers of convert's 4x2-block kernels: a block's rows loaded and
// stored (clamped or clipped at the picture's edges), chroma rows fetched
// and brought across, and 4:2:2 and 4:4:4 YUV output stored.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/convert/convert_layout.cuh"
#include "kernels/rgb24_words.cuh"

namespace cudaoverlap {
namespace convert_detail {

__device__ __forceinline__ int byte_of(uint32_t w, uint32_t sel) {
  return static_cast<int>(__byte_perm(w, 0, sel));
}

// --- Loads and stores of one row of the block, clamped or clipped at the
// right edge (x0 = 4 * block column; `full` when all 4 pixels are inside).

// Four packed pixels; pixels past the edge repeat the last one, as the
// reference's clamped coordinates do.
__device__ __forceinline__ void load_packed(const uint8_t* row, int x0, int width, bool full,
                                            bool a16, bool a4, uint32_t px[4]) {
  if (a16 && full) {
    const uint4 v = *reinterpret_cast<const uint4*>(row + static_cast<size_t>(x0) * 4);
    px[0] = v.x, px[1] = v.y, px[2] = v.z, px[3] = v.w;
    return;
  }
  for (int i = 0; i < 4; ++i) {
    const uint8_t* p = row + static_cast<size_t>(min(x0 + i, width - 1)) * 4;
    if (a4) {
      px[i] = *reinterpret_cast<const uint32_t*>(p);
    } else {
      px[i] = static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
              static_cast<uint32_t>(p[2]) << 16 | static_cast<uint32_t>(p[3]) << 24;
    }
  }
}

__device__ __forceinline__ void store_packed(uint8_t* row, int x0, int width, bool full, bool a16,
                                             bool a4, const uint32_t px[4]) {
  if (a16 && full) {
    *reinterpret_cast<uint4*>(row + static_cast<size_t>(x0) * 4) =
        make_uint4(px[0], px[1], px[2], px[3]);
    return;
  }
  for (int i = 0; i < 4 && x0 + i < width; ++i) {
    uint8_t* p = row + static_cast<size_t>(x0 + i) * 4;
    if (a4) {
      *reinterpret_cast<uint32_t*>(p) = px[i];
    } else {
      for (int c = 0; c < 4; ++c) p[c] = static_cast<uint8_t>(px[i] >> (8 * c));
    }
  }
}

// Four 3-byte pixels, bytes 0..2 of px[i], as the three words they fill.
__device__ __forceinline__ void store_rgb24_words(uint32_t* d, const uint32_t px[4]) {
  uint32_t q[3];
  rgb24::pack(px, q);
  d[0] = q[0], d[1] = q[1], d[2] = q[2];
}

// Four 3-byte pixels: three words where the row is 4-byte aligned (4
// pixels are 12 bytes) and all 4 are inside.
__device__ __forceinline__ void store_rgb24(uint8_t* row, int x0, int width, bool full, bool a4,
                                            const uint32_t px[4]) {
  uint8_t* p = row + static_cast<size_t>(x0) * 3;
  if (a4 && full) {
    store_rgb24_words(reinterpret_cast<uint32_t*>(p), px);
    return;
  }
  for (int i = 0; i < 4 && x0 + i < width; ++i)
    for (int c = 0; c < 3; ++c) p[3 * i + c] = static_cast<uint8_t>(px[i] >> (8 * c));
}

// Four luma (or grey) samples as the bytes of a word, clamped at the edge.
__device__ __forceinline__ uint32_t load_luma(const uint8_t* row, int x0, int width, bool full,
                                              bool a4) {
  if (a4 && full) return *reinterpret_cast<const uint32_t*>(row + x0);
  uint32_t w = 0;
  for (int i = 0; i < 4; ++i) w |= static_cast<uint32_t>(row[min(x0 + i, width - 1)]) << (8 * i);
  return w;
}

__device__ __forceinline__ void store_luma(uint8_t* row, int x0, int width, bool full, bool a4,
                                           uint32_t w) {
  if (a4 && full) {
    *reinterpret_cast<uint32_t*>(row + x0) = w;
    return;
  }
  for (int i = 0; i < 4 && x0 + i < width; ++i) row[x0 + i] = static_cast<uint8_t>(w >> (8 * i));
}

// What a block takes from chroma row r of a 4:2:0 input around its columns
// c0 and c0 + 1 (c0 + 1 clamped to the plane): `mid` holds U(c0), V(c0),
// U(c0 + 1), V(c0 + 1) in bytes 0..3; for interpolated chroma, `left` and
// `right` hold U and V of columns c0 - 1 and c0 + 2, clamped, in bytes 0
// and 1. Loaded as words when the plane's alignment and the columns allow.
struct ChromaRow {
  uint32_t mid, left, right;
};

// U | V << 8 of column c, row r (inside the plane).
__device__ __forceinline__ uint32_t uv_bytes(const ImageRef& in, bool nv12, int c, int r) {
  if (nv12) {
    const uint8_t* p = in.planes[1].data + static_cast<size_t>(r) * in.planes[1].stride + 2 * c;
    return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8;
  }
  return static_cast<uint32_t>(
             in.planes[1].data[static_cast<size_t>(r) * in.planes[1].stride + c]) |
         static_cast<uint32_t>(in.planes[2].data[static_cast<size_t>(r) * in.planes[2].stride + c])
             << 8;
}

template <bool kLinear>
__device__ __forceinline__ ChromaRow fetch_chroma_row(const ConvertLayout& L, const ImageRef& in,
                                                      bool nv12, int c0, int r, int cw) {
  ChromaRow row{0, 0, 0};
  const bool pair = c0 + 1 < cw;
  if (nv12) {
    const uint8_t* p = in.planes[1].data + static_cast<size_t>(r) * in.planes[1].stride + 2 * c0;
    row.mid = L.in_a4[1] && pair ? *reinterpret_cast<const uint32_t*>(p)
                                 : __byte_perm(uv_bytes(in, true, c0, r),
                                               uv_bytes(in, true, min(c0 + 1, cw - 1), r), 0x5410);
    if (kLinear) {
      if (L.in_a2[1] && c0 >= 1 && c0 + 2 < cw) {
        row.left = *reinterpret_cast<const uint16_t*>(p - 2);
        row.right = *reinterpret_cast<const uint16_t*>(p + 4);
      } else {
        row.left = uv_bytes(in, true, clamp_index(c0 - 1, cw), r);
        row.right = uv_bytes(in, true, clamp_index(c0 + 2, cw), r);
      }
    }
    if (L.in_swap) {  // NV21: (V, U) pairs to (U, V)
      row.mid = __byte_perm(row.mid, 0, 0x2301);
      row.left = __byte_perm(row.left, 0, 0x4401);
      row.right = __byte_perm(row.right, 0, 0x4401);
    }
    return row;
  }
  if (L.in_a2[1] && L.in_a2[2] && pair) {
    const uint32_t u2 = *reinterpret_cast<const uint16_t*>(
        in.planes[1].data + static_cast<size_t>(r) * in.planes[1].stride + c0);
    const uint32_t v2 = *reinterpret_cast<const uint16_t*>(
        in.planes[2].data + static_cast<size_t>(r) * in.planes[2].stride + c0);
    row.mid = __byte_perm(u2, v2, 0x5140);
  } else {
    row.mid = __byte_perm(uv_bytes(in, false, c0, r), uv_bytes(in, false, min(c0 + 1, cw - 1), r),
                          0x5410);
  }
  if (kLinear) {
    row.left = uv_bytes(in, false, clamp_index(c0 - 1, cw), r);
    row.right = uv_bytes(in, false, clamp_index(c0 + 2, cw), r);
  }
  return row;
}

// The horizontal step of convert_math::chroma_at for the block's 4 pixels,
// U and V in lanes: pixel i's own column is c0 + i / 2 and its second one
// c0 - 1 + {0, 2, 1, 3}[i] (the left neighbour for even x, the right one
// for odd x).
__device__ __forceinline__ void horizontal_step(const ChromaRow& row, uint32_t h[4]) {
  const uint32_t s0 = __byte_perm(row.mid, 0, 0x4140);
  const uint32_t s1 = __byte_perm(row.mid, 0, 0x4342);
  h[0] = mix31_lanes(s0, __byte_perm(row.left, 0, 0x4140));
  h[1] = mix31_lanes(s0, s1);
  h[2] = mix31_lanes(s1, s0);
  h[3] = mix31_lanes(s1, __byte_perm(row.right, 0, 0x4140));
}

// The horizontal step for the block's 4 pixels (see horizontal_step).
__device__ __forceinline__ void deep_across(const int s[4], int h[4]) {
  h[0] = convert_math::mix31(s[1], s[0]);
  h[1] = convert_math::mix31(s[1], s[2]);
  h[2] = convert_math::mix31(s[2], s[1]);
  h[3] = convert_math::mix31(s[2], s[3]);
}

// Two pixels' chroma (U | V << 16, 8 bits each) averaged, rounding up, in
// lanes (sums below 512), as convert_math::block_chroma averages a pair.
__device__ __forceinline__ uint32_t pair_average(uint32_t a, uint32_t b) {
  return ((a + b + 0x00010001u) >> 1) & 0x00FF00FFu;
}

// Chroma samples c0 and c0 + 1 (U | V << 16 in a0 and a1; the first n of
// them inside the plane) of one chroma row of a subsampled output, whose
// rows in planes 1 and 2 start at r1 and r2: a semi-planar plane of pairs
// (kSemi; pair_sel the byte permute that orders them: 0x6420 for (U, V),
// 0x4602 for NV21's (V, U)) or planes U and V.
template <bool kSemi>
__device__ __forceinline__ void store_chroma_pairs(const ConvertLayout& L, uint8_t* r1, uint8_t* r2,
                                                   uint32_t pair_sel, int c0, int n, uint32_t a0,
                                                   uint32_t a1) {
  if constexpr (kSemi) {
    const uint32_t w = __byte_perm(a0, a1, pair_sel);
    uint8_t* d = r1 + 2 * c0;
    if (n == 2 && L.out_a4[1]) {
      *reinterpret_cast<uint32_t*>(d) = w;
    } else {
      for (int b = 0; b < 2 * n; ++b) d[b] = static_cast<uint8_t>(w >> (8 * b));
    }
  } else {
    const uint32_t u = __byte_perm(a0, a1, 0x0040), v = __byte_perm(a0, a1, 0x0062);
    uint8_t* du = r1 + c0;
    uint8_t* dv = r2 + c0;
    if (n == 2 && L.out_a2[1] && L.out_a2[2]) {
      *reinterpret_cast<uint16_t*>(du) = static_cast<uint16_t>(u);
      *reinterpret_cast<uint16_t*>(dv) = static_cast<uint16_t>(v);
    } else {
      for (int j = 0; j < n; ++j) {
        du[j] = static_cast<uint8_t>(u >> (8 * j));
        dv[j] = static_cast<uint8_t>(v >> (8 * j));
      }
    }
  }
}

// Row y's 4 pixels from x0 of 4:2:2 or 4:4:4 YUV output (kOut): luma the
// 4 bytes of `luma`; each pixel's chroma U | V << 16 in c[i] (4:4:4), or
// each pair's average in a0 and a1 (4:2:2); pixels past the picture's
// width carry the last pixel's chroma.
template <int kOut, bool kLuma = true>
__device__ __forceinline__ void store_yuv_row(const ConvertLayout& L, const ImageRef& out, int y,
                                              int x0, int width, bool full, uint32_t luma,
                                              const uint32_t c[4], uint32_t a0, uint32_t a1) {
  auto row = [&](int p) {
    return out.planes[p].data + static_cast<size_t>(y) * out.planes[p].stride;
  };
  if constexpr (kOut == kToPlanar444) {
    if (kLuma) store_luma(row(0), x0, width, full, L.out_a4[0], luma);
    const uint32_t u =
        __byte_perm(__byte_perm(c[0], c[1], 0x0040), __byte_perm(c[2], c[3], 0x0040), 0x5410);
    const uint32_t v =
        __byte_perm(__byte_perm(c[0], c[1], 0x0062), __byte_perm(c[2], c[3], 0x0062), 0x5410);
    store_luma(row(1), x0, width, full, L.out_a4[1], u);
    store_luma(row(2), x0, width, full, L.out_a4[2], v);
    return;
  }
  const int c0 = x0 >> 1;
  const int n = min(2, ((width + 1) >> 1) - c0);  // pairs inside the picture
  if constexpr (kOut == kToPacked422) {
    uint32_t w[2] = {__byte_perm(__byte_perm(luma, a0, 0x6140), 0, L.pair_perm),
                     __byte_perm(__byte_perm(luma, a1, 0x6342), 0, L.pair_perm)};
    uint8_t* d = row(0) + 4 * c0;
    if (n == 2 && L.out_a16) {
      *reinterpret_cast<uint2*>(d) = make_uint2(w[0], w[1]);
    } else if (L.out_a4[0]) {
      reinterpret_cast<uint32_t*>(d)[0] = w[0];
      if (n == 2) reinterpret_cast<uint32_t*>(d)[1] = w[1];
    } else {
      for (int b = 0; b < 4 * n; ++b)
        d[b] = static_cast<uint8_t>((b < 4 ? w[0] : w[1]) >> (8 * (b & 3)));
    }
    return;
  }
  if (kLuma) store_luma(row(0), x0, width, full, L.out_a4[0], luma);
  store_chroma_pairs<kOut == kToSemi422>(L, row(1), row(2), 0x6420, c0, n, a0, a1);
}

// store_yuv_row for the fast instances: all 4 pixels inside the picture and
// the planes aligned for these stores (yuv_fast_out), rows given as
// pointers at the thread's first byte (o0: luma or packed pairs; o1, o2:
// the chroma planes, o1 alone for NV16's pairs). kLuma: luma is stored
// here (for packed 4:2:2 it always is, inside the pair words).
template <int kOut, bool kLuma>
__device__ __forceinline__ void store_yuv_words(const ConvertLayout& L, uint8_t* o0, uint8_t* o1,
                                                uint8_t* o2, uint32_t luma, const uint32_t c[4],
                                                uint32_t a0, uint32_t a1) {
  if constexpr (kOut == kToPacked422) {
    const uint32_t w0 = __byte_perm(__byte_perm(luma, a0, 0x6140), 0, L.pair_perm);
    const uint32_t w1 = __byte_perm(__byte_perm(luma, a1, 0x6342), 0, L.pair_perm);
    *reinterpret_cast<uint2*>(o0) = make_uint2(w0, w1);
    return;
  }
  if (kLuma) *reinterpret_cast<uint32_t*>(o0) = luma;
  if constexpr (kOut == kToSemi422) {
    *reinterpret_cast<uint32_t*>(o1) = __byte_perm(a0, a1, 0x6420);
  } else if constexpr (kOut == kToPlanar422) {
    *reinterpret_cast<uint16_t*>(o1) = static_cast<uint16_t>(__byte_perm(a0, a1, 0x0040));
    *reinterpret_cast<uint16_t*>(o2) = static_cast<uint16_t>(__byte_perm(a0, a1, 0x0062));
  } else {
    *reinterpret_cast<uint32_t*>(o1) =
        __byte_perm(__byte_perm(c[0], c[1], 0x0040), __byte_perm(c[2], c[3], 0x0040), 0x5410);
    *reinterpret_cast<uint32_t*>(o2) =
        __byte_perm(__byte_perm(c[0], c[1], 0x0062), __byte_perm(c[2], c[3], 0x0062), 0x5410);
  }
}

// The fast instances' row stepping (yuv_to_packed_fast, deep420_fast).
// A block row's two input rows from *p as T words (an odd height's last
// block row has one row, read twice), and p moved on to the next block row.
template <typename T>
__device__ __forceinline__ void load_row_pair(const uint8_t*& p, uint32_t stride, bool second, T& a,
                                              T& b) {
  a = *reinterpret_cast<const T*>(p);
  b = *reinterpret_cast<const T*>(p + (second ? stride : 0u));
  p += 2 * stride;
}

// A 4:2:0 chroma row (U and, for two planes, V at the thread's column)
// stepped down one row at a time and held at the plane's last row.
struct ChromaCursor {
  const uint8_t *u, *v;  // v is unused (and stays put) for one plane of pairs
  uint32_t u_stride, v_stride;
  int row, rows;
  __device__ __forceinline__ void step() {
    if (row + 1 < rows) {
      ++row;
      u += u_stride;
      v += v_stride;
    }
  }
};

}  // namespace convert_detail
}  // namespace cudaoverlap
