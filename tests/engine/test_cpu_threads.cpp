// CpuDeviceOptions::threads: the cpu backend cuts a launch into bands of
// output rows computed at once on its RowWorkers, where the operation
// computes rows on their own, and the bytes are those of one thread.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "cpu_device.h"
#include "frame_layout.h"
#include "kernels/chain/chain.h"
#include "kernels/operation_registry.h"
#include "row_workers.h"

namespace cudaoverlap::test {
namespace {

TEST(RowWorkers, RunsEveryJobOnceEachOnItsOwnThread) {
  RowWorkers workers(4);
  EXPECT_EQ(workers.threads(), 4);
  for (int jobs = 1; jobs <= 4; ++jobs)
    for (int round = 0; round < 50; ++round) {
      std::mutex mutex;
      std::map<int, std::thread::id> ran;
      workers.run(jobs, [&](int k) {
        std::lock_guard<std::mutex> lock(mutex);
        EXPECT_TRUE(ran.emplace(k, std::this_thread::get_id()).second) << "job " << k << " twice";
      });
      ASSERT_EQ(ran.size(), static_cast<size_t>(jobs));
      EXPECT_EQ(ran[0], std::this_thread::get_id()) << "job 0 is the caller's";
      std::set<std::thread::id> threads;
      for (const auto& [k, id] : ran) threads.insert(id);
      EXPECT_EQ(threads.size(), static_cast<size_t>(jobs));
    }
  EXPECT_THROW(workers.run(5, [](int) {}), Error);
}

TEST(RowWorkers, AJobsExceptionReachesTheCallerAndTheWorkersGoOn) {
  RowWorkers workers(3);
  for (int failing = 0; failing < 3; ++failing) {
    std::atomic<int> ran{0};
    try {
      workers.run(3, [&](int k) {
        ++ran;
        if (k == failing) throw std::runtime_error("band " + std::to_string(k));
      });
      ADD_FAILURE() << "no exception from band " << failing;
    } catch (const std::runtime_error& e) {
      EXPECT_EQ(e.what(), "band " + std::to_string(failing));
    }
    EXPECT_EQ(ran.load(), 3) << "every band ran before run() returned";
  }
  std::atomic<int> after{0};
  workers.run(3, [&](int) { ++after; });
  EXPECT_EQ(after.load(), 3);
}

// invert by rows (halo 0), noting each rows call's band and thread, or
// (halo -1) a whole-frame operation that must never be cut.
class Noting final : public Operation {
 public:
  explicit Noting(int halo) : halo_(halo) {}
  struct Call {
    int y0, y1;
    std::thread::id thread;
  };
  const char* name() const override { return "noting"; }
  std::vector<PixelFormat> output_formats(PixelFormat in) const override { return {in}; }
  bool mixes_rows(PixelFormat, PixelFormat) const override { return false; }
  int band_halo(PixelFormat, PixelFormat) const override { return halo_; }
  void enqueue_cuda(const ImageRef&, const ImageRef&, const Workspace&,
                    CUstream_st*) const override {}
  void run_reference(const ImageRef& in, const ImageRef& out,
                     const Workspace& workspace) const override {
    run_cpu_rows(in, out, workspace, 0, in.height);
  }
  void run_cpu_rows(const ImageRef& in, const ImageRef& out, const Workspace& workspace, int y0,
                    int y1) const override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      calls_.push_back({y0, y1, std::this_thread::get_id()});
    }
    inner_->run_cpu_rows(in, out, workspace, y0, y1);
  }
  std::vector<Call> calls() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return calls_;
  }

 private:
  const int halo_;
  const std::shared_ptr<const Operation> inner_ = make_operation("invert");
  mutable std::mutex mutex_;
  mutable std::vector<Call> calls_;
};

struct Frame {
  Frame(PixelFormat format, int w, int h) : layout(FrameLayout::packed(format, w, h)) {
    bytes.resize(layout.size);
    for (size_t i = 0; i < bytes.size(); ++i)
      bytes[i] = static_cast<uint8_t>((i * 2654435761u) >> 11);
    image = layout.at(bytes.data());
  }
  FrameLayout layout;
  std::vector<uint8_t> bytes;
  ImageRef image;
};

// `op` from `in` into a new frame of `out_format` at w x h on a cpu device
// of `threads`, through a stream as the engine launches it.
std::vector<uint8_t> launch(int threads, const Operation& op, const Frame& in,
                            PixelFormat out_format, int w, int h) {
  CpuDeviceOptions options;
  options.threads = threads;
  const std::unique_ptr<Device> device = make_cpu_device(options);
  const std::unique_ptr<Stream> stream = device->create_stream();
  std::vector<uint8_t> memory(op.workspace_bytes());
  const Workspace workspace{memory.data(), memory.size()};
  Frame out(out_format, w, h);
  stream->prepare(op, workspace);
  stream->launch(op, in.image, out.image, workspace);
  stream->synchronize();
  return out.bytes;
}

TEST(CpuThreads, ALaunchIsCutIntoBandsOnSeveralThreads) {
  const Frame in(PixelFormat::kNV12, 640, 480);
  Noting cut(0);
  const std::vector<uint8_t> bytes = launch(3, cut, in, PixelFormat::kNV12, 640, 480);
  std::vector<Noting::Call> calls = cut.calls();
  ASSERT_EQ(calls.size(), 3u) << "640x480 on three threads: three bands";
  std::sort(calls.begin(), calls.end(), [](const auto& a, const auto& b) { return a.y0 < b.y0; });
  std::set<std::thread::id> threads;
  int next = 0;
  for (const Noting::Call& call : calls) {
    EXPECT_EQ(call.y0, next) << "bands follow one another";
    EXPECT_EQ(call.y0 % 2, 0) << "NV12's bands start on even rows";
    EXPECT_GT(call.y1, call.y0);
    next = call.y1;
    threads.insert(call.thread);
  }
  EXPECT_EQ(next, 480) << "the bands cover the frame";
  EXPECT_EQ(threads.size(), 3u);
  Noting whole(0);
  EXPECT_TRUE(bytes == launch(1, whole, in, PixelFormat::kNV12, 640, 480));
  EXPECT_EQ(whole.calls().size(), 1u) << "one thread: one whole frame";
}

TEST(CpuThreads, FramesThatCannotBeCutRunWhole) {
  // An operation whose rows may read any input row.
  const Frame in(PixelFormat::kRGBA, 640, 480);
  Noting far(-1);
  launch(4, far, in, PixelFormat::kRGBA, 640, 480);
  EXPECT_EQ(far.calls().size(), 1u);
  // A frame too small to be worth waking a thread.
  const Frame small(PixelFormat::kRGBA, 64, 48);
  Noting near(0);
  launch(4, near, small, PixelFormat::kRGBA, 64, 48);
  EXPECT_EQ(near.calls().size(), 1u);
}

// A real operation, counting the bands its rows path was asked for.
class Counting final : public Operation {
 public:
  explicit Counting(std::shared_ptr<const Operation> inner) : inner_(std::move(inner)) {}
  const char* name() const override { return inner_->name(); }
  std::vector<PixelFormat> output_formats(PixelFormat in) const override {
    return inner_->output_formats(in);
  }
  bool mixes_rows(PixelFormat in, PixelFormat out) const override {
    return inner_->mixes_rows(in, out);
  }
  size_t workspace_bytes() const override { return inner_->workspace_bytes(); }
  void prepare_reference(const Workspace& workspace) const override {
    inner_->prepare_reference(workspace);
  }
  void enqueue_cuda(const ImageRef&, const ImageRef&, const Workspace&,
                    CUstream_st*) const override {}
  void run_reference(const ImageRef& in, const ImageRef& out,
                     const Workspace& workspace) const override {
    inner_->run_reference(in, out, workspace);
  }
  void run_cpu(const ImageRef& in, const ImageRef& out, const Workspace& workspace) const override {
    inner_->run_cpu(in, out, workspace);
  }
  int band_halo(PixelFormat in, PixelFormat out) const override {
    return inner_->band_halo(in, out);
  }
  bool bands_by_view(PixelFormat in, PixelFormat out) const override {
    return inner_->bands_by_view(in, out);
  }
  bool cpu_rows_at_once(PixelFormat in, PixelFormat out) const override {
    return inner_->cpu_rows_at_once(in, out);
  }
  void run_cpu_rows(const ImageRef& in, const ImageRef& out, const Workspace& workspace, int y0,
                    int y1) const override {
    ++bands_;
    inner_->run_cpu_rows(in, out, workspace, y0, y1);
  }
  int bands() const { return bands_.load(); }

 private:
  const std::shared_ptr<const Operation> inner_;
  mutable std::atomic<int> bands_{0};
};

// Real operations on three threads make the bytes of one; those whose
// bands can be made apart are cut, the others run whole. A chain of
// several steps (its frames between steps shared) runs whole.
TEST(CpuThreads, OperationsInBandsEqualOneThread) {
  struct Case {
    const char* kernel;
    PixelFormat in, out;
    std::vector<std::pair<const char*, double>> params;
    int out_w, out_h;  // 0: the input's size
    bool cut;
    const char* chain = nullptr;
  };
  using F = PixelFormat;
  constexpr int w = 1282, h = 722;
  const Case cases[] = {
      {"blur", F::kRGBA, F::kRGBA, {{"sigma", 2.0}}, 0, 0, true},
      {"blur", F::kI420, F::kI420, {{"sigma", 3.5}}, 0, 0, true},
      {"blur", F::kYUY2, F::kYUY2, {{"sigma", 1.5}}, 0, 0, true},
      {"scale", F::kRGBA, F::kRGBA, {{"method", 3}}, 900, 500, true},
      {"scale", F::kNV12, F::kNV12, {}, w / 2, h / 2, true},
      {"balance", F::kI420, F::kI420, {{"contrast", 1.2}, {"saturation", 0.8}}, 0, 0, true},
      {"edge", F::kRGBA, F::kRGBA, {}, 0, 0, true},
      {"invert", F::kNV12, F::kNV12, {}, 0, 0, true},
      {"flip", F::kRGBA, F::kRGBA, {{"video-direction", 5}}, 0, 0, false},
      {"convert", F::kNV12, F::kRGBA, {}, 0, 0, true},
      {"convert", F::kI420, F::kBGRx, {}, 0, 0, true},
      {"convert", F::kYUY2, F::kRGBA, {}, 0, 0, true},
      {"convert", F::kRGBA, F::kNV12, {}, 0, 0, false},
      {"convert", F::kNV12, F::kRGBA, {}, 900, 500, false},
      {"chain", F::kRGBA, F::kRGBA, {}, 0, 0, true, "blur sigma=3"},
      {"chain",
       F::kRGBA,
       F::kRGBA,
       {},
       0,
       0,
       false,
       "blur sigma=3 ! invert ! blur sigma=3 ! invert"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.kernel) + " " + format_info(c.in).name + " -> " +
                 format_info(c.out).name + (c.chain ? std::string(" ") + c.chain : ""));
    KernelParams params;
    for (const auto& [name, value] : c.params) params.set(name, value);
    if (c.chain) params.chain = parse_chain(c.chain);
    const int ow = c.out_w > 0 ? c.out_w : w, oh = c.out_h > 0 ? c.out_h : h;
    // scale's output size, and a chain's frames between its steps.
    if (c.out_w > 0 || c.chain) params.sizes = FrameSizes{w, h, ow, oh};
    const Counting op(make_operation(c.kernel, params));
    const Frame in(c.in, w, h);
    // Twice on three threads: a race between bands shows as a difference.
    const std::vector<uint8_t> one = launch(1, op, in, c.out, ow, oh);
    EXPECT_EQ(op.bands(), 0) << "one thread runs the frame whole";
    for (int round = 0; round < 2; ++round) {
      EXPECT_TRUE(launch(3, op, in, c.out, ow, oh) == one) << "round " << round;
    }
    EXPECT_EQ(op.bands(), c.cut ? 6 : 0) << "three bands a frame where it may be cut";
  }
}

}  // namespace
}  // namespace cudaoverlap::test
