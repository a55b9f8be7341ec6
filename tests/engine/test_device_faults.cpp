// MultiEngine when something goes wrong or changes: a device that fails or
// cannot start, an operation's own failure, a kernel replaced while
// running, and what on_frame may ask (multi_engine_test_util.h).
#include <dlfcn.h>

#include <algorithm>
#include <future>
#include <set>
#include <vector>

#include "kernels/application/application.h"
#include "multi_engine_test_util.h"

namespace cudaoverlap::test {
namespace {

using namespace std::chrono_literals;

// ---------------------------------------------------------------------------
// A failing device

struct FaultCase {
  int devices;
  int failing;  // which device fails
  FaultStage stage;
  const char* name;
  const char* word;  // the warning names what failed
};

void PrintTo(const FaultCase& c, std::ostream* os) {
  *os << c.devices << " devices, device " << c.failing << " fails in its " << c.name;
}

class MultiFaultTest : public ::testing::TestWithParam<FaultCase> {};

TEST_P(MultiFaultTest, TheStreamGoesOnWithoutAFailedDevice) {
  const FaultCase& c = GetParam();
  constexpr int kRing = 3;
  constexpr int kFrames = 150;
  constexpr uint64_t kFaultFrame = 5;  // in the failing device's own order
  Watchdog watchdog;
  LiveCounter users;
  {
    MultiConsumer consumer("invert", c.devices, 30, 29);
    auto specs = equal_devices(c.devices, 100, 50 + static_cast<int>(c.stage));
    specs[c.failing].test.fault = c.stage;
    specs[c.failing].test.fault_frame = kFaultFrame;
    MultiEngine engine(make_devices(specs), make_config(kRing, "invert"), consumer.callbacks());
    engine.start();
    watchdog.stage("submitting");
    for (int i = 0; i < kFrames; ++i)
      ASSERT_EQ(submit_frame(engine, i, users, &consumer), Status::kOk) << "frame " << i;
    ASSERT_EQ(drain_within(engine), Status::kOk);
    ASSERT_TRUE(consumer.settle());
    ASSERT_TRUE(consumer.wait_for_warnings(1)) << "no warning";
    const auto warnings = consumer.warnings();
    ASSERT_EQ(warnings.size(), 1u) << "one warning, for one failure";
    EXPECT_NE(warnings[0].find(c.word), std::string::npos) << warnings[0];
    EXPECT_NE(warnings[0].find("device " + std::to_string(c.failing)), std::string::npos)
        << "the warning names the device: " << warnings[0];
    EXPECT_EQ(consumer.warned_devices(), std::vector<int>{c.failing});
    EXPECT_EQ(consumer.errors(), std::vector<std::string>{}) << "the stream went on";
    EXPECT_EQ(engine.error(), "");
    EXPECT_EQ(engine.live_devices(), c.devices - 1);
    for (int d = 0; d < c.devices; ++d) EXPECT_EQ(engine.live(d), d != c.failing) << "device " << d;

    // Frames lost: only some submitted before the warning, at most one ring.
    const uint64_t before_warning = consumer.submits_at_warning()[0];
    const auto deliveries = consumer.deliveries();
    std::set<uint64_t> delivered;
    for (const Delivery& d : deliveries) delivered.insert(d.id);
    EXPECT_EQ(delivered.size(), deliveries.size()) << "a frame delivered twice";
    std::vector<uint64_t> lost;
    for (uint64_t i = 0; i < kFrames; ++i)
      if (!delivered.count(i)) lost.push_back(i);
    EXPECT_LE(lost.size(), static_cast<size_t>(kRing)) << "more frames lost than one ring";
    for (uint64_t id : lost)
      EXPECT_LT(id, before_warning) << "frame " << id << ", submitted after the warning, was lost";
    // The warning says how many were lost.
    if (lost.empty()) {
      EXPECT_LE(stated_lost(warnings[0]), 0) << "none was lost: " << warnings[0];
    } else {
      EXPECT_EQ(stated_lost(warnings[0]), static_cast<int>(lost.size()))
          << "lost: " << ::testing::PrintToString(lost) << "; " << warnings[0];
    }
    // The frame that failed, and every later one on that device, never
    // comes out of it: it hands out at most the frames before. (The frame
    // itself may come out of another device: when the failure shows while
    // its own submit() is still under way, submit() gives it to another
    // device, and nothing is lost. Under ThreadSanitizer that happened.)
    size_t from_failing = 0;
    for (const Delivery& d : deliveries) from_failing += d.device == c.failing ? 1 : 0;
    EXPECT_LE(from_failing, kFaultFrame)
        << "the frame whose " << c.name << " failed cannot have been delivered by its device";
    // After the warning, the failed device computes nothing more.
    for (const Delivery& d : deliveries) {
      if (d.id >= before_warning) {
        EXPECT_NE(d.device, c.failing) << "frame " << d.id;
      }
    }
    EXPECT_EQ(consumer.mismatches(), std::vector<std::string>{});

    // The stream goes on: more frames, all delivered.
    const size_t so_far = deliveries.size();
    for (int i = 0; i < 30; ++i)
      ASSERT_EQ(submit_frame(engine, 1000 + i, users, &consumer), Status::kOk);
    ASSERT_EQ(drain_within(engine), Status::kOk);
    ASSERT_TRUE(consumer.settle());
    const auto all = consumer.deliveries();
    ASSERT_EQ(all.size(), so_far + 30);
    for (int i = 0; i < 30; ++i) EXPECT_EQ(all[so_far + i].id, 1000u + i);
    EXPECT_EQ(consumer.warnings().size(), 1u);
    EXPECT_EQ(consumer.mismatches(), std::vector<std::string>{});
    engine.stop();
  }
  EXPECT_EQ(users.live.load(), 0);
}

std::vector<FaultCase> fault_cases() {
  std::vector<FaultCase> cases;
  const std::pair<int, int> layouts[] = {{2, 1}, {2, 0}, {3, 1}};
  for (const auto& [n, failing] : layouts) {
    cases.push_back({n, failing, FaultStage::kUpload, "upload", "upload"});
    cases.push_back({n, failing, FaultStage::kCompute, "kernel", "kernel"});
    cases.push_back({n, failing, FaultStage::kDownload, "download", "download"});
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Devices, MultiFaultTest, ::testing::ValuesIn(fault_cases()),
                         [](const auto& info) {
                           return std::to_string(info.param.devices) + "_device" +
                                  std::to_string(info.param.failing) + "_" + info.param.name;
                         });

// Submits frames until one is refused (at most 2000), then drains: the
// stream must end in the error state, with on_error called.
void submit_until_error(MultiEngine& engine, MultiConsumer& consumer, LiveCounter& users) {
  Status status = Status::kOk;
  uint64_t submitted = 0;
  for (; submitted < 2000 && status == Status::kOk; ++submitted)
    status = submit_frame(engine, submitted, users, &consumer);
  if (status == Status::kOk) status = drain_within(engine);
  EXPECT_EQ(status, Status::kError) << status_name(status) << " after " << submitted;
  ASSERT_TRUE(consumer.wait_for_error()) << "no on_error";
}

// The error state sticks, the frames delivered before it were intact, and
// on_error was called once.
void expect_error_sticks(MultiEngine& engine, MultiConsumer& consumer, LiveCounter& users) {
  EXPECT_EQ(submit_frame(engine, 5000, users), Status::kError);
  EXPECT_EQ(drain_within(engine), Status::kError);
  ASSERT_TRUE(consumer.settle());
  EXPECT_EQ(consumer.mismatches(), std::vector<std::string>{});
  EXPECT_EQ(consumer.errors().size(), 1u) << "on_error once";
}

// Every device fails (the only one, with one): on_error once, then submit()
// and drain() say kError; nothing hangs.
TEST_P(MultiDevicesTest, WhenEveryDeviceFailsTheErrorIsReportedAndSticks) {
  const int n = GetParam();
  for (FaultStage stage : {FaultStage::kCompute, FaultStage::kUpload}) {
    SCOPED_TRACE(stage == FaultStage::kCompute ? "kernel" : "upload");
    Watchdog watchdog;
    LiveCounter users;
    {
      MultiConsumer consumer("invert", n, 10, 37);
      auto specs = equal_devices(n, 80, 60);
      for (int d = 0; d < n; ++d) {
        specs[d].test.fault = stage;
        specs[d].test.fault_frame = 3 + 3 * static_cast<uint64_t>(d);
      }
      MultiEngine engine(make_devices(specs), make_config(3, "invert"), consumer.callbacks());
      engine.start();
      watchdog.stage("submitting until every device failed");
      ASSERT_NO_FATAL_FAILURE(submit_until_error(engine, consumer, users));
      const auto errors = consumer.errors();
      EXPECT_EQ(errors.size(), 1u) << "on_error once";
      EXPECT_FALSE(engine.error().empty());
      EXPECT_EQ(engine.live_devices(), 0);
      const auto warnings = consumer.warnings();
      // A warning for each device but the last, whose failure is the error.
      EXPECT_EQ(warnings.size(), static_cast<size_t>(n - 1)) << ::testing::PrintToString(warnings);
      ASSERT_NO_FATAL_FAILURE(expect_error_sticks(engine, consumer, users));
      watchdog.stage("stopping");
      engine.stop();
    }
    EXPECT_EQ(users.live.load(), 0);
  }
}

// An application's handler that refuses a frame fails the operation, not
// the device: every device would refuse the same, so the stream ends with
// one error at once, no device is left out, and no frame is lost quietly
// with a device (before: with several devices each refusal took one device
// out with a warning and its frames with it, and only the last one's was an
// error).
TEST_P(MultiDevicesTest, AnOperationsOwnFailureEndsTheStreamAndLeavesNoDeviceOut) {
  const int n = GetParam();
  // Overlapped, the refusal comes from a worker; serial, from within the
  // producer's submit() (as the cuda backend's handler refuses there).
  for (Mode mode : {Mode::kOverlapped, Mode::kSerial}) {
    SCOPED_TRACE(mode == Mode::kSerial ? "serial" : "overlapped");
    Watchdog watchdog;
    LiveCounter users;
    {
      MultiConsumer consumer("copy", n, 10, 41);
      constexpr int kRefused = 6;  // the handler's call that says no
      std::atomic<int> calls{0};
      auto process = std::make_shared<const ApplicationProcess>(
          [&calls](const ImageRef& in, const ImageRef& out, CUstream_st*) {
            if (calls.fetch_add(1) == kRefused) return false;
            for (int p = 0; p < format_info(in.format).n_planes; ++p)
              for (int y = 0; y < static_cast<int>(plane_rows(in.format, p, in.height)); ++y)
                std::memcpy(out.planes[p].data + static_cast<size_t>(y) * out.planes[p].stride,
                            in.planes[p].data + static_cast<size_t>(y) * in.planes[p].stride,
                            plane_row_bytes(in.format, p, in.width));
            return true;
          });
      EngineConfig config = make_config(3, "copy");
      config.mode = mode;
      config.operation = std::make_shared<ApplicationOperation>(process);
      MultiEngine engine(make_devices(equal_devices(n, 80, 70)), config, consumer.callbacks());
      engine.start();
      watchdog.stage("submitting until the handler refused");
      ASSERT_NO_FATAL_FAILURE(submit_until_error(engine, consumer, users));
      const auto errors = consumer.errors();
      ASSERT_EQ(errors.size(), 1u) << "on_error once";
      EXPECT_NE(errors[0].find("did not process the frame"), std::string::npos) << errors[0];
      EXPECT_NE(engine.error().find("did not process the frame"), std::string::npos)
          << engine.error();
      EXPECT_EQ(consumer.warnings(), std::vector<std::string>{}) << "no device left out";
      EXPECT_EQ(engine.live_devices(), n);
      // The handler was not asked again and again, device after device
      // (before: until 2000 frames); the frames already dealt to the others
      // (a ring each, and as many again while the refusal is on its way)
      // may still run.
      EXPECT_LE(calls.load(), kRefused + 1 + 2 * 3 * n);
      ASSERT_NO_FATAL_FAILURE(expect_error_sticks(engine, consumer, users));
      watchdog.stage("stopping");
      engine.stop();
    }
    EXPECT_EQ(users.live.load(), 0);
  }
}

// ---------------------------------------------------------------------------
// replace_operation

// Operations that take only GRAY8: refused for the engines' NV12.
class Gray8Only final : public Operation {
 public:
  const char* name() const override { return "gray8-only"; }
  std::vector<PixelFormat> output_formats(PixelFormat in) const override {
    if (in == PixelFormat::kGRAY8) return {in};
    return {};
  }
  bool mixes_rows(PixelFormat, PixelFormat) const override { return false; }
  bool same_as(const Operation& other) const override { return &other == this; }
  void enqueue_cuda(const ImageRef&, const ImageRef&, const Workspace&,
                    CUstream_st*) const override {
    throw Error("never runs");
  }
  void run_reference(const ImageRef&, const ImageRef&, const Workspace&) const override {
    throw Error("never runs");
  }
};

TEST_P(MultiDevicesTest, AReplacedOperationRunsOnEveryDeviceFromTheNextFrame) {
  const int n = GetParam();
  // Frames 0-99 copy, 100-199 invert, 200-299 copy again.
  auto kernel_of = [](uint64_t id) { return id >= 100 && id < 200 ? "invert" : "copy"; };
  Watchdog watchdog;
  LiveCounter users;
  {
    MultiConsumer consumer(kernel_of, n, 30, 41);
    MultiEngine engine(make_devices(equal_devices(n, 150, 43)), make_config(3, "copy"),
                       consumer.callbacks());
    engine.start();
    for (uint64_t i = 0; i < 300; ++i) {
      if (i == 100) engine.replace_operation(make_operation("invert"));
      if (i == 200) engine.replace_operation(make_operation("copy"));
      if (i == 150) {
        // A refusal changes no device.
        EXPECT_THROW(engine.replace_operation(std::make_shared<Gray8Only>()), Error);
      }
      ASSERT_EQ(submit_frame(engine, i, users), Status::kOk) << "frame " << i;
    }
    ASSERT_EQ(drain_within(engine), Status::kOk);
    ASSERT_TRUE(consumer.settle());
    const auto deliveries = consumer.deliveries();
    ASSERT_EQ(deliveries.size(), 300u);
    EXPECT_EQ(consumer.mismatches(), std::vector<std::string>{});
    // Every device ran each operation.
    for (int part = 0; part < 3; ++part) {
      std::set<int> used;
      for (const Delivery& d : deliveries)
        if (d.id / 100 == static_cast<uint64_t>(part)) used.insert(d.device);
      EXPECT_EQ(used.size(), static_cast<size_t>(n))
          << "frames " << part * 100 << "-" << part * 100 + 99;
    }
  }
  EXPECT_EQ(users.live.load(), 0);
}

// ---------------------------------------------------------------------------
// Callbacks

// Callbacks may ask the MultiEngine about its devices (only stop() and
// destroying it are ruled out): on_frame must not be called in a way that
// keeps such a question waiting. Asked from a thread of its own, so that a
// question that waits for on_frame to return fails the test instead of
// hanging it.
TEST_P(MultiDevicesTest, OnFrameMayAskTheMultiEngineAboutItsDevices) {
  const int n = GetParam();
  Watchdog watchdog;
  LiveCounter users;
  std::mutex mutex;
  std::vector<std::future<int>> unanswered;  // finished after on_frame returned
  std::vector<std::string> problems;
  int asked = 0;
  MultiEngine* asking = nullptr;
  MultiEngineCallbacks cb;
  cb.on_frame = [&](OutputFrame frame) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (frame.sequence() % 10 != 0 || !problems.empty()) return;
      ++asked;
    }
    auto answer = std::async(std::launch::async, [&] {
      return asking->live_devices() + (asking->live(0) ? 0 : 100) +
             static_cast<int>(asking->error().size());
    });
    const bool answered = answer.wait_for(2s) == std::future_status::ready;
    std::lock_guard<std::mutex> lock(mutex);
    if (!answered) {
      problems.push_back("live_devices() asked in on_frame of frame " +
                         std::to_string(frame.sequence()) + " did not return within 2 s");
      unanswered.push_back(std::move(answer));
    } else if (const int got = answer.get(); got != n) {
      problems.push_back("asked in on_frame: " + std::to_string(got));
    }
  };
  {
    MultiEngine engine(make_devices(equal_devices(n, 50, 61)), make_config(3, "copy"), cb);
    asking = &engine;
    engine.start();
    for (int i = 0; i < 40; ++i)
      ASSERT_EQ(submit_frame(engine, i, users), Status::kOk) << "frame " << i;
    const Status drained = drain_within(engine);
    {
      // A question that waited is answered once on_frame returned; the
      // MultiEngine must still be there for it.
      std::lock_guard<std::mutex> lock(mutex);
      for (auto& answer : unanswered) answer.wait();
    }
    ASSERT_EQ(drained, Status::kOk);
    engine.stop();
  }
  std::lock_guard<std::mutex> lock(mutex);
  EXPECT_GT(asked, 0);
  EXPECT_EQ(problems, std::vector<std::string>{});
  EXPECT_EQ(users.live.load(), 0);
}

// ---------------------------------------------------------------------------
// start

TEST(MultiEngineTest, ADeviceThatCannotStartIsLeftOutWithAWarning) {
  for (const auto& [n, bad] : {std::pair<int, int>{2, 0}, {2, 1}, {3, 1}}) {
    SCOPED_TRACE("devices " + std::to_string(n) + ", device " + std::to_string(bad) +
                 " cannot start");
    Watchdog watchdog;
    const size_t buffers_before = cpu_live_buffers();
    LiveCounter users;
    {
      MultiConsumer consumer("invert", n, 20, 47);
      auto specs = equal_devices(n, 50, 53);
      specs[bad].memory_limit = 1000;  // far less than one slot
      MultiEngine engine(make_devices(specs), make_config(3, "invert"), consumer.callbacks());
      ASSERT_NO_THROW(engine.start());
      const auto warnings = consumer.warnings();
      ASSERT_EQ(warnings.size(), 1u) << "one warning, from start()";
      EXPECT_NE(warnings[0].find("ring-size 3 needs"), std::string::npos) << warnings[0];
      EXPECT_NE(warnings[0].find("device " + std::to_string(bad)), std::string::npos)
          << "the warning names the device: " << warnings[0];
      EXPECT_EQ(consumer.warned_devices(), std::vector<int>{bad});
      EXPECT_EQ(engine.live_devices(), n - 1);
      EXPECT_FALSE(engine.live(bad));
      for (int i = 0; i < 60; ++i)
        ASSERT_EQ(submit_frame(engine, i, users), Status::kOk) << "frame " << i;
      ASSERT_EQ(drain_within(engine), Status::kOk);
      ASSERT_TRUE(consumer.settle());
      const auto deliveries = consumer.deliveries();
      ASSERT_EQ(deliveries.size(), 60u);
      for (uint64_t i = 0; i < 60; ++i) {
        EXPECT_EQ(deliveries[i].id, i);
        EXPECT_EQ(deliveries[i].sequence, i);
        EXPECT_NE(deliveries[i].device, bad) << "frame " << i;
      }
      EXPECT_EQ(consumer.mismatches(), std::vector<std::string>{});
      EXPECT_EQ(consumer.errors(), std::vector<std::string>{});
      const auto counts = consumer.per_device();
      for (int d = 0; d < n; ++d) {
        if (d != bad) {
          EXPECT_GT(counts[d], 0) << counts_text(counts);
        }
      }
      engine.stop();
    }
    EXPECT_EQ(users.live.load(), 0);
    EXPECT_EQ(cpu_live_buffers(), buffers_before) << "buffers leaked";
  }
}

TEST(MultiEngineTest, WhenNoDeviceCanStartStartThrows) {
  for (int n : {1, 2}) {
    SCOPED_TRACE("devices " + std::to_string(n));
    Watchdog watchdog;
    const size_t buffers_before = cpu_live_buffers();
    // What a plain Engine says about such a device.
    std::string engine_error;
    {
      Engine plain(make_devices({DeviceSpec{0, 1, 1000, {}}})[0], make_config(3, "invert"), {});
      try {
        plain.start();
      } catch (const Error& e) {
        engine_error = e.what();
      }
    }
    ASSERT_NE(engine_error.find("ring-size 3 needs"), std::string::npos) << engine_error;
    {
      MultiConsumer consumer("invert", n, 0, 1);
      std::vector<DeviceSpec> specs(static_cast<size_t>(n), DeviceSpec{0, 1, 1000, {}});
      MultiEngine engine(make_devices(specs), make_config(3, "invert"), consumer.callbacks());
      try {
        engine.start();
        ADD_FAILURE() << "start() returned with no device started";
      } catch (const Error& e) {
        if (n == 1) {
          EXPECT_EQ(std::string(e.what()), engine_error) << "one device: its Error as it was";
        } else {
          EXPECT_NE(std::string(e.what()).find("ring-size 3 needs"), std::string::npos) << e.what();
        }
      }
      EXPECT_EQ(engine.live_devices(), 0);
      engine.stop();  // fine after a failed start()
      engine.stop();
    }
    EXPECT_EQ(cpu_live_buffers(), buffers_before) << "buffers leaked";
  }
}

INSTANTIATE_TEST_SUITE_P(Devices, MultiDevicesTest, ::testing::Values(1, 2, 3),
                         [](const auto& info) { return std::to_string(info.param); });

}  // namespace
}  // namespace cudaoverlap::test
