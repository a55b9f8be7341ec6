// What the single-engine life suites share (test_lifecycle.cpp,
// test_pull.cpp): a small I420 layout, a config, a numbered frame, and an
// operation that runs only when the test lets it.
#pragma once

#include <future>
#include <string>
#include <utility>
#include <vector>

#include "engine_test_util.h"

namespace cudaoverlap::test {

inline FrameLayout test_layout() { return FrameLayout::packed(PixelFormat::kI420, 45, 23); }

inline EngineConfig make_config(int ring, const std::string& kernel = "invert") {
  EngineConfig config;
  config.ring_size = ring;
  config.input = test_layout();
  config.output = test_layout();
  config.operation = make_operation(kernel);
  return config;
}

inline Status submit_frame(Engine& engine, uint64_t frame, LiveCounter& users) {
  HostFrame host(engine.config().input, frame);
  InputFrame in;
  in.image = host.image;
  in.user = users.make(frame);
  return engine.submit(std::move(in));
}

// A CPU-reference operation that runs only when the test lets it: work on
// a cpu stream that is certainly still running when the test looks.
class GatedOperation final : public Operation {
 public:
  explicit GatedOperation(std::shared_future<void> gate) : gate_(std::move(gate)) {}
  const char* name() const override { return "gated"; }
  std::vector<PixelFormat> output_formats(PixelFormat in) const override { return {in}; }
  bool mixes_rows(PixelFormat, PixelFormat) const override { return false; }
  bool same_as(const Operation&) const override { return false; }
  void enqueue_cuda(const ImageRef&, const ImageRef&, const Workspace&,
                    CUstream_st*) const override {
    throw Error("the gated test operation runs on the cpu backend only");
  }
  void run_reference(const ImageRef&, const ImageRef&, const Workspace&) const override {
    gate_.wait();
  }

 private:
  std::shared_future<void> gate_;
};

}  // namespace cudaoverlap::test
