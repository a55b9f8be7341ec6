// Kernels: each CPU reference against a formula written independently here,
// and each GPU kernel against its CPU reference, for every format and for
// sizes from 1x1 to 4K, through the Device interface the engine uses (so
// these tests need no CUDA headers). Device planes are tried both 256-byte
// aligned (vector path) and with 4-byte strides (byte path).
#include "engine_test_util.h"

namespace cudaoverlap::test {
namespace {

const PixelFormat kAllFormats[] = {PixelFormat::kRGBA, PixelFormat::kBGRA, PixelFormat::kRGBx,
                                   PixelFormat::kBGRx, PixelFormat::kARGB, PixelFormat::kABGR,
                                   PixelFormat::kNV12, PixelFormat::kI420, PixelFormat::kGRAY8};

TEST(ReferenceTest, CopyAndInvertReferencesMatchTheirDefinition) {
  for (PixelFormat f : kAllFormats)
    for (KernelId k : {KernelId::kCopy, KernelId::kInvert}) {
      HostFrame in(FrameLayout::packed(f, 13, 7), 3);
      const FrameLayout out_layout = FrameLayout::packed(f, 13, 7);
      std::vector<uint8_t> out(out_layout.size);
      run_kernel_reference(k, {}, in.image, out_layout.at(out.data()));
      EXPECT_EQ(check_frame(k, out_layout, out_layout.at(out.data()), 3), "")
          << format_info(f).name << " " << kernel_name(k);
    }
}

TEST(ReferenceTest, InvertKeepsAlphaAndPaddingAndInvertsEverythingElse) {
  const uint8_t rgba[4] = {0, 100, 255, 77};
  uint8_t out[4];
  ImageRef in_ref{PixelFormat::kRGBA, 1, 1, {{const_cast<uint8_t*>(rgba), 4}}};
  ImageRef out_ref{PixelFormat::kRGBA, 1, 1, {{out, 4}}};
  run_kernel_reference(KernelId::kInvert, {}, in_ref, out_ref);
  EXPECT_EQ(out[0], 255);
  EXPECT_EQ(out[1], 155);
  EXPECT_EQ(out[2], 0);
  EXPECT_EQ(out[3], 77);
  in_ref.format = out_ref.format = PixelFormat::kARGB;  // alpha first
  run_kernel_reference(KernelId::kInvert, {}, in_ref, out_ref);
  EXPECT_EQ(out[0], 0);
  EXPECT_EQ(out[1], 155);
}

struct KernelCase {
  PixelFormat format;
  int width, height;
};

class GpuKernelTest : public ::testing::TestWithParam<KernelCase> {};

// Runs `kernel` on `device` and returns the host copy of its output.
std::vector<uint8_t> run_on_device(Device& device, KernelId kernel, const HostFrame& host,
                                   const FrameLayout& device_layout,
                                   const FrameLayout& out_layout) {
  auto pinned_in = device.alloc_pinned(host.layout.size);
  auto pinned_out = device.alloc_pinned(out_layout.size);
  auto dev_in = device.alloc_device(device_layout.size);
  auto dev_out = device.alloc_device(device_layout.size);
  std::memcpy(pinned_in->data(), host.bytes.data(), host.layout.size);
  auto stream = device.create_stream();
  const ImageRef src = host.layout.at(pinned_in->data());
  const ImageRef din = device_layout.at(dev_in->data());
  const ImageRef dout = device_layout.at(dev_out->data());
  const ImageRef dst = out_layout.at(pinned_out->data());
  for (int p = 0; p < host.layout.n_planes(); ++p)
    stream->copy_2d(din.planes[p].data, din.planes[p].stride, src.planes[p].data,
                    src.planes[p].stride, host.layout.row_bytes(p), host.layout.rows(p),
                    CopyKind::kHostToDevice);
  stream->launch(kernel, {}, din, dout);
  for (int p = 0; p < out_layout.n_planes(); ++p)
    stream->copy_2d(dst.planes[p].data, dst.planes[p].stride, dout.planes[p].data,
                    dout.planes[p].stride, out_layout.row_bytes(p), out_layout.rows(p),
                    CopyKind::kDeviceToHost);
  stream->synchronize();
  return std::vector<uint8_t>(pinned_out->data(), pinned_out->data() + out_layout.size);
}

TEST_P(GpuKernelTest, GpuOutputEqualsTheCpuReferenceByteForByte) {
  const KernelCase& c = GetParam();
  std::string why;
  if (cuda_device_count(&why) == 0) GTEST_SKIP() << "no CUDA device: " << why;
  auto device = make_cuda_device(0);
  device->make_current();
  const HostFrame host(FrameLayout::packed(c.format, c.width, c.height), 17);
  const FrameLayout out_layout = FrameLayout::packed(c.format, c.width, c.height);
  for (KernelId kernel : {KernelId::kCopy, KernelId::kInvert}) {
    std::vector<uint8_t> want(out_layout.size);
    run_kernel_reference(kernel, {}, host.image, out_layout.at(want.data()));
    for (size_t align : {size_t{256}, size_t{4}}) {
      const FrameLayout device_layout =
          FrameLayout::packed(c.format, c.width, c.height, align, align);
      std::vector<uint8_t> got = run_on_device(*device, kernel, host, device_layout, out_layout);
      // Compare pixel bytes only (row padding is unspecified).
      EXPECT_EQ(check_frame(kernel, out_layout, out_layout.at(got.data()), 17), "")
          << kernel_name(kernel) << " align " << align;
      bool same = true;
      for (int p = 0; p < out_layout.n_planes() && same; ++p)
        for (size_t y = 0; y < out_layout.rows(p) && same; ++y)
          same = std::memcmp(got.data() + out_layout.offset[p] + y * out_layout.stride[p],
                             want.data() + out_layout.offset[p] + y * out_layout.stride[p],
                             out_layout.row_bytes(p)) == 0;
      EXPECT_TRUE(same) << kernel_name(kernel) << " differs from its reference, align " << align;
    }
  }
}

std::vector<KernelCase> kernel_cases() {
  std::vector<KernelCase> cases;
  for (PixelFormat f : kAllFormats)
    for (auto [w, h] : {std::pair{1, 1}, {3, 5}, {641, 479}, {1920, 1080}})
      cases.push_back({f, w, h});
  cases.push_back({PixelFormat::kRGBA, 4096, 2160});
  cases.push_back({PixelFormat::kNV12, 4096, 2160});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Kernels, GpuKernelTest, ::testing::ValuesIn(kernel_cases()),
                         [](const auto& info) {
                           return std::string(format_info(info.param.format).name) + "_" +
                                  std::to_string(info.param.width) + "x" +
                                  std::to_string(info.param.height);
                         });

}  // namespace
}  // namespace cudaoverlap::test
