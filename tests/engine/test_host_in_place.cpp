// EngineConfig::host_in_place: on the cpu backend the operation reads each
// frame where the caller's memory holds it and writes the slot's output
// that OutputFrame::image() hands out, nothing copied; each frame's memory
// is held until the operation has read it; frames come out intact and in
// order under random stream delays. Off, or on a CUDA device, frames are
// copied as before.
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <vector>

#include "engine_test_util.h"
#include "kernels/run_reference.h"

namespace cudaoverlap::test {
namespace {

// invert, noting where each frame's first plane was read and written.
class Recording final : public Operation {
 public:
  struct Run {
    const uint8_t* in;
    const uint8_t* out;
  };
  const char* name() const override { return "recording"; }
  std::vector<PixelFormat> output_formats(PixelFormat in) const override {
    return inner_->output_formats(in);
  }
  bool mixes_rows(PixelFormat, PixelFormat) const override { return false; }
  void enqueue_cuda(const ImageRef& in, const ImageRef& out, const Workspace& workspace,
                    CUstream_st* stream) const override {
    note(in, out);
    inner_->enqueue_cuda(in, out, workspace, stream);
  }
  void run_reference(const ImageRef& in, const ImageRef& out,
                     const Workspace& workspace) const override {
    note(in, out);
    if (on_run) on_run(in.planes[0].data);
    inner_->run_cpu(in, out, workspace);
  }
  bool capturable() const override { return false; }  // every frame's call noted
  // Called on the stream's thread before the cpu backend computes a frame.
  std::function<void(const uint8_t* in)> on_run;
  std::vector<Run> runs() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return runs_;
  }

 private:
  void note(const ImageRef& in, const ImageRef& out) const {
    std::lock_guard<std::mutex> lock(mutex_);
    runs_.push_back({in.planes[0].data, out.planes[0].data});
  }
  const std::shared_ptr<const Operation> inner_ = make_operation("invert");
  mutable std::mutex mutex_;
  mutable std::vector<Run> runs_;
};

struct Outcome {
  std::vector<std::string> problems;
  std::vector<const uint8_t*> inputs;   // each frame's input memory, by number
  std::vector<const uint8_t*> outputs;  // OutputFrame::image(), by number
  std::vector<Recording::Run> runs;     // what the operation was handed
  int held_after = 0;                   // inputs still held after the engine stopped
};

Outcome run(BackendKind backend, bool in_place, uint64_t frames, bool* skipped) {
  Outcome outcome;
  std::string why;
  std::shared_ptr<Device> device = make_backend(&why, backend, 200, 5);
  *skipped = device == nullptr;
  if (!device) return outcome;
  const FrameLayout geometry = FrameLayout::packed(PixelFormat::kNV12, 64, 32);
  auto recording = std::make_shared<Recording>();
  EngineConfig config;
  config.ring_size = 3;
  config.input = config.output = geometry;
  config.operation = recording;
  config.host_in_place = in_place;

  std::mutex mutex;
  std::condition_variable arrived;
  std::map<uint64_t, std::shared_ptr<std::atomic<bool>>> alive;  // each input's memory held
  outcome.inputs.resize(frames);
  outcome.outputs.resize(frames);
  uint64_t delivered = 0;
  EngineCallbacks callbacks;
  callbacks.on_frame = [&](OutputFrame frame) {
    const uint64_t id = frame_id(frame);
    const std::string problem = check_frame("invert", geometry, frame.image(), id);
    std::lock_guard<std::mutex> lock(mutex);
    if (!problem.empty()) outcome.problems.push_back(problem);
    if (id < frames) outcome.outputs[id] = frame.image().planes[0].data;
    ++delivered;
    arrived.notify_all();
  };
  callbacks.on_error = [&](const std::string& message) {
    std::lock_guard<std::mutex> lock(mutex);
    outcome.problems.push_back(message);
    arrived.notify_all();
  };
  // Every input lives to the end, so that its address names it; its
  // keep_alive only says whether the engine still holds it.
  std::vector<std::unique_ptr<HostFrame>> hosts;
  std::map<const uint8_t*, uint64_t> numbers;
  recording->on_run = [&](const uint8_t* in) {
    std::lock_guard<std::mutex> lock(mutex);
    const auto it = numbers.find(in);
    if (it != numbers.end() && !alive[it->second]->load())
      outcome.problems.push_back("frame " + std::to_string(it->second) +
                                 "'s input let go before the operation read it");
  };
  std::atomic<int> held{0};
  {
    Engine engine(device, config, callbacks);
    engine.start();
    for (uint64_t i = 0; i < frames; ++i) {
      hosts.push_back(std::make_unique<HostFrame>(geometry, i));
      auto flag = std::make_shared<std::atomic<bool>>(true);
      InputFrame in;
      in.image = hosts.back()->image;
      {
        std::lock_guard<std::mutex> lock(mutex);
        alive[i] = flag;
        outcome.inputs[i] = in.image.planes[0].data;
        numbers[in.image.planes[0].data] = i;
      }
      ++held;
      in.keep_alive = std::shared_ptr<void>(flag.get(), [flag, &held](void*) {
        flag->store(false);
        --held;
      });
      in.user = numbered(i);
      if (engine.submit(std::move(in)) != Status::kOk) {
        outcome.problems.push_back("frame " + std::to_string(i) + ": " + engine.error());
        break;
      }
    }
    if (engine.drain() != Status::kOk) outcome.problems.push_back(engine.error());
    std::unique_lock<std::mutex> lock(mutex);
    if (!arrived.wait_for(lock, std::chrono::seconds(30),
                          [&] { return delivered == frames || !outcome.problems.empty(); }))
      outcome.problems.push_back("frames did not all come out");
  }
  outcome.runs = recording->runs();
  outcome.held_after = held.load();
  return outcome;
}

TEST(HostInPlace, TheCpuBackendReadsAndWritesFramesWhereTheyLie) {
  constexpr uint64_t kFrames = 40;
  bool skipped = false;
  const Outcome o = run(BackendKind::kCpu, true, kFrames, &skipped);
  EXPECT_EQ(o.problems, std::vector<std::string>{});
  ASSERT_EQ(o.runs.size(), kFrames);
  for (uint64_t i = 0; i < kFrames; ++i) {
    EXPECT_EQ(o.runs[i].in, o.inputs[i]) << "frame " << i << " was copied before the operation";
    EXPECT_EQ(o.runs[i].out, o.outputs[i]) << "frame " << i << "'s output was copied after it";
  }
  EXPECT_EQ(o.held_after, 0) << "inputs still held after every frame was delivered";
}

TEST(HostInPlace, OffTheCpuBackendCopiesAsBefore) {
  constexpr uint64_t kFrames = 12;
  bool skipped = false;
  const Outcome o = run(BackendKind::kCpu, false, kFrames, &skipped);
  EXPECT_EQ(o.problems, std::vector<std::string>{});
  ASSERT_EQ(o.runs.size(), kFrames);
  for (uint64_t i = 0; i < kFrames; ++i) {
    EXPECT_NE(o.runs[i].in, o.inputs[i]) << "frame " << i;
    EXPECT_NE(o.runs[i].out, o.outputs[i]) << "frame " << i;
  }
}

TEST(HostInPlace, ACudaDeviceIgnoresIt) {
  constexpr uint64_t kFrames = 12;
  bool skipped = false;
  const Outcome o = run(BackendKind::kCuda, true, kFrames, &skipped);
  if (skipped) GTEST_SKIP() << "no CUDA device";
  EXPECT_EQ(o.problems, std::vector<std::string>{});
  ASSERT_EQ(o.runs.size(), kFrames);
  for (uint64_t i = 0; i < kFrames; ++i) EXPECT_NE(o.runs[i].in, o.inputs[i]) << "frame " << i;
  EXPECT_EQ(o.held_after, 0);
}

// Bands on the cpu backend, in place: rows (blur) and views (convert
// 4:2:0 to RGB, whose band views are read from the caller's frame and whose
// scratch rows go to the slot's output) make the reference's frames.
TEST(HostInPlace, BandsMakeTheReferencesFrames) {
  struct Case {
    const char* kernel;
    KernelParams params;
    PixelFormat in, out;
  };
  KernelParams blur;
  blur.set("sigma", 2.0);
  const Case cases[] = {{"blur", blur, PixelFormat::kRGBA, PixelFormat::kRGBA},
                        {"convert", {}, PixelFormat::kNV12, PixelFormat::kRGBA}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.kernel);
    std::string why;
    std::shared_ptr<Device> device = make_backend(&why, BackendKind::kCpu, 100, 9);
    EngineConfig config;
    config.ring_size = 3;
    config.bands = 3;
    config.host_in_place = true;
    config.input = FrameLayout::packed(c.in, 70, 36);
    config.output = FrameLayout::packed(c.out, 70, 36);
    config.operation = make_operation(c.kernel, c.params);
    constexpr uint64_t kFrames = 6;
    std::vector<std::unique_ptr<HostFrame>> inputs;
    std::mutex mutex;
    std::vector<std::string> problems;
    uint64_t delivered = 0;
    std::condition_variable arrived;
    EngineCallbacks callbacks;
    callbacks.on_frame = [&](OutputFrame frame) {
      const uint64_t id = frame_id(frame);
      std::vector<uint8_t> want(config.output.size);
      run_reference(*config.operation, inputs.at(id)->image, config.output.at(want.data()));
      const ImageRef got = frame.image(), expected = config.output.at(want.data());
      std::lock_guard<std::mutex> lock(mutex);
      for (int p = 0; p < config.output.n_planes(); ++p)
        for (size_t y = 0; y < config.output.rows(p); ++y)
          if (std::memcmp(got.planes[p].data + y * got.planes[p].stride,
                          expected.planes[p].data + y * expected.planes[p].stride,
                          config.output.row_bytes(p)) != 0) {
            problems.push_back("frame " + std::to_string(id) + " plane " + std::to_string(p) +
                               " row " + std::to_string(y) + " differs");
            p = config.output.n_planes();
            break;
          }
      ++delivered;
      arrived.notify_all();
    };
    for (uint64_t i = 0; i < kFrames; ++i)
      inputs.push_back(std::make_unique<HostFrame>(config.input, i));
    {
      Engine engine(device, config, callbacks);
      engine.start();
      ASSERT_EQ(engine.bands(), 3);
      for (uint64_t i = 0; i < kFrames; ++i) {
        InputFrame in;
        in.image = inputs[i]->image;
        in.user = numbered(i);
        ASSERT_EQ(engine.submit(std::move(in)), Status::kOk) << engine.error();
      }
      ASSERT_EQ(engine.drain(), Status::kOk) << engine.error();
      std::unique_lock<std::mutex> lock(mutex);
      ASSERT_TRUE(
          arrived.wait_for(lock, std::chrono::seconds(30), [&] { return delivered == kFrames; }));
    }
    EXPECT_EQ(problems, std::vector<std::string>{});
  }
}

}  // namespace
}  // namespace cudaoverlap::test
