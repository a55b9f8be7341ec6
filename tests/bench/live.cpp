// --live: frames paced as a live source sends them, one at a time; where
// each frame's time goes, and the host's CPU time per frame.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "bench.h"
#include "kernels/operation_registry.h"

namespace cudaoverlap::bench {
namespace {

// The engine, frames submitted at `fps` from pinned memory, timing on.
LiveResult live_engine(const std::shared_ptr<Device>& device, const Options& opt, const Size& size,
                       HostWait wait, int fps, int bands) {
  const FrameLayout layout = FrameLayout::packed(PixelFormat::kRGBA, size.width, size.height);
  InputPool pool(*device, layout, opt.ring + 2, true);
  EngineConfig config;
  config.ring_size = opt.ring;
  config.input = config.output = layout;
  config.operation = make_operation("copy");
  config.timing = true;
  config.host_wait = wait;
  config.bands = bands;
  const int skip = std::min(opt.warmup, opt.live_frames / 4);
  std::mutex mutex;
  std::vector<FrameTiming> timings;
  bool ok = true;
  EngineCallbacks callbacks;
  callbacks.on_frame = [&](OutputFrame frame) {
    bool same = true;
    if (frame.sequence() % 50 == 0) {
      const int input = input_of(frame);
      same = std::memcmp(frame.image().planes[0].data, pool.data(input), layout.size) == 0;
    }
    std::lock_guard<std::mutex> lock(mutex);
    ok = ok && same;
    if (frame.sequence() >= static_cast<uint64_t>(skip)) timings.push_back(frame.timing());
  };
  callbacks.on_error = [](const std::string& message) {
    std::fprintf(stderr, "cudaoverlap-bench: %s\n", message.c_str());
  };
  Engine engine(device, config, callbacks);
  engine.start();
  double cpu_start = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < opt.live_frames; ++i) {
    pace(start, i, fps);
    if (i == skip) cpu_start = process_cpu_us();
    InputFrame in = pool.take();
    in.arrived_ns = host_now_ns();
    if (engine.submit(std::move(in)) != Status::kOk) throw Error(engine.error());
  }
  if (engine.drain() != Status::kOk) throw Error(engine.error());
  const double cpu = process_cpu_us() - cpu_start;
  engine.stop();
  if (!ok) throw Error("the live engine's output is wrong");
  LiveResult r;
  for (const FrameTiming& t : timings) {
    r.latency_ms.push_back((t.delivered_ns - t.arrived_ns) / 1e6);
    r.wake_us.push_back((t.delivered_ns - t.download.end_ns) / 1e3);
    r.submit_us += (t.enqueued_ns - t.arrived_ns) / 1e3;
    r.upload_ms += t.upload.ms();
    r.compute_ms += t.compute.ms();
    r.download_ms += t.download.ms();
  }
  const double n = static_cast<double>(timings.size());
  r.cpu_us = cpu / n;
  r.submit_us /= n;
  r.upload_ms /= n;
  r.compute_ms /= n;
  r.download_ms /= n;
  return r;
}

}  // namespace

int run_live_table(const std::shared_ptr<Device>& device, const Options& opt) {
  std::printf(
      "cudaoverlap live latency on %s: RGBA copy, pinned input, %d frames a case (the "
      "first %d left out), ring-size %d\n",
      device->describe().c_str(), opt.live_frames, std::min(opt.warmup, opt.live_frames / 4),
      opt.ring);
  std::printf(
      "latency: submit to the host holding the frame; wake: the download's end on the device "
      "to that; CPU: the process's user + system time per frame\n\n");
  std::printf(
      "| frame | case | pacing | host wait | mean ms | p50 ms | p99 ms | max ms | upload ms | "
      "kernel ms | download ms | submit us | wake us mean | wake us p99 | CPU us/frame |\n");
  std::printf("|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (const std::string& name : opt.sizes) {
    const Size& size = kSizes.at(name);
    struct Case {
      const char* label;
      bool engine;
      HostWait wait;
      int fps;
      int bands = 1;
    };
    const Case cases[] = {
        {"plain loop", false, HostWait::kSpin, 0},
        {"plain loop", false, HostWait::kSpin, opt.live_fps},
        {"plain loop", false, HostWait::kBlock, opt.live_fps},
        {"engine", true, HostWait::kSpin, opt.live_fps},
        {"engine", true, HostWait::kBlock, opt.live_fps},
        {"engine", true, HostWait::kPoll, opt.live_fps},
        {"engine, 2 bands", true, HostWait::kPoll, opt.live_fps, 2},
        {"engine, 4 bands", true, HostWait::kPoll, opt.live_fps, 4},
        {"engine, 8 bands", true, HostWait::kPoll, opt.live_fps, 8},
        {"engine, 4 bands", true, HostWait::kSpin, opt.live_fps, 4},
        {"engine", true, HostWait::kPoll, 0},
    };
    for (const Case& c : cases) {
      const LiveResult r = c.engine ? live_engine(device, opt, size, c.wait, c.fps, c.bands)
                                    : live_plain_loop(*device, opt, size, c.wait, c.fps);
      const std::string pacing =
          c.fps > 0 ? std::to_string(c.fps) + " frames/s" : std::string("back to back");
      std::printf(
          "| %s | %s | %s | %s | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f | %.0f | %.0f | "
          "%.0f | %.0f |\n",
          size.name, c.label, pacing.c_str(), wait_name(c.wait), mean_of(r.latency_ms),
          percentile(r.latency_ms, 50), percentile(r.latency_ms, 99), percentile(r.latency_ms, 100),
          r.upload_ms, r.compute_ms, r.download_ms, r.submit_us, mean_of(r.wake_us),
          percentile(r.wake_us, 99), r.cpu_us);
      std::fflush(stdout);
    }
  }
  return 0;
}

}  // namespace cudaoverlap::bench
