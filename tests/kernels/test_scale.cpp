// scale: its tap tables, its CPU reference against what resampling must
// do (flat stays flat, nearest repeats, shrinking does not alias, deep
// samples keep their depth, one size copies), and its CUDA kernel against
// the reference byte for byte over every format, method and a range of
// ratios (skipped where no CUDA device exists).
#include "kernel_test_util.h"
#include "kernels/flip/flip.h"
#include "kernels/scale/scale.h"
#include "kernels/scale/scale_math.h"
#include "kernels/scale/scale_taps.h"

namespace cudaoverlap::test {
namespace {

const ScaleMethod kMethods[] = {ScaleMethod::kNearest, ScaleMethod::kBilinear,
                                ScaleMethod::kBicubic, ScaleMethod::kLanczos};
const char* const kMethodNames[] = {"nearest", "bilinear", "bicubic", "lanczos"};

KernelParams scale_params(ScaleMethod method, int in_w, int in_h, int out_w, int out_h) {
  KernelParams p;
  p.set("method", static_cast<int>(method));
  p.sizes = FrameSizes{in_w, in_h, out_w, out_h};
  return p;
}

OwnedImage scaled(const OwnedImage& in, ScaleMethod method, int w, int h) {
  OwnedImage out(in.layout.format, w, h, 7);
  reference("scale", scale_params(method, in.layout.width, in.layout.height, w, h), in.image,
            out.image);
  return out;
}

std::vector<PixelFormat> scale_formats() { return formats_of("scale"); }

TEST(ScaleTaps, EveryOutputsWeightsSumToOneAndReachTheNearestInput) {
  const std::pair<int, int> sizes[] = {{1, 1},     {1, 1920},  {7, 5},      {5, 7},
                                       {640, 213}, {4096, 16}, {1920, 3840}};
  for (ScaleMethod m : kMethods)
    for (auto [in, out] : sizes) {
      const ScaleAxis a = scale_axis(m, in, out);
      ASSERT_EQ(a.first.size(), static_cast<size_t>(out));
      ASSERT_EQ(a.weight.size(), static_cast<size_t>(out) * a.taps);
      for (int o = 0; o < out; ++o) {
        int sum = 0;
        for (int k = 0; k < a.taps; ++k) sum += a.weight[o * a.taps + k];
        EXPECT_EQ(sum, 1 << kScaleWeightBits)
            << kMethodNames[static_cast<int>(m)] << " " << in << "->" << out << " output " << o;
        // The input under the output's centre is among its taps.
        const int centre = static_cast<int>((2LL * o + 1) * in / (2LL * out));
        EXPECT_LE(a.first[o], centre);
        EXPECT_GT(a.first[o] + a.taps, centre);
      }
    }
}

// Many taps share the 2^14 units: each weight stays within a unit of its
// exact value, so a symmetric filter stays symmetric to a unit (a rounding
// remainder left on one tap would make it hundreds off).
TEST(ScaleTaps, ManyTapsKeepTheFiltersShape) {
  for (ScaleMethod m : {ScaleMethod::kBilinear, ScaleMethod::kLanczos}) {
    const ScaleAxis a = scale_axis(m, 4096, 2);  // output 0's centre: input 1023.5
    int largest = 0;
    for (int k = 0; k < a.taps; ++k) largest = std::max<int>(largest, a.weight[k]);
    const int centre = 1023 - a.first[0];  // taps 1023 and 1024 straddle the centre
    for (int k = 0; k <= centre; ++k)
      EXPECT_LE(std::abs(a.weight[centre - k] - a.weight[centre + 1 + k]), 1)
          << kMethodNames[static_cast<int>(m)] << " tap " << k;
    EXPECT_LE(largest, m == ScaleMethod::kBilinear ? 9 : 15);
  }
}

// An axis that keeps its size is left alone by every method (the cubic
// would otherwise take 1/18 of each neighbour: interlaced fields mixed).
TEST(ScaleTaps, AnAxisOfOneSizeIsACopy) {
  for (ScaleMethod m : kMethods) {
    const ScaleAxis a = scale_axis(m, 37, 37);
    ASSERT_EQ(a.taps, 1) << kMethodNames[static_cast<int>(m)];
    for (int o = 0; o < 37; ++o) EXPECT_EQ(a.first[o], o);
  }
}

TEST(ScaleTaps, TheFilterWidensOnlyWhenShrinking) {
  EXPECT_EQ(scale_axis(ScaleMethod::kNearest, 100, 33).taps, 1);
  EXPECT_EQ(scale_axis(ScaleMethod::kBilinear, 100, 300).taps, 2);
  EXPECT_EQ(scale_axis(ScaleMethod::kBicubic, 100, 300).taps, 4);
  EXPECT_EQ(scale_axis(ScaleMethod::kLanczos, 100, 300).taps, 6);
  EXPECT_EQ(scale_axis(ScaleMethod::kBilinear, 300, 100).taps, 6);
  EXPECT_EQ(scale_axis(ScaleMethod::kLanczos, 200, 100).taps, 12);
}

// The CUDA kernels sum 8-bit samples in float and refuse tables whose
// sums a float could not hold exactly (ScaleTables::float_exact): every
// method at every ratio, the most extreme included, passes.
TEST(ScaleTables, AreSummedExactlyInFloat) {
  const FrameSizes sizes[] = {
      {3840, 2160, 1920, 1080}, {1920, 1080, 3840, 2160}, {4096, 2160, 16, 9}, {1, 1, 1920, 1080},
      {1920, 1080, 1, 1},       {641, 479, 320, 240},     {7, 5, 5, 7}};
  for (ScaleMethod m : kMethods)
    for (const FrameSizes& s : sizes) {
      const ScaleTables t = scale_tables(m, s);
      EXPECT_TRUE(t.float_exact) << kMethodNames[static_cast<int>(m)] << " " << s.in_width << "x"
                                 << s.in_height << " -> " << s.out_width << "x" << s.out_height;
      // Negative lobes make lanczos and bicubic weigh more than one in all;
      // a triangle never does.
      for (const ScaleTables::Axis& a : t.axes) {
        EXPECT_GE(a.abs_sum, 1 << kScaleWeightBits);
        if (m == ScaleMethod::kBilinear || m == ScaleMethod::kNearest) {
          EXPECT_EQ(a.abs_sum, 1 << kScaleWeightBits);
        }
      }
    }
}

// The tables' copies for the CUDA kernels are the weights they copy: along
// x the same clamped index with the int or float weight, along y the
// float weights, each float the int times 2^-14.
TEST(ScaleTables, TheKernelsCopiesAreTheWeights) {
  for (ScaleMethod m : kMethods)
    for (const FrameSizes& s : {FrameSizes{641, 479, 320, 240}, FrameSizes{33, 7, 100, 3}}) {
      const ScaleTables t = scale_tables(m, s);
      for (int a = 0; a < 4; ++a) {
        const ScaleTables::Axis& axis = t.axes[a];
        const uint8_t* bytes = t.bytes.data();
        const auto* first = reinterpret_cast<const int32_t*>(bytes + axis.first_at);
        const auto* weight = reinterpret_cast<const int16_t*>(bytes + axis.weight_at);
        for (int o = 0; o < axis.out_size; ++o)
          for (int i = 0; i < axis.taps; ++i) {
            const int16_t w = weight[o * axis.taps + i];
            const float f = w / static_cast<float>(1 << kScaleWeightBits);
            if (a % 2 == 1) {
              const auto* fw = reinterpret_cast<const float*>(bytes + axis.fweight_at);
              ASSERT_EQ(fw[o * axis.taps + i], f) << a << " " << o << " " << i;
              continue;
            }
            const size_t pair = (static_cast<size_t>(i) * axis.out_size + o) * 2;
            const auto* tap = reinterpret_cast<const int32_t*>(bytes + axis.tap_at);
            const auto* ftap = reinterpret_cast<const int32_t*>(bytes + axis.ftap_at);
            const int index = std::clamp(first[o] + i, 0, axis.in_size - 1);
            ASSERT_EQ(tap[pair], index);
            ASSERT_EQ(tap[pair + 1], w);
            ASSERT_EQ(ftap[pair], index);
            float fw;
            std::memcpy(&fw, &ftap[pair + 1], sizeof fw);
            ASSERT_EQ(fw, f) << a << " " << o << " " << i;
          }
      }
    }
}

// The float sums of the CUDA kernels (8-bit samples) equal the integer
// sums of the reference, output for output: on random bytes, and on
// pictures of only 0 and 255, where the negative lobes overshoot most.
TEST(ScaleTables, FloatSumsEqualTheIntegerSums) {
  const FrameSizes sizes[] = {{3840, 2160, 1920, 1080}, {1920, 1080, 3840, 2160},
                              {4096, 2160, 16, 9},      {1, 1, 64, 36},
                              {641, 479, 320, 240},     {33, 7, 100, 3}};
  // Taps multiplied per case, about: outputs are skipped to stay within it.
  const int64_t budget = kSanitized ? 200000 : 4000000;
  for (const FrameSizes& s : sizes)
    for (int picture = 0; picture < 3; ++picture) {
      OwnedImage in(PixelFormat::kGRAY8, s.in_width, s.in_height);
      std::mt19937 random(static_cast<uint32_t>(picture * 131 + s.out_width));
      for (uint8_t& b : in.bytes)
        b = picture == 0 ? static_cast<uint8_t>(random())
                         : (random() % (picture == 1 ? 2 : 7) < 1 ? 0 : 255);
      OwnedImage out(PixelFormat::kGRAY8, s.out_width, s.out_height);
      for (ScaleMethod m : kMethods) {
        const ScaleTables tables = scale_tables(m, s);
        ScaleComponent c[kMaxComponents + 1];
        ASSERT_EQ(scale_components(in.image, out.image, tables, tables.bytes.data(), c), 1);
        const int64_t outputs = int64_t{s.out_width} * s.out_height;
        const int64_t taps = int64_t{tables.axes[0].taps} * tables.axes[1].taps;
        const int64_t step = std::max<int64_t>(1, outputs * taps / budget) | 1;
        int differing = 0;
        for (int64_t o = 0; o < outputs; o += step) {
          const int x = static_cast<int>(o % s.out_width), y = static_cast<int>(o / s.out_width);
          if (scale_value_float(c[0], x, y) != scale_value(c[0], x, y) && ++differing < 4)
            ADD_FAILURE() << kMethodNames[static_cast<int>(m)] << " " << s.in_width << "x"
                          << s.in_height << " -> " << s.out_width << "x" << s.out_height
                          << " picture " << picture << " output (" << x << ", " << y << ")";
        }
        EXPECT_EQ(differing, 0);
      }
    }
}

// Output (x, y) of component `k` of `c` with its rows summed as the CUDA
// kernels sum them through windows (scale_window_group, or
// scale_window_group16 for 16-bit samples), then as scale_value sums them
// down the column; pixels of kN components of kBytes, `c` the first.
template <int kN, int kBytes>
int window_value(const ScaleComponent& c, int k, int x, int y) {
  constexpr int kPixel = kN * kBytes;
  const uint32_t* weights = c.x.window_weight;
  const int shift = kBytes == 2 ? c.shift : 0;
  const int mask = (1 << c.depth) - 1;
  const uint32_t keep = static_cast<uint32_t>(mask << shift) * 0x10001u;
  int64_t sum = 0;
  for (int j = 0; j < c.y.taps; ++j) {
    const int row = scale_clamp(c.y.first[y] + j, 0, c.y.in_size - 1);
    const uint8_t* p = c.src + row * c.src_stride + c.x.window_start[x] * kPixel;
    int lo[kN], hi[kN] = {};
    for (int& l : lo) l = scale_window_low(shift);
    for (int g = 0; g < c.x.window_groups; ++g) {
      const size_t pair = (static_cast<size_t>(g) * c.out_width + x) * 2;
      if (kBytes == 1)
        scale_window_group<kN, kN>(p + 4 * kPixel * g, weights[pair], weights[pair + 1], lo, hi);
      else
        scale_window_group16<kN>(p + 4 * kPixel * g, keep, weights[pair], weights[pair + 1], lo,
                                 hi);
    }
    sum += int64_t{c.y.weight[y * c.y.taps + j]} * scale_window_round(lo[k], hi[k], shift);
  }
  const int64_t v = (sum + (1 << (kScaleWeightBits - 1))) >> kScaleWeightBits;
  return static_cast<int>(std::clamp<int64_t>(v, 0, mask));
}

// The windows' dot products equal the integer sums of the reference, for
// pixels of four 8-bit components (turned into words), of two (NV12's and
// P010's chroma) and of one (8 and 16 bits, P010's low six bits cleared),
// every multi-tap method, edges included; an input narrower than the taps
// rounded up to four has no windows.
TEST(ScaleTables, WindowSumsEqualTheIntegerSums) {
  const FrameSizes sizes[] = {{3840, 2160, 1920, 1080}, {1920, 1080, 3840, 2160},
                              {4096, 2160, 16, 9},      {641, 479, 320, 240},
                              {33, 7, 100, 3},          {9, 9, 50, 50}};
  const int64_t budget = kSanitized ? 50000 : 500000;  // taps multiplied per case, about
  struct Group {
    PixelFormat format;
    int first;  // its first component
    int n;      // components a pixel
  };
  const Group groups[] = {{PixelFormat::kRGBA, 0, 4},      {PixelFormat::kGRAY8, 0, 1},
                          {PixelFormat::kNV12, 0, 1},      {PixelFormat::kNV12, 1, 2},
                          {PixelFormat::kP010_10LE, 0, 1}, {PixelFormat::kP010_10LE, 1, 2},
                          {PixelFormat::kGRAY16_LE, 0, 1}};
  for (const FrameSizes& s : sizes)
    for (const Group& group : groups) {
      OwnedImage in(group.format, s.in_width, s.in_height);
      std::mt19937 random(static_cast<uint32_t>(s.in_width * 7 + s.out_height));
      for (uint8_t& b : in.bytes)
        b = random() % 3 == 0 ? static_cast<uint8_t>(random()) : 255 * (random() % 2);
      OwnedImage out(group.format, s.out_width, s.out_height);
      for (ScaleMethod m : {ScaleMethod::kBilinear, ScaleMethod::kBicubic, ScaleMethod::kLanczos}) {
        const ScaleTables tables = scale_tables(m, s);
        ScaleComponent c[kMaxComponents + 1];
        scale_components(in.image, out.image, tables, tables.bytes.data(), c);
        const ScaleComponent& first = c[group.first];
        const bool wide = first.x.in_size >= (first.x.taps + 3) / 4 * 4;
        const std::string what = std::string(kMethodNames[static_cast<int>(m)]) + " " +
                                 format_info(group.format).name + " component " +
                                 std::to_string(group.first) + " " + std::to_string(s.in_width) +
                                 "x" + std::to_string(s.in_height) + " -> " +
                                 std::to_string(s.out_width) + "x" + std::to_string(s.out_height);
        EXPECT_EQ(first.x.window_groups > 0, wide) << what;
        const bool deep = first.sample_bytes == 2;
        if (!wide || (deep && !scale_window16_fits(first))) continue;
        const int64_t outputs = int64_t{first.out_width} * first.out_rows;
        const int64_t taps = int64_t{first.x.taps} * first.y.taps;
        const int64_t step = std::max<int64_t>(1, outputs * taps / budget) | 1;
        int differing = 0;
        for (int64_t o = 0; o < outputs; o += step) {
          const int x = static_cast<int>(o % first.out_width);
          const int y = static_cast<int>(o / first.out_width);
          for (int k = 0; k < group.n; ++k) {
            const int got = group.n == 4   ? window_value<4, 1>(first, k, x, y)
                            : group.n == 2 ? (deep ? window_value<2, 2>(first, k, x, y)
                                                   : window_value<2, 1>(first, k, x, y))
                                           : (deep ? window_value<1, 2>(first, k, x, y)
                                                   : window_value<1, 1>(first, k, x, y));
            if (got != scale_value(c[group.first + k], x, y) && ++differing < 4)
              ADD_FAILURE() << what << " output (" << x << ", " << y << ") component " << k;
          }
        }
        EXPECT_EQ(differing, 0);
      }
    }
}

TEST(ScaleReference, AFlatPictureStaysFlatInEveryFormatAndMethod) {
  for (PixelFormat f : scale_formats())
    for (ScaleMethod m : kMethods)
      for (auto [w, h] : {std::pair{37, 21}, {5, 3}}) {
        OwnedImage in(f, 13, 9);
        const FormatInfo& info = format_info(f);
        for (int c = 0; c < info.n_components; ++c) {
          const uint32_t v = ((1u << info.comp[c].depth) - 1) * (c + 1) / 5;
          for (int y = 0; y < static_cast<int>(plane_rows(f, info.comp[c].plane, 9)) &&
                          y < (info.comp[c].y_sub ? 5 : 9);
               ++y)
            for (int x = 0; x < stored_samples(f, c, 13); ++x) write_sample(in.image, c, x, y, v);
        }
        const OwnedImage out = scaled(in, m, w, h);
        for (int c = 0; c < info.n_components; ++c) {
          const uint32_t v = ((1u << info.comp[c].depth) - 1) * (c + 1) / 5;
          const int rows = info.comp[c].y_sub ? (h + 1) / 2 : h;
          for (int y = 0; y < rows; ++y)
            for (int x = 0; x < stored_samples(f, c, w); ++x)
              ASSERT_EQ(read_sample(out.image, c, x, y), v)
                  << info.name << " " << kMethodNames[static_cast<int>(m)] << " component " << c
                  << " at " << x << "," << y;
        }
      }
}

TEST(ScaleReference, NearestRepeatsEachPixel) {
  OwnedImage in(PixelFormat::kRGBA, 16, 9);
  in.fill_random(3);
  const OwnedImage out = scaled(in, ScaleMethod::kNearest, 48, 18);
  for (int y = 0; y < 18; ++y)
    for (int x = 0; x < 48; ++x)
      for (int c = 0; c < 4; ++c)
        ASSERT_EQ(read_sample(out.image, c, x, y), read_sample(in.image, c, x / 3, y / 2));
}

TEST(ScaleReference, OneSizeCopiesTheFrame) {
  for (PixelFormat f : scale_formats()) {
    OwnedImage in(f, 31, 17);
    in.fill_random(5);
    for (ScaleMethod m : kMethods)
      EXPECT_EQ(compare_images(scaled(in, m, 31, 17).image, in.image), "")
          << format_info(f).name << " " << kMethodNames[static_cast<int>(m)];
  }
}

// One-pixel stripes shrunk by three: every multi-tap method averages them
// to mid-grey, where sampling (nearest) keeps full-contrast stripes of
// another frequency: the aliasing the widened filters prevent.
TEST(ScaleReference, ShrinkingStripesDoesNotAlias) {
  OwnedImage in(PixelFormat::kGRAY8, 600, 4);
  for (int y = 0; y < 4; ++y)
    for (int x = 0; x < 600; ++x) write_sample(in.image, 0, x, y, x % 2 ? 255 : 0);
  for (ScaleMethod m : kMethods) {
    const OwnedImage out = scaled(in, m, 200, 4);
    int lo = 255, hi = 0;
    for (int x = 2; x < 198; ++x) {  // away from the edges, which repeat
      const int v = static_cast<int>(read_sample(out.image, 0, x, 1));
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
    if (m == ScaleMethod::kNearest) {
      EXPECT_EQ(hi - lo, 255) << "nearest samples, so it aliases";
    } else {
      EXPECT_LE(hi - lo, 90) << kMethodNames[static_cast<int>(m)];
      EXPECT_GE(lo, 80) << kMethodNames[static_cast<int>(m)];
      EXPECT_LE(hi, 175) << kMethodNames[static_cast<int>(m)];
    }
  }
}

// 16-bit samples are filtered at 16 bits: a ramp of odd steps doubled in
// width has values between its neighbours that no 8-bit path could make.
TEST(ScaleReference, DeepSamplesKeepTheirDepth) {
  OwnedImage in(PixelFormat::kGRAY16_LE, 64, 2);
  for (int y = 0; y < 2; ++y)
    for (int x = 0; x < 64; ++x) write_sample(in.image, 0, x, y, 1000 * x + 7);
  const OwnedImage out = scaled(in, ScaleMethod::kBilinear, 128, 2);
  // Output 2k + 1 sits a quarter of the way from input k to k + 1.
  for (int k = 1; k < 62; ++k)
    EXPECT_EQ(read_sample(out.image, 0, 2 * k + 1, 0), 1000u * k + 7 + 250) << k;
  // P010: white stays white after Lanczos's overshoot, the six low bits 0.
  OwnedImage p010(PixelFormat::kP010_10LE, 8, 4);
  for (int c = 0; c < 3; ++c)
    for (int y = 0; y < 4; ++y)
      for (int x = 0; x < 8; ++x)
        if (c == 0 || (x < 4 && y < 2)) write_sample(p010.image, c, x, y, x % 3 ? 1023 : 0);
  const OwnedImage big = scaled(p010, ScaleMethod::kLanczos, 30, 10);
  for (int y = 0; y < 10; ++y)
    for (int x = 0; x < 30; ++x) {
      const uint8_t* word = big.image.planes[0].data + y * big.image.planes[0].stride + 2 * x;
      EXPECT_EQ(word[0] & 0x3F, 0) << x << "," << y;
      EXPECT_LE(read_sample(big.image, 0, x, y), 1023u);
    }
}

TEST(ScaleOperation, RefusesFramesOfOtherSizesThanItWasMadeFor) {
  OwnedImage in(PixelFormat::kRGBA, 64, 48), out(PixelFormat::kRGBA, 32, 24);
  EXPECT_EQ(
      check("scale", scale_params(ScaleMethod::kBilinear, 64, 48, 32, 24), in.image, out.image),
      "");
  EXPECT_NE(
      check("scale", scale_params(ScaleMethod::kBilinear, 64, 48, 32, 20), in.image, out.image),
      "");
  // Without sizes it is a copy, of one size only.
  EXPECT_NE(check("scale", KernelParams{}, in.image, out.image), "");
  const auto a = make_operation("scale", scale_params(ScaleMethod::kBilinear, 64, 48, 32, 24));
  const auto b = make_operation("scale", scale_params(ScaleMethod::kBilinear, 64, 48, 32, 20));
  const auto c = make_operation("scale", scale_params(ScaleMethod::kLanczos, 64, 48, 32, 24));
  EXPECT_FALSE(a->same_as(*b));
  EXPECT_FALSE(a->same_as(*c));
  EXPECT_TRUE(
      a->same_as(*make_operation("scale", scale_params(ScaleMethod::kBilinear, 64, 48, 32, 24))));
  EXPECT_TRUE(a->mixes_rows(PixelFormat::kRGBA, PixelFormat::kRGBA));
  EXPECT_FALSE(make_operation("scale", scale_params(ScaleMethod::kBilinear, 64, 48, 32, 48))
                   ->mixes_rows(PixelFormat::kRGBA, PixelFormat::kRGBA));
}

// convert with a change of size is scale and convert one after the other:
// scaled in the input's format when shrinking, converted first when
// growing and for a mosaic (debayered at its own size).
TEST(ConvertScaleReference, IsTheTwoStepsInTheCheaperOrder) {
  struct Case {
    PixelFormat from, to;
    int in_w, in_h, out_w, out_h;
  };
  for (const Case c : {Case{PixelFormat::kNV12, PixelFormat::kRGBA, 64, 36, 32, 18},
                       Case{PixelFormat::kRGBA, PixelFormat::kNV12, 32, 18, 64, 36},
                       Case{PixelFormat::kYUY2, PixelFormat::kBGRx, 33, 9, 20, 7},
                       Case{PixelFormat::kBayerRGGB, PixelFormat::kRGBA, 40, 30, 20, 15},
                       Case{PixelFormat::kP010_10LE, PixelFormat::kRGBA, 30, 20, 47, 21}}) {
    for (ScaleMethod m : {ScaleMethod::kBilinear, ScaleMethod::kLanczos}) {
      SCOPED_TRACE(std::string(format_info(c.from).name) + " -> " + format_info(c.to).name);
      OwnedImage in(c.from, c.in_w, c.in_h);
      in.fill_random(11);
      KernelParams p = scale_params(m, c.in_w, c.in_h, c.out_w, c.out_h);
      OwnedImage got(c.to, c.out_w, c.out_h);
      reference("convert", p, in.image, got.image);
      const bool shrink = c.out_w * c.out_h <= c.in_w * c.in_h && !is_bayer(c.from);
      OwnedImage mid(shrink ? c.from : c.to, shrink ? c.out_w : c.in_w, shrink ? c.out_h : c.in_h);
      OwnedImage want(c.to, c.out_w, c.out_h);
      if (shrink) {
        reference("scale", p, in.image, mid.image);
        reference("convert", {}, mid.image, want.image);
      } else {
        reference("convert", {}, in.image, mid.image);
        reference("scale", p, mid.image, want.image);
      }
      EXPECT_EQ(compare_images(got.image, want.image), "");
    }
  }
}

// The crop-* edges come off first: cropping and scaling equals scaling the
// cut-out window as an image of its own, and cropping alone cuts it out.
TEST(CropReference, IsTheWindowScaledOrCutOut) {
  for (PixelFormat f :
       {PixelFormat::kRGBA, PixelFormat::kNV12, PixelFormat::kI420, PixelFormat::kYUY2,
        PixelFormat::kP010_10LE, PixelFormat::kGRAY8, PixelFormat::kRGB}) {
    OwnedImage in(f, 40, 30);
    in.fill_random(23);
    // The window, columns 4..34 and rows 2..22, copied out byte by byte as
    // videocrop would (each plane's rows and bytes at its subsampling).
    OwnedImage window(f, 30, 20);
    const FormatInfo& info = format_info(f);
    for (int p = 0; p < info.n_planes; ++p)
      for (size_t y = 0; y < plane_rows(f, p, 20); ++y)
        std::memcpy(window.image.planes[p].data + y * window.image.planes[p].stride,
                    in.image.planes[p].data +
                        (y + (2 >> info.y_shift[p])) * in.image.planes[p].stride +
                        (4 >> info.x_shift[p]) * info.pixel_bytes[p],
                    plane_row_bytes(f, p, 30));
    for (auto [w, h] : {std::pair{45, 10}, {30, 20}}) {
      SCOPED_TRACE(std::string(info.name) + " to " + std::to_string(w) + "x" + std::to_string(h));
      KernelParams p = scale_params(ScaleMethod::kBicubic, 40, 30, w, h);
      p.set("crop-left", 4).set("crop-right", 6).set("crop-top", 2).set("crop-bottom", 8);
      OwnedImage got(f, w, h);
      reference("scale", p, in.image, got.image);
      OwnedImage want(f, w, h);
      reference("scale", scale_params(ScaleMethod::kBicubic, 30, 20, w, h), window.image,
                want.image);
      EXPECT_EQ(compare_images(got.image, want.image), "");
      // convert the same through its own pass (which clears the bits beside
      // a 10-bit sample even at one size).
      OwnedImage converted(f, w, h), converted_window(f, w, h);
      reference("convert", p, in.image, converted.image);
      reference("convert", scale_params(ScaleMethod::kBicubic, 30, 20, w, h), window.image,
                converted_window.image);
      EXPECT_EQ(compare_images(converted.image, converted_window.image), "") << "convert";
    }
  }
}

TEST(CropReference, RefusesAnOddEdgeWhereChromaPairsAndACropOfEverything) {
  OwnedImage in(PixelFormat::kNV12, 40, 30), out(PixelFormat::kNV12, 20, 15);
  KernelParams p = scale_params(ScaleMethod::kBilinear, 40, 30, 20, 15);
  p.set("crop-left", 3);
  EXPECT_NE(check("scale", p, in.image, out.image).find("crop-left must be even for NV12"),
            std::string::npos)
      << check("scale", p, in.image, out.image);
  OwnedImage rgba(PixelFormat::kRGBA, 40, 30), small(PixelFormat::kRGBA, 20, 15);
  EXPECT_EQ(check("scale", p, rgba.image, small.image), "") << "RGBA takes any edge";
  p.set("crop-left", 20).set("crop-right", 20);
  EXPECT_NE(check("scale", p, rgba.image, small.image).find("leave nothing"), std::string::npos);
}

// Borders (add-borders): the picture is the window scaled to the
// picture's size, in its place; every other sample is the border colour as
// convert makes it from RGB; in every format the kernel makes, letterboxed
// and pillarboxed, at odd sizes.
KernelParams bordered(ScaleMethod method, int in_w, int in_h, int out_w, int out_h, int x, int y,
                      int w, int h) {
  KernelParams p = scale_params(method, in_w, in_h, out_w, out_h);
  p.sizes.dest_x = x;
  p.sizes.dest_y = y;
  p.sizes.dest_width = w;
  p.sizes.dest_height = h;
  p.set("border-color", 0xff2080c0u);
  return p;
}

TEST(BordersReference, ThePictureInItsPlaceAndTheColourAroundIt) {
  for (PixelFormat f : scale_formats()) {
    const FormatInfo& info = format_info(f);
    // The colour as this format stores it.
    OwnedImage rgba(PixelFormat::kRGBA, 2, 2);
    for (int x = 0; x < 2; ++x)
      for (int y = 0; y < 2; ++y) {
        write_sample(rgba.image, 0, x, y, 0x20);
        write_sample(rgba.image, 1, x, y, 0x80);
        write_sample(rgba.image, 2, x, y, 0xc0);
        write_sample(rgba.image, 3, x, y, 0xff);
      }
    OwnedImage colour(f, 2, 2);
    reference("convert", KernelParams{}, rgba.image, colour.image);
    struct Place {
      int in_w, in_h, out_w, out_h, x, y, w, h;
    };
    for (const Place c : {Place{48, 36, 48, 24, 8, 0, 32, 24}, Place{48, 36, 48, 48, 0, 6, 48, 36},
                          Place{33, 7, 101, 31, 10, 4, 81, 21}}) {
      SCOPED_TRACE(std::string(info.name) + " " + std::to_string(c.out_w) + "x" +
                   std::to_string(c.out_h));
      OwnedImage in(f, c.in_w, c.in_h);
      in.fill_random(static_cast<uint32_t>(c.out_w + c.out_h));
      const KernelParams p =
          bordered(ScaleMethod::kBilinear, c.in_w, c.in_h, c.out_w, c.out_h, c.x, c.y, c.w, c.h);
      OwnedImage got(f, c.out_w, c.out_h);
      ASSERT_EQ(check("scale", p, in.image, got.image), "");
      reference("scale", p, in.image, got.image);
      const OwnedImage picture = scaled(in, ScaleMethod::kBilinear, c.w, c.h);
      for (int k = 0; k < info.n_components; ++k) {
        const int xs = info.comp[k].x_sub, ys = info.comp[k].y_sub;
        const int gw = (c.out_w + (1 << xs) - 1) >> xs, gh = (c.out_h + (1 << ys) - 1) >> ys;
        const int x0 = c.x >> xs, y0 = c.y >> ys;
        const int x1 = (c.x + c.w + (1 << xs) - 1) >> xs, y1 = (c.y + c.h + (1 << ys) - 1) >> ys;
        // A group of the plane the picture only partly covers (YUY2's pair
        // at an odd right edge) is the picture's, its samples as scale
        // makes them: not compared.
        const int group = 1 << info.x_shift[info.comp[k].plane];
        const int past = (c.x + c.w + group - 1) / group * group;
        for (int y = 0; y < gh; ++y)
          for (int x = 0; x < gw; ++x) {
            if ((x << xs) >= c.x + c.w && (x << xs) < past && y >= y0 && y < y1) continue;
            const bool inside = x >= x0 && x < x1 && y >= y0 && y < y1;
            const uint32_t want = inside ? read_sample(picture.image, k, x - x0, y - y0)
                                         : read_sample(colour.image, k, 0, 0);
            ASSERT_EQ(read_sample(got.image, k, x, y), want)
                << "component " << k << " at " << x << "," << y << (inside ? " (picture)" : "");
          }
      }
    }
  }
}

TEST(BordersReference, APictureOffTheGroupsOrOutsideTheFrameIsRefused) {
  OwnedImage nv12(PixelFormat::kNV12, 48, 36), out(PixelFormat::kNV12, 48, 24);
  EXPECT_NE(check("scale", bordered(ScaleMethod::kBilinear, 48, 36, 48, 24, 7, 0, 32, 24),
                  nv12.image, out.image)
                .find("cannot place"),
            std::string::npos)
      << "an odd left edge in NV12";
  EXPECT_NE(check("scale", bordered(ScaleMethod::kBilinear, 48, 36, 48, 24, 20, 0, 32, 24),
                  nv12.image, out.image)
                .find("cannot place"),
            std::string::npos)
      << "past the right edge";
}

// Borders on the GPU, byte for byte: scale in every format, and convert's
// two steps into a bordered picture.
TEST(GpuBorders, EqualsTheReferenceByteForByte) {
  std::string why;
  if (cuda_device_count(&why) == 0) GTEST_SKIP() << "no CUDA device: " << why;
  auto device = make_cuda_device(0);
  device->make_current();
  for (PixelFormat f : scale_formats()) {
    OwnedImage in(f, 33, 7);
    in.fill_random(5);
    const KernelParams p = bordered(ScaleMethod::kBicubic, 33, 7, 101, 31, 10, 4, 81, 21);
    OwnedImage want(f, 101, 31, 3);
    reference("scale", p, in.image, want.image);
    for (size_t align : {size_t{256}, size_t{4}}) {
      OwnedImage got(f, 101, 31, 9);
      run_on_device(*device, "scale", p, in, got, align);
      EXPECT_EQ(compare_images(got.image, want.image), "") << format_info(f).name << " " << align;
    }
  }
  for (auto [from, to] : {std::pair{PixelFormat::kNV12, PixelFormat::kRGBA},
                          {PixelFormat::kRGBA, PixelFormat::kI420}}) {
    OwnedImage in(from, 1920, 1080);
    in.fill_random(6);
    const KernelParams p =
        bordered(ScaleMethod::kLanczos, 1920, 1080, 1280, 1024, 0, 152, 1280, 720);
    OwnedImage want(to, 1280, 1024, 3);
    reference("convert", p, in.image, want.image);
    OwnedImage got(to, 1280, 1024, 9);
    run_on_device(*device, "convert", p, in, got, 256);
    EXPECT_EQ(compare_images(got.image, want.image), "")
        << format_info(from).name << " -> " << format_info(to).name;
  }
}

// video-direction: the window scaled to the upright size, then turned as
// flip turns it, into the picture's place (borders around it); in every
// format a quarter turn takes, every direction; convert the same with its
// conversion before the turn.
KernelParams turned(FlipDirection direction, int in_w, int in_h, int out_w, int out_h) {
  KernelParams p = scale_params(ScaleMethod::kBicubic, in_w, in_h, out_w, out_h);
  p.set("video-direction", direction);
  return p;
}

TEST(TurnReference, IsTheScaledFrameFlipped) {
  for (PixelFormat f : scale_formats())
    for (int d = 1; d <= 7; ++d) {
      const auto direction = static_cast<FlipDirection>(d);
      const bool swaps = flip_swaps_size(direction);
      if (swaps && (f == PixelFormat::kNV16 || f == PixelFormat::kY42B)) continue;
      SCOPED_TRACE(std::string(format_info(f).name) + " direction " + std::to_string(d));
      OwnedImage in(f, 33, 20);
      in.fill_random(static_cast<uint32_t>(d));
      const int w = 26, h = 14;  // upright
      const KernelParams p = turned(direction, 33, 20, swaps ? h : w, swaps ? w : h);
      OwnedImage got(f, swaps ? h : w, swaps ? w : h);
      ASSERT_EQ(check("scale", p, in.image, got.image), "");
      reference("scale", p, in.image, got.image);
      const OwnedImage upright = scaled(in, ScaleMethod::kBicubic, w, h);
      OwnedImage want(f, swaps ? h : w, swaps ? w : h);
      flip_reference(upright.image, want.image, direction);
      EXPECT_EQ(compare_images(got.image, want.image), "");
    }
  OwnedImage nv16(PixelFormat::kNV16, 40, 30), out(PixelFormat::kNV16, 30, 40);
  EXPECT_NE(check("scale", turned(FlipDirection::k90R, 40, 30, 30, 40), nv16.image, out.image)
                .find("cannot turn NV16"),
            std::string::npos);
  // convert: RGBA to NV12, converted (and scaled) upright, then turned.
  OwnedImage rgba(PixelFormat::kRGBA, 33, 20);
  rgba.fill_random(9);
  OwnedImage got(PixelFormat::kNV12, 14, 26), upright(PixelFormat::kNV12, 26, 14),
      want(PixelFormat::kNV12, 14, 26);
  reference("convert", turned(FlipDirection::k90L, 33, 20, 14, 26), rgba.image, got.image);
  reference("convert", scale_params(ScaleMethod::kBicubic, 33, 20, 26, 14), rgba.image,
            upright.image);
  flip_reference(upright.image, want.image, FlipDirection::k90L);
  EXPECT_EQ(compare_images(got.image, want.image), "") << "convert";
}

// Turns on the GPU, byte for byte: scale in every format a quarter turn
// takes, and convert 1080p NV12 to 720x1280 RGBA.
TEST(GpuTurn, EqualsTheReferenceByteForByte) {
  std::string why;
  if (cuda_device_count(&why) == 0) GTEST_SKIP() << "no CUDA device: " << why;
  auto device = make_cuda_device(0);
  device->make_current();
  for (PixelFormat f : scale_formats())
    for (FlipDirection direction : {FlipDirection::k90R, FlipDirection::kVert}) {
      if (flip_swaps_size(direction) && (f == PixelFormat::kNV16 || f == PixelFormat::kY42B))
        continue;
      const bool swaps = flip_swaps_size(direction);
      OwnedImage in(f, 33, 20);
      in.fill_random(4);
      const KernelParams p = turned(direction, 33, 20, swaps ? 14 : 26, swaps ? 26 : 14);
      OwnedImage want(f, swaps ? 14 : 26, swaps ? 26 : 14, 3);
      reference("scale", p, in.image, want.image);
      OwnedImage got(f, swaps ? 14 : 26, swaps ? 26 : 14, 9);
      run_on_device(*device, "scale", p, in, got, 256);
      EXPECT_EQ(compare_images(got.image, want.image), "") << format_info(f).name;
    }
  OwnedImage in(PixelFormat::kNV12, 1920, 1080);
  in.fill_random(8);
  const KernelParams p = turned(FlipDirection::k90R, 1920, 1080, 720, 1280);
  OwnedImage want(PixelFormat::kRGBA, 720, 1280, 3);
  reference("convert", p, in.image, want.image);
  OwnedImage got(PixelFormat::kRGBA, 720, 1280, 9);
  run_on_device(*device, "convert", p, in, got, 256);
  EXPECT_EQ(compare_images(got.image, want.image), "") << "convert";
}

struct GpuScaleCase {
  int in_w, in_h, out_w, out_h;
  bool every_format;  // else RGBA, NV12, YUY2 and P010_10LE
};

class GpuScale : public ::testing::TestWithParam<GpuScaleCase> {};

TEST_P(GpuScale, EqualsTheReferenceByteForByte) {
  const GpuScaleCase& c = GetParam();
  std::string why;
  if (cuda_device_count(&why) == 0) GTEST_SKIP() << "no CUDA device: " << why;
  auto device = make_cuda_device(0);
  device->make_current();
  const std::vector<PixelFormat> few = {PixelFormat::kRGBA, PixelFormat::kNV12, PixelFormat::kYUY2,
                                        PixelFormat::kP010_10LE};
  for (PixelFormat f : c.every_format ? scale_formats() : few)
    for (ScaleMethod m : kMethods) {
      OwnedImage in(f, c.in_w, c.in_h);
      in.fill_random(static_cast<uint32_t>(c.in_w + 7 * c.out_h));
      const KernelParams p = scale_params(m, c.in_w, c.in_h, c.out_w, c.out_h);
      OwnedImage want(f, c.out_w, c.out_h, 3);
      reference("scale", p, in.image, want.image);
      for (size_t align : {size_t{256}, size_t{4}}) {
        OwnedImage got(f, c.out_w, c.out_h, 9);
        run_on_device(*device, "scale", p, in, got, align);
        EXPECT_EQ(compare_images(got.image, want.image), "")
            << format_info(f).name << " " << kMethodNames[static_cast<int>(m)] << " align "
            << align;
      }
    }
}

// convert's two steps on the GPU, byte for byte, both orders and a mosaic,
// and 4K NV12 to 1080p RGBA.
TEST(GpuConvertScale, EqualsTheReferenceByteForByte) {
  std::string why;
  if (cuda_device_count(&why) == 0) GTEST_SKIP() << "no CUDA device: " << why;
  auto device = make_cuda_device(0);
  device->make_current();
  struct Case {
    PixelFormat from, to;
    int in_w, in_h, out_w, out_h;
  };
  for (const Case c : {Case{PixelFormat::kNV12, PixelFormat::kRGBA, 3840, 2160, 1920, 1080},
                       Case{PixelFormat::kNV12, PixelFormat::kRGBA, 1920, 1080, 3840, 2160},
                       Case{PixelFormat::kRGBA, PixelFormat::kNV12, 641, 479, 320, 240},
                       Case{PixelFormat::kYUY2, PixelFormat::kBGRx, 33, 7, 100, 3},
                       Case{PixelFormat::kBayerGRBG, PixelFormat::kRGB, 64, 48, 30, 20},
                       Case{PixelFormat::kP010_10LE, PixelFormat::kI420, 99, 51, 40, 80}})
    for (ScaleMethod m : kMethods) {
      OwnedImage in(c.from, c.in_w, c.in_h);
      in.fill_random(static_cast<uint32_t>(c.in_w * 3 + c.out_w));
      KernelParams p = scale_params(m, c.in_w, c.in_h, c.out_w, c.out_h);
      // Bicubic with a crop off every edge (even, for the subsampled ones).
      if (m == ScaleMethod::kBicubic)
        p.set("crop-left", 2).set("crop-right", 3).set("crop-top", 4).set("crop-bottom", 1);
      OwnedImage want(c.to, c.out_w, c.out_h, 3);
      reference("convert", p, in.image, want.image);
      for (size_t align : {size_t{256}, size_t{4}}) {
        OwnedImage got(c.to, c.out_w, c.out_h, 9);
        run_on_device(*device, "convert", p, in, got, align);
        EXPECT_EQ(compare_images(got.image, want.image), "")
            << format_info(c.from).name << " -> " << format_info(c.to).name << " "
            << kMethodNames[static_cast<int>(m)] << " align " << align;
      }
    }
}

INSTANTIATE_TEST_SUITE_P(
    Ratios, GpuScale,
    ::testing::Values(GpuScaleCase{641, 479, 320, 240, true}, GpuScaleCase{33, 7, 100, 3, true},
                      GpuScaleCase{1, 1, 64, 36, true}, GpuScaleCase{640, 360, 641, 361, true},
                      GpuScaleCase{4096, 2160, 16, 9, false},
                      GpuScaleCase{3840, 2160, 1920, 1080, false},
                      GpuScaleCase{1920, 1080, 3840, 2160, false}),
    [](const auto& info) {
      return std::to_string(info.param.in_w) + "x" + std::to_string(info.param.in_h) + "_to_" +
             std::to_string(info.param.out_w) + "x" + std::to_string(info.param.out_h);
    });

}  // namespace
}  // namespace cudaoverlap::test
