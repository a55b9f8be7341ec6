// convert's CPU reference against its definition: the fixed-point sums
// against exact arithmetic, known colours, repacking, and what it refuses;
// and the operations' common refusal of rows over 2 GiB.
#include <random>
#include <utility>

#include "kernel_test_util.h"
#include "kernels/convert/convert.h"
#include "kernels/convert/convert_math.h"

namespace cudaoverlap::test {
namespace {

KernelParams convert(YuvMatrix in_matrix, bool in_full, YuvMatrix out_matrix, bool out_full) {
  KernelParams params;
  params.convert.in = colorimetry(in_matrix, in_full);
  params.convert.out = colorimetry(out_matrix, out_full);
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
      p.out = colorimetry(m, full);
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

}  // namespace
}  // namespace cudaoverlap::test
