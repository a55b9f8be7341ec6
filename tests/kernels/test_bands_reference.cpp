// Bands (Operation::band_halo, run_reference_rows): every band of a frame
// equals the whole frame's rows, reads no row beyond its halo, and writes
// only its own rows.
#include <random>
#include <utility>

#include "kernel_test_util.h"
#include "kernels/blur/blur.h"

namespace cudaoverlap::test {
namespace {

// Bands (Operation::band_halo, run_reference_rows): blur and edge at
// 321x479 (odd, so the last chroma row of 4:2:0 covers one picture row;
// tall enough for 7 bands and sigma 20's 60-row halo in the middle band;
// under a sanitizer 65x143), in every format they take, cut as the engine
// cuts a frame.
constexpr int kBandWidth = kSanitized ? 161 : 321, kBandHeight = kSanitized ? 143 : 479;
constexpr uint8_t kCanary = 0x5C;

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
