// Bands of `scale` (Operation::band_reads, run_reference_rows,
// enqueue_cuda_rows): output rows made band by band from the input rows
// band_reads names equal the whole frame's, and no band writes another's
// rows; downscaling, upscaling, a crop, a letterbox and a width alone.
#include <cstring>

#include "kernel_test_util.h"
#include "kernels/flip/flip.h"
#include "kernels/scale/scale_taps.h"

namespace cudaoverlap::test {
namespace {

constexpr uint8_t kCanary = 0x5C;

struct BandCase {
  const char* name;
  KernelParams params;
};

KernelParams sized(ScaleMethod method, int in_w, int in_h, int out_w, int out_h) {
  KernelParams p;
  p.set("method", static_cast<int>(method));
  p.sizes = FrameSizes{in_w, in_h, out_w, out_h};
  return p;
}

std::vector<BandCase> band_cases() {
  KernelParams crop = sized(ScaleMethod::kBicubic, 640, 480, 320, 240);
  crop.set("crop-left", 4).set("crop-right", 6).set("crop-top", 10).set("crop-bottom", 6);
  // 640x360 into 320x320: the picture 320x180 at row 70, borders above and
  // below.
  KernelParams letterbox = sized(ScaleMethod::kBilinear, 640, 360, 320, 320);
  letterbox.sizes.dest_x = 0;
  letterbox.sizes.dest_y = 70;
  letterbox.sizes.dest_width = 320;
  letterbox.sizes.dest_height = 180;
  letterbox.set("border-color", 0xff2080c0u);
  // Far down, lanczos: a block's 32 rows of 4-byte pixels reach more input
  // rows than shared memory holds, so the GPU runs the short tile.
  return {{"far down", sized(ScaleMethod::kLanczos, 640, 479, 320, 120)},
          {"down", sized(ScaleMethod::kBilinear, 641, 479, 320, 240)},
          {"up", sized(ScaleMethod::kLanczos, 321, 179, 640, 361)},
          {"crop", crop},
          {"letterbox", letterbox},
          {"width only", sized(ScaleMethod::kBilinear, 641, 240, 320, 240)}};
}

// Under a sanitizer (many times slower) one format of each layout the
// bands treat apart: whole 4-byte pixels, 4:2:0, packed 4:2:2.
std::vector<PixelFormat> band_formats() {
  if (kSanitized) return {PixelFormat::kRGBA, PixelFormat::kNV12, PixelFormat::kYUY2};
  return {PixelFormat::kRGBA,      PixelFormat::kBGRx, PixelFormat::kNV12, PixelFormat::kI420,
          PixelFormat::kP010_10LE, PixelFormat::kYUY2, PixelFormat::kGRAY8};
}

// Band by band (5 bands, cut as the engine cuts the output), each with
// the input rows outside its band_reads inverted: every band makes the
// whole frame's rows and writes no other row. The reads are those of the
// band's own picture rows: a band reads at most its share of the input
// and the filter's reach.
TEST(ScaleBandsReference, EachBandFromItsReadsEqualsTheWholeFrame) {
  for (const BandCase& c : band_cases()) {
    const auto op = make_operation("scale", c.params);
    const FrameSizes& s = c.params.sizes;
    // Input rows an output row of the picture stands for, and the filter's
    // reach either side (4:2:0 chroma's counts twice).
    const double factor = static_cast<double>(s.in_height) / s.picture_height();
    const double reach = scale_radius(static_cast<ScaleMethod>(c.params.values.integer("method"))) *
                         std::max(factor, 1.0);
    for (PixelFormat f : band_formats()) {
      SCOPED_TRACE(std::string(c.name) + " " + format_info(f).name);
      ASSERT_EQ(op->band_halo(f, f), 0);
      OwnedImage in(f, s.in_width, s.in_height);
      in.fill_random(static_cast<uint32_t>(static_cast<int>(f) * 5 + s.out_height));
      std::vector<uint8_t> workspace_bytes(op->workspace_bytes());
      const Workspace workspace{workspace_bytes.data(), workspace_bytes.size()};
      op->prepare_reference(workspace);
      OwnedImage whole(f, s.out_width, s.out_height, 5);
      ASSERT_EQ(op->check(in.image, whole.image), "");
      op->run_reference(in.image, whole.image, workspace);
      OwnedImage out(f, s.out_width, s.out_height, 5);
      std::fill(out.bytes.begin(), out.bytes.end(), kCanary);
      const std::vector<int> rows = band_cuts(s.out_height, 5, band_row_step(f, f));
      for (int k = 0; k < 5; ++k) {
        const int y0 = rows[k], y1 = rows[k + 1];
        const RowRange reads = op->band_reads(f, f, y0, y1, s.in_height);
        ASSERT_LE(reads.first, reads.last);
        ASSERT_GE(reads.first, 0);
        ASSERT_LE(reads.last, s.in_height);
        if (reads.first < reads.last) {
          EXPECT_LE(reads.last - reads.first, (y1 - y0) * factor + 4 * reach + 8)
              << "rows " << y0 << ".." << y1;
        }
        const std::vector<uint8_t> before = out.bytes;
        poison_outside(in, reads.first, reads.last);
        op->run_reference_rows(in.image, out.image, workspace, y0, y1);
        poison_outside(in, reads.first, reads.last);  // undone
        EXPECT_EQ(compare_outside_rows(out.layout, out.bytes.data(), before.data(), y0, y1), "")
            << "rows " << y0 << ".." << y1 << " wrote outside them";
      }
      EXPECT_EQ(compare_images(out.image, whole.image), "");
    }
  }
}

// The letterbox's border rows read nothing; the band below reads from the
// top of the window, shifted by the crop; a turned picture's rows read
// every row (and the frame is not split).
TEST(ScaleBandsReference, BorderRowsReadNothingAndTheCropShiftsTheReads) {
  KernelParams turned = sized(ScaleMethod::kBilinear, 64, 48, 48, 64);
  turned.set("video-direction", static_cast<int>(FlipDirection::k90R));
  const auto turn = make_operation("scale", turned);
  EXPECT_EQ(turn->band_halo(PixelFormat::kRGBA, PixelFormat::kRGBA), -1);
  const RowRange all = turn->band_reads(PixelFormat::kRGBA, PixelFormat::kRGBA, 0, 64, 48);
  EXPECT_EQ(all.first, 0);
  EXPECT_EQ(all.last, 48);
  for (const BandCase& c : band_cases()) {
    const auto op = make_operation("scale", c.params);
    const int in_h = c.params.sizes.in_height;
    if (std::string(c.name) == "letterbox") {
      const RowRange border = op->band_reads(PixelFormat::kNV12, PixelFormat::kNV12, 0, 70, in_h);
      EXPECT_EQ(border.first, border.last);
      const RowRange top = op->band_reads(PixelFormat::kNV12, PixelFormat::kNV12, 70, 80, in_h);
      EXPECT_EQ(top.first, 0);
    } else if (std::string(c.name) == "crop") {
      const RowRange top = op->band_reads(PixelFormat::kRGBA, PixelFormat::kRGBA, 0, 8, in_h);
      EXPECT_EQ(top.first, 10);
      const RowRange bottom =
          op->band_reads(PixelFormat::kRGBA, PixelFormat::kRGBA, 232, 240, in_h);
      EXPECT_EQ(bottom.last, 480 - 6);
    }
  }
}

// The same on the GPU: band by band into a device output filled with a
// canary, each band's launch with only its reads uploaded (the rest of the
// device input the canary again) writes no row outside the band, and the
// bands together equal the whole-frame launch.
TEST(GpuScaleBands, EachBandFromItsReadsEqualsTheWholeFrame) {
  std::string why;
  if (cuda_device_count(&why) == 0) GTEST_SKIP() << "no CUDA device: " << why;
  auto device = make_cuda_device(0);
  device->make_current();
  for (const BandCase& c : band_cases()) {
    const auto op = make_operation("scale", c.params);
    const FrameSizes& s = c.params.sizes;
    for (PixelFormat f : band_formats()) {
      SCOPED_TRACE(std::string(c.name) + " " + format_info(f).name);
      OwnedImage in(f, s.in_width, s.in_height);
      in.fill_random(static_cast<uint32_t>(static_cast<int>(f) * 3 + s.in_height));
      OwnedImage whole(f, s.out_width, s.out_height, 3);
      run_on_device(*device, "scale", c.params, in, whole, 256);
      const FrameLayout in_layout = FrameLayout::packed(f, s.in_width, s.in_height, 256, 256);
      const FrameLayout out_layout = FrameLayout::packed(f, s.out_width, s.out_height, 256, 256);
      auto canary_in = device->alloc_pinned(in_layout.size);
      auto host_in = device->alloc_pinned(in.layout.size);
      std::memcpy(host_in->data(), in.bytes.data(), in.layout.size);
      auto pinned_out = device->alloc_pinned(out_layout.size);
      auto dev_in = device->alloc_device(in_layout.size);
      auto dev_out = device->alloc_device(out_layout.size);
      auto stream = device->create_stream();
      std::unique_ptr<Buffer> workspace_memory = device->alloc_device(op->workspace_bytes());
      const Workspace workspace{workspace_memory->data(), workspace_memory->size()};
      stream->prepare(*op, workspace);
      // Before each band's launch the device input is the canary but for
      // that band's reads; after it, no output row outside the band has
      // changed.
      std::memset(canary_in->data(), kCanary, in_layout.size);
      std::memset(pinned_out->data(), kCanary, out_layout.size);
      stream->copy_2d(dev_out->data(), out_layout.size, pinned_out->data(), out_layout.size,
                      out_layout.size, 1, CopyKind::kHostToDevice);
      const ImageRef src = in.layout.at(host_in->data());
      const ImageRef din = in_layout.at(dev_in->data());
      const ImageRef dout = out_layout.at(dev_out->data());
      const std::vector<int> rows = band_cuts(s.out_height, 5, band_row_step(f, f));
      for (int k = 0; k < 5; ++k) {
        stream->copy_2d(dev_in->data(), in_layout.size, canary_in->data(), in_layout.size,
                        in_layout.size, 1, CopyKind::kHostToDevice);
        const RowRange reads = op->band_reads(f, f, rows[k], rows[k + 1], s.in_height);
        for (int p = 0; p < in_layout.n_planes() && reads.first < reads.last; ++p) {
          const size_t r0 = plane_rows(f, p, reads.first / 2 * 2);
          const size_t r1 = plane_rows(f, p, reads.last);
          stream->copy_2d(din.planes[p].data + r0 * din.planes[p].stride, din.planes[p].stride,
                          src.planes[p].data + r0 * src.planes[p].stride, src.planes[p].stride,
                          in_layout.row_bytes(p), r1 - r0, CopyKind::kHostToDevice);
        }
        const std::vector<uint8_t> before(pinned_out->data(), pinned_out->data() + out_layout.size);
        stream->launch_rows(*op, din, dout, workspace, rows[k], rows[k + 1]);
        stream->copy_2d(pinned_out->data(), out_layout.size, dev_out->data(), out_layout.size,
                        out_layout.size, 1, CopyKind::kDeviceToHost);
        stream->synchronize();
        EXPECT_EQ(compare_outside_rows(out_layout, pinned_out->data(), before.data(), rows[k],
                                       rows[k + 1]),
                  "")
            << "rows " << rows[k] << ".." << rows[k + 1] << " wrote outside them";
      }
      EXPECT_EQ(compare_images(out_layout.at(pinned_out->data()), whole.image), "");
    }
  }
}

}  // namespace
}  // namespace cudaoverlap::test
