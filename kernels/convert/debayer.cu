// Bayer mosaics to 4- and 3-byte RGB for convert, by debayer_math.h's
// bilinear rules on words of 4 samples (debayer_kernel).
//
// Bayer mosaic -> 4- or 3-byte RGB (debayer_math.h): one thread per 4
// pixels of 4 rows, so the six source rows around them are read once.
//
// A row's 4 samples are one word, and the rules of debayer_math.h are
// byte-wise averages on words (__vavgu4 rounds up, as avg does): the
// colour a column lacks is the average of its left and right neighbours'
// words, the colour it has is the word itself, and a byte mask picks each
// column's. At the picture's left and right edges, where the rules are
// one-sided, the neighbours are chosen so the same average gives the rule's
// value (both neighbours the one sample the rule takes). Each pixel comes
// out as a word of the even columns' colour, green, the odd columns'
// colour and 255 in bytes 0..3, which a byte permute puts in the output
// format's order (red and blue placed by the mosaic). Which rows hold the
// even columns' colour is a template parameter, so each row's arithmetic
// is fixed at compile time.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "kernels/convert/convert_layout.cuh"
#include "kernels/convert/debayer_math.h"
#include "kernels/cuda_check.h"

namespace cudaoverlap {
namespace convert_detail {
namespace {

struct DebayerArgs {
  uint32_t out_perm;      // word above -> 4-byte pixel, or 3-byte in bytes 0..2
  bool first_even;        // 3-byte: byte 0 of a pixel is the even columns' colour
  bool in_a4, out_words;  // word loads; whole-quad stores (16 or 3x4 bytes)
  int quads;              // groups of 4 columns
};

// The colours of a row's 4 columns from x0, each brought to every column:
// the even columns' colour (d0) and the odd columns' (d1).
struct RowColours {
  uint32_t d0, d1;
};

// The colours from a row's 4 samples (own) and those shifted a column
// right (left: columns x0 - 1 .. x0 + 2) and left (right: x0 + 1 .. x0 + 4).
__device__ __forceinline__ RowColours colours_of(uint32_t own, uint32_t left, uint32_t right) {
  const uint32_t between = __vavgu4(left, right);
  return {(own & 0x00FF00FFu) | (between & 0xFF00FF00u),
          (between & 0x00FF00FFu) | (own & 0xFF00FF00u)};
}

// The general load, for a thread at the picture's edges or on a mosaic
// not word-aligned (the kernel loads inside, aligned rows itself).
__device__ __forceinline__ RowColours row_colours(const uint8_t* s, int x0, int w, bool inside) {
  uint32_t own, left, right;
  if (inside) {
    // Columns x0 - 1 .. x0 + 4 exist and none of x0 .. x0 + 3 is one of the
    // last two.
    own = static_cast<uint32_t>(__ldg(s + x0)) | static_cast<uint32_t>(__ldg(s + x0 + 1)) << 8 |
          static_cast<uint32_t>(__ldg(s + x0 + 2)) << 16 |
          static_cast<uint32_t>(__ldg(s + x0 + 3)) << 24;
    left = __byte_perm(own, __ldg(s + x0 - 1), 0x2104);   // s[x0 - 1 .. x0 + 2]
    right = __byte_perm(own, __ldg(s + x0 + 4), 0x4321);  // s[x0 + 1 .. x0 + 4]
  } else {
    uint32_t v[6];  // columns x0 - 1 .. x0 + 4, clamped to the row
    CO_UNROLL
    for (int j = 0; j < 6; ++j) v[j] = __ldg(s + clamp_index(x0 - 1 + j, w));
    own = left = right = 0;
    CO_UNROLL
    for (int i = 0; i < 4; ++i) {
      const int x = x0 + i;
      uint32_t l = v[i], r = v[i + 2];
      if (x == 0) {
        l = r = w > 1 ? v[i + 2] : v[i + 1];  // column 1 (0 when there is none)
      } else if (x >= w - 2) {
        r = v[i];  // column x - 1
      }
      own |= v[i + 1] << (8 * i);
      left |= l << (8 * i);
      right |= r << (8 * i);
    }
  }
  return colours_of(own, left, right);
}

// The 4 pixels of a row from x0, a colour to a word: the even columns'
// colour, green and the odd columns' colour, byte i for pixel i.
struct Colours {
  uint32_t even, green, odd;
};

__device__ __forceinline__ Colours debayer_colours(const RowColours& a, const RowColours& h,
                                                   const RowColours& b, bool even_colour_row) {
  if (even_colour_row) {
    const uint32_t g = __vavgu4(__vavgu4(a.d0, b.d0), h.d1);
    return {h.d0, (g & 0x00FF00FFu) | (h.d1 & 0xFF00FF00u), __vavgu4(a.d1, b.d1)};
  }
  const uint32_t g = __vavgu4(__vavgu4(a.d1, b.d1), h.d0);
  return {__vavgu4(a.d0, b.d0), (h.d0 & 0x00FF00FFu) | (g & 0xFF00FF00u), h.d1};
}

// The 4 pixels' 3-byte form straight from their colours, as the 12 bytes
// of three words: f, green, l for each pixel, where f is the colour of the
// output's byte 0 (first_even: the even columns' colour) and l the other.
// Six byte permutes, where pixel words and then packing them take fifteen.
__device__ __forceinline__ void debayer_rgb24(const Colours& c, bool first_even, uint32_t q[3]) {
  const uint32_t f = first_even ? c.even : c.odd, l = first_even ? c.odd : c.even;
  q[0] = __byte_perm(__byte_perm(f, c.green, 0x0140), l, 0x2410);  // f0 g0 l0 f1
  q[1] = __byte_perm(__byte_perm(c.green, f, 0x2601), l, 0x3250);  // g1 l1 f2 g2
  q[2] = __byte_perm(__byte_perm(f, c.green, 0x0730), l, 0x7216);  // l2 f3 g3 l3
}

// The words of the 4 pixels of a row from x0.
__device__ __forceinline__ void debayer_words(const RowColours& a, const RowColours& h,
                                              const RowColours& b, bool even_colour_row,
                                              uint32_t* p) {
  const Colours c = debayer_colours(a, h, b, even_colour_row);
  const uint32_t even = c.even, green = c.green, odd = c.odd;
  const uint32_t rg01 = __byte_perm(even, green, 0x5140), rg23 = __byte_perm(even, green, 0x7362);
  const uint32_t ba01 = __byte_perm(odd, 0xFFFFFFFFu, 0x5140);
  const uint32_t ba23 = __byte_perm(odd, 0xFFFFFFFFu, 0x7362);
  p[0] = __byte_perm(rg01, ba01, 0x5410);
  p[1] = __byte_perm(rg01, ba01, 0x7632);
  p[2] = __byte_perm(rg23, ba23, 0x5410);
  p[3] = __byte_perm(rg23, ba23, 0x7632);
}

template <int kPixelBytes>
__device__ __forceinline__ void store_quad(const DebayerArgs& A, uint8_t* d, int n,
                                           const uint32_t* p) {
  uint32_t q[4];
  CO_UNROLL
  for (int i = 0; i < 4; ++i) q[i] = __byte_perm(p[i], 0, A.out_perm);
  // Whole 3-byte quads never come here (debayer_rgb24).
  if (kPixelBytes == 4 && n == 4 && A.out_words) {
    *reinterpret_cast<uint4*>(d) = make_uint4(q[0], q[1], q[2], q[3]);
    return;
  }
  for (int i = 0; i < n; ++i)
    for (int c = 0; c < kPixelBytes; ++c)
      d[kPixelBytes * i + c] = static_cast<uint8_t>(q[i] >> (8 * c));
}

// Five blocks per multiprocessor (at most 48 registers, none spilled): the
// loads of the six rows need threads in flight more than registers.
template <int kPixelBytes, int kRows, int kEvenColourRowParity>
__global__ void __launch_bounds__(kThreads, 5)
    debayer_kernel(const ImageRef in, const ImageRef out, const DebayerArgs A) {
  const int q = blockIdx.x * blockDim.x + threadIdx.x;
  if (q >= A.quads) return;
  const int w = in.width, h = in.height;
  const int x0 = 4 * q;
  const int n = min(4, w - x0);
  const bool inside = x0 > 0 && x0 + 6 <= w;
  for (int t = blockIdx.y * blockDim.y + threadIdx.y; kRows * t < h; t += gridDim.y * blockDim.y) {
    const int y = kRows * t;  // even, so row y + r has the parity of r
    RowColours c[kRows + 2];
    // Rows y - 1 .. y + kRows, mirrored at the top and bottom (those past
    // row h are never used).
    auto row = [&](int r) {
      const int i = y - 1 + r;
      const int src =
          i < 0 ? debayer_math::row_above(0, h) : (i >= h ? debayer_math::row_below(h - 1, h) : i);
      return in.planes[0].data + static_cast<size_t>(src) * in.planes[0].stride;
    };
    if (inside && A.in_a4) {
      // Every row's loads before any of them is used: row_colours' branches
      // kept each row's loads behind the previous row's arithmetic, six
      // round trips to memory in a row.
      uint32_t own[kRows + 2], left[kRows + 2], right[kRows + 2];
      CO_UNROLL
      for (int r = 0; r < kRows + 2; ++r) {
        const uint8_t* s = row(r) + x0;
        own[r] = __ldg(reinterpret_cast<const uint32_t*>(s));
        left[r] = __ldg(s - 1);
        right[r] = __ldg(s + 4);
      }
      CO_UNROLL
      for (int r = 0; r < kRows + 2; ++r)
        c[r] = colours_of(own[r], __byte_perm(own[r], left[r], 0x2104),
                          __byte_perm(own[r], right[r], 0x4321));
    } else {
      CO_UNROLL
      for (int r = 0; r < kRows + 2; ++r) c[r] = row_colours(row(r), x0, w, inside);
    }
    CO_UNROLL
    for (int r = 0; r < kRows; ++r) {
      if (y + r >= h) break;
      const bool even_row = ((r ^ kEvenColourRowParity) & 1) == 0;
      uint8_t* d = out.planes[0].data + static_cast<size_t>(y + r) * out.planes[0].stride +
                   static_cast<size_t>(x0) * kPixelBytes;
      if (kPixelBytes == 3 && n == 4 && A.out_words) {
        uint32_t q[3];
        debayer_rgb24(debayer_colours(c[r], c[r + 1], c[r + 2], even_row), A.first_even, q);
        uint32_t* w = reinterpret_cast<uint32_t*>(d);
        w[0] = q[0], w[1] = q[1], w[2] = q[2];
        continue;
      }
      uint32_t p[4];
      debayer_words(c[r], c[r + 1], c[r + 2], even_row, p);
      store_quad<kPixelBytes>(A, d, n, p);
    }
  }
}

}  // namespace

void debayer_cuda(const ImageRef& in, const ImageRef& out, cudaStream_t stream) {
  const FormatInfo& o = format_info(out.format);
  DebayerArgs A{};
  const int red = format_info(in.format).bayer_red;
  const int red_x = red & 1;
  // debayer_math::pixel: rows where (y ^ red_x ^ red_y) is even hold the
  // even columns' colour.
  const int parity = (red & 1) ^ (red >> 1);
  const int pixel_bytes = o.comp[0].pixel_stride;
  // Red is the odd columns' colour (byte 2) where it sits in odd columns.
  const uint32_t from[3] = {red_x ? 2u : 0u, 1u, red_x ? 0u : 2u};
  for (int c = 0; c < 3; ++c) {
    A.out_perm |= from[c] << (4 * o.comp[c].offset);
    if (o.comp[c].offset == 0) A.first_even = from[c] == 0;
  }
  if (pixel_bytes == 4) A.out_perm |= 3u << (4 * o.alpha_byte);
  A.in_a4 = aligned_to(in.planes[0], 4);
  A.out_words = aligned_to(out.planes[0], pixel_bytes == 4 ? 16 : 4);
  A.quads = (in.width + 3) / 4;
  if (A.quads == 0 || in.height == 0) return;
  constexpr int kRows = 4;
  const int threads_y = (in.height + kRows - 1) / kRows;
  const dim3 grid(
      (A.quads + kBlockX - 1) / kBlockX,
      static_cast<unsigned>(std::min<int>((threads_y + kBlockY - 1) / kBlockY, kMaxGridY)));
  const dim3 block(kBlockX, kBlockY);
  if (pixel_bytes == 4 && parity == 0)
    debayer_kernel<4, kRows, 0><<<grid, block, 0, stream>>>(in, out, A);
  else if (pixel_bytes == 4)
    debayer_kernel<4, kRows, 1><<<grid, block, 0, stream>>>(in, out, A);
  else if (parity == 0)
    debayer_kernel<3, kRows, 0><<<grid, block, 0, stream>>>(in, out, A);
  else
    debayer_kernel<3, kRows, 1><<<grid, block, 0, stream>>>(in, out, A);
  CO_CUDA_CHECK_LAUNCH("the convert kernel (Bayer to RGB)");
}

}  // namespace convert_detail
}  // namespace cudaoverlap
