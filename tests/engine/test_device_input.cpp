// Frames already in the device's memory (InputFrame::on_device, as
// GStreamer's CUDA memory comes in): copied into the slot on the device,
// never staged through the host, delivered intact and in order, and each
// held until its frame is done.
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <vector>

#include "engine_test_util.h"

namespace cudaoverlap::test {
namespace {

class DeviceInput : public ::testing::TestWithParam<BackendKind> {};

TEST_P(DeviceInput, FramesInDeviceMemoryComeThroughIntactAndAreLetGo) {
  CO_DEVICE_OR_SKIP(device, GetParam(), 100, 3);
  const FrameLayout geometry = FrameLayout::packed(PixelFormat::kNV12, 64, 32);
  // Rows further apart than the slot's, so the copy has to honour strides.
  const FrameLayout in_layout = padded_layout(geometry, 64);
  EngineConfig config;
  config.ring_size = 3;
  config.input = config.output = geometry;
  config.operation = make_operation("invert");

  std::mutex mutex;
  std::condition_variable arrived;
  std::vector<std::string> problems;
  std::vector<uint64_t> order;
  EngineCallbacks callbacks;
  callbacks.on_frame = [&](OutputFrame frame) {
    const std::string problem = check_frame("invert", geometry, frame.image(), frame_id(frame));
    std::lock_guard<std::mutex> lock(mutex);
    if (!problem.empty()) problems.push_back(problem);
    order.push_back(frame_id(frame));
    arrived.notify_all();
  };
  callbacks.on_error = [&](const std::string& message) {
    std::lock_guard<std::mutex> lock(mutex);
    problems.push_back(message);
    arrived.notify_all();
  };

  constexpr uint64_t kFrames = 40;
  std::atomic<int> held{0};
  {
    Engine engine(device, config, callbacks);
    engine.start();
    device->make_current();
    auto stream = device->create_stream();
    for (uint64_t i = 0; i < kFrames; ++i) {
      HostFrame host(in_layout, i);  // the pattern, in pageable memory
      std::shared_ptr<Buffer> memory = device->alloc_device(in_layout.size);
      const ImageRef on_device = in_layout.at(memory->data());
      for (int p = 0; p < in_layout.n_planes(); ++p)
        stream->copy_2d(on_device.planes[p].data, on_device.planes[p].stride,
                        host.image.planes[p].data, host.image.planes[p].stride,
                        in_layout.row_bytes(p), in_layout.rows(p), CopyKind::kHostToDevice);
      stream->synchronize();
      InputFrame in;
      in.image = on_device;
      in.on_device = true;
      ++held;
      in.keep_alive = std::shared_ptr<void>(memory.get(), [memory, &held](void*) { --held; });
      in.user = numbered(i);
      ASSERT_EQ(engine.submit(std::move(in)), Status::kOk) << "frame " << i << ": "
                                                           << engine.error();
    }
    ASSERT_EQ(engine.drain(), Status::kOk) << engine.error();
    std::unique_lock<std::mutex> lock(mutex);
    ASSERT_TRUE(arrived.wait_for(lock, std::chrono::seconds(20),
                                 [&] { return order.size() == kFrames || !problems.empty(); }));
  }
  EXPECT_EQ(problems, std::vector<std::string>{});
  ASSERT_EQ(order.size(), kFrames);
  for (uint64_t i = 0; i < kFrames; ++i) EXPECT_EQ(order[i], i);
  EXPECT_EQ(held.load(), 0) << "device frames still held after every frame was delivered";
}

INSTANTIATE_TEST_SUITE_P(Backends, DeviceInput,
                         ::testing::Values(BackendKind::kCpu, BackendKind::kCuda),
                         [](const auto& info) { return std::string(backend_name(info.param)); });

}  // namespace
}  // namespace cudaoverlap::test
