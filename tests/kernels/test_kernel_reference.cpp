// The CPU references of the operations against their definitions, written
// independently here, and the checks that refuse what a kernel cannot do.
// (Agreement with GStreamer's own elements is test_vs_gstreamer.cpp; GPU
// against these references is test_kernel_gpu.cpp.)
#include <random>
#include <utility>

#include "kernel_test_util.h"
#include "kernels/blur/blur.h"
#include "kernels/convert/convert.h"
#include "kernels/convert/convert_math.h"
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

uint8_t at(const OwnedImage& image, int plane, int x, int y) {
  return image.image.planes[plane].data[y * image.image.planes[plane].stride + x];
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

KernelParams convert(YuvMatrix in_matrix, bool in_full, YuvMatrix out_matrix, bool out_full) {
  KernelParams params;
  params.convert.in = {in_matrix, in_full};
  params.convert.out = {out_matrix, out_full};
  return params;
}

OwnedImage run_convert(const KernelParams& params, const OwnedImage& in, PixelFormat to) {
  OwnedImage out(to, in.layout.width, in.layout.height, 5);
  reference("convert", params, in.image, out.image);
  return out;
}

// rgb8_to16, the 32-bit form the GPU's RGB -> 10- and 16-bit YUV and grey
// kernels use, against to_output<true>'s 64-bit sum for every 8-bit RGB
// pixel, every row, both matrices and both ranges of the YUV output, and
// grey output.
TEST(ConvertReference, ThirtyTwoBitRgbToSixteenBitRowsEqualTheSixtyFourBitSum) {
  std::vector<ConvertParams> sets;
  for (YuvMatrix m : {YuvMatrix::kBT601, YuvMatrix::kBT709})
    for (bool full : {false, true}) {
      ConvertParams p;
      p.out.matrix = m;
      p.out.full_range = full;
      sets.push_back(p);
    }
  int wrong = 0;
  for (size_t s = 0; s <= sets.size(); ++s) {
    const bool grey = s == sets.size();
    const ConvertCoefficients k = convert_coefficients(
        PixelFormat::kRGB, grey ? PixelFormat::kGRAY16_LE : PixelFormat::kP010_10LE,
        grey ? ConvertParams{} : sets[s]);
    for (int row = 0; row < (grey ? 1 : 3); ++row)
      for (int r = 0; r < 256; ++r)
        for (int g = 0; g < 256; ++g)
          for (int b = 0; b < 256; ++b) {
            const int64_t sum = static_cast<int64_t>(k.to_yuv[row][0]) * (257 * r) +
                                static_cast<int64_t>(k.to_yuv[row][1]) * (257 * g) +
                                static_cast<int64_t>(k.to_yuv[row][2]) * (257 * b) +
                                k.to_yuv_offset16[row];
            const int want = convert_math::clamp16(sum >> 16);
            const int got = convert_math::rgb8_to16(k.to_yuv[row], k.to_yuv_offset16[row], r, g, b);
            if (got != want && ++wrong <= 5)
              ADD_FAILURE() << "set " << s << " row " << row << " rgb " << r << "," << g << "," << b
                            << ": want " << want << ", got " << got;
          }
  }
  EXPECT_EQ(wrong, 0);
}

// vertical_tap_rcp, the plane scaler's row taps as the GPU works them out
// (divisions through a reciprocal), against vertical_tap's integer
// divisions: every row of every pair of chroma heights up to 160 and 320,
// the heights of common frames and their odd neighbours both ways, and
// rows drawn at random from heights up to 2^20.
TEST(ConvertReference, RowTapsThroughAReciprocalEqualTheDivisions) {
  int wrong = 0;
  auto check_rows = [&](int ih, int oh, int j) {
    if (ih < 2 || ih == oh) return;
    const float rcp = 1.0f / static_cast<float>(2 * oh);
    int wi, wp, gi, gp;
    convert_math::vertical_tap(ih, oh, j, &wi, &wp);
    convert_math::vertical_tap_rcp(ih, oh, rcp, j, &gi, &gp);
    if ((wi != gi || wp != gp) && ++wrong <= 5)
      ADD_FAILURE() << ih << " -> " << oh << " rows, row " << j << ": want " << wi << "/" << wp
                    << ", got " << gi << "/" << gp;
  };
  for (int ih = 2; ih <= 160; ++ih)
    for (int oh = 1; oh <= 320; ++oh)
      for (int j = 0; j < oh; ++j) check_rows(ih, oh, j);
  for (int h : {240, 288, 360, 480, 540, 576, 720, 1080, 1088, 1200, 1440, 2160, 4320})
    for (int dh : {-1, 0, 1})
      for (auto [ih, oh] : {std::pair{h + dh, 2 * h}, {h, 2 * h + dh}, {2 * h + dh, h}})
        for (int j = 0; j < oh; ++j) check_rows(ih, oh, j);
  std::mt19937 random(11);
  for (int k = 0; k < 2000000; ++k) {
    const int ih = 2 + static_cast<int>(random() % ((1 << 20) - 1)),
              oh = 1 + static_cast<int>(random() % (1 << 20));
    check_rows(ih, oh, static_cast<int>(random() % oh));
  }
  EXPECT_EQ(wrong, 0);
}

// Chroma rows doubled (4:2:0 to 4:2:2 or 4:4:4): the taps repeat, row 2m -
// 1 taking input rows m - 1 and m at 64 / 256, row 2m the same rows at 192
// / 256, the first and last rows the input's; at every height, including
// those past 23170 input rows where (2 j + 1) ih no longer fits 32 bits.
TEST(ConvertReference, DoubledRowsTakeTheRepeatingTaps) {
  int wrong = 0;
  for (int ih : {2, 3, 540, 1080, 23170, 23171, 30000, 46341, 100000, 1 << 20}) {
    const int oh = 2 * ih;
    for (int j = 0; j < oh; ++j) {
      const int m = (j + 1) / 2;
      int wi = m - 1, wp = j % 2 ? 64 : 192;
      if (j == 0) wi = 0, wp = 0;
      if (j == oh - 1) wi = ih - 2, wp = 256;
      int gi, gp;
      convert_math::vertical_tap(ih, oh, j, &gi, &gp);
      if ((gi != wi || gp != wp) && ++wrong <= 5)
        ADD_FAILURE() << ih << " -> " << oh << " rows, row " << j << ": want " << wi << "/" << wp
                      << ", got " << gi << "/" << gp;
    }
  }
  EXPECT_EQ(wrong, 0);
}

// Known values (videoconvert's, measured on GStreamer 1.22): BT.601 limited
// range, red and white.
TEST(ConvertReference, KnownColours) {
  const KernelParams bt601 = convert(YuvMatrix::kBT601, false, YuvMatrix::kBT601, false);
  OwnedImage rgba(PixelFormat::kRGBA, 2, 2);
  const uint8_t red[4] = {255, 0, 0, 255}, white[4] = {255, 255, 255, 255};
  for (int y = 0; y < 2; ++y)
    for (int x = 0; x < 2; ++x)
      std::memcpy(rgba.image.planes[0].data + y * rgba.layout.stride[0] + x * 4,
                  x == 0 ? red : white, 4);
  const OwnedImage i420 = run_convert(bt601, rgba, PixelFormat::kI420);
  EXPECT_NEAR(at(i420, 0, 0, 0), 81, 1);   // 16 + 219 * 0.299
  EXPECT_NEAR(at(i420, 0, 1, 0), 235, 1);  // white
  // chroma: the average of red's (90, 240) and white's (128, 128).
  EXPECT_NEAR(at(i420, 1, 0, 0), 109, 1);
  EXPECT_NEAR(at(i420, 2, 0, 0), 184, 1);
  // And back: luma 128 with neutral chroma is (128, 128, 128) in
  // videoconvert's 8-bit arithmetic (its fast path drops the 16 offset's
  // rounding), alpha 255.
  OwnedImage grey(PixelFormat::kI420, 2, 2);
  std::fill(grey.bytes.begin(), grey.bytes.end(), 128);
  const OwnedImage back = run_convert(bt601, grey, PixelFormat::kBGRA);
  EXPECT_EQ(at(back, 0, 0, 0), 128);
  EXPECT_EQ(at(back, 0, 3, 0), 255);
}

TEST(ConvertReference, RgbToRgbMovesBytesAndYuvToYuvRepacks) {
  const KernelParams params = convert(YuvMatrix::kBT601, false, YuvMatrix::kBT601, false);
  OwnedImage rgbx(PixelFormat::kRGBx, 5, 3);
  rgbx.fill_random(4);
  const OwnedImage argb = run_convert(params, rgbx, PixelFormat::kARGB);
  for (int y = 0; y < 3; ++y)
    for (int x = 0; x < 5; ++x)
      for (int c = 0; c < 4; ++c)  // RGBx byte c lands at ARGB byte (c + 1) % 4
        EXPECT_EQ(at(argb, 0, x * 4 + (c + 1) % 4, y), at(rgbx, 0, x * 4 + c, y));
  OwnedImage nv12(PixelFormat::kNV12, 5, 3);
  nv12.fill_random(6);
  const OwnedImage there = run_convert(params, nv12, PixelFormat::kI420);
  const OwnedImage back = run_convert(params, there, PixelFormat::kNV12);
  EXPECT_EQ(compare_images(back.image, nv12.image), "");
}

// The GPU makes these pairs with the copy kernel: the reference must agree,
// and the pairs it names must be the ones where it does.
TEST(ConvertReference, AFormatToItselfIsACopyWhereConvertCopiesBytesSaysSo) {
  int copies = 0;
  for (PixelFormat f : formats_of("convert")) {
    if (is_bayer(f)) continue;
    for (const KernelParams& params : {convert(YuvMatrix::kBT601, false, YuvMatrix::kBT601, false),
                                       convert(YuvMatrix::kBT709, true, YuvMatrix::kBT709, true)})
      for (auto [w, h] : {std::pair{1, 1}, {3, 5}, {8, 2}, {13, 3}, {64, 9}}) {
        OwnedImage in(f, w, h);
        in.fill_random(static_cast<uint32_t>(w * 5 + h));
        const OwnedImage out = run_convert(params, in, f);
        const bool same = compare_images(out.image, in.image).empty();
        EXPECT_EQ(convert_copies_bytes(in.image, out.image), same)
            << format_info(f).name << " " << w << "x" << h;
        copies += same;
      }
  }
  // Every 8-bit format and GRAY16_LE at every size, packed 4:2:2 at even
  // widths only: 16 formats x 10 cases + 2 x 2 x 2.
  EXPECT_EQ(copies, 16 * 10 + 8);
}

TEST(ConvertReference, RefusesWhatItCannotDoAndSaysWhy) {
  OwnedImage i420(PixelFormat::kI420, 4, 4), nv12(PixelFormat::kNV12, 4, 4),
      grey(PixelFormat::kGRAY8, 4, 4), small(PixelFormat::kRGBA, 2, 4);
  const KernelParams change = convert(YuvMatrix::kBT601, false, YuvMatrix::kBT709, false);
  std::string problem = check("convert", change, i420.image, nv12.image);
  EXPECT_NE(problem.find("same matrix and range"), std::string::npos) << problem;
  const KernelParams bt709 = convert(YuvMatrix::kBT709, false, YuvMatrix::kBT709, false);
  problem = check("convert", bt709, i420.image, grey.image);
  EXPECT_NE(problem.find("BT.601 matrix only"), std::string::npos) << problem;
  problem = check("convert", bt709, i420.image, small.image);
  EXPECT_NE(problem.find("makes 4x4 from 4x4, not 2x4"), std::string::npos) << problem;
  EXPECT_THROW(reference("convert", change, i420.image, nv12.image), Error);
  // Any pair of formats at the same size is taken otherwise.
  EXPECT_EQ(check("convert", bt709, i420.image, nv12.image), "");
}

TEST(OperationCheck, RefusesRowsOfMoreThan2GiB) {
  // The kernels' row addresses are 32-bit strides times rows: a stride
  // that does not fit would wrap, so every operation refuses it (only the
  // stride is read; no such buffer exists).
  OwnedImage in(PixelFormat::kNV12, 4, 4), out(PixelFormat::kNV12, 4, 4);
  ImageRef wide_out = out.image;
  wide_out.planes[1].stride = size_t{1} << 31;
  const std::string problem = check("copy", {}, in.image, wide_out);
  EXPECT_NE(problem.find("rows of at most 2 GiB, not 2147483648 bytes (plane 1 of the output)"),
            std::string::npos)
      << problem;
  ImageRef wide_in = in.image;
  wide_in.planes[0].stride = size_t{1} << 32;
  EXPECT_NE(check("convert", {}, wide_in, out.image).find("plane 0 of the input"),
            std::string::npos);
  wide_in.planes[0].stride = INT32_MAX - 4095;
  EXPECT_EQ(check("convert", {}, wide_in, out.image), "");
  // The element asks with the geometry alone (no planes yet): a row of
  // 600 million RGBA pixels (2.4 GB) is refused from its width.
  ImageRef geometry_in{PixelFormat::kRGBA, 600'000'000, 2, {}};
  ImageRef geometry_out = geometry_in;
  EXPECT_NE(check("copy", {}, geometry_in, geometry_out)
                .find("not 2400000000 bytes (plane 0 of the input)"),
            std::string::npos);
  geometry_in.width = geometry_out.width = 500'000'000;  // 2.0 GB: addressable
  EXPECT_EQ(check("copy", {}, geometry_in, geometry_out), "");
}

// The sanitizers' unoptimised, instrumented builds run a reference tens of
// times slower (ThreadSanitizer: 3 minutes for the first band test below at
// the full size): there the band tests run on smaller frames, still odd
// and tall enough for their halos; the normal build runs the full sizes.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif

// Bands (Operation::band_halo, run_reference_rows): blur and edge at
// 321x479 (odd, so the last chroma row of 4:2:0 covers one picture row;
// tall enough for 7 bands and sigma 20's 60-row halo in the middle band;
// under a sanitizer 65x143), in every format they take, cut as the engine
// cuts a frame.
constexpr int kBandWidth = kSanitized ? 161 : 321, kBandHeight = kSanitized ? 143 : 479;
constexpr uint8_t kCanary = 0x5C;

// Inverts every byte of the plane rows of `image` that do not lie wholly
// within picture rows [lo, hi) (clamped to the picture): an inverted
// sample changes any sum it has a weight in. Inverting again undoes it.
void poison_outside(OwnedImage& image, int lo, int hi) {
  const ImageRef& im = image.image;
  lo = std::max(lo, 0);
  hi = std::min(hi, im.height);
  const FormatInfo& info = format_info(im.format);
  for (int p = 0; p < info.n_planes; ++p) {
    const int s = info.y_shift[p];
    for (size_t r = 0; r < image.layout.rows(p); ++r) {
      const int top = static_cast<int>(r) << s;
      const int bottom = std::min(static_cast<int>(r + 1) << s, im.height);
      if (top >= lo && bottom <= hi) continue;
      uint8_t* row = im.planes[p].data + r * im.planes[p].stride;
      for (size_t x = 0; x < image.layout.row_bytes(p); ++x) row[x] ^= 0xFF;
    }
  }
}

// Runs `op`'s rows path for picture rows [y0, y1) into `out` and checks
// that no byte of `out` outside those rows changed.
void run_band(const Operation& op, const OwnedImage& in, OwnedImage& out, int y0, int y1,
              const std::string& where) {
  const std::vector<uint8_t> before = out.bytes;
  op.run_reference_rows(in.image, out.image, Workspace{}, y0, y1);
  EXPECT_EQ(compare_outside_rows(out.layout, out.bytes.data(), before.data(), y0, y1), "")
      << where << ": wrote outside its rows";
}

// The formats a band test runs `b` on: all it takes for edge and blur at
// sigma 1 (where 4:2:0 chroma sets the halo), else those of the layouts
// the brief of bands names (4:2:0 planar and semi-planar, packed 4:2:2,
// 4-byte RGB, grey of 8 and 16 bits), where a sigma-20 reference takes
// seconds.
std::vector<PixelFormat> band_formats(const BandedOperation& b, const Operation& op) {
  if (std::string(b.kernel) != "blur" || b.params.values.number("sigma") == 1.0)
    return op.input_formats();
  return {PixelFormat::kNV12, PixelFormat::kI420,  PixelFormat::kYUY2,
          PixelFormat::kRGBA, PixelFormat::kGRAY8, PixelFormat::kGRAY16_LE};
}

std::string band_where(const BandedOperation& b, PixelFormat f, int y0, int y1) {
  return b.name + " " + format_info(f).name + " rows " + std::to_string(y0) + ".." +
         std::to_string(y1);
}

// Band by band (4 bands) into an output filled with a canary byte, the
// rows path makes exactly the whole frame's bytes, and no band call writes
// a row of another band.
TEST(BandsReference, EveryBandEqualsTheWholeFrameAndWritesOnlyItsRows) {
  for (const BandedOperation& b : banded_operations()) {
    const auto op = make_operation(b.kernel, b.params);
    for (PixelFormat f : band_formats(b, *op)) {
      ASSERT_GE(op->band_halo(f, f), 0) << b.name << " " << format_info(f).name;
      OwnedImage in(f, kBandWidth, kBandHeight);
      in.fill_random(static_cast<uint32_t>(static_cast<int>(f) * 7 + 3));
      OwnedImage whole(f, kBandWidth, kBandHeight, 5);
      run_reference(*op, in.image, whole.image);
      const std::vector<int> rows = band_cuts(kBandHeight, 4, band_row_step(f, f));
      OwnedImage out(f, kBandWidth, kBandHeight, 5);
      std::fill(out.bytes.begin(), out.bytes.end(), kCanary);
      for (int k = 0; k < 4; ++k)
        run_band(*op, in, out, rows[k], rows[k + 1], band_where(b, f, rows[k], rows[k + 1]));
      EXPECT_EQ(compare_images(out.image, whole.image), "") << b.name << " 4 bands";
    }
  }
}

// A band reads no input row beyond band_halo: with every input row outside
// [y0 - halo, y1 + halo) inverted for its call, each band of 7 still makes
// the whole frame's rows (and writes no other row). And the halo is no
// larger than the reach: inverting the rows at either end of the halo too
// (halo - 1) changes a band in the middle, so a halo one row too small
// would fail the first part.
TEST(BandsReference, BandsReadNoInputRowBeyondTheHaloAndTheHaloIsTheReach) {
  for (const BandedOperation& b : banded_operations()) {
    const auto op = make_operation(b.kernel, b.params);
    for (PixelFormat f : band_formats(b, *op)) {
      const int halo = op->band_halo(f, f);
      ASSERT_GE(halo, 0) << b.name << " " << format_info(f).name;
      OwnedImage in(f, kBandWidth, kBandHeight);
      in.fill_random(static_cast<uint32_t>(static_cast<int>(f) * 11 + 5));
      OwnedImage whole(f, kBandWidth, kBandHeight, 5);
      run_reference(*op, in.image, whole.image);
      const std::vector<int> rows = band_cuts(kBandHeight, 7, band_row_step(f, f));
      OwnedImage out(f, kBandWidth, kBandHeight, 5);
      std::fill(out.bytes.begin(), out.bytes.end(), kCanary);
      for (int k = 0; k < 7; ++k) {
        const int y0 = rows[k], y1 = rows[k + 1];
        poison_outside(in, y0 - halo, y1 + halo);
        run_band(*op, in, out, y0, y1, band_where(b, f, y0, y1));
        poison_outside(in, y0 - halo, y1 + halo);  // undone
      }
      EXPECT_EQ(compare_images(out.image, whole.image), "") << b.name << " 7 bands, halo " << halo;
      // The middle band reaches neither edge: its halo is all in the image.
      const int y0 = rows[3], y1 = rows[4];
      const std::string where = band_where(b, f, y0, y1);
      ASSERT_GE(y0 - halo, 0) << where;
      ASSERT_LE(y1 + halo, kBandHeight) << where;
      poison_outside(in, y0 - halo + 1, y1 + halo - 1);
      run_band(*op, in, out, y0, y1, where);
      EXPECT_NE(compare_images(image_rows(out.image, y0, y1), image_rows(whole.image, y0, y1)), "")
          << where << ": a halo of " << halo - 1 << " rows would do";
    }
  }
}

// The halos: blur's largest vertical radius of its components in picture
// rows (4:2:0 chroma's radius at half the sigma counts twice), edge's one
// Sobel row; -1 where the format changes.
TEST(BandsReference, HalosAreTheVerticalReachInPictureRows) {
  KernelParams sigma1;
  sigma1.set("sigma", 1.0);  // luma radius 3, 4:2:0 chroma radius 2 (4 rows)
  const auto blur1 = make_operation("blur", sigma1);
  EXPECT_EQ(blur1->band_halo(PixelFormat::kRGBA, PixelFormat::kRGBA), 3);
  EXPECT_EQ(blur1->band_halo(PixelFormat::kYUY2, PixelFormat::kYUY2), 3);
  EXPECT_EQ(blur1->band_halo(PixelFormat::kNV16, PixelFormat::kNV16), 3);
  EXPECT_EQ(blur1->band_halo(PixelFormat::kNV12, PixelFormat::kNV12), 4);
  EXPECT_EQ(blur1->band_halo(PixelFormat::kI420_10LE, PixelFormat::kI420_10LE), 4);
  EXPECT_EQ(blur1->band_halo(PixelFormat::kNV12, PixelFormat::kRGBA), -1);
  KernelParams sigma20;
  sigma20.set("sigma", 20.0);  // radius 60; chroma 30, 60 rows
  const auto blur20 = make_operation("blur", sigma20);
  EXPECT_EQ(blur20->band_halo(PixelFormat::kI420, PixelFormat::kI420), 60);
  EXPECT_EQ(blur20->band_halo(PixelFormat::kGRAY16_LE, PixelFormat::kGRAY16_LE), 60);
  KernelParams sigma_half;
  sigma_half.set("sigma", 0.5);  // luma radius 2, chroma 1 (2 rows)
  EXPECT_EQ(make_operation("blur", sigma_half)->band_halo(PixelFormat::kNV12, PixelFormat::kNV12),
            2);
  const auto edge = make_operation("edge", {});
  for (PixelFormat f : edge->input_formats()) EXPECT_EQ(edge->band_halo(f, f), 1);
  EXPECT_EQ(edge->band_halo(PixelFormat::kRGBA, PixelFormat::kBGRA), -1);
  EXPECT_EQ(edge->band_halo(PixelFormat::kBayerBGGR, PixelFormat::kBayerBGGR), -1);
}

// Bands by view (Operation::bands_by_view: convert): for every pair convert
// takes that mixes rows, the whole-frame reference on each band's view
// (band_view: the band and its halo, on rows of the formats' step) makes the
// band's rows of the whole frame; for the others the rows path, band by
// band, makes the whole frame. And the halo is needed: without it an interpolating pair
// differs, so this test would see a halo too small.
TEST(BandsReference, ConvertByViewEqualsTheWholeFrameForEveryPair) {
  constexpr int kWidth = kSanitized ? 33 : 161, kHeight = kSanitized ? 47 : 119, kBands = 5;
  const auto op = make_operation("convert", {});
  int by_view = 0;
  // Runs `op` band by band on views of `halo` rows; empty when every band's
  // rows equal the whole frame's.
  const auto banded = [&](const OwnedImage& in, const OwnedImage& whole, PixelFormat out,
                          int halo) {
    const int step = band_row_step(in.image.format, out);
    const std::vector<int> rows = band_cuts(kHeight, kBands, step);
    for (int k = 0; k < kBands; ++k) {
      const RowRange view = band_view(rows[k], rows[k + 1], halo, step, kHeight);
      OwnedImage scratch(out, kWidth, view.last - view.first, 3);
      run_reference(*op, image_rows(in.image, view.first, view.last), scratch.image);
      const std::string problem =
          compare_images(image_rows(scratch.image, rows[k] - view.first, rows[k + 1] - view.first),
                         image_rows(whole.image, rows[k], rows[k + 1]));
      if (!problem.empty())
        return "rows " + std::to_string(rows[k]) + ".." + std::to_string(rows[k + 1]) + ": " +
               problem;
    }
    return std::string();
  };
  for (PixelFormat f : op->input_formats()) {
    OwnedImage in(f, kWidth, kHeight);
    in.fill_random(static_cast<uint32_t>(f) * 13 + 1);
    for (PixelFormat o : op->output_formats(f)) {
      const std::string where = std::string(format_info(f).name) + " -> " + format_info(o).name;
      OwnedImage whole(o, kWidth, kHeight, 5);
      if (!op->check(in.image, whole.image).empty()) continue;
      const int halo = op->band_halo(f, o);
      EXPECT_EQ(op->bands_by_view(f, o), op->mixes_rows(f, o)) << where;
      if (halo < 0) continue;
      run_reference(*op, in.image, whole.image);
      if (op->bands_by_view(f, o)) {
        ++by_view;
        EXPECT_EQ(banded(in, whole, o, halo), "") << where << ", halo " << halo;
        continue;
      }
      // Rows that mix no others: the rows path, band by band.
      EXPECT_EQ(halo, 0) << where;
      OwnedImage out(o, kWidth, kHeight, 5);
      const std::vector<int> rows = band_cuts(kHeight, kBands, band_row_step(f, o));
      for (int k = 0; k < kBands; ++k)
        op->run_reference_rows(in.image, out.image, Workspace{}, rows[k], rows[k + 1]);
      EXPECT_EQ(compare_images(out.image, whole.image), "") << where << ", rows path";
    }
  }
  EXPECT_GT(by_view, 100);
  // The plane scaler's pairs run whole frames: a view scales otherwise.
  EXPECT_EQ(op->band_halo(PixelFormat::kNV12, PixelFormat::kNV16), -1);
  EXPECT_EQ(op->band_halo(PixelFormat::kY444, PixelFormat::kI420), -1);
  // 4:2:0 chroma interpolated 3:1 from the neighbouring chroma row: a band
  // cut without its halo differs next to the cut.
  OwnedImage nv12(PixelFormat::kNV12, kWidth, kHeight);
  nv12.fill_random(5);
  OwnedImage whole(PixelFormat::kRGBA, kWidth, kHeight, 5);
  run_reference(*op, nv12.image, whole.image);
  EXPECT_NE(banded(nv12, whole, PixelFormat::kRGBA, 0), "");
}

}  // namespace
}  // namespace cudaoverlap::test
