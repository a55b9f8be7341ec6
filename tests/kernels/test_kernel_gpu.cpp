// Every GPU kernel against its CPU reference, byte for byte: flip in all
// eight directions, balance with several parameter sets, blur at sigma 0.5,
// 2, 7.3 and 20, edge, scale by each method, and convert between every pair of formats, for every
// format at 1x1, 3x5, 34x7 (even, rows not a multiple of 16 bytes), 641x479, 1920x1080 and
// 4096x2160, with device planes aligned to 256 bytes (vector paths) and to 4 bytes (GStreamer's
// narrowest strides). The kernels do integer work, or double arithmetic rounded operation by
// operation as on the host, so no tolerance is needed. Skips where no CUDA device exists.
#include "kernel_test_util.h"
#include "kernels/balance/balance.h"
#include "kernels/edge/edge.h"
#include "kernels/edge/edge_probe.h"
#include "parameter_sets.h"

namespace cudaoverlap::test {
namespace {

struct GpuCase {
  PixelFormat format;
  int width, height;
};

class GpuKernelVsReference : public ::testing::TestWithParam<GpuCase> {};

TEST_P(GpuKernelVsReference, GpuEqualsCpuReferenceByteForByte) {
  const GpuCase& c = GetParam();
  std::string why;
  if (cuda_device_count(&why) == 0) GTEST_SKIP() << "no CUDA device: " << why;
  auto device = make_cuda_device(0);
  device->make_current();
  OwnedImage in(c.format, c.width, c.height);
  in.fill_random(static_cast<uint32_t>(c.width * 31 + c.height));
  int ran = 0;
  for (const NamedParams& set : parameter_sets(static_cast<long>(c.width) * c.height)) {
    if (make_operation(set.kernel, set.params)->output_formats(c.format).empty())
      continue;  // the kernel does not take this format (OperationRefusal tests)
    ++ran;
    int w, h;
    KernelParams params = set.params;
    output_size(set.kernel, &params, c.width, c.height, &w, &h);
    OwnedImage want(c.format, w, h, 3);
    reference(set.kernel, params, in.image, want.image);
    for (size_t align : {size_t{256}, size_t{4}}) {
      OwnedImage got(c.format, w, h, 9);
      run_on_device(*device, set.kernel, params, in, got, align);
      EXPECT_EQ(compare_images(got.image, want.image), "")
          << set.kernel << " " << set.name << " align " << align;
    }
  }
  EXPECT_GE(ran, 2) << "copy and invert take every format";
}

std::vector<GpuCase> gpu_cases() {
  std::vector<GpuCase> cases;
  for (PixelFormat f : all_pixel_formats()) {
    if (is_bayer(f)) continue;  // input to convert only: GpuConvertVsReference
    for (auto [w, h] : {std::pair{1, 1}, {3, 5}, {34, 7}, {641, 479}, {1920, 1080}, {4096, 2160}})
      cases.push_back({f, w, h});
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(AllFormatsAndSizes, GpuKernelVsReference, ::testing::ValuesIn(gpu_cases()),
                         [](const auto& info) {
                           return std::string(format_info(info.param.format).name) + "_" +
                                  std::to_string(info.param.width) + "x" +
                                  std::to_string(info.param.height);
                         });

// convert changes the format: every pair of formats, BT.601 limited and
// BT.709 full range on the YUV sides (and BT.709 limited with limited-range
// RGB), at every size up to 1080p; a few pairs at 4K. A case per size and
// input format (c.format), so that shards share the references' minutes
// (every pair at 1080p in one case took 219 s of one core).
class GpuConvertVsReference : public ::testing::TestWithParam<GpuCase> {};

// The pairs timed at 4K, where a reference takes seconds.
const std::pair<PixelFormat, PixelFormat> kBigConvertPairs[] = {
    {PixelFormat::kRGBA, PixelFormat::kNV12},
    {PixelFormat::kNV12, PixelFormat::kRGBA},
    {PixelFormat::kI420, PixelFormat::kBGRx},
    {PixelFormat::kBGRA, PixelFormat::kI420},
    {PixelFormat::kNV12, PixelFormat::kI420},
    {PixelFormat::kGRAY8, PixelFormat::kABGR},
    {PixelFormat::kYUY2, PixelFormat::kRGBA},
    {PixelFormat::kRGBA, PixelFormat::kUYVY},
    {PixelFormat::kNV16, PixelFormat::kRGB},
    {PixelFormat::kY444, PixelFormat::kNV21},
    {PixelFormat::kP010_10LE, PixelFormat::kRGBA},
    {PixelFormat::kRGBA, PixelFormat::kI420_10LE},
    {PixelFormat::kBayerGRBG, PixelFormat::kRGBA},
    {PixelFormat::kBayerBGGR, PixelFormat::kBGR},
    {PixelFormat::kNV21, PixelFormat::kRGBA},
    {PixelFormat::kBGRx, PixelFormat::kNV21},
    {PixelFormat::kNV21, PixelFormat::kI420},
    {PixelFormat::kYUY2, PixelFormat::kNV12},
    {PixelFormat::kUYVY, PixelFormat::kI420},
    {PixelFormat::kNV12, PixelFormat::kYUY2},
    {PixelFormat::kI420, PixelFormat::kNV16},
    {PixelFormat::kNV21, PixelFormat::kY444},
    {PixelFormat::kI420, PixelFormat::kUYVY},
    {PixelFormat::kNV12, PixelFormat::kY42B},
    {PixelFormat::kY42B, PixelFormat::kY42B},
    {PixelFormat::kGRAY16_LE, PixelFormat::kGRAY16_LE},
    {PixelFormat::kP010_10LE, PixelFormat::kYUY2},
    {PixelFormat::kI420_10LE, PixelFormat::kBGR},
    {PixelFormat::kP010_10LE, PixelFormat::kY444}};

bool big_convert_case(const GpuCase& c) {
  return static_cast<long>(c.width) * c.height > 1920 * 1080;
}

TEST_P(GpuConvertVsReference, GpuEqualsCpuReferenceByteForByte) {
  const GpuCase& c = GetParam();
  std::string why;
  if (cuda_device_count(&why) == 0) GTEST_SKIP() << "no CUDA device: " << why;
  auto device = make_cuda_device(0);
  device->make_current();
  std::vector<std::pair<PixelFormat, PixelFormat>> pairs;
  if (big_convert_case(c)) {
    for (const auto& pair : kBigConvertPairs)
      if (pair.first == c.format) pairs.push_back(pair);
  } else {
    for (PixelFormat b : formats_of("convert")) pairs.push_back({c.format, b});
  }
  ASSERT_FALSE(pairs.empty());
  // The second: full-range BT.2020 (GStreamer's Kr and Kb). The third: RGB
  // sides on 16..235 (convert_math::matrix8 and grey through the matrix),
  // 8-bit pairs only.
  for (const Colorimetry colour :
       {colorimetry(YuvMatrix::kBT601), colorimetry(YuvMatrix::kBT2020, true),
        colorimetry(YuvMatrix::kBT709, false, true)})
    for (const auto& [from, to] : pairs) {
      KernelParams params;
      params.convert.in = params.convert.out = colour;
      OwnedImage in(from, c.width, c.height);
      in.fill_random(static_cast<uint32_t>(c.width + 3 * c.height));
      OwnedImage want(to, c.width, c.height, 3);
      if (!check("convert", params, in.image, want.image).empty()) continue;
      reference("convert", params, in.image, want.image);
      for (size_t align : {size_t{256}, size_t{4}}) {
        OwnedImage got(to, c.width, c.height, 9);
        run_on_device(*device, "convert", params, in, got, align);
        EXPECT_EQ(compare_images(got.image, want.image), "")
            << format_info(from).name << " -> " << format_info(to).name << " align " << align;
      }
    }
}

std::vector<GpuCase> convert_cases() {
  std::vector<GpuCase> cases;
  // The small ones also where debayering's word path meets its edges
  // (widths 2 to 13, heights 2 to 6), and widths a multiple of 4 at odd
  // heights, where the kernels' aligned paths take every column and
  // their last block row has one row (12x5, 132x7: a warp and a thread).
  for (auto [w, h] : {std::pair{1, 1},
                      {3, 5},
                      {2, 2},
                      {7, 4},
                      {10, 6},
                      {13, 3},
                      {12, 5},
                      {132, 7},
                      {641, 479},
                      {1920, 1080},
                      {4096, 2160}})
    for (PixelFormat from : formats_of("convert")) {
      const GpuCase c{from, w, h};
      const bool any = std::any_of(std::begin(kBigConvertPairs), std::end(kBigConvertPairs),
                                   [from](const auto& pair) { return pair.first == from; });
      if (!big_convert_case(c) || any) cases.push_back(c);
    }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(EveryFormatPair, GpuConvertVsReference,
                         ::testing::ValuesIn(convert_cases()), [](const auto& info) {
                           return std::to_string(info.param.width) + "x" +
                                  std::to_string(info.param.height) + "_" +
                                  format_info(info.param.format).name;
                         });

// Tall images, where the launches' row loops pass the grid's 65535 blocks
// down and 32-bit row arithmetic would wrap: samples repacked over more
// than 2,097,120 rows (GRAY8 -> GRAY16_LE), and chroma rows doubled by the
// plane scaler past 46341 output rows (I420 -> Y42B and Y444, and NV12 ->
// NV16), whose taps the reference had computed in 32 bits and wrapped.
TEST(GpuConvert, TallImagesEqualTheReference) {
  std::string why;
  if (cuda_device_count(&why) == 0) GTEST_SKIP() << "no CUDA device: " << why;
  auto device = make_cuda_device(0);
  device->make_current();
  const struct {
    PixelFormat from, to;
    int width, height;
  } cases[] = {{PixelFormat::kGRAY8, PixelFormat::kGRAY16_LE, 16, 2200000},
               {PixelFormat::kI420, PixelFormat::kY42B, 8, 46400},
               {PixelFormat::kI420, PixelFormat::kY444, 6, 46400},
               {PixelFormat::kNV12, PixelFormat::kNV16, 8, 46400}};
  for (const auto& c : cases) {
    KernelParams params;
    OwnedImage in(c.from, c.width, c.height);
    in.fill_random(7);
    OwnedImage want(c.to, c.width, c.height, 3);
    ASSERT_EQ(check("convert", params, in.image, want.image), "");
    reference("convert", params, in.image, want.image);
    OwnedImage got(c.to, c.width, c.height, 9);
    run_on_device(*device, "convert", params, in, got, 256);
    EXPECT_EQ(compare_images(got.image, want.image), "")
        << format_info(c.from).name << " -> " << format_info(c.to).name << " " << c.width << "x"
        << c.height;
  }
}

// Co-sited output chroma (chroma-site=mpeg2 and dv) through the block
// kernel: byte for byte the reference, 8- and 10-bit, 4:2:0 and 4:2:2, odd
// sizes.
TEST(GpuConvert, CositedChromaEqualsTheReference) {
  std::string why;
  if (cuda_device_count(&why) == 0) GTEST_SKIP() << "no CUDA device: " << why;
  auto device = make_cuda_device(0);
  device->make_current();
  for (auto [from, to] : {std::pair{PixelFormat::kRGBA, PixelFormat::kI420},
                          {PixelFormat::kRGB, PixelFormat::kNV12},
                          {PixelFormat::kBGRx, PixelFormat::kYUY2},
                          {PixelFormat::kRGBA, PixelFormat::kP010_10LE},
                          {PixelFormat::kY444, PixelFormat::kNV12}})
    for (bool down : {false, true})
      for (auto [w, h] : {std::pair{641, 479}, {2, 2}, {1, 3}}) {
        KernelParams params;
        params.convert.cosited_x = true;
        params.convert.cosited_y = down;
        OwnedImage in(from, w, h);
        in.fill_random(static_cast<uint32_t>(w + h));
        OwnedImage want(to, w, h, 3);
        reference("convert", params, in.image, want.image);
        OwnedImage got(to, w, h, 9);
        run_on_device(*device, "convert", params, in, got, 256);
        EXPECT_EQ(compare_images(got.image, want.image), "")
            << format_info(from).name << " -> " << format_info(to).name << " " << w << "x" << h
            << (down ? " dv" : " mpeg2");
      }
}

// Bands (Operation::enqueue_cuda_rows): blur at sigmas 0.5 to 20 and edge,
// in every format they take at 641x479, run band by band as the engine
// cuts a frame (4 and 7 bands) into a device output filled with a canary
// byte, make exactly the bytes of the whole-frame launch (which
// GpuKernelVsReference holds to the reference), and no band's launch
// writes a row outside its own; device planes aligned to 256 bytes and to
// 4.
TEST(GpuBands, EveryBandEqualsTheWholeFrameAndWritesOnlyItsRows) {
  std::string why;
  if (cuda_device_count(&why) == 0) GTEST_SKIP() << "no CUDA device: " << why;
  auto device = make_cuda_device(0);
  device->make_current();
  constexpr int kWidth = 641, kHeight = 479;
  constexpr uint8_t kCanary = 0x5C;
  for (const BandedOperation& b : banded_operations()) {
    const auto op = make_operation(b.kernel, b.params);
    for (PixelFormat f : op->input_formats()) {
      OwnedImage in(f, kWidth, kHeight);
      in.fill_random(static_cast<uint32_t>(static_cast<int>(f) * 13 + 1));
      for (size_t align : {size_t{256}, size_t{4}}) {
        OwnedImage whole(f, kWidth, kHeight, 3);
        run_on_device(*device, b.kernel, b.params, in, whole, align);
        const FrameLayout layout = FrameLayout::packed(f, kWidth, kHeight, align, align);
        auto pinned_in = device->alloc_pinned(in.layout.size);
        auto pinned_out = device->alloc_pinned(layout.size);
        auto dev_in = device->alloc_device(layout.size);
        auto dev_out = device->alloc_device(layout.size);
        std::memcpy(pinned_in->data(), in.bytes.data(), in.layout.size);
        auto stream = device->create_stream();
        std::unique_ptr<Buffer> workspace_memory;
        Workspace workspace;
        if (op->workspace_bytes() > 0) {
          workspace_memory = device->alloc_device(op->workspace_bytes());
          workspace = Workspace{workspace_memory->data(), workspace_memory->size()};
        }
        stream->prepare(*op, workspace);
        const ImageRef src = in.layout.at(pinned_in->data());
        const ImageRef din = layout.at(dev_in->data());
        const ImageRef dout = layout.at(dev_out->data());
        for (int p = 0; p < in.layout.n_planes(); ++p)
          stream->copy_2d(din.planes[p].data, din.planes[p].stride, src.planes[p].data,
                          src.planes[p].stride, in.layout.row_bytes(p), in.layout.rows(p),
                          CopyKind::kHostToDevice);
        for (int bands : {4, 7}) {
          const std::vector<int> rows = band_cuts(kHeight, bands, band_row_step(f, f));
          std::memset(pinned_out->data(), kCanary, layout.size);
          stream->copy_2d(dev_out->data(), layout.size, pinned_out->data(), layout.size,
                          layout.size, 1, CopyKind::kHostToDevice);
          std::vector<uint8_t> before(pinned_out->data(), pinned_out->data() + layout.size);
          for (int k = 0; k < bands; ++k) {
            stream->launch_rows(*op, din, dout, workspace, rows[k], rows[k + 1]);
            stream->copy_2d(pinned_out->data(), layout.size, dev_out->data(), layout.size,
                            layout.size, 1, CopyKind::kDeviceToHost);
            stream->synchronize();
            EXPECT_EQ(compare_outside_rows(layout, pinned_out->data(), before.data(), rows[k],
                                           rows[k + 1]),
                      "")
                << b.name << " " << bands << " bands, align " << align
                << ": wrote outside its rows";
            before.assign(pinned_out->data(), pinned_out->data() + layout.size);
          }
          EXPECT_EQ(compare_images(layout.at(pinned_out->data()), whole.image), "")
              << b.name << " " << bands << " bands, align " << align;
        }
      }
    }
  }
}

// The edge kernel's magnitude (FP32 and an approximate square root on the
// device) against the reference's integer square root, for every gradient
// a Sobel operator on 8-bit samples can produce, from both 16-bit lanes the
// kernel keeps gradients in. Images only ever reach a sample of these.
TEST(GpuEdge, MagnitudeOfEveryGradientEqualsTheReference) {
#ifdef CUDAOVERLAP_HAVE_CUDA
  std::string why;
  if (cuda_device_count(&why) == 0) GTEST_SKIP() << "no CUDA device: " << why;
  auto device = make_cuda_device(0);
  device->make_current();
  constexpr int kLimit = 1020;
  const std::vector<uint8_t> got = edge_magnitudes_cuda(kLimit);
  ASSERT_EQ(got.size(), 2u * (2 * kLimit + 1) * (2 * kLimit + 1));
  int wrong = 0;
  size_t i = 0;
  for (int gy = -kLimit; gy <= kLimit; ++gy)
    for (int gx = -kLimit; gx <= kLimit; ++gx, i += 2) {
      const uint8_t want = edge_magnitude(gx, gy);
      if ((got[i] != want || got[i + 1] != want) && ++wrong <= 5)
        ADD_FAILURE() << "gx " << gx << " gy " << gy << ": want " << int{want} << ", got "
                      << int{got[i]} << " (low lane) and " << int{got[i + 1]} << " (high lane)";
    }
  EXPECT_EQ(wrong, 0);
#else
  GTEST_SKIP() << "built without CUDA";
#endif
}

// The same for 16-bit samples' gradients (up to 4 * 65535 a side), whose
// root the kernel takes in single precision and corrects on exact 32-bit
// squares below the sum where the result saturates: every gradient of
// 10-bit samples with |gy| <= 64; over the whole range, the gradients next
// to a perfect square (gx = gy^2 / 2 and its neighbours make gx^2 + gy^2
// one of (gx + 1)^2 - 1, (gx + 1)^2 and (gx + 1)^2 + 1 or near them), with
// both signs; those around 65535^2 and 2^32, where the kernel's 32-bit
// arithmetic stops; and a million drawn at random; against the reference's
// integer root, clamped to 1023 and to 65535.
TEST(GpuEdge, DeepMagnitudeEqualsTheReference) {
#ifdef CUDAOVERLAP_HAVE_CUDA
  std::string why;
  if (cuda_device_count(&why) == 0) GTEST_SKIP() << "no CUDA device: " << why;
  auto device = make_cuda_device(0);
  device->make_current();
  std::vector<std::pair<int, int>> gradients;
  for (int gy = -64; gy <= 64; ++gy)
    for (int gx = -4092; gx <= 4092; ++gx) gradients.emplace_back(gx, gy);
  constexpr int kMax = 4 * 65535;
  for (int gy = 1; gy * gy / 2 + 2 <= kMax; ++gy)
    for (int d = -2; d <= 2; ++d) {
      const int gx = gy * gy / 2 + d;
      for (int sx : {1, -1})
        for (int sy : {1, -1}) {
          gradients.emplace_back(sx * gx, sy * gy);
          gradients.emplace_back(sy * gy, sx * gx);
        }
    }
  for (int g = kMax - 300; g <= kMax; ++g) gradients.emplace_back(g, kMax - g % 7);
  for (int d = -600; d <= 600; ++d) {
    gradients.emplace_back(65535, d);
    gradients.emplace_back(65536, d);
    gradients.emplace_back(46341 + d / 16, 46340 + d % 16);
  }
  uint32_t seed = 12345;
  auto draw = [&seed] {
    seed = seed * 1664525u + 1013904223u;
    return static_cast<int>(seed >> 8) % (2 * kMax + 1) - kMax;
  };
  for (int i = 0; i < 1000000; ++i) {
    const int gx = draw();
    gradients.emplace_back(gx, draw() >> (i % 12));
  }
  for (uint32_t max : {1023u, 65535u}) {
    const std::vector<uint32_t> got = edge_deep_magnitudes_cuda(gradients, max);
    ASSERT_EQ(got.size(), gradients.size());
    int wrong = 0;
    for (size_t i = 0; i < gradients.size(); ++i) {
      const auto [gx, gy] = gradients[i];
      const uint32_t want = edge_magnitude(gx, gy, max);
      if (got[i] != want && ++wrong <= 5)
        ADD_FAILURE() << "gx " << gx << " gy " << gy << " max " << max << ": want " << want
                      << ", got " << got[i];
    }
    EXPECT_EQ(wrong, 0) << "of " << gradients.size();
  }
#else
  GTEST_SKIP() << "built without CUDA";
#endif
}

}  // namespace
}  // namespace cudaoverlap::test
