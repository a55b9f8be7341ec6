// The cpu backend's `scale` pass (scale_cpu): scale_math.h's scale_value,
// taken apart. Each input row's horizontal sums are made once, for every
// output row whose vertical taps reach it, and kept while they do; the
// vertical sums then run over whole rows. Packed formats whose components
// share their axes sum a pixel's samples together. The bytes are the
// reference's (tests/kernels/test_cpu_fast.cpp).
#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstring>
#include <memory>
#include <type_traits>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__x86_64__) || defined(__i386__)
#define CUDAOVERLAP_SCALE_AVX2 1
#include <immintrin.h>
#endif

#include "kernels/cpu_simd.h"
#include "kernels/scale/scale_image.h"
#include "kernels/scale/scale_math.h"

namespace cudaoverlap {
namespace {

constexpr int kHalf = 1 << (kScaleWeightBits - 1);

// Components scaled together: those of one plane with the same axes,
// pixel stride and sample size (RGBA's four, NV12's U and V).
struct Group {
  const ScaleComponent* first;
  int n = 0;
  int offset[kMaxComponents + 1] = {};  // each member's byte within a pixel
  bool narrow = false;                  // 8-bit, horizontal sums within int16
  int row_max = 0;                      // narrow: the horizontal sums' magnitude at most
};

#if defined(__SSE2__)
// horizontal() for four 8-bit samples a 4-byte pixel (RGBA and the like,
// the group's members in byte order), two taps a step: _mm_madd_epi16 of
// two pixels' samples, interleaved, with the two weights. The same int32
// sums. The taps' byte offsets (clamped) and weight pairs depend on the
// output column alone: made once a frame.
class HorizontalRgba8 {
 public:
  explicit HorizontalRgba8(const ScaleComponent& c) : pairs_((c.x.taps + 1) / 2), w_(c.out_width) {
    const int taps = c.x.taps, last = c.x.in_size - 1;
    at_.resize(static_cast<size_t>(w_) * pairs_ * 2);
    weight_.resize(static_cast<size_t>(w_) * pairs_);
    for (int x = 0; x < w_; ++x)
      for (int p = 0; p < pairs_; ++p) {
        const int i = 2 * p;
        const int16_t* w = c.x.weight + static_cast<size_t>(x) * taps;
        const size_t k = static_cast<size_t>(x) * pairs_ + p;
        at_[2 * k] = std::clamp(c.x.first[x] + i, 0, last) * 4;
        // A last odd tap pairs with the same pixel at weight 0.
        at_[2 * k + 1] = i + 1 < taps ? std::clamp(c.x.first[x] + i + 1, 0, last) * 4 : at_[2 * k];
        const uint16_t w1 = i + 1 < taps ? static_cast<uint16_t>(w[i + 1]) : 0;
        weight_[k] = static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint16_t>(w[i])) |
                                          static_cast<uint32_t>(w1) << 16);
      }
  }
  void row(const uint8_t* src, int32_t* out) const {
    const __m128i zero = _mm_setzero_si128(), half = _mm_set1_epi32(kHalf);
    const auto pixel = [src](int32_t at) {
      int32_t word;
      std::memcpy(&word, src + at, 4);
      return _mm_cvtsi32_si128(word);
    };
    const int32_t* at = at_.data();
    const int32_t* weight = weight_.data();
    for (int x = 0; x < w_; ++x) {
      __m128i acc = _mm_setzero_si128();
      for (int p = 0; p < pairs_; ++p, at += 2, ++weight) {
        const __m128i pair = _mm_unpacklo_epi8(_mm_unpacklo_epi8(pixel(at[0]), pixel(at[1])), zero);
        acc = _mm_add_epi32(acc, _mm_madd_epi16(pair, _mm_set1_epi32(*weight)));
      }
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out + static_cast<size_t>(x) * 4),
                       _mm_srai_epi32(_mm_add_epi32(acc, half), kScaleWeightBits));
    }
  }

 private:
  int pairs_, w_;
  std::vector<int32_t> at_;      // [x][pair][2]: byte offsets of the pair's pixels
  std::vector<int32_t> weight_;  // [x][pair]: the two weights, low and high halves
};
#endif

#if defined(__SSE2__)
// The vertical pass of 8-bit samples whose horizontal sums fit 16 bits
// (Group::narrow) into bytes of a row: two rows' sums interleaved a step
// and _mm_madd_epi16 with the two weights, 8 outputs at once, rounded,
// shifted and clamped to 0..255 by the packs. Returns the outputs made.
size_t vertical_bytes(const int32_t* const* rows, const int16_t* weights, int used, size_t n,
                      uint8_t* dst) {
  const __m128i half = _mm_set1_epi32(kHalf);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m128i lo = _mm_setzero_si128(), hi = _mm_setzero_si128();
    for (int j = 0; j < used; j += 2) {
      const auto row16 = [&](int r) {
        if (r >= used) return _mm_setzero_si128();
        const auto* p = reinterpret_cast<const __m128i*>(rows[r] + i);
        return _mm_packs_epi32(_mm_loadu_si128(p), _mm_loadu_si128(p + 1));
      };
      const __m128i a = row16(j), b = row16(j + 1);
      const int16_t w1 = j + 1 < used ? weights[j + 1] : 0;
      const __m128i pair = _mm_set1_epi32(
          static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint16_t>(weights[j])) |
                               static_cast<uint32_t>(static_cast<uint16_t>(w1)) << 16));
      lo = _mm_add_epi32(lo, _mm_madd_epi16(_mm_unpacklo_epi16(a, b), pair));
      hi = _mm_add_epi32(hi, _mm_madd_epi16(_mm_unpackhi_epi16(a, b), pair));
    }
    lo = _mm_srai_epi32(_mm_add_epi32(lo, half), kScaleWeightBits);
    hi = _mm_srai_epi32(_mm_add_epi32(hi, half), kScaleWeightBits);
    const __m128i bytes = _mm_packus_epi16(_mm_packs_epi32(lo, hi), _mm_setzero_si128());
    _mm_storel_epi64(reinterpret_cast<__m128i*>(dst + i), bytes);
  }
  return i;
}
#endif

#if defined(CUDAOVERLAP_SCALE_AVX2)
// Four 8-bit samples a pixel (RGBA and the like) whose sums fit int16,
// with AVX2 where the processor has it. Each output's taps become a window
// of whole pixels inside the row, four a 16-byte load (taps past an edge
// add their weight to the edge pixel, which they read; the sums are the
// reference's). Two outputs a step: bytes shuffled so that neighbouring
// taps' samples pair up, _mm256_madd_epi16 with the pairs' weights.
class Rgba8Windows {
 public:
  // False where the row is narrower than a window or a window's weight
  // leaves int16: the caller takes the general path.
  bool build(const ScaleComponent& c) {
    const int taps = c.x.taps, in = c.x.in_size, w = c.out_width;
    chunks_ = (taps + 3) / 4;
    const int span = 4 * chunks_;
    if (in < span || c.x.abs_sum >= 32768) return false;
    const int pairs = (w + 1) / 2, quads = (w + 3) / 4;
    start_.assign(static_cast<size_t>(quads) * 4, 0);
    std::vector<int32_t> folded(static_cast<size_t>(pairs) * 2 * span, 0);
    int zeros = kScaleWeightBits - 1;  // trailing zero bits every weight has
    for (int x = 0; x < w; ++x) {
      const int first = c.x.first[x], start = std::clamp(first, 0, in - span);
      const int16_t* wx = c.x.weight + static_cast<size_t>(x) * taps;
      int32_t* f = folded.data() + static_cast<size_t>(x) * span;
      for (int i = 0; i < taps; ++i) f[std::clamp(first + i, 0, in - 1) - start] += wx[i];
      for (int k = 0; k < span; ++k)
        if (f[k] != 0) zeros = std::min(zeros, __builtin_ctz(static_cast<unsigned>(f[k])));
      start_[x] = start * 4;
    }
    // The last pair's or quad's empty lanes read the last window.
    for (size_t x = w; x < start_.size(); ++x) start_[x] = start_[w - 1];
    // Weights that are small multiples of one power of two (bilinear at
    // ratios of 2, 4, ...) sum as bytes: each pair of taps' quotients
    // within 128 in all keeps _mm256_maddubs_epi16 from saturating.
    // Each quotient a signed byte too: a large ratio up can fold a whole
    // output's weight, 2^14, onto one pixel (a quotient of 128).
    shift_ = zeros;
    bool bytes = true;
    for (size_t k = 0; k + 1 < folded.size(); k += 2) {
      const int32_t a = folded[k] >> shift_, b = folded[k + 1] >> shift_;
      bytes = bytes && a >= -128 && a <= 127 && b >= -128 && b <= 127 &&
              std::abs(a) + std::abs(b) <= 128;
    }
    bytes_ = bytes;
    // One load a window whose sum, rounded, stays within int16 whatever
    // its bytes (words()).
    words_ = bytes && chunks_ == 1;
    const int32_t round = 1 << (kScaleWeightBits - shift_ - 1);
    for (size_t x = 0; words_ && x < static_cast<size_t>(w); ++x) {
      int32_t sum = 0;
      for (int k = 0; k < span; ++k) sum += std::abs(folded[x * span + k] >> shift_);
      words_ = sum * 255 + round <= INT16_MAX;
    }
    // [pair of outputs][chunk]: each output's lane of 16 bytes, its four
    // taps' quotients for each sample (bytes), or 16 int16 twice, the
    // taps' weights in pairs (0, 1) and (2, 3) for each sample. words():
    // [quad of outputs x..x + 3][2], lanes (x, x + 2) and (x + 1, x + 3).
    weight_.assign(static_cast<size_t>(quads) * 2 * chunks_ * (bytes_ ? 16 : 32), 0);
    for (int x = 0; x < w; ++x)
      for (int k = 0; k < span; ++k) {
        const int32_t v = folded[static_cast<size_t>(x) * span + k];
        const size_t chunk = static_cast<size_t>(x / 2) * chunks_ + k / 4;
        if (bytes_) {
          const size_t lane =
              words_ ? static_cast<size_t>(x / 4) * 64 + (x % 2) * 32 + (x / 2 % 2) * 16
                     : chunk * 32 + (x % 2) * 16;
          auto* at = reinterpret_cast<int8_t*>(weight_.data()) + lane + k % 4;
          for (int s = 0; s < 4; ++s) at[4 * s] = static_cast<int8_t>(v >> shift_);
        } else {
          // Chunk k / 4, half (k % 4) / 2, this output's lane, pair slot k % 2.
          int16_t* at = weight_.data() + (chunk * 2 + (k % 4) / 2) * 16 + (x % 2) * 8 + k % 2;
          for (int s = 0; s < 4; ++s) at[2 * s] = static_cast<int16_t>(v);
        }
      }
    // Quads whose outputs x + 2 and x + 3 start 16 bytes (four pixels)
    // after x and x + 1 (a ratio of 2): one 32-byte load holds two windows.
    wide_.assign(quads, 0);
    for (int q = 0; words_ && q < quads; ++q) {
      const int32_t* s = start_.data() + static_cast<size_t>(q) * 4;
      wide_[q] = s[2] == s[0] + 16 && s[3] == s[1] + 16;
    }
    return true;
  }
  // What a row's loop reads, copied into locals so that the compiler
  // need not read them again after every store.
  struct View {
    const int32_t* start;
    const int16_t* weight;
    const uint8_t* wide;
    int chunks;
    int shift;
  };
  View view() const { return {start_.data(), weight_.data(), wide_.data(), chunks_, shift_}; }
  int chunks() const { return chunks_; }
  bool bytes() const { return bytes_; }
  bool words() const { return words_; }

 private:
  int chunks_ = 0;
  bool bytes_ = false;
  bool words_ = false;          // bytes(), one chunk, sums within int16
  int shift_ = 0;               // the weights' common power of two, bytes()
  std::vector<int32_t> start_;  // each output's first pixel, in bytes
  std::vector<int16_t> weight_;
  std::vector<uint8_t> wide_;  // words(): each quad, its windows two a load
};

// Outputs x and x + 1 (x even; the pair's lanes) of row `src`: four
// int32 sums each, rounded as the reference. kChunks: the windows' 16-byte
// loads (0: t.chunks).
template <int kChunks>
__attribute__((target("avx2"), always_inline)) inline __m256i rgba8_sums_avx2(
    const uint8_t* src, const Rgba8Windows::View& t, int x) {
  // Words of neighbouring taps' samples side by side: r0 r1 g0 g1 b0 b1 a0
  // a1 (lo) and the same of pixels 2 and 3 (hi).
  const __m256i lo = _mm256_setr_epi8(0, -1, 4, -1, 1, -1, 5, -1, 2, -1, 6, -1, 3, -1, 7, -1, 0, -1,
                                      4, -1, 1, -1, 5, -1, 2, -1, 6, -1, 3, -1, 7, -1);
  const __m256i hi = _mm256_setr_epi8(8, -1, 12, -1, 9, -1, 13, -1, 10, -1, 14, -1, 11, -1, 15, -1,
                                      8, -1, 12, -1, 9, -1, 13, -1, 10, -1, 14, -1, 11, -1, 15, -1);
  const int chunks = kChunks > 0 ? kChunks : t.chunks;
  const uint8_t* a = src + t.start[x];
  const uint8_t* b = src + t.start[x + 1];
  const __m256i* wt =
      reinterpret_cast<const __m256i*>(t.weight) + static_cast<size_t>(x / 2) * chunks * 2;
  __m256i acc = _mm256_set1_epi32(kHalf);
  for (int k = 0; k < chunks; ++k, wt += 2) {
    const __m128i pa = _mm_loadu_si128(reinterpret_cast<const __m128i*>(a + 16 * k));
    const __m128i pb = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 16 * k));
    const __m256i px = _mm256_inserti128_si256(_mm256_castsi128_si256(pa), pb, 1);
    acc = _mm256_add_epi32(acc,
                           _mm256_madd_epi16(_mm256_shuffle_epi8(px, lo), _mm256_loadu_si256(wt)));
    acc = _mm256_add_epi32(
        acc, _mm256_madd_epi16(_mm256_shuffle_epi8(px, hi), _mm256_loadu_si256(wt + 1)));
  }
  return _mm256_srai_epi32(acc, kScaleWeightBits);
}

// The same sums from Rgba8Windows::bytes() weights: each sample's four
// taps side by side, _mm256_maddubs_epi16 of the bytes with the
// quotients, _mm256_madd_epi16 with ones for the pairs' sums; the
// weights' power of two comes back in the rounding.
template <int kChunks>
__attribute__((target("avx2"), always_inline)) inline __m256i rgba8_byte_sums_avx2(
    const uint8_t* src, const Rgba8Windows::View& t, int x) {
  const __m256i order = _mm256_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15, 0, 4,
                                         8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  const __m256i ones = _mm256_set1_epi16(1);
  const int chunks = kChunks > 0 ? kChunks : t.chunks;
  const uint8_t* a = src + t.start[x];
  const uint8_t* b = src + t.start[x + 1];
  const __m256i* wt =
      reinterpret_cast<const __m256i*>(t.weight) + static_cast<size_t>(x / 2) * chunks;
  const int shift = kScaleWeightBits - t.shift;
  __m256i acc = _mm256_set1_epi32(1 << (shift - 1));
  for (int k = 0; k < chunks; ++k, ++wt) {
    const __m128i pa = _mm_loadu_si128(reinterpret_cast<const __m128i*>(a + 16 * k));
    const __m128i pb = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 16 * k));
    const __m256i px =
        _mm256_shuffle_epi8(_mm256_inserti128_si256(_mm256_castsi128_si256(pa), pb, 1), order);
    acc = _mm256_add_epi32(
        acc, _mm256_madd_epi16(_mm256_maddubs_epi16(px, _mm256_loadu_si256(wt)), ones));
  }
  return _mm256_srai_epi32(acc, shift);
}

template <int kChunks, bool kBytes>
__attribute__((target("avx2"), always_inline)) inline __m256i rgba8_pair_avx2(
    const uint8_t* src, const Rgba8Windows::View& t, int x) {
  return kBytes ? rgba8_byte_sums_avx2<kChunks>(src, t, x) : rgba8_sums_avx2<kChunks>(src, t, x);
}

template <int kChunks, bool kBytes>
__attribute__((target("avx2"))) void rgba8_row_avx2(const uint8_t* src, const Rgba8Windows& windows,
                                                    int w, int16_t* out) {
  const Rgba8Windows::View t = windows.view();
  int x = 0;
  for (; x + 4 <= w; x += 4) {
    // packs interleaves the lanes: x, x + 2 | x + 1, x + 3 until permuted.
    const __m256i v = _mm256_permute4x64_epi64(
        _mm256_packs_epi32(rgba8_pair_avx2<kChunks, kBytes>(src, t, x),
                           rgba8_pair_avx2<kChunks, kBytes>(src, t, x + 2)),
        0xD8);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + static_cast<size_t>(x) * 4), v);
  }
  for (; x < w; x += 2) {
    const __m256i v =
        _mm256_packs_epi32(rgba8_pair_avx2<kChunks, kBytes>(src, t, x), _mm256_setzero_si256());
    const __m128i lo = _mm256_castsi256_si128(v), hi = _mm256_extracti128_si256(v, 1);
    _mm_storel_epi64(reinterpret_cast<__m128i*>(out + static_cast<size_t>(x) * 4), lo);
    if (x + 1 < w)
      _mm_storel_epi64(reinterpret_cast<__m128i*>(out + static_cast<size_t>(x + 1) * 4), hi);
  }
}

// Row `src`'s sums from Rgba8Windows::words() weights, in int16 all the
// way: each sample's two pairs' sums by _mm256_maddubs_epi16 of the
// windows' bytes, then _mm256_hadd_epi16 of the pairs, rounded and shifted
// as words. Four outputs a step, windows (x, x + 2) and (x + 1, x + 3).
__attribute__((target("avx2"))) void rgba8_row_words_avx2(const uint8_t* src,
                                                          const Rgba8Windows& windows, int w,
                                                          int16_t* out) {
  const Rgba8Windows::View t = windows.view();
  const __m256i order = _mm256_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15, 0, 4,
                                         8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  const int shift = kScaleWeightBits - t.shift;
  const __m256i half = _mm256_set1_epi16(static_cast<int16_t>(1 << (shift - 1)));
  const __m128i count = _mm_cvtsi32_si128(shift);
  const auto* wt = reinterpret_cast<const __m256i*>(t.weight);
  for (int x = 0; x < w; x += 4, wt += 2) {
    const int32_t* s = t.start + x;
    __m256i a, b;
    if (t.wide[x / 4]) {
      a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + s[0]));
      b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + s[1]));
    } else {
      const auto window = [src](int32_t at) {
        return _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + at));
      };
      a = _mm256_inserti128_si256(_mm256_castsi128_si256(window(s[0])), window(s[2]), 1);
      b = _mm256_inserti128_si256(_mm256_castsi128_si256(window(s[1])), window(s[3]), 1);
    }
    a = _mm256_maddubs_epi16(_mm256_shuffle_epi8(a, order), _mm256_loadu_si256(wt));
    b = _mm256_maddubs_epi16(_mm256_shuffle_epi8(b, order), _mm256_loadu_si256(wt + 1));
    // hadd works within lanes: x, x + 1 | x + 2, x + 3.
    const __m256i v = _mm256_sra_epi16(_mm256_add_epi16(_mm256_hadd_epi16(a, b), half), count);
    int16_t* o = out + static_cast<size_t>(x) * 4;
    if (x + 4 <= w) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(o), v);
    } else {
      alignas(32) int16_t last[16];
      _mm256_store_si256(reinterpret_cast<__m256i*>(last), v);
      std::memcpy(o, last, static_cast<size_t>(w - x) * 4 * sizeof(int16_t));
    }
  }
}

// Row `src`'s horizontal sums, out[x * 4 + k].
void rgba8_row(const uint8_t* src, const Rgba8Windows& t, int w, int16_t* out) {
  if (t.words()) return rgba8_row_words_avx2(src, t, w, out);
  switch (t.chunks() * 2 + t.bytes()) {
    case 2:
      return rgba8_row_avx2<1, false>(src, t, w, out);
    case 3:
      return rgba8_row_avx2<1, true>(src, t, w, out);
    case 4:
      return rgba8_row_avx2<2, false>(src, t, w, out);
    case 5:
      return rgba8_row_avx2<2, true>(src, t, w, out);
    default:
      return t.bytes() ? rgba8_row_avx2<0, true>(src, t, w, out)
                       : rgba8_row_avx2<0, false>(src, t, w, out);
  }
}

// The vertical pass over int16 row sums into bytes: rows 2p and 2p + 1
// (an even count) weighted by the low and high halves of pairs[p], 16
// outputs a step, rounded, shifted and clamped to 0..255 as the
// reference. Returns the outputs made.
__attribute__((target("avx2"))) size_t vertical_bytes_avx2(const int16_t* const* rows,
                                                           const int32_t* pairs, int n_pairs,
                                                           size_t n, uint8_t* dst) {
  const __m256i half = _mm256_set1_epi32(kHalf);
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m256i lo = half, hi = half;
    for (int p = 0; p < n_pairs; ++p) {
      const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rows[2 * p] + i));
      const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rows[2 * p + 1] + i));
      const __m256i pair = _mm256_set1_epi32(pairs[p]);
      lo = _mm256_add_epi32(lo, _mm256_madd_epi16(_mm256_unpacklo_epi16(a, b), pair));
      hi = _mm256_add_epi32(hi, _mm256_madd_epi16(_mm256_unpackhi_epi16(a, b), pair));
    }
    lo = _mm256_srai_epi32(lo, kScaleWeightBits);
    hi = _mm256_srai_epi32(hi, kScaleWeightBits);
    // unpack and packs are both within lanes: the words come back in order.
    const __m256i words = _mm256_packs_epi32(lo, hi);
    const __m256i bytes = _mm256_permute4x64_epi64(_mm256_packus_epi16(words, words), 0x08);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), _mm256_castsi256_si128(bytes));
  }
  return i;
}

// The vertical pass where the rows' weights are `q` times a power of two
// and every sum stays within int16: _mm256_mullo_epi16 and adds of words,
// rounded by `round`, shifted by `shift` and clamped to 0..255 as the
// reference. 32 outputs a step; returns the outputs made.
__attribute__((target("avx2"))) size_t vertical_words_avx2(const int16_t* const* rows,
                                                           const int16_t* q, int used, int shift,
                                                           size_t n, uint8_t* dst) {
  const __m256i round = _mm256_set1_epi16(static_cast<int16_t>(1 << (shift - 1)));
  const __m128i count = _mm_cvtsi32_si128(shift);
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    __m256i lo = round, hi = round;
    for (int j = 0; j < used; ++j) {
      const auto* p = reinterpret_cast<const __m256i*>(rows[j] + i);
      const __m256i wj = _mm256_set1_epi16(q[j]);
      lo = _mm256_add_epi16(lo, _mm256_mullo_epi16(_mm256_loadu_si256(p), wj));
      hi = _mm256_add_epi16(hi, _mm256_mullo_epi16(_mm256_loadu_si256(p + 1), wj));
    }
    // packus works within lanes: the quarters come back in order permuted.
    const __m256i bytes =
        _mm256_packus_epi16(_mm256_sra_epi16(lo, count), _mm256_sra_epi16(hi, count));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i), _mm256_permute4x64_epi64(bytes, 0xD8));
  }
  return i;
}

// Whether output row `weights` (used of them, none 0) sum within int16 as
// quotients of their common power of two, over rows whose magnitudes
// reach `row_max`: the quotients in `q`, the shift that rounds in *shift.
bool word_weights(const int16_t* weights, int used, int row_max, int16_t* q, int* shift) {
  int zeros = kScaleWeightBits - 1;
  for (int j = 0; j < used; ++j)
    zeros = std::min(zeros, __builtin_ctz(static_cast<unsigned>(weights[j])));
  int64_t sum = 0;
  for (int j = 0; j < used; ++j) {
    q[j] = static_cast<int16_t>(weights[j] >> zeros);
    sum += std::abs(q[j]);
  }
  *shift = kScaleWeightBits - zeros;
  return sum * row_max + (1 << (*shift - 1)) <= INT16_MAX;
}

// A group of Rgba8Windows' kind, int16 row sums kept while output rows
// reach them. row_max: the largest magnitude a row's sum takes.
void scale_rgba8_avx2(const ScaleComponent& c, const Rgba8Windows& t, int row_max) {
  const int w = c.out_width, taps = c.y.taps;
  const size_t values = static_cast<size_t>(w) * 4;
  std::vector<int16_t> cache(static_cast<size_t>(taps) * values);
  std::vector<int> cached(taps, -1);
  // An even count of rows: a last odd one pairs with itself at weight 0.
  std::vector<const int16_t*> rows(taps + 1);
  std::vector<int16_t> weights(taps + 1);
  std::vector<int32_t> pairs((taps + 1) / 2);
  std::vector<int16_t> q(taps + 1);
  for (int y = c.row0; y < c.out_rows; ++y) {
    const int16_t* wy = c.y.weight + static_cast<size_t>(y) * taps;
    int used = 0;
    for (int j = 0; j < taps; ++j) {
      if (wy[j] == 0) continue;
      const int row = std::clamp(c.y.first[y] + j, 0, c.y.in_size - 1);
      int16_t* slot = cache.data() + static_cast<size_t>(row % taps) * values;
      if (cached[row % taps] != row) {
        cached[row % taps] = row;
        rgba8_row(c.src + static_cast<size_t>(row) * c.src_stride, t, w, slot);
      }
      rows[used] = slot;
      weights[used++] = wy[j];
    }
    uint8_t* dst = c.dst + static_cast<size_t>(y) * c.dst_stride;
    size_t i = 0;
    int shift;
    if (word_weights(weights.data(), used, row_max, q.data(), &shift)) {
      i = vertical_words_avx2(rows.data(), q.data(), used, shift, values, dst);
    } else {
      if (used % 2) {
        rows[used] = rows[used - 1];
        weights[used] = 0;
      }
      for (int p = 0; 2 * p < used; ++p)
        pairs[p] = static_cast<int32_t>(
            static_cast<uint16_t>(weights[2 * p]) |
            static_cast<uint32_t>(static_cast<uint16_t>(weights[2 * p + 1])) << 16);
      i = vertical_bytes_avx2(rows.data(), pairs.data(), (used + 1) / 2, values, dst);
    }
    for (; i < values; ++i) {
      int32_t sum = 0;
      for (int j = 0; j < used; ++j) sum += weights[j] * rows[j][i];
      dst[i] = static_cast<uint8_t>(std::clamp((sum + kHalf) >> kScaleWeightBits, 0, 255));
    }
  }
}
#endif

// The horizontal sums of input row `row` for every output sample of the
// group: out[x * n + k], rounded to the samples' scale.
template <int kN, typename Sum>
void horizontal(const Group& g, int n, int row, Sum* out) {
  const ScaleComponent& c = *g.first;
  const int count = kN > 0 ? kN : n;
  const uint8_t* src = c.src + static_cast<size_t>(row) * c.src_stride;
  const int taps = c.x.taps, last = c.x.in_size - 1;
  for (int x = 0; x < c.out_width; ++x) {
    const int x0 = c.x.first[x];
    const int16_t* w = c.x.weight + static_cast<size_t>(x) * taps;
    Sum acc[kMaxComponents + 1] = {};
    for (int i = 0; i < taps; ++i) {
      const int at = std::clamp(x0 + i, 0, last);
      const uint8_t* p = src + static_cast<size_t>(at) * c.pixel_stride;
      for (int k = 0; k < count; ++k) {
        int v;
        if (c.sample_bytes == 1) {
          v = p[g.offset[k]];
        } else {
          const uint8_t* q = p + g.offset[k];
          v = ((q[0] | (q[1] << 8)) >> c.shift) & ((1 << c.depth) - 1);
        }
        acc[k] += w[i] * v;
      }
    }
    for (int k = 0; k < count; ++k)
      out[static_cast<size_t>(x) * count + k] = (acc[k] + kHalf) >> kScaleWeightBits;
  }
}

// Scales one group. Sum: the horizontal sum's type (int32, as the
// reference); Total: the vertical one's (int32 where 8-bit sums cannot
// overflow it, else int64 as the reference).
template <typename Total>
void scale_group(const Group& g) {
  const ScaleComponent& c = *g.first;
  const int n = g.n, w = c.out_width, taps = c.y.taps;
  const int max = (1 << c.depth) - 1;
  // Bytes of a row of its own (RGBA's four, GRAY8), written straight out.
  bool bytes_in_order =
      c.sample_bytes == 1 && max == 255 && c.pixel_stride == n && c.out_samples == w;
  for (int k = 0; k < n; ++k) bytes_in_order = bytes_in_order && g.offset[k] == k;
#if defined(CUDAOVERLAP_SCALE_AVX2)
  if (std::is_same<Total, int32_t>::value && g.narrow && bytes_in_order && n == 4 && cpu_avx2()) {
    Rgba8Windows windows;
    if (windows.build(c)) return scale_rgba8_avx2(c, windows, g.row_max);
  }
#endif
  const size_t row_values = static_cast<size_t>(w) * n;
  // Row i of the input in slot i % taps: the rows one output row reaches
  // are consecutive, so none evicts another.
  std::vector<int32_t> cache(static_cast<size_t>(taps) * row_values);
  std::vector<int> cached(taps, -1);
  std::vector<Total> total(row_values);
#if defined(__SSE2__)
  std::unique_ptr<HorizontalRgba8> rgba8;
  if (n == 4 && c.pixel_stride == 4 && c.sample_bytes == 1)
    rgba8 = std::make_unique<HorizontalRgba8>(c);
#endif
  const auto row_sums = [&](int row) {
    int32_t* slot = cache.data() + static_cast<size_t>(row % taps) * row_values;
    if (cached[row % taps] != row) {
      cached[row % taps] = row;
#if defined(__SSE2__)
      if (rgba8)
        rgba8->row(c.src + static_cast<size_t>(row) * c.src_stride, slot);
      else
#endif
          if (n == 4)
        horizontal<4>(g, n, row, slot);
      else if (n == 1)
        horizontal<1>(g, n, row, slot);
      else
        horizontal<0>(g, n, row, slot);
    }
    return slot;
  };
  std::vector<const int32_t*> rows(taps);
  std::vector<int16_t> weights(taps);
  for (int y = c.row0; y < c.out_rows; ++y) {
    const int y0 = c.y.first[y];
    const int16_t* wy = c.y.weight + static_cast<size_t>(y) * taps;
#if defined(__SSE2__)
    if (std::is_same<Total, int32_t>::value && g.narrow && bytes_in_order) {
      int used = 0;
      for (int j = 0; j < taps; ++j)
        if (wy[j] != 0) {
          rows[used] = row_sums(std::clamp(y0 + j, 0, c.y.in_size - 1));
          weights[used++] = wy[j];
        }
      uint8_t* dst = c.dst + static_cast<size_t>(y) * c.dst_stride;
      const size_t done = vertical_bytes(rows.data(), weights.data(), used, row_values, dst);
      for (size_t i = done; i < row_values; ++i) {
        int32_t sum = 0;
        for (int j = 0; j < used; ++j) sum += weights[j] * rows[j][i];
        dst[i] = static_cast<uint8_t>(std::clamp((sum + kHalf) >> kScaleWeightBits, 0, 255));
      }
      continue;
    }
#endif
    std::fill(total.begin(), total.end(), Total{0});
    for (int j = 0; j < taps; ++j) {
      const Total wj = wy[j];
      if (wj == 0) continue;
      const int32_t* h = row_sums(std::clamp(y0 + j, 0, c.y.in_size - 1));
      for (size_t i = 0; i < row_values; ++i) total[i] += wj * h[i];
    }
    uint8_t* dst = c.dst + static_cast<size_t>(y) * c.dst_stride;
    for (int x = 0; x < c.out_samples; ++x) {
      const Total* t = total.data() + static_cast<size_t>(std::min(x, w - 1)) * n;
      uint8_t* p = dst + static_cast<size_t>(x) * c.pixel_stride;
      for (int k = 0; k < n; ++k) {
        const Total v = (t[k] + kHalf) >> kScaleWeightBits;
        const int value = v < 0 ? 0 : (v > max ? max : static_cast<int>(v));
        if (c.sample_bytes == 1) {
          p[g.offset[k]] = static_cast<uint8_t>(value);
        } else {
          const int word = value << c.shift;  // the bits beside a sample cleared
          p[g.offset[k]] = static_cast<uint8_t>(word);
          p[g.offset[k] + 1] = static_cast<uint8_t>(word >> 8);
        }
      }
    }
  }
}

bool same_grid(const ScaleComponent& a, const ScaleComponent& b) {
  return a.src == b.src && a.dst == b.dst && a.pixel_stride == b.pixel_stride &&
         a.sample_bytes == b.sample_bytes && a.depth == b.depth && a.shift == b.shift &&
         a.out_samples == b.out_samples && a.out_width == b.out_width && a.out_rows == b.out_rows &&
         a.row0 == b.row0 && a.x.first == b.x.first && a.y.first == b.y.first && a.fill < 0 &&
         b.fill < 0;
}

}  // namespace

void scale_cpu(const ImageRef& in, const ImageRef& out, const ScaleTables& tables,
               const uint8_t* workspace, int y0, int y1) {
  ScaleComponent components[kMaxComponents + 1];
  const int n = scale_components(in, out, tables, workspace, components, y0, y1);
  std::vector<bool> done(n, false);
  for (int c = 0; c < n; ++c) {
    if (done[c]) continue;
    const ScaleComponent& s = components[c];
    if (s.fill >= 0) {
      for (int y = s.row0; y < s.out_rows; ++y)
        for (int x = 0; x < s.out_samples; ++x) scale_write(s, x, y, s.fill);
      continue;
    }
    Group g{&s};
    for (int d = c; d < n; ++d)
      if (!done[d] && same_grid(s, components[d])) {
        g.offset[g.n++] = components[d].offset;
        done[d] = true;
      }
    // Members in byte order (they share their axes): BGRA's four are then
    // a pixel's bytes as they lie.
    std::sort(g.offset, g.offset + g.n);
    // 8-bit vertical sums stay within int32: a horizontal sum is at most
    // 255 times the x weights' magnitudes (abs_sum, 2^14 a unit), and the
    // vertical one that times the y weights' magnitudes.
    const int64_t row_sum = ((int64_t{255} * s.x.abs_sum + kHalf) >> kScaleWeightBits) + 1;
    g.narrow = s.sample_bytes == 1 && row_sum < 32768;
    g.row_max = static_cast<int>(std::min<int64_t>(row_sum, INT32_MAX));
    if (s.sample_bytes == 1 && row_sum * s.y.abs_sum < (int64_t{1} << 30))
      scale_group<int32_t>(g);
    else
      scale_group<int64_t>(g);
  }
}

}  // namespace cudaoverlap
