// MultiEngine on the machine's CUDA devices: what a machine without a GPU
// is told, and frames through every CUDA device, intact and in order.
#include <dlfcn.h>

#include <algorithm>
#include <future>
#include <set>
#include <vector>

#include "multi_engine_test_util.h"

#ifdef CUDAOVERLAP_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace cudaoverlap::test {
namespace {

using namespace std::chrono_literals;

// ---------------------------------------------------------------------------
// CUDA

// Without a GPU the reason names what is missing (a driver, a GPU) before
// CUDA's own words: CUDA says "driver version is insufficient" when there is
// no driver at all, which sends users to update one. The driver's library
// is looked for here directly, as CUDA looks for it, to know which it is.
TEST(CudaDeviceTest, WithoutADeviceTheReasonNamesWhatIsMissing) {
  std::string why;
  if (cuda_device_count(&why) > 0) GTEST_SKIP() << "this machine has a CUDA device";
  const auto starts_with = [&](const char* prefix) { return why.rfind(prefix, 0) == 0; };
#ifdef CUDAOVERLAP_HAVE_CUDA
  void* driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (driver) {
    dlclose(driver);
    EXPECT_TRUE(starts_with("no NVIDIA GPU found") || starts_with("the NVIDIA driver supports") ||
                starts_with("CUDA cannot be used"))
        << why;
  } else {
    EXPECT_TRUE(starts_with("no NVIDIA driver found (CUDA: ")) << why;
  }
  try {
    make_cuda_device(0);
    FAIL() << "no device, yet make_cuda_device succeeded";
  } catch (const Error& e) {
    const std::string error = e.what();
    EXPECT_NE(error.find(why), std::string::npos) << error;
    EXPECT_NE(error.find("backend=auto"), std::string::npos) << error;
    EXPECT_NE(error.find("falls back to the cpu backend"), std::string::npos) << error;
  }
#else
  EXPECT_TRUE(starts_with("cudaoverlap was built without CUDA support")) << why;
#endif
}

// One device, for sanity: the plain path with one lane.
TEST(MultiEngineCudaTest, OneCudaDeviceDeliversIntactFramesInOrder) {
  std::string why;
  if (cuda_device_count(&why) == 0) GTEST_SKIP() << "no CUDA device: " << why;
  Watchdog watchdog;
  LiveCounter users;
  {
    MultiConsumer consumer("invert", 1, 30, 59);
    MultiEngine engine({make_cuda_device(0)}, make_config(3, "invert"), consumer.callbacks());
    engine.start();
    for (int i = 0; i < 500; ++i)
      ASSERT_EQ(submit_frame(engine, i, users), Status::kOk) << "frame " << i;
    ASSERT_EQ(drain_within(engine), Status::kOk);
    ASSERT_TRUE(consumer.settle());
    const auto deliveries = consumer.deliveries();
    ASSERT_EQ(deliveries.size(), 500u);
    for (uint64_t i = 0; i < 500; ++i) {
      EXPECT_EQ(deliveries[i].id, i);
      EXPECT_EQ(deliveries[i].sequence, i);
      EXPECT_EQ(deliveries[i].device, 0);
    }
    EXPECT_EQ(consumer.mismatches(), std::vector<std::string>{});
    EXPECT_EQ(consumer.warnings(), std::vector<std::string>{});
    EXPECT_EQ(consumer.errors(), std::vector<std::string>{});
  }
  EXPECT_EQ(users.live.load(), 0);
}

#ifdef CUDAOVERLAP_HAVE_CUDA
// A context made elsewhere, as GStreamer's CUDA library makes its shared
// one (cuCtxCreate, not the primary context): the device's memory belongs
// to it and every engine thread works in it, so frames come through intact.
TEST(MultiEngineCudaTest, WorksInAContextMadeElsewhere) {
  std::string why;
  if (cuda_device_count(&why) == 0) GTEST_SKIP() << "no CUDA device: " << why;
  using CtxCreate = int (*)(void** context, unsigned flags, int device);
  using CtxPop = int (*)(void** context);
  using CtxDestroy = int (*)(void* context);
  using PointerAttribute = int (*)(void* data, int attribute, unsigned long long pointer);
  auto driver = [](const char* name, int version = 12000) {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult found{};
    EXPECT_EQ(cudaGetDriverEntryPointByVersion(name, &fn, version, cudaEnableDefault, &found),
              cudaSuccess);
    EXPECT_EQ(found, cudaDriverEntryPointSuccess) << name;
    return fn;
  };
  // cuCtxCreate as of CUDA 11.0: (context, flags, device); later versions
  // take more arguments.
  const auto create = reinterpret_cast<CtxCreate>(driver("cuCtxCreate", 11000));
  const auto pop = reinterpret_cast<CtxPop>(driver("cuCtxPopCurrent"));
  const auto destroy = reinterpret_cast<CtxDestroy>(driver("cuCtxDestroy"));
  const auto attribute = reinterpret_cast<PointerAttribute>(driver("cuPointerGetAttribute"));
  ASSERT_TRUE(create && pop && destroy && attribute);
  void* context = nullptr;
  const int created = create(&context, 0, 0);
  ASSERT_EQ(created, 0) << "cuCtxCreate failed";
  void* popped = nullptr;
  ASSERT_EQ(pop(&popped), 0);
  ASSERT_EQ(popped, context);
  void* primary = cuda_retain_primary_context(0);
  cuda_release_primary_context(0);
  ASSERT_NE(context, primary);
  Watchdog watchdog;
  LiveCounter users;
  {
    std::shared_ptr<Device> device = make_cuda_device(0, context, nullptr);
    {
      device->make_current();
      const auto buffer = device->alloc_device(4096);
      void* owner = nullptr;
      constexpr int kPointerContext = 1;  // CU_POINTER_ATTRIBUTE_CONTEXT
      ASSERT_EQ(attribute(&owner, kPointerContext,
                          reinterpret_cast<unsigned long long>(buffer->data())),
                0);
      EXPECT_EQ(owner, context);
    }
    MultiConsumer consumer("invert", 1, 30, 59);
    MultiEngine engine({device}, make_config(3, "invert"), consumer.callbacks());
    engine.start();
    for (int i = 0; i < 200; ++i)
      ASSERT_EQ(submit_frame(engine, i, users), Status::kOk) << "frame " << i;
    ASSERT_EQ(drain_within(engine), Status::kOk);
    ASSERT_TRUE(consumer.settle());
    EXPECT_EQ(consumer.deliveries().size(), 200u);
    EXPECT_EQ(consumer.mismatches(), std::vector<std::string>{});
    EXPECT_EQ(consumer.errors(), std::vector<std::string>{});
  }
  EXPECT_EQ(users.live.load(), 0);
  EXPECT_EQ(destroy(context), 0);
}
#endif

// Frames of a real size, cheap to make and to check: a few base patterns,
// each row stamped with its frame number and row, so a frame, a row or a
// band from any other frame is noticed.
class StampedFrames {
 public:
  explicit StampedFrames(const FrameLayout& layout) : layout_(layout) {
    for (uint64_t k = 0; k < kBases; ++k) {
      bases_.emplace_back(layout.size);
      fill_pattern(layout, layout.at(bases_.back().data()), k);
    }
  }
  static uint64_t stamp(uint64_t id, size_t y) { return id * 0x9E3779B97F4A7C15ull ^ (y + 1); }
  void make(uint64_t id, const ImageRef& image) const {
    const std::vector<uint8_t>& base = bases_[id % kBases];
    std::memcpy(image.planes[0].data, base.data(), layout_.size);
    for (size_t y = 0; y < layout_.rows(0); ++y) {
      const uint64_t s = stamp(id, y);
      std::memcpy(image.planes[0].data + y * image.planes[0].stride, &s, sizeof s);
    }
  }
  // Empty when `image` is frame `id`.
  std::string check(uint64_t id, const ImageRef& image) const {
    const std::vector<uint8_t>& base = bases_[id % kBases];
    const size_t row = layout_.row_bytes(0);
    for (size_t y = 0; y < layout_.rows(0); ++y) {
      const uint8_t* got = image.planes[0].data + y * image.planes[0].stride;
      const uint8_t* want = base.data() + y * layout_.stride[0];
      const uint64_t s = stamp(id, y);
      if (std::memcmp(got, &s, sizeof s) != 0 ||
          std::memcmp(got + sizeof s, want + sizeof s, row - sizeof s) != 0)
        return "frame " + std::to_string(id) + ": row " + std::to_string(y) + " differs";
    }
    return {};
  }

 private:
  static constexpr uint64_t kBases = 17;
  FrameLayout layout_;
  std::vector<std::vector<uint8_t>> bases_;
};

TEST(MultiEngineCudaTest, EveryCudaDeviceTakesPartInTenThousandIntactFramesInOrder) {
  std::string why;
  const int count = cuda_device_count(&why);
  if (count < 2)
    GTEST_SKIP() << "needs at least two CUDA devices; found " << count
                 << (why.empty() ? "" : ": " + why);
  const FrameLayout layout = FrameLayout::packed(PixelFormat::kRGBA, 640, 360);
  const StampedFrames frames(layout);
  constexpr uint64_t kFrames = 10000;
  Watchdog watchdog;
  LiveCounter users;
  std::mutex mutex;
  std::vector<int> per_device(static_cast<size_t>(count), 0);
  std::vector<std::string> problems;
  std::vector<std::string> reports;
  uint64_t delivered = 0;
  int64_t last_sequence = -1;
  MultiEngineCallbacks cb;
  cb.on_frame = [&](OutputFrame f) {
    const uint64_t id = frame_id(f);
    std::string problem = frames.check(id, f.image());
    f.release();
    std::lock_guard<std::mutex> lock(mutex);
    if (problem.empty() && id != delivered)
      problem = "frame " + std::to_string(id) + " arrived as delivery " + std::to_string(delivered);
    if (problem.empty() && static_cast<int64_t>(f.sequence()) <= last_sequence)
      problem =
          "sequence " + std::to_string(f.sequence()) + " after " + std::to_string(last_sequence);
    if (problem.empty() && (f.device() < 0 || f.device() >= count))
      problem = "device " + std::to_string(f.device());
    if (!problem.empty() && problems.size() < 8) problems.push_back(problem);
    if (f.device() >= 0 && f.device() < count) ++per_device[static_cast<size_t>(f.device())];
    last_sequence = static_cast<int64_t>(f.sequence());
    ++delivered;
  };
  cb.on_warning = [&](int, const std::string& m) {
    std::lock_guard<std::mutex> lock(mutex);
    reports.push_back("warning: " + m);
  };
  cb.on_error = [&](const std::string& m) {
    std::lock_guard<std::mutex> lock(mutex);
    reports.push_back("error: " + m);
  };
  {
    std::vector<std::shared_ptr<Device>> devices;
    for (int i = 0; i < count; ++i) devices.push_back(make_cuda_device(i));
    MultiEngine engine(devices, make_config(4, "copy", layout), cb);
    engine.start();
    ASSERT_EQ(engine.live_devices(), count);
    std::vector<uint8_t> host(layout.size);
    const ImageRef image = layout.at(host.data());
    watchdog.stage("submitting");
    for (uint64_t i = 0; i < kFrames; ++i) {
      frames.make(i, image);
      InputFrame in;
      in.image = image;
      in.user = users.make(i);
      ASSERT_EQ(engine.submit(std::move(in)), Status::kOk) << "frame " << i;
    }
    ASSERT_EQ(drain_within(engine), Status::kOk);
    engine.stop();
  }
  std::lock_guard<std::mutex> lock(mutex);
  EXPECT_EQ(delivered, kFrames);
  EXPECT_EQ(problems, std::vector<std::string>{});
  EXPECT_EQ(reports, std::vector<std::string>{});
  for (int d = 0; d < count; ++d) EXPECT_GT(per_device[d], 0) << counts_text(per_device);
  EXPECT_EQ(users.live.load(), 0);
  std::printf("frames per device: %s\n", counts_text(per_device).c_str());
}

}  // namespace
}  // namespace cudaoverlap::test
