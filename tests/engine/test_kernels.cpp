// The copy and invert references against a formula written independently
// here (the pattern the engine suites check frames with). GPU output against
// the references, for every kernel, is tests/kernels/test_kernel_gpu.cpp.
#include <cstring>
#include <functional>

#include "engine_test_util.h"
#include "kernels/run_reference.h"

namespace cudaoverlap::test {
namespace {

TEST(ReferenceTest, CopyAndInvertReferencesMatchTheirDefinition) {
  for (PixelFormat f : make_operation("copy")->input_formats())
    for (const char* k : {"copy", "invert"}) {
      HostFrame in(FrameLayout::packed(f, 13, 7), 3);
      const FrameLayout out_layout = FrameLayout::packed(f, 13, 7);
      std::vector<uint8_t> out(out_layout.size);
      run_reference(*make_operation(k), in.image, out_layout.at(out.data()));
      EXPECT_EQ(check_frame(k, out_layout, out_layout.at(out.data()), 3), "")
          << format_info(f).name << " " << k;
    }
}

// Deeper samples: max - v on the sample's own bits (10 of P010's and
// I420_10LE's 16, all 16 of GRAY16), the other bits of the word kept.
TEST(ReferenceTest, InvertTakesMaxMinusValueOnDeepSamples) {
  struct Case {
    PixelFormat format;
    uint16_t in, want;
  };
  for (const Case& c : {Case{PixelFormat::kP010_10LE, 1 << 6, 1022 << 6},
                        Case{PixelFormat::kP010_10LE, (1000 << 6) | 0x15, (23 << 6) | 0x15},
                        Case{PixelFormat::kI420_10LE, 1, 1022},
                        Case{PixelFormat::kI420_10LE, 0xFC00 | 1000, 0xFC00 | 23},
                        Case{PixelFormat::kGRAY16_LE, 1, 65534}}) {
    const FrameLayout layout = FrameLayout::packed(c.format, 2, 2, 2);  // no padding
    std::vector<uint8_t> in(layout.size), out(layout.size);
    for (size_t i = 0; i + 1 < in.size(); i += 2) {
      in[i] = static_cast<uint8_t>(c.in);
      in[i + 1] = static_cast<uint8_t>(c.in >> 8);
    }
    run_reference(*make_operation("invert"), layout.at(in.data()), layout.at(out.data()));
    for (size_t i = 0; i + 1 < out.size(); i += 2)
      EXPECT_EQ(out[i] | (out[i + 1] << 8), c.want) << format_info(c.format).name << " " << c.in;
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

// Runs `frames` patterned frames through an engine of `config` on
// `device`, calling `before(engine, i)` before submitting frame i, and
// returns what `check(i, image)` found wrong with the frames delivered
// (and any frame not delivered).
std::vector<std::string> run_swapping(
    const std::shared_ptr<Device>& device, const EngineConfig& config, uint64_t frames,
    const std::function<void(Engine&, uint64_t)>& before,
    const std::function<std::string(uint64_t, const ImageRef&)>& check) {
  std::mutex mutex;
  std::condition_variable arrived;
  std::vector<std::string> problems;
  uint64_t delivered = 0;
  EngineCallbacks callbacks;
  callbacks.on_frame = [&](OutputFrame frame) {
    const uint64_t i = frame.sequence();
    const std::string problem = check(i, frame.image());
    std::lock_guard<std::mutex> lock(mutex);
    if (!problem.empty()) problems.push_back("frame " + std::to_string(i) + ": " + problem);
    ++delivered;
    arrived.notify_all();
  };
  Engine engine(device, config, callbacks);
  engine.start();
  for (uint64_t i = 0; i < frames; ++i) {
    before(engine, i);
    HostFrame host(config.input, i);
    InputFrame in;
    in.image = host.image;
    if (engine.submit(std::move(in)) != Status::kOk)
      return {"submit of frame " + std::to_string(i) + ": " + engine.error()};
  }
  if (engine.drain() != Status::kOk) return {"drain: " + engine.error()};
  std::unique_lock<std::mutex> lock(mutex);
  arrived.wait_for(lock, std::chrono::seconds(10), [&] { return delivered == frames; });
  if (delivered != frames)
    problems.push_back(std::to_string(frames - delivered) + " frames not delivered");
  return problems;
}

// Engine::replace_operation between submits, twice: frames before the first
// swap are copied, frames between the swaps inverted, frames after copied
// again, with the cpu backend's random delays keeping several of each in
// flight at each swap (and the replaced operations' last references in the
// slots of frames still running).
TEST(ReplaceOperation, FramesSubmittedAfterTheSwapRunTheNewKernelAndNoOthers) {
  CO_DEVICE_OR_SKIP(device, BackendKind::kCpu, 200, 5);
  const FrameLayout layout = FrameLayout::packed(PixelFormat::kNV12, 64, 32);
  EngineConfig config;
  config.ring_size = 4;
  config.input = config.output = layout;
  config.operation = make_operation("copy");
  constexpr uint64_t kFrames = 90, kSwapAt = 30, kSwapBackAt = 60;
  std::shared_ptr<const Operation> last;
  EXPECT_EQ(run_swapping(
                device, config, kFrames,
                [&](Engine& engine, uint64_t i) {
                  if (i == kSwapAt) engine.replace_operation(make_operation("invert"));
                  if (i == kSwapBackAt) engine.replace_operation(make_operation("copy"));
                  last = engine.config().operation;
                },
                [&](uint64_t i, const ImageRef& image) {
                  return check_frame(i >= kSwapAt && i < kSwapBackAt ? "invert" : "copy", layout,
                                     image, i);
                }),
            std::vector<std::string>{});
  EXPECT_TRUE(last->same_as(*make_operation("copy")));
}

// The same on frames split into bands, from copy (no halo) to blur (rows
// above and below each band): frames after the swap wait for the uploads
// of the rows their bands reach and equal the whole-frame blur, so the
// engine takes the new operation's halo, not the old one's.
TEST(ReplaceOperation, OnBandsTheNewKernelsHaloIsWaitedFor) {
  CO_DEVICE_OR_SKIP(cpu, BackendKind::kCpu, 0, 9);
  const FrameLayout layout = FrameLayout::packed(PixelFormat::kNV12, 48, 64);
  // Uploads lag behind the kernels that wait for them: a band's kernel
  // that did not wait for the next band's upload would read its rows
  // before they arrive.
  TestDeviceOptions options;
  options.planes_per_frame = layout.n_planes();
  options.upload_delay_us = 2000;
  const auto device = std::make_shared<TestDevice>(cpu, options);
  EngineConfig config;
  config.ring_size = 4;
  config.bands = 4;
  config.input = config.output = layout;
  config.operation = make_operation("copy");
  KernelParams params;
  params.set("sigma", 3.0);
  const std::shared_ptr<const Operation> blur = make_operation("blur", params);
  ASSERT_GT(blur->band_halo(layout.format, layout.format), 0);
  constexpr uint64_t kFrames = 24, kSwapAt = 8;
  int bands = 0;
  EXPECT_EQ(run_swapping(
                device, config, kFrames,
                [&](Engine& engine, uint64_t i) {
                  bands = engine.bands();
                  if (i == kSwapAt) engine.replace_operation(blur);
                },
                [&](uint64_t i, const ImageRef& image) -> std::string {
                  if (i < kSwapAt) return check_frame("copy", layout, image, i);
                  const HostFrame in(layout, i);
                  std::vector<uint8_t> want(layout.size);
                  run_reference(*blur, in.image, layout.at(want.data()));
                  for (int p = 0; p < layout.n_planes(); ++p)
                    for (size_t y = 0; y < layout.rows(p); ++y)
                      if (std::memcmp(image.planes[p].data + y * image.planes[p].stride,
                                      want.data() + layout.offset[p] + y * layout.stride[p],
                                      layout.row_bytes(p)) != 0)
                        return "plane " + std::to_string(p) + " row " + std::to_string(y) +
                               " differs";
                  return {};
                }),
            std::vector<std::string>{});
  EXPECT_EQ(bands, 4);
}

TEST(ReplaceOperation, AnOperationTheEngineCannotTakeLeavesItUnchanged) {
  CO_DEVICE_OR_SKIP(device, BackendKind::kCpu);
  EngineConfig config;
  config.input = config.output = FrameLayout::packed(PixelFormat::kRGBA, 64, 32);
  config.operation = make_operation("copy");
  Engine engine(device, config, {});
  engine.start();
  // Its output would be 32x64; and balance keeps its tables in a workspace.
  KernelParams params;
  params.set("video-direction", FlipDirection::k90R);
  params.set("brightness", 0.2);
  EXPECT_THROW(engine.replace_operation(make_operation("flip", params)), Error);
  ASSERT_GT(make_operation("balance", params)->workspace_bytes(), 0u);
  EXPECT_THROW(engine.replace_operation(make_operation("balance", params)), Error);
  EXPECT_TRUE(engine.config().operation->same_as(*make_operation("copy")));
}

}  // namespace
}  // namespace cudaoverlap::test
