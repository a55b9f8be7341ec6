// The copy and invert references against a formula written independently
// here (the pattern the engine suites check frames with). GPU output against
// the references, for every kernel, is tests/kernels/test_kernel_gpu.cpp.
#include "engine_test_util.h"

namespace cudaoverlap::test {
namespace {

const PixelFormat kAllFormats[] = {PixelFormat::kRGBA, PixelFormat::kBGRA, PixelFormat::kRGBx,
                                   PixelFormat::kBGRx, PixelFormat::kARGB, PixelFormat::kABGR,
                                   PixelFormat::kNV12, PixelFormat::kI420, PixelFormat::kGRAY8};

TEST(ReferenceTest, CopyAndInvertReferencesMatchTheirDefinition) {
  for (PixelFormat f : kAllFormats)
    for (const char* k : {"copy", "invert"}) {
      HostFrame in(FrameLayout::packed(f, 13, 7), 3);
      const FrameLayout out_layout = FrameLayout::packed(f, 13, 7);
      std::vector<uint8_t> out(out_layout.size);
      run_reference(*make_operation(k), in.image, out_layout.at(out.data()));
      EXPECT_EQ(check_frame(k, out_layout, out_layout.at(out.data()), 3), "")
          << format_info(f).name << " " << k;
    }
}

TEST(ReferenceTest, InvertKeepsAlphaAndPaddingAndInvertsEverythingElse) {
  const uint8_t rgba[4] = {0, 100, 255, 77};
  uint8_t out[4];
  ImageRef in_ref{PixelFormat::kRGBA, 1, 1, {{const_cast<uint8_t*>(rgba), 4}}};
  ImageRef out_ref{PixelFormat::kRGBA, 1, 1, {{out, 4}}};
  run_reference(*make_operation("invert"), in_ref, out_ref);
  EXPECT_EQ(out[0], 255);
  EXPECT_EQ(out[1], 155);
  EXPECT_EQ(out[2], 0);
  EXPECT_EQ(out[3], 77);
  in_ref.format = out_ref.format = PixelFormat::kARGB;  // alpha first
  run_reference(*make_operation("invert"), in_ref, out_ref);
  EXPECT_EQ(out[0], 0);
  EXPECT_EQ(out[1], 155);
}

}  // namespace
}  // namespace cudaoverlap::test
