// One output sample of `scale`, shared by its CPU reference (scale.cpp)
// and its CUDA kernel (scale.cu) so the two agree to the byte: the taps of
// scale_taps.h applied along x on each input row the vertical taps reach,
// each row's sum rounded to the sample's scale, then along y, rounded and
// clamped to the sample's range, in integers (scale_value); and the two
// other ways the CUDA kernels sum 8-bit samples to the same bytes, in
// float (scale_value_float) and four taps at a time with byte dot
// products (scale_window_group), which tests hold to scale_value.
//
// Private to kernels/scale: CO_HD is __host__ __device__ under nvcc.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

#ifdef __CUDACC__
#define CO_SCALE_HD __host__ __device__ __forceinline__
#else
#define CO_SCALE_HD inline
#endif

#include "kernels/scale/scale_taps.h"

namespace cudaoverlap {

// One axis of the tables in the workspace.
struct ScaleAxisView {
  const int32_t* first = nullptr;
  const int16_t* weight = nullptr;
  // The CUDA kernels' copies (ScaleTables::Axis): along x the [tap][output]
  // pairs of index and int weight (tap) or float weight (ftap), null along
  // y; along y the float weights (fweight), null along x.
  const int32_t* tap = nullptr;
  const int32_t* ftap = nullptr;
  const float* fweight = nullptr;
  int taps = 0;
  int in_size = 0;
  int abs_sum = 0;  // ScaleTables::Axis::abs_sum
  // Along x, the windows of ScaleTables::Axis; window_groups 0 elsewhere.
  const int32_t* window_start = nullptr;
  const uint32_t* window_weight = nullptr;
  int window_groups = 0;
};

// One component of a frame, scaled on its own grid: where its samples are
// in both images (the same format on both sides) and the axes it uses.
struct ScaleComponent {
  const uint8_t* src = nullptr;
  size_t src_stride = 0;
  uint8_t* dst = nullptr;
  size_t dst_stride = 0;
  int offset = 0;        // byte of its first sample within a row
  int pixel_stride = 0;  // bytes between its samples along a row
  int sample_bytes = 1;  // 1, or 2 (little-endian words)
  int depth = 8;         // significant bits
  int shift = 0;         // bits below the value in its word
  int out_samples = 0;   // samples written per output row (packed 4:2:2 of odd width: one more)
  int out_width = 0;     // its grid on the output (out_samples past it repeat the last)
  int out_rows = 0;      // rows made: [row0, out_rows)
  int row0 = 0;
  int fill = -1;  // >= 0: a padding byte, written with this value
  ScaleAxisView x, y;
};

CO_SCALE_HD int scale_clamp(int v, int lo, int hi) { return v < lo ? lo : (v > hi ? hi : v); }

CO_SCALE_HD int scale_read(const ScaleComponent& c, int x, int y) {
  const uint8_t* p = c.src + static_cast<size_t>(y) * c.src_stride + c.offset +
                     static_cast<size_t>(x) * c.pixel_stride;
  if (c.sample_bytes == 1) return *p;
  return ((p[0] | (p[1] << 8)) >> c.shift) & ((1 << c.depth) - 1);
}

CO_SCALE_HD void scale_write(const ScaleComponent& c, int x, int y, int v) {
  uint8_t* p = c.dst + static_cast<size_t>(y) * c.dst_stride + c.offset +
               static_cast<size_t>(x) * c.pixel_stride;
  if (c.sample_bytes == 1) {
    *p = static_cast<uint8_t>(v);
    return;
  }
  // The bits beside a sample (P010's low six) are written as zero.
  const int word = v << c.shift;
  p[0] = static_cast<uint8_t>(word);
  p[1] = static_cast<uint8_t>(word >> 8);
}

// The value of output sample (x, y) of `c`. A row's sum of 16-bit samples
// times weights of at most 1.3 in 2^14 stays below 2^31; the vertical sum
// is taken in 64 bits.
CO_SCALE_HD int scale_value(const ScaleComponent& c, int x, int y) {
  constexpr int kHalf = 1 << (kScaleWeightBits - 1);
  const int32_t x0 = c.x.first[x];
  const int32_t y0 = c.y.first[y];
  const int16_t* wx = c.x.weight + static_cast<size_t>(x) * c.x.taps;
  const int16_t* wy = c.y.weight + static_cast<size_t>(y) * c.y.taps;
  int64_t sum = 0;
  for (int j = 0; j < c.y.taps; ++j) {
    const int wj = wy[j];
    if (wj == 0) continue;
    const int row = scale_clamp(y0 + j, 0, c.y.in_size - 1);
    int32_t h = 0;
    for (int i = 0; i < c.x.taps; ++i)
      h += wx[i] * scale_read(c, scale_clamp(x0 + i, 0, c.x.in_size - 1), row);
    h = (h + kHalf) >> kScaleWeightBits;
    sum += static_cast<int64_t>(wj) * h;
  }
  const int64_t v = (sum + kHalf) >> kScaleWeightBits;
  const int max = (1 << c.depth) - 1;
  return v < 0 ? 0 : (v > max ? max : static_cast<int>(v));
}

// 8-bit samples summed in float, as the CUDA kernels sum them (scale.cu):
// the weights times 2^-14, each sum from one half, so that scale_value's
// rounding is a floor. Every partial sum is then a whole number of 2^-14
// below 2^24 of them (ScaleTables::float_exact), which a float holds, so
// no step rounds and the result is scale_value's.

// a + b rounded down (the GPU's __fadd_rd; on the host, the double sum,
// which is exact, taken to the float at or below it).
CO_SCALE_HD float scale_add_down(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fadd_rd(a, b);
#else
  const double exact = static_cast<double>(a) + static_cast<double>(b);
  float r = static_cast<float>(exact);
  if (static_cast<double>(r) > exact) r = std::nextafter(r, -1e30f);
  return r;
#endif
}

// floor(a) for |a| < 2^22: a added to 1.5 * 2^23, where floats are a unit
// apart, rounding down, and taken off again.
CO_SCALE_HD float scale_floor(float a) { return scale_add_down(a, 12582912.0f) - 12582912.0f; }

// Whether `c`'s sums can leave the samples' range: only where a filter
// has negative weights (bicubic, lanczos); sums of weights that are all
// positive and add up to one stay between the smallest and largest sample.
CO_SCALE_HD bool scale_overshoots(const ScaleComponent& c) {
  return c.x.abs_sum > (1 << kScaleWeightBits) || c.y.abs_sum > (1 << kScaleWeightBits);
}

// The output value of a column's vertical sum: clamped to [0, top] (the
// samples' largest value, at most 255) where it may overshoot, and added to
// 2^23 rounding down, which leaves floor(sum) in the low byte of the
// float's bits.
CO_SCALE_HD uint32_t scale_byte_bits(float sum, float top, bool overshoots) {
  if (overshoots) sum = fminf(fmaxf(sum, 0.0f), top);
  const float v = scale_add_down(sum, 8388608.0f);
  uint32_t bits;
  memcpy(&bits, &v, sizeof bits);
  return bits;
}

// scale_value of an 8-bit component in that float arithmetic.
CO_SCALE_HD int scale_value_float(const ScaleComponent& c, int x, int y) {
  constexpr float kUnit = 1.0f / (1 << kScaleWeightBits);
  const int32_t x0 = c.x.first[x];
  const int32_t y0 = c.y.first[y];
  const int16_t* wx = c.x.weight + static_cast<size_t>(x) * c.x.taps;
  const int16_t* wy = c.y.weight + static_cast<size_t>(y) * c.y.taps;
  float sum = 0.5f;
  for (int j = 0; j < c.y.taps; ++j) {
    const int row = scale_clamp(y0 + j, 0, c.y.in_size - 1);
    float h = 0.5f;
    for (int i = 0; i < c.x.taps; ++i)
      h = fmaf(wx[i] * kUnit,
               static_cast<float>(scale_read(c, scale_clamp(x0 + i, 0, c.x.in_size - 1), row)), h);
    sum = fmaf(wy[j] * kUnit, scale_floor(h), sum);
  }
  const float top = static_cast<float>((1 << c.depth) - 1);
  return static_cast<int>(scale_byte_bits(sum, top, scale_overshoots(c)) & 0xFF);
}

// 8-bit samples four taps at a time, as the CUDA kernels sum them along x
// where an axis has windows (ScaleTables::Axis::window_groups): byte dot
// products of four samples with their weights' low bytes (unsigned) and
// high bytes (signed), summed apart and put together once a row, which is
// the integer row sum of scale_value exactly.

// The GPU's __byte_perm, on the host too: byte n of the result is byte
// (s >> 4n) & 7 of y:x.
CO_SCALE_HD uint32_t scale_byte_perm(uint32_t x, uint32_t y, uint32_t s) {
#ifdef __CUDA_ARCH__
  return __byte_perm(x, y, s);
#else
  const uint64_t both = (static_cast<uint64_t>(y) << 32) | x;
  uint32_t r = 0;
  for (int n = 0; n < 4; ++n)
    r |= static_cast<uint32_t>((both >> (8 * ((s >> (4 * n)) & 7))) & 0xFF) << (8 * n);
  return r;
#endif
}

// acc plus the products of a's four bytes (unsigned) with b's: unsigned
// (scale_dot_lo) or signed (scale_dot_hi).
CO_SCALE_HD int scale_dot_lo(uint32_t a, uint32_t b, int acc) {
#ifdef __CUDA_ARCH__
  return static_cast<int>(__dp4a(a, b, static_cast<uint32_t>(acc)));
#else
  for (int k = 0; k < 4; ++k)
    acc += static_cast<int>(((a >> (8 * k)) & 0xFF) * ((b >> (8 * k)) & 0xFF));
  return acc;
#endif
}

CO_SCALE_HD int scale_dot_hi(uint32_t a, uint32_t b, int acc) {
#ifdef __CUDA_ARCH__
  int d;
  asm("dp4a.u32.s32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(acc));
  return d;
#else
  for (int k = 0; k < 4; ++k)
    acc += static_cast<int>((a >> (8 * k)) & 0xFF) * static_cast<int8_t>((b >> (8 * k)) & 0xFF);
  return acc;
#endif
}

// acc plus the products of a's two 16-bit halves (unsigned) with two of
// b's bytes, bytes 0 and 1 (lo) or 2 and 3 (hi), unsigned (u) or signed
// (s): dp2a.
template <bool kHigh, bool kSigned>
CO_SCALE_HD int scale_dot2(uint32_t a, uint32_t b, int acc) {
#ifdef __CUDA_ARCH__
  int d;
  if (kHigh && kSigned)
    asm("dp2a.hi.u32.s32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(acc));
  else if (kHigh)
    asm("dp2a.hi.u32.u32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(acc));
  else if (kSigned)
    asm("dp2a.lo.u32.s32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(acc));
  else
    asm("dp2a.lo.u32.u32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(acc));
  return d;
#else
  for (int k = 0; k < 2; ++k) {
    const uint32_t byte = (b >> (8 * (k + (kHigh ? 2 : 0)))) & 0xFF;
    const int w = kSigned ? static_cast<int8_t>(byte) : static_cast<int>(byte);
    acc = static_cast<int>(static_cast<uint32_t>(acc) +
                           static_cast<uint32_t>(static_cast<int>((a >> (16 * k)) & 0xFFFF) * w));
  }
  return acc;
#endif
}

// A T (uint8_t, uint16_t or uint32_t, aligned) at p, through the
// read-only cache on the GPU.
template <typename T>
CO_SCALE_HD uint32_t scale_load(const uint8_t* p) {
#ifdef __CUDA_ARCH__
  return __ldg(reinterpret_cast<const T*>(p));
#else
  T v;
  memcpy(&v, p, sizeof v);
  return v;
#endif
}

// One group of four taps of a window on the row at `p` (its first tap's
// pixel) added to the components' low and high sums. Pixels of kPixel
// bytes, component k their byte k: four (kN 4, the pixels loaded as
// aligned words), two (kN 2, as aligned pairs) or one. Each component's
// four samples are put into one word for the dot products.
template <int kN, int kPixel>
CO_SCALE_HD void scale_window_group(const uint8_t* p, uint32_t weight_lo, uint32_t weight_hi,
                                    int (&lo)[kN], int (&hi)[kN]) {
  static_assert(kN == kPixel, "every byte of a pixel is a component");
  uint32_t samples[4];
  if (kPixel == 4) {
    const uint32_t t0 = scale_load<uint32_t>(p), t1 = scale_load<uint32_t>(p + 4);
    const uint32_t t2 = scale_load<uint32_t>(p + 8), t3 = scale_load<uint32_t>(p + 12);
    const uint32_t lo01 = scale_byte_perm(t0, t1, 0x5140), hi01 = scale_byte_perm(t0, t1, 0x7362);
    const uint32_t lo23 = scale_byte_perm(t2, t3, 0x5140), hi23 = scale_byte_perm(t2, t3, 0x7362);
    samples[0] = scale_byte_perm(lo01, lo23, 0x5410);
    samples[1] = scale_byte_perm(lo01, lo23, 0x7632);
    samples[2] = scale_byte_perm(hi01, hi23, 0x5410);
    samples[3] = scale_byte_perm(hi01, hi23, 0x7632);
  } else if (kPixel == 2) {
    const uint32_t p01 =
        scale_byte_perm(scale_load<uint16_t>(p), scale_load<uint16_t>(p + 2), 0x5410);
    const uint32_t p23 =
        scale_byte_perm(scale_load<uint16_t>(p + 4), scale_load<uint16_t>(p + 6), 0x5410);
    samples[0] = scale_byte_perm(p01, p23, 0x6420);
    samples[1] = scale_byte_perm(p01, p23, 0x7531);
  } else {
    samples[0] = scale_byte_perm(
        scale_byte_perm(scale_load<uint8_t>(p), scale_load<uint8_t>(p + 1), 0x0040),
        scale_byte_perm(scale_load<uint8_t>(p + 2), scale_load<uint8_t>(p + 3), 0x0040), 0x5410);
  }
  for (int k = 0; k < kN; ++k) {
    lo[k] = scale_dot_lo(samples[k], weight_lo, lo[k]);
    hi[k] = scale_dot_hi(samples[k], weight_hi, hi[k]);
  }
}

// Where a window's low sum starts: at one half, so that the shift that
// ends the row rounds.
constexpr int kScaleWindowLow = 1 << (kScaleWeightBits - 1);

// 16-bit samples the same way, two taps a dot product (dp2a): four taps of
// a window on the row at `p` added to the low and high sums of kN
// components, pixels of 2 * kN bytes (one sample; or two, loaded as
// aligned words). Each sample is taken in its place in the 16 bits, the
// bits beside it (P010's low six) cleared by `keep`, so the sums are
// 2^shift times too large until scale_window_round takes them down.
template <int kN>
CO_SCALE_HD void scale_window_group16(const uint8_t* p, uint32_t keep, uint32_t weight_lo,
                                      uint32_t weight_hi, int (&lo)[kN], int (&hi)[kN]) {
  uint32_t pairs[kN][2];  // component k's taps 0 and 1, then 2 and 3
  if (kN == 2) {
    const uint32_t t0 = scale_load<uint32_t>(p), t1 = scale_load<uint32_t>(p + 4);
    const uint32_t t2 = scale_load<uint32_t>(p + 8), t3 = scale_load<uint32_t>(p + 12);
    pairs[0][0] = scale_byte_perm(t0, t1, 0x5410);
    pairs[0][1] = scale_byte_perm(t2, t3, 0x5410);
    pairs[kN - 1][0] = scale_byte_perm(t0, t1, 0x7632);
    pairs[kN - 1][1] = scale_byte_perm(t2, t3, 0x7632);
  } else {
    pairs[0][0] = scale_byte_perm(scale_load<uint16_t>(p), scale_load<uint16_t>(p + 2), 0x5410);
    pairs[0][1] = scale_byte_perm(scale_load<uint16_t>(p + 4), scale_load<uint16_t>(p + 6), 0x5410);
  }
  for (int k = 0; k < kN; ++k) {
    const uint32_t a = pairs[k][0] & keep, b = pairs[k][1] & keep;
    lo[k] = scale_dot2<true, false>(b, weight_lo, scale_dot2<false, false>(a, weight_lo, lo[k]));
    hi[k] = scale_dot2<true, true>(b, weight_hi, scale_dot2<false, true>(a, weight_hi, hi[k]));
  }
}

// Where a window's low sum starts for samples `shift` bits up in their
// 16 (0 for 8-bit samples): at one half, so that the shift that ends the
// row rounds.
CO_SCALE_HD int scale_window_low(int shift) { return kScaleWindowLow << shift; }

// The rounded row sum (scale_value's h) from a window's low and high sums
// (scale_window_low's start), of samples `shift` bits up in their 16. The
// high sum times 256 may pass 2^31 where the low sum brings the total
// back: added modulo 2^32, which the total fits.
CO_SCALE_HD int scale_window_round(int lo, int hi, int shift = 0) {
  const uint32_t total = static_cast<uint32_t>(hi) * 256u + static_cast<uint32_t>(lo);
  return static_cast<int>(total) >> (kScaleWeightBits + shift);
}

// Whether 16-bit samples of `c` can be summed through its windows without
// overflow: each low sum, and the total, below 2^31.
CO_SCALE_HD bool scale_window16_fits(const ScaleComponent& c) {
  if (c.x.window_groups == 0) return false;
  const int64_t most = int64_t{(1 << c.depth) - 1} << c.shift;
  const int64_t low = int64_t{kScaleWindowLow} << c.shift;
  const int64_t limit = int64_t{1} << 31;
  return most * 255 * 4 * c.x.window_groups + low < limit && most * c.x.abs_sum + low < limit &&
         most * 128 * 4 * c.x.window_groups < limit;
}

// An int below 2^22 in magnitude as a float: put under the exponent of
// 1.5 * 2^23, which is then taken off.
CO_SCALE_HD float scale_small_float(int v) {
  const int bits = v + 0x4B400000;
  float f;
  memcpy(&f, &bits, sizeof f);
  return f - 12582912.0f;
}

// Computes and writes output sample (x, y) of `c` (x < out_samples, row0 <= y < out_rows).
CO_SCALE_HD void scale_one(const ScaleComponent& c, int x, int y) {
  if (c.fill >= 0) {
    scale_write(c, x, y, c.fill);
    return;
  }
  scale_write(c, x, y, scale_value(c, x < c.out_width ? x : c.out_width - 1, y));
}

}  // namespace cudaoverlap
