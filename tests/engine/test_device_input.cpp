// Frames already in the device's memory (InputFrame::on_device, as
// GStreamer's CUDA memory comes in): copied into the slot on the device,
// never staged through the host, delivered intact and in order, and each
// held until its frame is done. And output into device memory the caller
// gives (InputFrame::destination, as GStreamer's CUDA memory goes out),
// from host or device input.
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <tuple>
#include <vector>

#include "engine_test_util.h"

namespace cudaoverlap::test {
namespace {

// Per backend, device memory with rows on the slot's alignment (read and
// written by the kernel where it is) or off it (copied on the device).
class DeviceInput : public ::testing::TestWithParam<std::tuple<BackendKind, bool>> {
 protected:
  static BackendKind backend() { return std::get<0>(GetParam()); }
  // `geometry`'s rows padded off the alignment by `pad`, or onto it.
  static FrameLayout device_layout(const FrameLayout& geometry, size_t pad) {
    if (!std::get<1>(GetParam())) return padded_layout(geometry, pad);
    FrameLayout layout = geometry;
    size_t at = 0;
    for (int p = 0; p < layout.n_planes(); ++p) {
      layout.offset[p] = at;
      layout.stride[p] = (layout.row_bytes(p) + pad + 255) / 256 * 256;
      at += layout.stride[p] * layout.rows(p);
    }
    layout.size = at;
    return layout;
  }
};

TEST_P(DeviceInput, FramesInDeviceMemoryComeThroughIntactAndAreLetGo) {
  CO_DEVICE_OR_SKIP(device, backend(), 100, 3);
  const FrameLayout geometry = FrameLayout::packed(PixelFormat::kNV12, 64, 32);
  // Rows further apart than the slot's, so the copy has to honour strides.
  const FrameLayout in_layout = device_layout(geometry, 64);
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

// Each frame's output lands in the device memory handed in with it
// (rows further apart than the slot's), OutputFrame::image() is that
// memory, and the slot's pinned output is not used; from pageable host
// input and from device input alike.
TEST_P(DeviceInput, OutputGoesIntoTheDestinationGiven) {
  CO_DEVICE_OR_SKIP(device, backend(), 100, 3);
  const FrameLayout geometry = FrameLayout::packed(PixelFormat::kNV12, 64, 32);
  const FrameLayout out_layout = device_layout(geometry, 96);
  const FrameLayout in_layout = device_layout(geometry, 32);
  EngineConfig config;
  config.ring_size = 3;
  config.input = config.output = geometry;
  config.operation = make_operation("invert");

  std::mutex mutex;
  std::condition_variable arrived;
  std::vector<std::string> problems;
  std::vector<uint64_t> order;
  std::vector<std::shared_ptr<Buffer>> destinations;
  EngineCallbacks callbacks;
  callbacks.on_frame = [&](OutputFrame frame) {
    std::lock_guard<std::mutex> lock(mutex);
    const uint64_t id = frame_id(frame);
    if (id >= destinations.size() || frame.image().planes[0].data != destinations[id]->data())
      problems.push_back("frame " + std::to_string(id) + " is not in its destination");
    order.push_back(id);
    arrived.notify_all();
  };
  callbacks.on_error = [&](const std::string& message) {
    std::lock_guard<std::mutex> lock(mutex);
    problems.push_back(message);
    arrived.notify_all();
  };

  constexpr uint64_t kFrames = 24;
  for (uint64_t i = 0; i < kFrames; ++i) destinations.push_back(device->alloc_device(out_layout.size));
  Engine engine(device, config, callbacks);
  engine.start();
  device->make_current();
  auto stream = device->create_stream();
  std::vector<std::shared_ptr<Buffer>> inputs;
  for (uint64_t i = 0; i < kFrames; ++i) {
    HostFrame host(geometry, i);
    InputFrame in;
    in.image = host.image;
    if (i % 2 == 1) {  // every other frame from device memory
      std::shared_ptr<Buffer> memory = device->alloc_device(in_layout.size);
      in.image = in_layout.at(memory->data());
      for (int p = 0; p < in_layout.n_planes(); ++p)
        stream->copy_2d(in.image.planes[p].data, in.image.planes[p].stride,
                        host.image.planes[p].data, host.image.planes[p].stride,
                        in_layout.row_bytes(p), in_layout.rows(p), CopyKind::kHostToDevice);
      stream->synchronize();
      in.on_device = true;
      in.keep_alive = memory;
    }
    in.destination = out_layout.at(destinations[i]->data());
    in.user = numbered(i);
    ASSERT_EQ(engine.submit(std::move(in)), Status::kOk) << "frame " << i << ": "
                                                         << engine.error();
  }
  ASSERT_EQ(engine.drain(), Status::kOk) << engine.error();
  {
    std::unique_lock<std::mutex> lock(mutex);
    ASSERT_TRUE(arrived.wait_for(lock, std::chrono::seconds(20),
                                 [&] { return order.size() == kFrames || !problems.empty(); }));
  }
  EXPECT_EQ(problems, std::vector<std::string>{});
  ASSERT_EQ(order.size(), kFrames);
  for (uint64_t i = 0; i < kFrames; ++i) {
    EXPECT_EQ(order[i], i);
    std::vector<uint8_t> bytes(out_layout.size);
    stream->copy_2d(bytes.data(), out_layout.size, destinations[i]->data(), out_layout.size,
                    out_layout.size, 1, CopyKind::kDeviceToHost);
    stream->synchronize();
    EXPECT_EQ(check_frame("invert", geometry, out_layout.at(bytes.data()), i), "");
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, DeviceInput,
                         ::testing::Combine(::testing::Values(BackendKind::kCpu,
                                                              BackendKind::kCuda),
                                            ::testing::Bool()),
                         [](const auto& info) {
                           return std::string(backend_name(std::get<0>(info.param))) +
                                  (std::get<1>(info.param) ? "_aligned" : "_unaligned");
                         });

}  // namespace
}  // namespace cudaoverlap::test
