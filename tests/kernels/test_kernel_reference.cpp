// The CPU references of flip, balance, blur and edge against their
// definitions, written independently here, and the checks that refuse what
// they cannot do (convert: test_convert_reference.cpp; bands:
// test_bands_reference.cpp).
// (Agreement with GStreamer's own elements is test_vs_gstreamer.cpp; GPU
// against these references is test_kernel_gpu.cpp.)
#include <random>
#include <utility>

#include "kernel_test_util.h"
#include "kernels/blur/blur.h"
#include "kernels/flip/flip.h"

namespace cudaoverlap::test {
namespace {

OwnedImage run_kernel(const char* kernel, const KernelParams& params, const OwnedImage& in) {
  int w, h;
  output_size(kernel, params, in.layout.width, in.layout.height, &w, &h);
  OwnedImage out(in.layout.format, w, h, 5);
  reference(kernel, params, in.image, out.image);
  return out;
}

OwnedImage flip(const OwnedImage& in, FlipDirection d) {
  KernelParams params;
  params.set("video-direction", d);
  return run_kernel("flip", params, in);
}

// Packed and grey formats have one sample group per pixel, so the definition
// of each direction can be checked pixel by pixel.
TEST(FlipReference, EveryDirectionMovesEachPixelWhereItsDefinitionSays) {
  for (PixelFormat f : {PixelFormat::kRGBA, PixelFormat::kABGR, PixelFormat::kGRAY8,
                        PixelFormat::kRGB, PixelFormat::kGRAY16_LE})
    for (FlipDirection d : kAllDirections) {
      OwnedImage in(f, 5, 3);
      in.fill_random(1);
      const OwnedImage out = flip(in, d);
      const int W = 5, H = 3;
      const size_t n = static_cast<size_t>(format_info(f).pixel_bytes[0]);
      for (int y = 0; y < out.layout.height; ++y)
        for (int x = 0; x < out.layout.width; ++x) {
          // Where output pixel (x, y) comes from, by the geometry of each
          // operation (rotations as a camera turned the other way).
          int sx = x, sy = y;
          if (d == FlipDirection::k90R) sx = y, sy = H - 1 - x;
          if (d == FlipDirection::k180) sx = W - 1 - x, sy = H - 1 - y;
          if (d == FlipDirection::k90L) sx = W - 1 - y, sy = x;
          if (d == FlipDirection::kHoriz) sx = W - 1 - x;
          if (d == FlipDirection::kVert) sy = H - 1 - y;
          if (d == FlipDirection::kUlLr) sx = y, sy = x;
          if (d == FlipDirection::kUrLl) sx = W - 1 - y, sy = H - 1 - x;
          EXPECT_EQ(
              0, std::memcmp(out.image.planes[0].data + y * out.image.planes[0].stride + x * n,
                             in.image.planes[0].data + sy * in.image.planes[0].stride + sx * n, n))
              << format_info(f).name << " " << direction_name(d) << " at " << x << "," << y;
        }
    }
}

// For every format and odd sizes (where chroma rounds up), the directions
// compose as the symmetries of a rectangle do.
TEST(FlipReference, DirectionsComposeAsTheSymmetriesOfARectangle) {
  for (PixelFormat f : formats_of("flip"))
    for (auto [w, h] : {std::pair{1, 1}, {3, 5}, {8, 6}, {13, 7}}) {
      OwnedImage in(f, w, h);
      in.fill_random(static_cast<uint32_t>(w * 100 + h));
      const std::string where =
          std::string(format_info(f).name) + " " + std::to_string(w) + "x" + std::to_string(h);
      EXPECT_EQ(compare_images(flip(in, FlipDirection::kIdentity).image, in.image), "") << where;
      EXPECT_EQ(compare_images(flip(flip(in, FlipDirection::kHoriz), FlipDirection::kVert).image,
                               flip(in, FlipDirection::k180).image),
                "")
          << where;
      KernelParams turn;
      turn.set("video-direction", FlipDirection::k90R);
      if (make_operation("flip", turn)->output_formats(f).empty()) continue;  // 4:2:2
      if (is_packed422(f)) {
        // Turned, packed 4:2:2's chroma is averaged between two rows (as
        // videoflip does, test_vs_gstreamer.cpp): only luma comes back.
        auto luma = [w = w, h = h](const OwnedImage& a) {
          std::vector<uint8_t> y;
          for (int r = 0; r < h; ++r)
            for (int c = 0; c < w; ++c)
              y.push_back(a.image.planes[0].data[r * a.image.planes[0].stride + 2 * c +
                                                 format_info(a.image.format).comp[0].offset]);
          return y;
        };
        EXPECT_EQ(luma(flip(flip(in, FlipDirection::k90R), FlipDirection::k90L)), luma(in))
            << where;
        EXPECT_EQ(luma(flip(flip(in, FlipDirection::kUlLr), FlipDirection::kUlLr)), luma(in))
            << where;
        EXPECT_EQ(luma(flip(flip(in, FlipDirection::k90R), FlipDirection::k90R)),
                  luma(flip(in, FlipDirection::k180)))
            << where;
        continue;
      }
      EXPECT_EQ(
          compare_images(flip(flip(in, FlipDirection::k90R), FlipDirection::k90L).image, in.image),
          "")
          << where;
      EXPECT_EQ(compare_images(flip(flip(in, FlipDirection::k90R), FlipDirection::k90R).image,
                               flip(in, FlipDirection::k180).image),
                "")
          << where;
      EXPECT_EQ(compare_images(flip(flip(in, FlipDirection::kHoriz), FlipDirection::kVert).image,
                               flip(in, FlipDirection::k180).image),
                "")
          << where;
      EXPECT_EQ(compare_images(flip(flip(in, FlipDirection::kUlLr), FlipDirection::kUlLr).image,
                               in.image),
                "")
          << where;
      EXPECT_EQ(compare_images(flip(flip(in, FlipDirection::kHoriz), FlipDirection::k90R).image,
                               flip(in, FlipDirection::kUrLl).image),
                "")
          << where;
      EXPECT_EQ(compare_images(flip(flip(in, FlipDirection::kVert), FlipDirection::k90R).image,
                               flip(in, FlipDirection::kUlLr).image),
                "")
          << where;
    }
}

// Turned, 4:2:2 chroma would be subsampled down instead of across: the
// turning directions refuse it with a sentence; the others take it.
TEST(FlipReference, TurningDirectionsRefuse422WithASentence) {
  for (PixelFormat f : {PixelFormat::kNV16, PixelFormat::kY42B}) {
    OwnedImage in(f, 4, 2);
    OwnedImage swapped(f, 2, 4);
    OwnedImage same(f, 4, 2);
    for (FlipDirection d : kAllDirections) {
      KernelParams params;
      params.set("video-direction", d);
      const std::string problem =
          check("flip", params, in.image, flip_swaps_size(d) ? swapped.image : same.image);
      if (flip_swaps_size(d))
        EXPECT_NE(problem.find("not " + std::string(format_info(f).name)), std::string::npos)
            << problem;
      else
        EXPECT_EQ(problem, "") << direction_name(d);
    }
  }
}

TEST(FlipReference, SizeMustMatchTheDirection) {
  OwnedImage in(PixelFormat::kRGBA, 4, 2);
  OwnedImage same(PixelFormat::kRGBA, 4, 2);
  OwnedImage swapped(PixelFormat::kRGBA, 2, 4);
  KernelParams params;
  params.set("video-direction", FlipDirection::k90R);
  EXPECT_EQ(check("flip", params, in.image, swapped.image), "");
  const std::string problem = check("flip", params, in.image, same.image);
  EXPECT_NE(problem.find("makes 2x4 from 4x2"), std::string::npos) << problem;
  EXPECT_THROW(reference("flip", params, in.image, same.image), Error);
  OwnedImage other(PixelFormat::kBGRA, 2, 4);
  const std::string format_problem = check("flip", params, in.image, other.image);
  EXPECT_NE(format_problem.find("makes RGBA from RGBA, not BGRA"), std::string::npos)
      << format_problem;
}

KernelParams balance(double brightness, double contrast, double saturation, double hue) {
  KernelParams params;
  params.set("brightness", brightness);
  params.set("contrast", contrast);
  params.set("saturation", saturation);
  params.set("hue", hue);
  return params;
}

TEST(BalanceReference, DefaultsCopyEveryByteAsVideobalancePassthroughDoes) {
  for (PixelFormat f : formats_of("balance")) {
    OwnedImage in(f, 7, 5);
    in.fill_random(3);
    EXPECT_EQ(compare_images(run_kernel("balance", balance(0, 1, 1, 0), in).image, in.image), "");
  }
}

// Sample (x, y) of component c at its depth, and writing one (the bits
// around a 10-bit sample left as they are).
uint8_t* sample_byte(const ImageRef& im, int c, int x, int y) {
  const Component& k = format_info(im.format).comp[c];
  return im.planes[k.plane].data + static_cast<size_t>(y) * im.planes[k.plane].stride + k.offset +
         static_cast<size_t>(x) * k.pixel_stride;
}

uint32_t sample(const ImageRef& im, int c, int x, int y) {
  const FormatInfo& info = format_info(im.format);
  const Component& k = info.comp[c];
  const uint8_t* p = sample_byte(im, c, x, y);
  const uint32_t word = info.sample_bytes == 1 ? p[0] : (p[0] | p[1] << 8);
  return (word >> k.shift) & ((1u << k.depth) - 1);
}

void set_sample(const ImageRef& im, int c, int x, int y, uint32_t v) {
  const FormatInfo& info = format_info(im.format);
  const Component& k = info.comp[c];
  uint8_t* p = sample_byte(im, c, x, y);
  if (info.sample_bytes == 1) {
    p[0] = static_cast<uint8_t>(v);
    return;
  }
  const uint32_t word = v << k.shift;
  p[0] = static_cast<uint8_t>(word);
  p[1] = static_cast<uint8_t>(word >> 8);
}

// Samples of component c that a row of `im` holds, and its rows (chroma of
// odd sizes rounds up).
int samples_across(const ImageRef& im, int c) {
  const Component& k = format_info(im.format).comp[c];
  return (im.width + (1 << k.x_sub) - 1) >> k.x_sub;
}
int samples_down(const ImageRef& im, int c) {
  const Component& k = format_info(im.format).comp[c];
  return (im.height + (1 << k.y_sub) - 1) >> k.y_sub;
}

TEST(BalanceReference, LumaAndChromaFollowVideobalanceFormulas) {
  OwnedImage in(PixelFormat::kI420, 2, 2);
  for (int y = 0; y < 2; ++y)
    std::memset(in.image.planes[0].data + y * in.layout.stride[0], 100, 2);
  in.image.planes[1].data[0] = 100;  // u
  in.image.planes[2].data[0] = 140;  // v
  // contrast 2: 16 + (100 - 16) * 2 = 184; chroma untouched.
  OwnedImage out = run_kernel("balance", balance(0, 2, 1, 0), in);
  EXPECT_EQ(at(out, 0, 1, 1), 184);
  EXPECT_EQ(at(out, 1, 0, 0), 100);
  EXPECT_EQ(at(out, 2, 0, 0), 140);
  // brightness 0.1: 100 + 25.5 = 125.5, rint (to even) gives 126; -1 clamps at 0.
  EXPECT_EQ(at(run_kernel("balance", balance(0.1, 1, 1, 0), in), 0, 0, 0), 126);
  EXPECT_EQ(at(run_kernel("balance", balance(-1, 1, 1, 0), in), 0, 0, 0), 0);
  // saturation 0: grey chroma; 2: (100 - 128) * 2 + 128 = 72, (140 - 128) * 2 + 128 = 152.
  out = run_kernel("balance", balance(0, 1, 0, 0), in);
  EXPECT_EQ(at(out, 1, 0, 0), 128);
  EXPECT_EQ(at(out, 2, 0, 0), 128);
  out = run_kernel("balance", balance(0, 1, 2, 0), in);
  EXPECT_EQ(at(out, 1, 0, 0), 72);
  EXPECT_EQ(at(out, 2, 0, 0), 152);
  // hue 1 (180 degrees) mirrors chroma through 128: 156 and 116.
  out = run_kernel("balance", balance(0, 1, 1, 1), in);
  EXPECT_EQ(at(out, 1, 0, 0), 156);
  EXPECT_EQ(at(out, 2, 0, 0), 116);
  // hue 0.5 (90 degrees): u' = 128 + v - 128 = 140, v' = 128 - (u - 128) = 156.
  out = run_kernel("balance", balance(0, 1, 1, 0.5), in);
  EXPECT_EQ(at(out, 1, 0, 0), 140);
  EXPECT_EQ(at(out, 2, 0, 0), 156);
}

TEST(BalanceReference, RgbKeepsAlphaAndSaturationZeroMakesGrey) {
  for (PixelFormat f : {PixelFormat::kRGBA, PixelFormat::kBGRA, PixelFormat::kARGB,
                        PixelFormat::kABGR, PixelFormat::kRGBx, PixelFormat::kBGRx}) {
    OwnedImage in(f, 9, 4);
    in.fill_random(11);
    const OwnedImage out = run_kernel("balance", balance(0, 1, 0, 0), in);
    const int alpha = format_info(f).alpha_byte;
    for (int y = 0; y < 4; ++y)
      for (int x = 0; x < 9; ++x) {
        const uint8_t* s = in.image.planes[0].data + y * in.layout.stride[0] + x * 4;
        const uint8_t* d = out.image.planes[0].data + y * out.layout.stride[0] + x * 4;
        EXPECT_EQ(d[alpha], s[alpha]) << format_info(f).name;
        // Grey within the fixed-point matrices' rounding: 298 * y + 409 * 0
        // and the other rows differ by at most 1 after >> 8.
        int lo = 255, hi = 0;
        for (int c = 0; c < 4; ++c)
          if (c != alpha) lo = std::min<int>(lo, d[c]), hi = std::max<int>(hi, d[c]);
        EXPECT_LE(hi - lo, 1) << format_info(f).name << " at " << x << "," << y;
      }
  }
}

TEST(BalanceReference, OutOfRangeValuesAreRefusedWithTheAllowedRange) {
  OwnedImage in(PixelFormat::kRGBA, 2, 2), out(PixelFormat::kRGBA, 2, 2);
  const std::pair<KernelParams, const char*> cases[] = {
      {balance(1.5, 1, 1, 0), "brightness"},
      {balance(0, -0.1, 1, 0), "contrast"},
      {balance(0, 1, 2.5, 0), "saturation"},
      {balance(0, 1, 1, -1.2), "hue"},
  };
  // The declared ranges refuse them when the operation is made.
  for (const auto& [params, name] : cases) {
    try {
      make_operation("balance", params);
      ADD_FAILURE() << name << " out of range was taken";
    } catch (const Error& e) {
      const std::string problem = e.what();
      EXPECT_NE(problem.find(std::string(name) + " takes"), std::string::npos) << problem;
    }
  }
  EXPECT_EQ(check("balance", balance(-1, 2, 0, 1), in.image, out.image), "");
}

KernelParams blur(double sigma) {
  KernelParams params;
  params.set("sigma", sigma);
  return params;
}

TEST(BlurReference, TapsSumToOneAndAFlatImageStaysFlat) {
  for (double sigma : {0.5, 1.0, 2.0, 7.3, 20.0})
    for (int shift : {0, 1}) {
      const BlurTaps taps = blur_taps(sigma, shift);
      int32_t sum = taps.weight[0];
      for (int d = 1; d <= taps.radius; ++d) sum += 2 * taps.weight[d];
      EXPECT_EQ(sum, 1 << kBlurWeightBits) << sigma;
      EXPECT_LE(taps.radius, kBlurMaxRadius);
    }
  for (PixelFormat f : formats_of("blur")) {
    OwnedImage in(f, 9, 7);
    std::fill(in.bytes.begin(), in.bytes.end(), 77);
    const OwnedImage out = run_kernel("blur", blur(3.0), in);
    EXPECT_EQ(compare_images(out.image, in.image), "") << format_info(f).name;
  }
}

// Against the same taps applied in double precision with one rounding at the
// end: the integer passes lose at most 1, on 8-bit samples and on 16-bit
// ones (which keep no fractional bits between the passes).
TEST(BlurReference, WithinOneOfTheDoublePrecisionConvolution) {
  for (PixelFormat f : {PixelFormat::kGRAY8, PixelFormat::kGRAY16_LE})
    for (double sigma : {0.5, 1.7, 6.0}) {
      OwnedImage in(f, 23, 17);
      in.fill_random(static_cast<uint32_t>(sigma * 10));
      const OwnedImage out = run_kernel("blur", blur(sigma), in);
      const BlurTaps taps = blur_taps(sigma, 0);
      const double total = 1 << kBlurWeightBits;
      auto px = [&](int x, int y) {
        return static_cast<double>(sample(in.image, 0, std::clamp(x, 0, 22), std::clamp(y, 0, 16)));
      };
      int worst = 0;
      for (int y = 0; y < 17; ++y)
        for (int x = 0; x < 23; ++x) {
          double acc = 0;
          for (int dy = -taps.radius; dy <= taps.radius; ++dy)
            for (int dx = -taps.radius; dx <= taps.radius; ++dx)
              acc += taps.weight[std::abs(dy)] * taps.weight[std::abs(dx)] / (total * total) *
                     px(x + dx, y + dy);
          const int want = static_cast<int>(std::lround(acc));
          worst = std::max(worst, std::abs(want - static_cast<int>(sample(out.image, 0, x, y))));
        }
      EXPECT_LE(worst, 1) << format_info(f).name << " sigma " << sigma;
    }
}

TEST(BlurReference, KeepsAlphaAndRefusesSigmaOutOfRange) {
  OwnedImage in(PixelFormat::kARGB, 6, 5);
  in.fill_random(5);
  const OwnedImage out = run_kernel("blur", blur(1.0), in);
  for (int y = 0; y < 5; ++y)
    for (int x = 0; x < 6; ++x) EXPECT_EQ(at(out, 0, x * 4, y), at(in, 0, x * 4, y));
  // The declared range refuses them when the operation is made.
  for (double bad : {0.4, 20.5, -1.0}) {
    try {
      make_operation("blur", blur(bad));
      ADD_FAILURE() << "sigma " << bad << " was taken";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("sigma takes 0.5 to 20"), std::string::npos) << e.what();
    }
  }
}

// A chroma component subsampled across but not down (NV16, Y42B, YUY2)
// is blurred with half the sigma across and the whole sigma down: a stripe
// down the image (constant along each column) is blurred only across, and
// one across the image only down, so each must equal GRAY8's 1-D result
// with the sigma of that axis.
TEST(BlurReference, SubsampledChromaTakesTheSigmaOfItsOwnAxes) {
  const double sigma = 2.0;
  for (PixelFormat f : {PixelFormat::kNV16, PixelFormat::kY42B, PixelFormat::kYUY2}) {
    for (bool down_stripe : {true, false}) {
      OwnedImage in(f, 24, 14);
      std::fill(in.bytes.begin(), in.bytes.end(), 0);
      OwnedImage grey(PixelFormat::kGRAY8, samples_across(in.image, 1), samples_down(in.image, 1));
      std::fill(grey.bytes.begin(), grey.bytes.end(), 0);
      for (int y = 0; y < samples_down(in.image, 1); ++y)
        for (int x = 0; x < samples_across(in.image, 1); ++x)
          if (down_stripe ? x == 5 : y == 6) {
            set_sample(in.image, 1, x, y, 200);
            set_sample(grey.image, 0, x, y, 200);
          }
      const OwnedImage out = run_kernel("blur", blur(sigma), in);
      // GRAY8 at the sigma of the axis the stripe is blurred along.
      const OwnedImage want = run_kernel("blur", blur(down_stripe ? sigma / 2 : sigma), grey);
      for (int y = 0; y < samples_down(in.image, 1); ++y)
        for (int x = 0; x < samples_across(in.image, 1); ++x)
          ASSERT_EQ(sample(out.image, 1, x, y), sample(want.image, 0, x, y))
              << format_info(f).name << (down_stripe ? " down" : " across") << " stripe at " << x
              << "," << y;
    }
  }
}

// The bits beside a 10-bit sample (P010's low 6) are kept.
TEST(BlurReference, KeepsTheBitsBesideA10BitSample) {
  OwnedImage p010(PixelFormat::kP010_10LE, 9, 6);
  p010.fill_random(3);
  const OwnedImage out = run_kernel("blur", blur(1.0), p010);
  bool some_sample_changed = false;
  for (int c = 0; c < 3; ++c)
    for (int y = 0; y < samples_down(p010.image, c); ++y)
      for (int x = 0; x < samples_across(p010.image, c); ++x) {
        EXPECT_EQ(sample_byte(out.image, c, x, y)[0] & 0x3F,
                  sample_byte(p010.image, c, x, y)[0] & 0x3F);
        some_sample_changed |= sample(out.image, c, x, y) != sample(p010.image, c, x, y);
      }
  EXPECT_TRUE(some_sample_changed);
}

TEST(EdgeReference, FlatIsZeroAndAStepGivesItsSobelResponse) {
  // GRAY8 with a vertical step 10 -> 30 between columns 3 and 4: |gx| is
  // (1 + 2 + 1) * 20 = 80 on the two columns next to the step, 0 elsewhere.
  OwnedImage in(PixelFormat::kGRAY8, 8, 5);
  for (int y = 0; y < 5; ++y)
    for (int x = 0; x < 8; ++x)
      in.image.planes[0].data[y * in.layout.stride[0] + x] = x < 4 ? 10 : 30;
  const OwnedImage out = run_kernel("edge", {}, in);
  for (int y = 0; y < 5; ++y)
    for (int x = 0; x < 8; ++x) EXPECT_EQ(at(out, 0, x, y), (x == 3 || x == 4) ? 80 : 0) << x;
  // A diagonal gradient: gx = gy = 4 * slope, magnitude floor(sqrt(2) * 4 * slope).
  OwnedImage ramp(PixelFormat::kGRAY8, 6, 6);
  for (int y = 0; y < 6; ++y)
    for (int x = 0; x < 6; ++x)
      ramp.image.planes[0].data[y * ramp.layout.stride[0] + x] = 10 * (x + y);
  EXPECT_EQ(at(run_kernel("edge", {}, ramp), 0, 2, 2), 113);  // sqrt(2 * 80^2) = 113.1
}

// Bits of each plane's bytes that hold colour samples edge writes: luma or
// R, G, B of the picture, and every chroma sample the rows hold.
std::vector<std::vector<uint8_t>> written_bits(const OwnedImage& im) {
  const FormatInfo& info = format_info(im.image.format);
  std::vector<std::vector<uint8_t>> bits(info.n_planes);
  for (int p = 0; p < info.n_planes; ++p)
    bits[p].assign(im.layout.stride[p] * im.layout.rows(p), 0);
  for (int c = 0; c < colour_components(im.image.format); ++c) {
    const Component& k = info.comp[c];
    int across = samples_across(im.image, c);
    if (info.is_yuv && c > 0)
      across = static_cast<int>((im.layout.row_bytes(k.plane) - k.offset + k.pixel_stride - 1) /
                                k.pixel_stride);
    const uint32_t mask = ((1u << k.depth) - 1) << k.shift;
    for (int y = 0; y < samples_down(im.image, c); ++y)
      for (int x = 0; x < across; ++x) {
        const size_t at = y * im.layout.stride[k.plane] + k.offset + x * k.pixel_stride;
        for (int b = 0; b < info.sample_bytes; ++b)
          bits[k.plane][at + b] |= static_cast<uint8_t>(mask >> (8 * b));
      }
  }
  return bits;
}

// Every format: YUV's chroma is neutral (half the maximum), RGB's three
// colours are equal, and every bit edge does not write (alpha, padding,
// beside a 10-bit sample, the last luma of an odd-width YUY2 row) is the
// input's.
TEST(EdgeReference, RgbGetsGreyYuvGetsNeutralChromaAndOtherBitsAreKept) {
  for (PixelFormat f : formats_of("edge")) {
    OwnedImage in(f, 7, 6);
    in.fill_random(8);
    const OwnedImage out = run_kernel("edge", {}, in);
    const FormatInfo& info = format_info(f);
    const auto bits = written_bits(in);
    for (int p = 0; p < info.n_planes; ++p)
      for (size_t y = 0; y < out.layout.rows(p); ++y)
        for (size_t x = 0; x < out.layout.row_bytes(p); ++x) {
          const uint8_t keep = static_cast<uint8_t>(~bits[p][y * in.layout.stride[p] + x]);
          EXPECT_EQ(at(out, p, static_cast<int>(x), static_cast<int>(y)) & keep,
                    at(in, p, static_cast<int>(x), static_cast<int>(y)) & keep)
              << info.name << " plane " << p << " byte " << x << "," << y;
        }
    if (info.is_yuv) {
      const uint32_t neutral = 1u << (info.comp[1].depth - 1);
      for (int c = 1; c < 3; ++c)
        for (int y = 0; y < samples_down(in.image, c); ++y)
          for (int x = 0; x < samples_across(in.image, c); ++x)
            EXPECT_EQ(sample(out.image, c, x, y), neutral) << info.name;
    } else if (colour_components(f) == 3) {
      for (int y = 0; y < 6; ++y)
        for (int x = 0; x < 7; ++x) {
          EXPECT_EQ(sample(out.image, 0, x, y), sample(out.image, 1, x, y)) << info.name;
          EXPECT_EQ(sample(out.image, 1, x, y), sample(out.image, 2, x, y)) << info.name;
        }
    }
  }
}

// Deep luma keeps its scale: a step of 2000 in GRAY16_LE gives |gx| = 8000
// beside it, a full-scale step clamps to 65535, and P010's 10-bit luma a
// 10-bit magnitude (a step of 200: 800).
TEST(EdgeReference, DeepLumaGivesMagnitudesAtItsDepth) {
  struct Case {
    PixelFormat format;
    uint32_t low, high, want;
  };
  for (const Case& c : {Case{PixelFormat::kGRAY16_LE, 1000, 3000, 8000},
                        Case{PixelFormat::kGRAY16_LE, 0, 65535, 65535},
                        Case{PixelFormat::kP010_10LE, 100, 300, 800},
                        Case{PixelFormat::kI420_10LE, 100, 400, 1023}}) {
    OwnedImage in(c.format, 8, 5);
    std::fill(in.bytes.begin(), in.bytes.end(), 0);
    for (int y = 0; y < 5; ++y)
      for (int x = 0; x < 8; ++x) set_sample(in.image, 0, x, y, x < 4 ? c.low : c.high);
    const OwnedImage out = run_kernel("edge", {}, in);
    for (int y = 0; y < 5; ++y)
      for (int x = 0; x < 8; ++x)
        EXPECT_EQ(sample(out.image, 0, x, y), (x == 3 || x == 4) ? c.want : 0)
            << format_info(c.format).name << " " << x;
  }
}

}  // namespace
}  // namespace cudaoverlap::test
