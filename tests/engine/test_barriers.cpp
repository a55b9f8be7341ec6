// Every barrier of the engine is load-bearing: with it, frames arrive intact
// under random delays; taken out (a TestDevice, or the test's own producer or
// consumer misbehaving, see test_device.h), the same
// run delivers wrong or changing frames. If one of these "taken out" tests
// passes, the barrier is not protecting anything the tests can see, and the
// suite has lost its teeth.
#include <algorithm>
#include <cstring>
#include <mutex>

#include "engine_test_util.h"

namespace cudaoverlap::test {
namespace {

struct BarrierCase {
  Barrier barrier;
  const char* name;
  int bands = 1;  // EngineConfig::bands: each barrier holds band by band too
};

class BarrierTest : public ::testing::TestWithParam<BarrierCase> {};

// A run where each race has room to happen: long random delays on every
// stream operation and on every release. `barrier` decides the input kind
// (the keep-alive barrier only exists for zero-copy input); `disabled` is
// the barrier taken out, if any.
RunSpec race_prone_run(Barrier barrier, Barrier disabled, int bands) {
  RunSpec spec;
  spec.backend = BackendKind::kCpu;  // the only backend whose timing we control
  spec.ring_size = 3;
  spec.layout = FrameLayout::packed(PixelFormat::kRGBA, 64, 16);
  spec.kernel = "invert";
  spec.frames = 300;
  spec.max_delay_us = 200;
  // A consumer that holds frames longer than the ring takes to come round
  // again, so a slot reused before release is caught in the act. A frame in
  // bands takes each stream through that many more delayed operations, so
  // the ring comes round that much later (under a sanitizer, later still).
  spec.max_hold_us = barrier == Barrier::kRelease ? 3000 * static_cast<uint32_t>(bands) : 300;
  spec.pinned_input = barrier == Barrier::kKeepAlive;
  spec.disabled_barrier = disabled;
  spec.seed = 42;
  spec.bands = bands;
  return spec;
}

TEST_P(BarrierTest, FramesStayIntactWithTheBarrier) {
  const RunResult r =
      run_frames(race_prone_run(GetParam().barrier, Barrier::kNone, GetParam().bands));
  EXPECT_EQ(r.submit_failure, "");
  EXPECT_EQ(r.order.size(), 300u);
  EXPECT_EQ(r.mismatches, std::vector<std::string>{});
  EXPECT_EQ(r.live_users, 0);
}

TEST_P(BarrierTest, TakingTheBarrierOutIsNoticed) {
  const RunResult r =
      run_frames(race_prone_run(GetParam().barrier, GetParam().barrier, GetParam().bands));
  EXPECT_FALSE(r.mismatches.empty())
      << "without the " << GetParam().name << " barrier every frame still arrived intact";
  EXPECT_EQ(r.live_users, 0);
}

INSTANTIATE_TEST_SUITE_P(Engine, BarrierTest,
                         ::testing::Values(BarrierCase{Barrier::kUploaded, "uploaded"},
                                           BarrierCase{Barrier::kComputed, "computed"},
                                           BarrierCase{Barrier::kDownloaded, "downloaded"},
                                           BarrierCase{Barrier::kRelease, "release"},
                                           BarrierCase{Barrier::kKeepAlive, "keep_alive"},
                                           BarrierCase{Barrier::kUploaded, "uploaded_bands", 4},
                                           BarrierCase{Barrier::kComputed, "computed_bands", 4},
                                           BarrierCase{Barrier::kDownloaded, "downloaded_bands", 4},
                                           BarrierCase{Barrier::kRelease, "release_bands", 4},
                                           BarrierCase{Barrier::kKeepAlive, "keep_alive_bands", 4}),
                         [](const auto& info) { return std::string(info.param.name); });

// A GRAY8 operation whose output row y is the sum of input rows y - 3 to
// y + 3 (clamped at the edges), on the cpu backend only: a band of it
// reads rows of the bands around it. `claimed_halo` is what it tells the
// engine, which may be a lie.
class VerticalSum final : public Operation {
 public:
  static constexpr int kReach = 3;
  explicit VerticalSum(int claimed_halo) : claimed_halo_(claimed_halo) {}
  const char* name() const override { return "vertical sum"; }
  std::vector<PixelFormat> output_formats(PixelFormat in) const override {
    return keep_format_of(in, {PixelFormat::kGRAY8});
  }
  bool mixes_rows(PixelFormat, PixelFormat) const override { return true; }
  int band_halo(PixelFormat, PixelFormat) const override { return claimed_halo_; }
  bool same_as(const Operation&) const override { return false; }
  void enqueue_cuda(const ImageRef&, const ImageRef&, const Workspace&,
                    CUstream_st*) const override {
    throw Error("the vertical sum runs on the cpu backend only");
  }
  void run_reference(const ImageRef& in, const ImageRef& out, const Workspace& w) const override {
    run_reference_rows(in, out, w, 0, in.height);
  }
  void run_reference_rows(const ImageRef& in, const ImageRef& out, const Workspace&, int y0,
                          int y1) const override {
    for (int y = y0; y < y1; ++y)
      for (int x = 0; x < in.width; ++x) {
        unsigned sum = 0;
        for (int dy = -kReach; dy <= kReach; ++dy) {
          const int row = std::min(std::max(y + dy, 0), in.height - 1);
          sum += in.planes[0].data[row * in.planes[0].stride + x];
        }
        out.planes[0].data[y * out.planes[0].stride + x] = static_cast<uint8_t>(sum);
      }
  }

 private:
  int claimed_halo_;
};

// Frames of `op` split into 8 bands under random delays: how many came out
// different from the whole-frame computation.
int banded_mismatches(std::shared_ptr<const Operation> op, int* bands) {
  CpuDeviceOptions options;
  options.max_delay_us = 100;
  options.seed = 7;
  // Uploads that lag behind the kernels: a kernel that does not wait for
  // the rows it reads finds the slot's previous frame there.
  TestDeviceOptions slow_uploads;
  slow_uploads.upload_delay_us = 400;
  std::shared_ptr<Device> device =
      std::make_shared<TestDevice>(make_cpu_device(options), slow_uploads);
  const FrameLayout layout = FrameLayout::packed(PixelFormat::kGRAY8, 32, 64);
  EngineConfig config;
  config.input = config.output = layout;
  config.operation = op;
  config.bands = 8;
  std::mutex mutex;
  int wrong = 0;
  EngineCallbacks callbacks;
  callbacks.on_frame = [&](OutputFrame frame) {
    const uint64_t i = frame.sequence();
    HostFrame input(layout, i);
    std::vector<uint8_t> want(layout.size);
    op->run_reference(input.image, layout.at(want.data()), Workspace{});
    const bool same = std::memcmp(frame.image().planes[0].data, want.data(), layout.size) == 0;
    std::lock_guard<std::mutex> lock(mutex);
    wrong += same ? 0 : 1;
  };
  Engine engine(device, config, callbacks);
  engine.start();
  *bands = engine.bands();
  for (uint64_t i = 0; i < 60; ++i) {
    HostFrame input(layout, i);
    InputFrame in;
    in.image = input.image;
    EXPECT_EQ(engine.submit(std::move(in)), Status::kOk);
  }
  EXPECT_EQ(engine.drain(), Status::kOk);
  engine.stop();
  return wrong;
}

// A band's kernel waits for the upload of the band that holds the last row
// it reads, its halo included: with the halo told, every frame is right;
// with a halo of 0 claimed, kernels read rows of the next band before they
// arrive, and the delays make that show.
TEST(BandTest, AKernelWaitsForTheRowsOfItsHalo) {
  int bands = 0;
  EXPECT_EQ(banded_mismatches(std::make_shared<VerticalSum>(VerticalSum::kReach), &bands), 0);
  EXPECT_EQ(bands, 8);
  EXPECT_GT(banded_mismatches(std::make_shared<VerticalSum>(0), &bands), 0)
      << "an operation that reads 3 rows past its band was right in every frame without waiting "
         "for them";
}

// The host makes a frame's calls band by band: a band's upload, then the
// kernels whose rows are all uploaded by then, each followed by its
// download, so that the first band's download is on its stream long before
// the frame's last calls are made (the download stream carries the whole
// frame after it). Each stream still gets its own calls in band order. A
// kernel with a halo reaching into the next band comes after that band's
// upload.
TEST(BandTest, EachBandsKernelAndDownloadAreEnqueuedBeforeTheNextBandsUpload) {
  struct Case {
    std::shared_ptr<const Operation> op;
    PixelFormat format;
    std::string calls;  // of one frame
  };
  for (const Case& c : {Case{make_operation("copy"), PixelFormat::kRGBA, "UKDUKDUKDUKD"},
                        Case{std::make_shared<VerticalSum>(VerticalSum::kReach),
                             PixelFormat::kGRAY8, "UUKDUKDUKDKD"}}) {
    SCOPED_TRACE(c.op->name());
    auto device = std::make_shared<TestDevice>(make_cpu_device(), TestDeviceOptions{});
    const FrameLayout layout = FrameLayout::packed(c.format, 32, 64);
    EngineConfig config;
    config.input = config.output = layout;
    config.operation = c.op;
    config.bands = 4;
    Engine engine(device, config, EngineCallbacks{});
    engine.start();
    ASSERT_EQ(engine.bands(), 4);
    const std::string before = device->calls();  // start-up's, if any
    constexpr int kFrames = 3;
    for (int i = 0; i < kFrames; ++i) {
      HostFrame input(layout, static_cast<uint64_t>(i));
      InputFrame in;
      in.image = input.image;
      ASSERT_EQ(engine.submit(std::move(in)), Status::kOk);
    }
    EXPECT_EQ(engine.drain(), Status::kOk);
    engine.stop();
    std::string want;
    for (int i = 0; i < kFrames; ++i) want += c.calls;
    EXPECT_EQ(device->calls().substr(before.size()), want);
  }
}

// How many bands an engine runs: as many as asked where the operation, the
// mode and the rows allow, else whole frames; out of range is refused.
TEST(BandTest, BandsAreWhatTheOperationModeAndRowsAllow) {
  std::shared_ptr<Device> device = make_cpu_device();
  auto bands_of = [&](PixelFormat format, int width, int height,
                      std::shared_ptr<const Operation> op, int bands,
                      Mode mode = Mode::kOverlapped) {
    EngineConfig config;
    config.input = config.output = FrameLayout::packed(format, width, height);
    config.operation = std::move(op);
    config.bands = bands;
    config.mode = mode;
    Engine engine(device, config, EngineCallbacks{});
    engine.start();
    return engine.bands();
  };
  EXPECT_EQ(bands_of(PixelFormat::kRGBA, 64, 16, make_operation("copy"), 4), 4);
  EXPECT_EQ(bands_of(PixelFormat::kRGBA, 64, 16, make_operation("copy"), 1), 1);
  EXPECT_EQ(bands_of(PixelFormat::kRGBA, 64, 3, make_operation("invert"), 16), 3);
  // 4:2:0: bands start on even rows, so 17 rows make 8 at most.
  EXPECT_EQ(bands_of(PixelFormat::kNV12, 32, 17, make_operation("invert"), 16), 8);
  EXPECT_EQ(bands_of(PixelFormat::kRGBA, 64, 16, make_operation("copy"), 4, Mode::kSerial), 1);
  KernelParams vertical;
  vertical.set("video-direction", FlipDirection::kVert);
  EXPECT_EQ(bands_of(PixelFormat::kRGBA, 64, 16, make_operation("flip", vertical), 4), 1);
  KernelParams horizontal;
  horizontal.set("video-direction", FlipDirection::kHoriz);
  EXPECT_EQ(bands_of(PixelFormat::kRGBA, 64, 16, make_operation("flip", horizontal), 4), 4);
  for (int bad : {0, 17})
    EXPECT_THROW(bands_of(PixelFormat::kRGBA, 64, 16, make_operation("copy"), bad), Error) << bad;
}

KernelParams scaled(int in_w, int in_h, int out_w, int out_h, int method) {
  KernelParams p;
  p.set("method", method);
  p.sizes = FrameSizes{in_w, in_h, out_w, out_h};
  return p;
}

// Scaling runs in bands of output rows, each band's upload ending where its
// kernel's reads (Operation::band_reads) end, so each band's kernel comes
// right after its own upload: 4 bands of 16 output rows from 128 rows
// (down by 2), 32 (up by 2), 96 (NV12, by 2/3) and, at one height, from a
// window 16 rows down (whose rows a plan cut on output rows would upload
// a band late). And under random delays and uploads slower than the
// kernels, every frame equals the whole-frame computation.
TEST(BandTest, ScaledBandsUploadTheRowsTheirKernelsReadFirst) {
  struct Case {
    PixelFormat format;
    int in_w, in_h, out_w, out_h, method;
    int crop_top = 0;
  };
  for (const Case& c :
       {Case{PixelFormat::kGRAY8, 32, 128, 32, 64, 1}, Case{PixelFormat::kGRAY8, 32, 32, 32, 64, 3},
        Case{PixelFormat::kNV12, 64, 96, 48, 64, 3},
        Case{PixelFormat::kGRAY8, 32, 64, 32, 64, 1, 16}}) {
    SCOPED_TRACE(std::to_string(c.in_h) + " -> " + std::to_string(c.out_h) + " rows, crop-top " +
                 std::to_string(c.crop_top));
    KernelParams params = scaled(c.in_w, c.in_h, c.out_w, c.out_h, c.method);
    params.set("crop-top", c.crop_top);
    const auto op = make_operation("scale", params);
    CpuDeviceOptions options;
    options.max_delay_us = 100;
    options.seed = 11;
    TestDeviceOptions slow_uploads;
    slow_uploads.upload_delay_us = 400;
    auto device = std::make_shared<TestDevice>(make_cpu_device(options), slow_uploads);
    EngineConfig config;
    config.input = FrameLayout::packed(c.format, c.in_w, c.in_h);
    config.output = FrameLayout::packed(c.format, c.out_w, c.out_h);
    config.operation = op;
    config.bands = 4;
    std::vector<uint8_t> tables(op->workspace_bytes());
    const Workspace workspace{tables.data(), tables.size()};
    op->prepare_reference(workspace);
    std::mutex mutex;
    int wrong = 0;
    EngineCallbacks callbacks;
    callbacks.on_frame = [&](OutputFrame frame) {
      HostFrame input(config.input, frame.sequence());
      std::vector<uint8_t> want(config.output.size);
      op->run_reference(input.image, config.output.at(want.data()), workspace);
      const ImageRef got = frame.image(), expected = config.output.at(want.data());
      bool same = true;
      for (int p = 0; p < config.output.n_planes(); ++p)
        for (size_t r = 0; r < config.output.rows(p); ++r)
          same = same && std::memcmp(got.planes[p].data + r * got.planes[p].stride,
                                     expected.planes[p].data + r * expected.planes[p].stride,
                                     config.output.row_bytes(p)) == 0;
      std::lock_guard<std::mutex> lock(mutex);
      wrong += same ? 0 : 1;
    };
    Engine engine(device, config, callbacks);
    engine.start();
    ASSERT_EQ(engine.bands(), 4);
    const std::string before = device->calls();
    constexpr int kFrames = 20;
    for (int i = 0; i < kFrames; ++i) {
      HostFrame input(config.input, static_cast<uint64_t>(i));
      InputFrame in;
      in.image = input.image;
      ASSERT_EQ(engine.submit(std::move(in)), Status::kOk);
    }
    EXPECT_EQ(engine.drain(), Status::kOk);
    engine.stop();
    EXPECT_EQ(wrong, 0);
    // A copy per plane.
    const std::string planes(static_cast<size_t>(config.input.n_planes()), 'U');
    const std::string band = planes + "K" + std::string(planes.size(), 'D');
    std::string want;
    for (int i = 0; i < kFrames * 4; ++i) want += band;
    EXPECT_EQ(device->calls().substr(before.size()), want);
  }
}

// Bands for frames that come one at a time: about one per kLiveBandBytes of
// the larger of input and output pixels (row padding left out), 4 to 8.
TEST(BandTest, LiveBandsFollowTheLargerFramesPixels) {
  auto live = [](PixelFormat in, PixelFormat out, int width, int height) {
    return live_bands(FrameLayout::packed(in, width, height),
                      FrameLayout::packed(out, width, height));
  };
  EXPECT_EQ(live(PixelFormat::kRGBA, PixelFormat::kRGBA, 1920, 1080), 4);  // 8.3 MB
  EXPECT_EQ(live(PixelFormat::kRGBA, PixelFormat::kRGBA, 2560, 1440), 4);  // 14.7 MB
  EXPECT_EQ(live(PixelFormat::kRGB, PixelFormat::kRGB, 3840, 2160), 6);    // 24.9 MB
  EXPECT_EQ(live(PixelFormat::kRGBA, PixelFormat::kRGBA, 3840, 2160), 8);  // 33.2 MB
  EXPECT_EQ(live(PixelFormat::kRGBA, PixelFormat::kRGBA, 5120, 2880), 8);  // 59 MB
  EXPECT_EQ(live(PixelFormat::kRGBA, PixelFormat::kRGBA, 320, 240), 4);
  // The larger side counts: 4K NV12 (12.4 MB) alone makes 4, into RGBA 8.
  EXPECT_EQ(live(PixelFormat::kNV12, PixelFormat::kNV12, 3840, 2160), 4);
  EXPECT_EQ(live(PixelFormat::kNV12, PixelFormat::kRGBA, 3840, 2160), 8);
  EXPECT_EQ(live(PixelFormat::kRGBA, PixelFormat::kNV12, 3840, 2160), 8);
  // Row padding is not pixels: 4K RGB rows (11520 bytes) padded to 16384
  // take 35.4 MB, which would make 8.
  FrameLayout padded = FrameLayout::packed(PixelFormat::kRGB, 3840, 2160, 16384);
  ASSERT_EQ(padded.stride[0], 16384u);
  EXPECT_EQ(live_bands(padded, padded), 6);
}

}  // namespace
}  // namespace cudaoverlap::test
