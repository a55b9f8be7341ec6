// The engine's life around the frames: flush (start unblocks, stop drops and
// resumes), drain, stop and destruction with frames in flight, a failure at
// every stage, and start-up refusals that say what was asked for.
#include <atomic>
#include <cmath>
#include <functional>
#include <future>
#include <limits>
#include <mutex>
#include <thread>
#include <vector>

#include "lifecycle_test_util.h"

namespace cudaoverlap::test {
namespace {

using namespace std::chrono_literals;

class LifecycleTest : public ::testing::TestWithParam<BackendKind> {};

// Event::query, which HostWait::kPoll polls: false while the work it
// captured runs, true once it is done (and for an event never recorded),
// for events of every HostWait; and the failure of that work thrown, as
// synchronize() throws it.
TEST_P(LifecycleTest, AnEventQueryTellsRunningFromDoneAndReportsAFailure) {
  CO_DEVICE_OR_SKIP(device, GetParam());
  device->make_current();
  const FrameLayout layout = FrameLayout::packed(PixelFormat::kGRAY8, 64, 64, 256, 256);
  auto in = device->alloc_device(layout.size), out = device->alloc_device(layout.size);
  for (HostWait wait : {HostWait::kBlock, HostWait::kSpin, HostWait::kPoll}) {
    // The operation first, so that it outlives the stream's work.
    std::promise<void> open;
    std::shared_ptr<const Operation> busy;
    if (GetParam() == BackendKind::kCpu) {
      busy = std::make_shared<GatedOperation>(open.get_future().share());
    } else {
      KernelParams params;
      params.set("synthetic-us", 200000);  // the GPU is busy for 200 ms
      busy = make_operation("synthetic", params);
    }
    auto stream = device->create_stream();
    auto event = device->create_host_event(wait, false);
    EXPECT_TRUE(event->query()) << "an event never recorded counts as done";
    stream->launch(*busy, layout.at(in->data()), layout.at(out->data()), Workspace{});
    stream->record(*event);
    EXPECT_FALSE(event->query()) << "the work was over at once";
    open.set_value();
    event->synchronize();
    EXPECT_TRUE(event->query());
  }
  // Work that fails on the stream (on the cpu backend, kernel=custom, whose
  // CPU reference refuses to run) makes the event after it fail.
  if (GetParam() == BackendKind::kCpu) {
    KernelParams custom;
    custom.custom.source = "__device__ void process(co::Pixel& px, int, int, const Params&) {}";
    // Made before the stream, so that it outlives the stream's work.
    const auto failing = make_operation("custom", custom);
    auto stream = device->create_stream();
    auto event = device->create_host_event(HostWait::kPoll, false);
    stream->launch(*failing, layout.at(in->data()), layout.at(out->data()), Workspace{});
    stream->record(*event);
    EXPECT_THROW(event->synchronize(), Error);
    EXPECT_THROW(event->query(), Error);
  }
}

TEST_P(LifecycleTest, FlushStartUnblocksAWaitingSubmitAndFlushStopResumes) {
  CO_DEVICE_OR_SKIP(device, GetParam());
  LiveCounter users;
  {
    // Hold every frame: with ring 2, the third submit has to wait.
    std::mutex mutex;
    std::vector<OutputFrame> held;
    EngineCallbacks cb;
    cb.on_frame = [&](OutputFrame f) {
      std::lock_guard<std::mutex> lock(mutex);
      held.push_back(std::move(f));
    };
    Engine engine(device, make_config(2), cb);
    engine.start();
    ASSERT_EQ(submit_frame(engine, 0, users), Status::kOk);
    ASSERT_EQ(submit_frame(engine, 1, users), Status::kOk);
    auto waiting = std::async(std::launch::async, [&] { return submit_frame(engine, 2, users); });
    ASSERT_EQ(waiting.wait_for(100ms), std::future_status::timeout);
    engine.flush_start();
    ASSERT_EQ(waiting.wait_for(10s), std::future_status::ready);
    EXPECT_EQ(waiting.get(), Status::kFlushing);
    EXPECT_EQ(submit_frame(engine, 3, users), Status::kFlushing);
    engine.flush_stop();
    {
      std::lock_guard<std::mutex> lock(mutex);
      held.clear();  // downstream lets go of what it had
    }
    // Takes frames again, and they are right.
    for (int i = 10; i < 12; ++i) ASSERT_EQ(submit_frame(engine, i, users), Status::kOk);
    ASSERT_EQ(engine.drain(), Status::kOk);
    {
      std::lock_guard<std::mutex> lock(mutex);
      ASSERT_EQ(held.size(), 2u);
      for (int i = 0; i < 2; ++i) {
        EXPECT_EQ(frame_id(held[i]), 10u + i);
        EXPECT_EQ(check_frame("invert", test_layout(), held[i].image(), 10 + i), "");
      }
      held.clear();
    }
    engine.stop();
  }
  EXPECT_EQ(users.live.load(), 0);
}

TEST_P(LifecycleTest, FlushMidStreamDropsInFlightFramesAndLaterFramesArriveIntact) {
  CO_DEVICE_OR_SKIP(device, GetParam(), 300, 3);
  LiveCounter users;
  {
    CheckingConsumer consumer("invert", test_layout(), 50);
    Engine engine(device, make_config(8), consumer.callbacks());
    engine.start();
    for (int i = 0; i < 40; ++i) ASSERT_EQ(submit_frame(engine, i, users), Status::kOk);
    engine.flush();
    for (int i = 40; i < 80; ++i) ASSERT_EQ(submit_frame(engine, i, users), Status::kOk);
    ASSERT_EQ(engine.drain(), Status::kOk);
    consumer.settle();
    const auto order = consumer.order();
    EXPECT_EQ(consumer.mismatches(), std::vector<std::string>{});
    // Every frame submitted after the flush arrives, in order, after the
    // ones that made it out before.
    ASSERT_GE(order.size(), 40u);
    std::vector<uint64_t> tail(order.end() - 40, order.end());
    for (int i = 0; i < 40; ++i) EXPECT_EQ(tail[i], 40u + i);
    EXPECT_LE(order.size() - 40, 40u);
    engine.stop();
  }
  EXPECT_EQ(users.live.load(), 0);
}

TEST_P(LifecycleTest, DrainDeliversEveryFrameInFlight) {
  CO_DEVICE_OR_SKIP(device, GetParam(), 200, 5);
  LiveCounter users;
  {
    CheckingConsumer consumer("invert", test_layout());
    Engine engine(device, make_config(4), consumer.callbacks());
    engine.start();
    for (int i = 0; i < 25; ++i) ASSERT_EQ(submit_frame(engine, i, users), Status::kOk);
    ASSERT_EQ(engine.drain(), Status::kOk);
    // Nothing to wait for: drain() returned after the last delivery.
    EXPECT_EQ(consumer.order().size(), 25u);
    consumer.settle();
    EXPECT_EQ(consumer.mismatches(), std::vector<std::string>{});
  }
  EXPECT_EQ(users.live.load(), 0);
}

TEST_P(LifecycleTest, StopAndDestructionWithFramesInFlightLoseNothingAndLeakNothing) {
  for (bool call_stop : {true, false}) {
    CO_DEVICE_OR_SKIP(device, GetParam(), 2000, 9);
    const size_t live_before = cpu_live_buffers() + cuda_live_buffers();
    LiveCounter users;
    {
      CheckingConsumer consumer("invert", test_layout());
      Engine engine(device, make_config(8), consumer.callbacks());
      engine.start();
      for (int i = 0; i < 8; ++i) ASSERT_EQ(submit_frame(engine, i, users), Status::kOk);
      if (call_stop) {
        engine.stop();
        engine.stop();  // twice is fine
        EXPECT_EQ(submit_frame(engine, 99, users), Status::kFlushing);
      }
      // else: the destructor stops.
    }
    device.reset();
    EXPECT_EQ(users.live.load(), 0) << "stop=" << call_stop;
    EXPECT_EQ(cpu_live_buffers() + cuda_live_buffers(), live_before) << "stop=" << call_stop;
  }
}

TEST_P(LifecycleTest, AConsumerThatThrowsStopsTheEngineInsteadOfTheProcess) {
  CO_DEVICE_OR_SKIP(device, GetParam());
  LiveCounter users;
  {
    std::mutex mutex;
    std::condition_variable changed;
    std::string reported_error;
    int submitted = 0;
    EngineCallbacks cb;
    // Frame 2's consumer frees its slot, waits until the producer has put
    // frame 3 into that very slot (ring 1), then throws: an engine that read
    // the slot after the callback would blame frame 3.
    cb.on_frame = [&](OutputFrame f) {
      if (f.sequence() != 2) return;
      f.release();
      std::unique_lock<std::mutex> lock(mutex);
      changed.wait_for(lock, 5s, [&] { return submitted >= 4; });
      throw std::runtime_error("downstream blew up");
    };
    cb.on_error = [&](const std::string& message) {
      std::lock_guard<std::mutex> lock(mutex);
      reported_error = message;
      changed.notify_all();
    };
    Engine engine(device, make_config(1), cb);
    engine.start();
    Status status = Status::kOk;
    for (int i = 0; i < 10 && status == Status::kOk; ++i) {
      status = submit_frame(engine, i, users);
      std::lock_guard<std::mutex> lock(mutex);
      if (status == Status::kOk) ++submitted;
      changed.notify_all();
    }
    if (status == Status::kOk) status = engine.drain();
    EXPECT_EQ(status, Status::kError);
    std::unique_lock<std::mutex> lock(mutex);
    ASSERT_TRUE(changed.wait_for(lock, 10s, [&] { return !reported_error.empty(); }));
    EXPECT_EQ(reported_error, "the consumer of frame 2 failed: downstream blew up");
    EXPECT_EQ(engine.error(), reported_error);
  }
  EXPECT_EQ(users.live.load(), 0);
}

// ---------------------------------------------------------------------------
// Failures

struct FaultCase {
  BackendKind backend;
  FaultStage stage;
  const char* name;
  const char* word;  // the message names the failed operation
};

class FaultTest : public ::testing::TestWithParam<FaultCase> {};

TEST_P(FaultTest, AFailureStopsTheEngineWithAMessageAndLeaksNothing) {
  const FaultCase& c = GetParam();
  CO_DEVICE_OR_SKIP(device, c.backend, 50, 13);
  const size_t live_before = cpu_live_buffers() + cuda_live_buffers();
  LiveCounter users;
  {
    CheckingConsumer consumer("invert", test_layout());
    EngineConfig config = make_config(3);
    TestDeviceOptions options;
    options.fault = c.stage;
    options.fault_frame = 4;
    options.planes_per_frame = test_layout().n_planes();
    Engine engine(std::make_shared<TestDevice>(device, options), config, consumer.callbacks());
    engine.start();
    Status status = Status::kOk;
    int submitted = 0;
    for (; submitted < 12 && status == Status::kOk; ++submitted)
      status = submit_frame(engine, submitted, users);
    if (status == Status::kOk) status = engine.drain();
    EXPECT_EQ(status, Status::kError);
    const std::string error = engine.error();
    EXPECT_NE(error.find("frame 4"), std::string::npos) << error;
    EXPECT_NE(error.find(c.word), std::string::npos) << error;
    // Frames before the failing one arrive intact; none from it on.
    consumer.settle();
    const auto order = consumer.order();
    EXPECT_LE(order.size(), 4u);
    for (size_t i = 0; i < order.size(); ++i) EXPECT_EQ(order[i], i);
    EXPECT_EQ(consumer.mismatches(), std::vector<std::string>{});
    EXPECT_TRUE(consumer.wait_for_error());
    EXPECT_EQ(consumer.errors(), std::vector<std::string>{error}) << "on_error exactly once";
    // The error state sticks until the engine is replaced.
    EXPECT_EQ(submit_frame(engine, 100, users), Status::kError);
    EXPECT_EQ(engine.drain(), Status::kError);
    engine.stop();
  }
  device.reset();
  EXPECT_EQ(users.live.load(), 0);
  EXPECT_EQ(cpu_live_buffers() + cuda_live_buffers(), live_before);
}

std::vector<FaultCase> fault_cases() {
  std::vector<FaultCase> cases;
  for (BackendKind b : {BackendKind::kCpu, BackendKind::kCuda}) {
    cases.push_back({b, FaultStage::kUpload, "upload", "upload"});
    cases.push_back({b, FaultStage::kCompute, "kernel", "kernel"});
    cases.push_back({b, FaultStage::kDownload, "download", "download"});
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Engine, FaultTest, ::testing::ValuesIn(fault_cases()),
                         [](const auto& info) {
                           return std::string(backend_name(info.param.backend)) + "_" +
                                  info.param.name;
                         });

// ---------------------------------------------------------------------------
// Start-up refusals

std::string start_error(std::shared_ptr<Device> device, const EngineConfig& config) {
  Engine engine(std::move(device), config, {});
  try {
    engine.start();
  } catch (const Error& e) {
    return e.what();
  }
  return {};
}

// `config` running `kernel` made with default parameters changed by `change`.
void with(EngineConfig* config, const char* kernel, void (*change)(KernelParams*)) {
  KernelParams params;
  change(&params);
  config->operation = make_operation(kernel, params);
}

// An owner keeps a running engine only while its configuration is equal
// (the element, on every caps change): every field must take part, or a
// change of that field alone would keep computing with the old one.
TEST(ConfigTest, ConfigsThatDifferInAnyOneFieldAreUnequal) {
  EngineConfig base;
  base.input = FrameLayout::packed(PixelFormat::kNV12, 64, 48);
  base.output = FrameLayout::packed(PixelFormat::kRGBA, 64, 48);
  base.operation = make_operation("convert");
  EXPECT_TRUE(base == EngineConfig(base));
  const std::vector<std::pair<const char*, std::function<void(EngineConfig*)>>> changes = {
      {"ring_size", [](EngineConfig* c) { c->ring_size = 5; }},
      {"mode", [](EngineConfig* c) { c->mode = Mode::kSerial; }},
      {"host_wait", [](EngineConfig* c) { c->host_wait = HostWait::kSpin; }},
      {"bands", [](EngineConfig* c) { c->bands = 4; }},
      {"input format", [](EngineConfig* c) { c->input.format = PixelFormat::kI420; }},
      {"input stride", [](EngineConfig* c) { c->input.stride[1] += 4; }},
      {"input offset", [](EngineConfig* c) { c->input.offset[1] += 64; }},
      {"output size", [](EngineConfig* c) { c->output.size += 1; }},
      {"output width", [](EngineConfig* c) { c->output.width = 66; }},
      {"kernel", [](EngineConfig* c) { c->operation = make_operation("copy"); }},
      {"no operation", [](EngineConfig* c) { c->operation = nullptr; }},
      {"matrix in",
       [](EngineConfig* c) {
         with(c, "convert",
              [](KernelParams* p) { p->convert.in.set_matrix(YuvMatrix::kBT709, 0.2126, 0.0722); });
       }},
      {"range in",
       [](EngineConfig* c) {
         with(c, "convert", [](KernelParams* p) { p->convert.in.full_range = true; });
       }},
      {"matrix out",
       [](EngineConfig* c) {
         with(c, "convert", [](KernelParams* p) {
           p->convert.out.set_matrix(YuvMatrix::kBT709, 0.2126, 0.0722);
         });
       }},
      {"range out",
       [](EngineConfig* c) {
         with(c, "convert", [](KernelParams* p) { p->convert.out.full_range = true; });
       }},
      {"timing", [](EngineConfig* c) { c->timing = true; }},
      {"timing_interval", [](EngineConfig* c) { c->timing_interval = 8; }},
      {"staging_threads", [](EngineConfig* c) { c->staging_threads = 2; }},
      {"pull", [](EngineConfig* c) { c->pull = true; }},
      {"graphs", [](EngineConfig* c) { c->graphs = false; }},
      {"graphs_idle", [](EngineConfig* c) { c->graphs_idle = 2.0; }},
  };
  for (const auto& change : changes) {
    EngineConfig other = base;
    change.second(&other);
    EXPECT_FALSE(base == other) << change.first;
    EXPECT_TRUE(base != other) << change.first;
  }
}

// An operation made for other parameters computes other pixels: every
// parameter of every kernel takes part in its comparison.
// A value of `spec` other than its default.
double another_value(const ParamSpec& spec) {
  if (spec.type == ParamSpec::Type::kEnum) {
    for (const ParamChoice& choice : spec.choices)
      if (choice.value != spec.default_value) return choice.value;
  }
  if (spec.type == ParamSpec::Type::kBool) return spec.default_value != 0 ? 0 : 1;
  return spec.default_value != spec.max ? spec.max : spec.min;
}

TEST(ConfigTest, OperationsWithAnyOtherParameterAreNotTheSame) {
  // Every parameter every operation declares.
  int declared = 0;
  for (const OperationEntry& entry : operation_registry()) {
    for (const ParamSpec& spec : entry.params) {
      KernelParams params;
      params.set(spec.name, another_value(spec));
      EXPECT_TRUE(make_operation(entry.name)->same_as(*make_operation(entry.name))) << entry.name;
      EXPECT_FALSE(make_operation(entry.name)->same_as(*make_operation(entry.name, params)))
          << entry.name << " " << spec.name;
      ++declared;
    }
  }
  EXPECT_GE(declared, 7);  // flip's one, balance's four, blur's, synthetic's
  // convert's matrices and ranges come from the caps, not from properties.
  const std::vector<std::function<void(KernelParams*)>> caps_changes = {
      [](KernelParams* p) { p->convert.in.set_matrix(YuvMatrix::kBT709, 0.2126, 0.0722); },
      [](KernelParams* p) { p->convert.in.full_range = true; },
      [](KernelParams* p) { p->convert.out.set_matrix(YuvMatrix::kBT709, 0.2126, 0.0722); },
      [](KernelParams* p) { p->convert.out.full_range = true; },
  };
  for (const auto& change : caps_changes) {
    KernelParams params;
    change(&params);
    EXPECT_FALSE(make_operation("convert")->same_as(*make_operation("convert", params)));
  }
  // Parameters a kernel does not take do not make it another.
  KernelParams other;
  other.set("sigma", 5.0);
  EXPECT_TRUE(make_operation("copy")->same_as(*make_operation("copy", other)));
  EXPECT_FALSE(make_operation("copy")->same_as(*make_operation("invert")));
}

TEST(StartupTest, RingSizeOutOfRangeIsRefused) {
  for (int ring : {0, 17}) {
    const std::string error = start_error(make_cpu_device(), make_config(ring));
    EXPECT_NE(error.find("ring-size " + std::to_string(ring) + " is out of range: use 1 to 16"),
              std::string::npos)
        << error;
  }
}

// EngineConfig::graphs_idle: a NaN would silently keep every frame off
// graphs, a negative one act as 0: both are refused, like other ranges.
TEST(StartupTest, GraphsIdleOutOfRangeIsRefused) {
  for (const double idle : {-1.0, std::nan(""), std::numeric_limits<double>::infinity()}) {
    EngineConfig config = make_config(3);
    config.graphs_idle = idle;
    const std::string error = start_error(make_cpu_device(), config);
    EXPECT_NE(error.find("graphs_idle"), std::string::npos) << idle << ": " << error;
  }
  for (const double idle : {0.0, 1.0, 4.0}) {
    EngineConfig config = make_config(3);
    config.graphs_idle = idle;
    EXPECT_EQ(start_error(make_cpu_device(), config), "") << idle;
  }
}

TEST(StartupTest, KernelThatCannotMapTheFormatsIsRefused) {
  EngineConfig config = make_config(3, "copy");
  config.output = FrameLayout::packed(PixelFormat::kRGBA, 45, 23);
  const std::string error = start_error(make_cpu_device(), config);
  EXPECT_NE(error.find("kernel 'copy' makes I420 from I420, not RGBA"), std::string::npos) << error;
}

TEST(StartupTest, ABadLayoutIsRefused) {
  EngineConfig config = make_config(3);
  config.output.stride[0] = 3;
  const std::string error = start_error(make_cpu_device(), config);
  EXPECT_NE(error.find("output layout: plane 0 stride 3"), std::string::npos) << error;
}

TEST(StartupTest, TooLittleDeviceMemorySaysHowMuchWasAsked) {
  const size_t before = cpu_live_buffers();
  CpuDeviceOptions options;
  options.memory_limit = 10'000'000;
  EngineConfig config;
  config.operation = make_operation("copy");
  config.ring_size = 8;
  config.input = config.output = FrameLayout::packed(PixelFormat::kRGBA, 1000, 1080);
  const std::string error = start_error(make_cpu_device(options), config);
  // 8 slots x 2 device frames of 1080 rows of 4000 bytes padded to 4096.
  EXPECT_NE(error.find("ring-size 8 needs 70.8 MB of device memory for 1000x1080 frames, but "
                       "the cpu backend has only 10.0 MB free"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("lower ring-size"), std::string::npos) << error;
  EXPECT_EQ(cpu_live_buffers(), before);
}

TEST(StartupTest, TooLittlePinnedMemorySaysHowMuchWasAsked) {
  const size_t before = cpu_live_buffers();
  CpuDeviceOptions options;
  // Room for the device buffers (allocated first) but not for the pinned ones.
  options.memory_limit = 100'000'000;
  EngineConfig config;
  config.operation = make_operation("copy");
  config.ring_size = 8;
  config.input = config.output = FrameLayout::packed(PixelFormat::kRGBA, 1000, 1080);
  const std::string error = start_error(make_cpu_device(options), config);
  // 8 slots x 2 pinned frames of 1080 rows of 4000 bytes.
  EXPECT_NE(error.find("ring-size 8 needs 69.1 MB of pinned host memory"), std::string::npos)
      << error;
  EXPECT_EQ(cpu_live_buffers(), before);
}

TEST(StartupTest, MoreDeviceMemoryThanTheGpuHasIsRefusedBeforeAllocating) {
  std::string why;
  if (cuda_device_count(&why) == 0) GTEST_SKIP() << "no CUDA device: " << why;
  const size_t before = cuda_live_buffers();
  EngineConfig config;
  config.operation = make_operation("copy");
  config.ring_size = 16;
  // 16 slots x 2 x 8.6 GB: far beyond any GPU's memory today.
  config.input = config.output = FrameLayout::packed(PixelFormat::kRGBA, 65536, 32768);
  const std::string error = start_error(make_cuda_device(0), config);
  EXPECT_NE(error.find("ring-size 16 needs"), std::string::npos) << error;
  EXPECT_NE(error.find("of device memory"), std::string::npos) << error;
  EXPECT_EQ(cuda_live_buffers(), before);
}

TEST(StartupTest, AMissingCudaDeviceIsNamed) {
  std::string why;
  if (cuda_device_count(&why) > 0) {
    // With a GPU, an out-of-range id is the refusal to check.
    try {
      make_cuda_device(1000);
      FAIL() << "device 1000 accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("CUDA device 1000 does not exist"), std::string::npos)
          << e.what();
    }
    return;
  }
  try {
    make_cuda_device(0);
    FAIL() << "no device, yet make_cuda_device succeeded";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("no CUDA device: ", 0), 0u) << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, LifecycleTest,
                         ::testing::Values(BackendKind::kCpu, BackendKind::kCuda),
                         [](const auto& info) { return std::string(backend_name(info.param)); });

}  // namespace
}  // namespace cudaoverlap::test
