// EngineConfig::graphs: a frame submitted while no other is in flight is
// launched as one graph captured from its calls. These tests show that such
// frames come out right from whatever input memory and operation they have
// (a graph captured for other memory or another operation is never run for
// them), in order with frames enqueued call by call around them, and that
// the engine falls back to calls where a capture fails, graphs are off, the
// frame is timed, or the backend has none (cpu). The graph cases run where
// a CUDA device exists.
#include "engine_test_util.h"
#include "kernels/operation_registry.h"

namespace cudaoverlap::test {
namespace {

const FrameLayout kLayout = FrameLayout::packed(PixelFormat::kRGBA, 96, 40);

// Collects what each frame's output is, checked on arrival against the
// kernel `expected(sequence)` names.
struct Outputs {
  explicit Outputs(std::function<std::string(uint64_t)> expected_kernel,
                   const FrameLayout& frame_layout = kLayout)
      : expected(std::move(expected_kernel)), layout(frame_layout) {}
  std::function<std::string(uint64_t)> expected;
  FrameLayout layout;
  std::mutex mutex;
  std::condition_variable arrived;
  std::vector<uint64_t> order;
  std::vector<std::string> problems;
  std::vector<std::string> errors;

  EngineCallbacks callbacks() {
    EngineCallbacks cb;
    cb.on_frame = [this](OutputFrame frame) {
      const std::string problem =
          check_frame(expected(frame.sequence()), layout, frame.image(), frame.sequence());
      const uint64_t sequence = frame.sequence();
      frame.release();
      std::lock_guard<std::mutex> lock(mutex);
      if (!problem.empty() && problems.size() < 5) problems.push_back(problem);
      order.push_back(sequence);
      arrived.notify_all();
    };
    cb.on_error = [this](const std::string& message) {
      std::lock_guard<std::mutex> lock(mutex);
      errors.push_back(message);
      arrived.notify_all();
    };
    return cb;
  }
  bool wait_for(size_t n) {
    std::unique_lock<std::mutex> lock(mutex);
    return arrived.wait_for(lock, std::chrono::seconds(20), [&] { return order.size() >= n; });
  }
};

// Input frames: pattern `sequence` written into one of a pool of pinned
// buffers, taken in turn (as a GStreamer buffer pool's; a buffer is back once its frame's
// upload is done), or into pageable memory.
class Inputs {
 public:
  Inputs(Device& device, const FrameLayout& layout, bool pinned, int buffers = 3)
      : layout_(layout) {
    if (pinned) pool_ = std::make_unique<PinnedPool>(device, layout, buffers);
    for (int b = 0; b < buffers; ++b) ids_.push_back(new_memory_id());
  }
  InputFrame make(uint64_t sequence) {
    InputFrame in;
    in.user = numbered(sequence);
    if (!pool_) {
      auto host = std::make_shared<HostFrame>(layout_, sequence);
      in.image = host->image;
      in.keep_alive = host;
      return in;
    }
    const int b = pool_->acquire();
    in.image = pool_->image(b);
    fill_pattern(layout_, in.image, sequence);
    in.pinned = true;
    in.memory_id = ids_[static_cast<size_t>(b)];
    in.keep_alive = pool_->lease(b);
    return in;
  }

 private:
  FrameLayout layout_;
  std::unique_ptr<PinnedPool> pool_;
  std::vector<uint64_t> ids_;  // InputFrame::memory_id of each buffer
};

struct GraphCase {
  int bands;
  bool pinned;
  std::string kernel;
};

std::string case_name(const ::testing::TestParamInfo<GraphCase>& info) {
  return info.param.kernel + "_bands" + std::to_string(info.param.bands) +
         (info.param.pinned ? "_pinned" : "_pageable");
}

EngineConfig graph_config(const FrameLayout& layout, const std::string& kernel, int bands) {
  EngineConfig config;
  config.input = layout;
  config.output = layout;
  config.operation = make_operation(kernel, KernelParams{});
  config.bands = bands;
  config.graphs = true;
  // Every frame alone is a graph: these tests feed frames one at a time
  // without waiting between them (EngineConfig::graphs_idle has its own).
  config.graphs_idle = 0;
  return config;
}

class GraphTest : public ::testing::TestWithParam<GraphCase> {};

// Every frame alone: each is one graph launch, and each comes out as its
// own input made it, whichever slot and input buffer it met (a slot sees
// every buffer of the pool in turn).
TEST_P(GraphTest, FramesAloneRunAsGraphsFromTheirOwnInput) {
  const GraphCase& c = GetParam();
  CO_DEVICE_OR_SKIP(device, BackendKind::kCuda);
  Outputs outputs([&](uint64_t) { return c.kernel; });
  Inputs inputs(*device, kLayout, c.pinned);
  constexpr int kFrames = 30;
  Engine engine(device, graph_config(kLayout, c.kernel, c.bands), outputs.callbacks());
  engine.start();
  EXPECT_EQ(engine.bands(), c.bands);
  for (int i = 0; i < kFrames; ++i) {
    ASSERT_EQ(engine.submit(inputs.make(i)), Status::kOk);
    ASSERT_TRUE(outputs.wait_for(i + 1)) << "frame " << i << " did not come out";
  }
  EXPECT_EQ(engine.graph_frames(), static_cast<uint64_t>(kFrames));
  engine.stop();
  EXPECT_TRUE(outputs.problems.empty()) << outputs.problems.front();
  EXPECT_TRUE(outputs.errors.empty()) << outputs.errors.front();
}

// Frames alone and bursts in turn: a burst's first frame is a graph, the
// rest are enqueued call by call behind it (its upload after the whole
// graph); every frame right and in order.
TEST_P(GraphTest, GraphFramesAndQueuedFramesKeepTheirOrder) {
  const GraphCase& c = GetParam();
  CO_DEVICE_OR_SKIP(device, BackendKind::kCuda);
  Outputs outputs([&](uint64_t) { return c.kernel; });
  Inputs inputs(*device, kLayout, c.pinned);
  Engine engine(device, graph_config(kLayout, c.kernel, c.bands), outputs.callbacks());
  engine.start();
  uint64_t sequence = 0;
  for (int round = 0; round < 8; ++round) {
    const int burst = round % 2 == 0 ? 1 : 6;
    for (int k = 0; k < burst; ++k) ASSERT_EQ(engine.submit(inputs.make(sequence++)), Status::kOk);
    ASSERT_TRUE(outputs.wait_for(sequence)) << "round " << round;
  }
  const uint64_t graphs = engine.graph_frames();
  engine.stop();
  EXPECT_GE(graphs, 8u);  // every round's first frame at least
  EXPECT_LT(graphs, sequence);
  EXPECT_TRUE(outputs.problems.empty()) << outputs.problems.front();
  for (size_t i = 0; i < outputs.order.size(); ++i) ASSERT_EQ(outputs.order[i], i);
}

// EngineConfig::graphs_idle: a frame alone is a graph only where the engine
// has been idle long enough since the frame before it was done. Fed one at
// a time with a pause of more than twice what each frame took, every frame
// is one (a camera's case); asked for an idle spell no test waits out, only
// the first frame (nothing measured before it) is, and the rest go call by
// call, right and in order.
TEST_P(GraphTest, FramesRunAsGraphsOnlyAfterTheEngineIdledLongEnough) {
  const GraphCase& c = GetParam();
  CO_DEVICE_OR_SKIP(device, BackendKind::kCuda);
  constexpr int kFrames = 12;
  for (const double idle : {1.0, 1e6}) {
    SCOPED_TRACE("graphs_idle " + std::to_string(idle));
    Outputs outputs([&](uint64_t) { return c.kernel; });
    Inputs inputs(*device, kLayout, c.pinned);
    EngineConfig config = graph_config(kLayout, c.kernel, c.bands);
    config.graphs_idle = idle;
    Engine engine(device, config, outputs.callbacks());
    engine.start();
    std::chrono::steady_clock::duration took{};
    for (int i = 0; i < kFrames; ++i) {
      // The engine measures a frame from its enqueueing to when it was
      // found done, within what it takes here from submit() to on_frame.
      if (idle == 1.0) std::this_thread::sleep_for(2 * took + std::chrono::milliseconds(1));
      const auto submitted = std::chrono::steady_clock::now();
      ASSERT_EQ(engine.submit(inputs.make(i)), Status::kOk);
      ASSERT_TRUE(outputs.wait_for(i + 1)) << "frame " << i << " did not come out";
      took = std::chrono::steady_clock::now() - submitted;
    }
    EXPECT_EQ(engine.graph_frames(), idle == 1.0 ? static_cast<uint64_t>(kFrames) : 1u);
    engine.stop();
    EXPECT_TRUE(outputs.problems.empty()) << outputs.problems.front();
    EXPECT_TRUE(outputs.errors.empty()) << outputs.errors.front();
    for (size_t i = 0; i < outputs.order.size(); ++i) ASSERT_EQ(outputs.order[i], i);
  }
}

INSTANTIATE_TEST_SUITE_P(Cuda, GraphTest,
                         ::testing::Values(GraphCase{1, true, "copy"}, GraphCase{1, false, "copy"},
                                           GraphCase{4, true, "invert"},
                                           GraphCase{4, false, "copy"},
                                           GraphCase{1, true, "invert"}),
                         case_name);

// A graph holds its operation: frames after replace_operation run the new
// one, though their slot and input memory have graphs of the old.
TEST(Graphs, ReplacedOperationIsNotRunFromAnOldGraph) {
  CO_DEVICE_OR_SKIP(device, BackendKind::kCuda);
  constexpr uint64_t kSwitch = 12, kFrames = 24;
  Outputs outputs([&](uint64_t sequence) { return sequence < kSwitch ? "copy" : "invert"; });
  Inputs inputs(*device, kLayout, true);
  Engine engine(device, graph_config(kLayout, "copy", 1), outputs.callbacks());
  engine.start();
  for (uint64_t i = 0; i < kFrames; ++i) {
    if (i == kSwitch) engine.replace_operation(make_operation("invert", KernelParams{}));
    ASSERT_EQ(engine.submit(inputs.make(i)), Status::kOk);
    ASSERT_TRUE(outputs.wait_for(i + 1));
  }
  EXPECT_EQ(engine.graph_frames(), kFrames);
  engine.stop();
  EXPECT_TRUE(outputs.problems.empty()) << outputs.problems.front();
}

// A pool of more buffers than a slot keeps graphs for, taken in turn (one
// slot): the first kGraphsPerSlot buffers are captured once and run as
// graphs every time round, the others go call by call; no graph is captured
// anew only to be forgotten before its buffer comes round again.
TEST(Graphs, APoolLargerThanTheCacheIsNotCapturedEveryFrame) {
  CO_DEVICE_OR_SKIP(device, BackendKind::kCuda);
  constexpr int kBuffers = static_cast<int>(kGraphsPerSlot) + 4, kRounds = 3;
  Outputs outputs([](uint64_t) { return "copy"; });
  Inputs inputs(*device, kLayout, true, kBuffers);
  EngineConfig config = graph_config(kLayout, "copy", 1);
  config.ring_size = 1;
  Engine engine(device, config, outputs.callbacks());
  engine.start();
  uint64_t sequence = 0;
  for (int i = 0; i < kBuffers * kRounds; ++i, ++sequence) {
    ASSERT_EQ(engine.submit(inputs.make(sequence)), Status::kOk);
    ASSERT_TRUE(outputs.wait_for(sequence + 1));
  }
  EXPECT_EQ(engine.graph_captures(), kGraphsPerSlot);
  EXPECT_EQ(engine.graph_frames(), kGraphsPerSlot * kRounds);
  engine.stop();
  EXPECT_TRUE(outputs.problems.empty()) << outputs.problems.front();
}

// Upstream's pool replaced by another (its buffers freed): once the old
// buffers' graphs have not run for a while, the new buffers take their
// places and run as graphs.
TEST(Graphs, GraphsOfBuffersNoLongerSeenMakeWayForNewOnes) {
  CO_DEVICE_OR_SKIP(device, BackendKind::kCuda);
  constexpr int kBuffers = static_cast<int>(kGraphsPerSlot);
  Outputs outputs([](uint64_t) { return "copy"; });
  Inputs old_pool(*device, kLayout, true, kBuffers), new_pool(*device, kLayout, true, kBuffers);
  EngineConfig config = graph_config(kLayout, "copy", 1);
  config.ring_size = 1;
  Engine engine(device, config, outputs.callbacks());
  engine.start();
  uint64_t sequence = 0;
  auto run = [&](Inputs& inputs, int frames) {
    for (int i = 0; i < frames; ++i, ++sequence) {
      ASSERT_EQ(engine.submit(inputs.make(sequence)), Status::kOk);
      ASSERT_TRUE(outputs.wait_for(sequence + 1));
    }
  };
  run(old_pool, kBuffers);
  EXPECT_EQ(engine.graph_frames(), kGraphsPerSlot);
  run(new_pool, 8 * kBuffers);  // the old graphs go stale meanwhile
  const uint64_t before = engine.graph_frames();
  run(new_pool, kBuffers);
  EXPECT_EQ(engine.graph_frames() - before, kGraphsPerSlot);
  engine.stop();
  EXPECT_TRUE(outputs.problems.empty()) << outputs.problems.front();
}

// One pinned buffer, its memory made again at the same address (as memory
// freed and allocated or pinned anew): the new memory_id has the frame
// captured again, not launched from the graph of the old pages; a pinned
// frame whose memory is unknown (memory_id 0) goes call by call.
TEST(Graphs, PinnedInputIsKnownByItsMemoryNotItsAddress) {
  CO_DEVICE_OR_SKIP(device, BackendKind::kCuda);
  Outputs outputs([](uint64_t) { return "copy"; });
  PinnedPool pool(*device, kLayout, 1);
  EngineConfig config = graph_config(kLayout, "copy", 1);
  config.ring_size = 1;
  Engine engine(device, config, outputs.callbacks());
  engine.start();
  const uint64_t ids[] = {7, 7, 7, 8, 8, 0, 0, 8};
  uint64_t sequence = 0;
  for (uint64_t id : ids) {
    const int b = pool.acquire();
    InputFrame in;
    in.image = pool.image(b);
    fill_pattern(kLayout, in.image, sequence);
    in.pinned = true;
    in.memory_id = id;
    in.keep_alive = pool.lease(b);
    in.user = numbered(sequence);
    ASSERT_EQ(engine.submit(std::move(in)), Status::kOk);
    ASSERT_TRUE(outputs.wait_for(++sequence));
  }
  EXPECT_EQ(engine.graph_captures(), 2u);  // id 7, then id 8
  EXPECT_EQ(engine.graph_frames(), 6u);    // all but the two of unknown memory
  engine.stop();
  EXPECT_TRUE(outputs.problems.empty()) << outputs.problems.front();
}

// Copy, but its first enqueue throws (as a call that cannot be captured
// fails): the capture is abandoned, the frame enqueued call by call, and
// the operation never captured again.
class FailsOnce final : public Operation {
 public:
  FailsOnce() : copy_(make_operation("copy", KernelParams{})) {}
  const char* name() const override { return "fails-once"; }
  std::vector<PixelFormat> output_formats(PixelFormat in) const override {
    return copy_->output_formats(in);
  }
  bool mixes_rows(PixelFormat in, PixelFormat out) const override {
    return copy_->mixes_rows(in, out);
  }
  bool same_as(const Operation& other) const override { return &other == this; }
  void enqueue_cuda(const ImageRef& in, const ImageRef& out, const Workspace& workspace,
                    CUstream_st* stream) const override {
    if (calls_.fetch_add(1) == 0) throw Error("refused to be captured");
    copy_->enqueue_cuda(in, out, workspace, stream);
  }
  void run_reference(const ImageRef& in, const ImageRef& out,
                     const Workspace& workspace) const override {
    copy_->run_reference(in, out, workspace);
  }
  int calls() const { return calls_.load(); }

 private:
  std::shared_ptr<const Operation> copy_;
  mutable std::atomic<int> calls_{0};
};

TEST(Graphs, FailedCaptureFallsBackToCalls) {
  CO_DEVICE_OR_SKIP(device, BackendKind::kCuda);
  Outputs outputs([](uint64_t) { return "copy"; });
  Inputs inputs(*device, kLayout, true);
  auto op = std::make_shared<FailsOnce>();
  EngineConfig config = graph_config(kLayout, "copy", 1);
  config.operation = op;
  Engine engine(device, config, outputs.callbacks());
  engine.start();
  constexpr uint64_t kFrames = 6;
  for (uint64_t i = 0; i < kFrames; ++i) {
    ASSERT_EQ(engine.submit(inputs.make(i)), Status::kOk) << engine.error();
    ASSERT_TRUE(outputs.wait_for(i + 1));
  }
  EXPECT_EQ(engine.graph_frames(), 0u);
  EXPECT_EQ(op->calls(), static_cast<int>(kFrames) + 1);  // the failed capture's call once
  EXPECT_TRUE(engine.error().empty()) << engine.error();
  engine.stop();
  EXPECT_TRUE(outputs.problems.empty()) << outputs.problems.front();
}

// Where no graph is launched: graphs off, every frame timed, the cpu
// backend. The frames come out right all the same.
struct NoGraphCase {
  const char* name;
  BackendKind backend;
  bool graphs;
  bool timing;
};

class NoGraphTest : public ::testing::TestWithParam<NoGraphCase> {};

TEST_P(NoGraphTest, FramesAloneAreEnqueuedCallByCall) {
  const NoGraphCase& c = GetParam();
  CO_DEVICE_OR_SKIP(device, c.backend);
  Outputs outputs([](uint64_t) { return "invert"; });
  Inputs inputs(*device, kLayout, true);
  EngineConfig config = graph_config(kLayout, "invert", 4);
  config.graphs = c.graphs;
  config.timing = c.timing;
  Engine engine(device, config, outputs.callbacks());
  engine.start();
  constexpr uint64_t kFrames = 10;
  for (uint64_t i = 0; i < kFrames; ++i) {
    ASSERT_EQ(engine.submit(inputs.make(i)), Status::kOk);
    ASSERT_TRUE(outputs.wait_for(i + 1));
  }
  EXPECT_EQ(engine.graph_frames(), 0u);
  engine.stop();
  EXPECT_TRUE(outputs.problems.empty()) << outputs.problems.front();
}

INSTANTIATE_TEST_SUITE_P(
    All, NoGraphTest,
    ::testing::Values(NoGraphCase{"cuda_graphs_off", BackendKind::kCuda, false, false},
                      NoGraphCase{"cuda_timed", BackendKind::kCuda, true, true},
                      NoGraphCase{"cpu", BackendKind::kCpu, true, false}),
    [](const ::testing::TestParamInfo<NoGraphCase>& info) { return info.param.name; });

}  // namespace
}  // namespace cudaoverlap::test
