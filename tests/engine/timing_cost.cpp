// timing-cost: what EngineConfig::timing costs per frame. A program, not a
// test: it measures and prints a table, it asserts nothing about speed.
//
//   build/tests/engine/timing-cost [--backend cpu|cuda|auto] [--frames N] [--rounds N]
//                                  [--size WxH]
//
// For each backend, tiny frames by default (so that the per-frame overhead
// is not hidden behind transfers) go through the engine from pinned input,
// overlapped, ring-size 3, with timing off and on, in alternating rounds;
// the best round of each is kept. The difference per frame is the cost of
// the three extra timing events, the timing barrier events and reading six
// times in the worker (on CUDA: cudaEventRecord x3 more, cudaEventElapsedTime
// x6). Host stages (wait, staging) are timed either way.
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "cpu_device.h"
#include "cuda_device.h"
#include "engine.h"
#include "kernels/operation_registry.h"

namespace cudaoverlap {
namespace {

// Frames per second through the engine with pinned input recycled from a
// small pool, as the benchmark of tests/bench does.
double run_once(const std::shared_ptr<Device>& device, const FrameLayout& layout, bool timing,
                int frames) {
  EngineConfig config;
  config.operation = make_operation("copy");
  config.input = layout;
  config.output = layout;
  config.timing = timing;
  std::mutex mutex;
  std::condition_variable done;
  int delivered = 0;
  int64_t checksum = 0;  // keeps the timing reads observable
  EngineCallbacks callbacks;
  callbacks.on_frame = [&](OutputFrame frame) {
    const int64_t t = frame.timing().download.end_ns;
    frame.release();
    std::lock_guard<std::mutex> lock(mutex);
    checksum += t > 0 ? 1 : 0;
    ++delivered;
    done.notify_all();
  };
  std::vector<std::unique_ptr<Buffer>> pool;
  for (int i = 0; i < 4; ++i) pool.push_back(device->alloc_pinned(layout.size));
  Engine engine(device, config, callbacks);
  engine.start();
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < frames; ++i) {
    InputFrame in;
    in.image = layout.at(pool[i % pool.size()]->data());
    in.pinned = true;  // the pool outlives the engine; no keep-alive needed
    if (engine.submit(std::move(in)) != Status::kOk) {
      std::fprintf(stderr, "timing-cost: %s\n", engine.error().c_str());
      std::exit(1);
    }
  }
  engine.drain();
  {
    std::unique_lock<std::mutex> lock(mutex);
    done.wait(lock, [&] { return delivered == frames; });
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  engine.stop();
  if (timing && checksum == 0) std::fprintf(stderr, "timing-cost: no device times were read\n");
  return frames / seconds;
}

void measure(const char* name, const std::shared_ptr<Device>& device, const FrameLayout& layout,
             int frames, int rounds) {
  double best_off = 0.0, best_on = 0.0;
  run_once(device, layout, true, frames / 10 + 1);  // warm-up: module loads, first allocations
  for (int r = 0; r < rounds; ++r) {
    best_off = std::max(best_off, run_once(device, layout, false, frames));
    best_on = std::max(best_on, run_once(device, layout, true, frames));
  }
  const double us_off = 1e6 / best_off;
  const double us_on = 1e6 / best_on;
  std::printf("| %s | %dx%d | %.0f | %.0f | %.2f | %.2f | %+.2f |\n", name, layout.width,
              layout.height, best_off, best_on, us_off, us_on, us_on - us_off);
}

}  // namespace
}  // namespace cudaoverlap

int main(int argc, char** argv) {
  using namespace cudaoverlap;
  std::string backend = "auto";
  int frames = 20000, rounds = 3, width = 64, height = 16;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--backend")
      backend = argv[i + 1];
    else if (a == "--frames")
      frames = std::atoi(argv[i + 1]);
    else if (a == "--rounds")
      rounds = std::atoi(argv[i + 1]);
    else if (a == "--size")
      std::sscanf(argv[i + 1], "%dx%d", &width, &height);
    else {
      std::fprintf(stderr,
                   "usage: timing-cost [--backend cpu|cuda|auto] [--frames N] "
                   "[--rounds N] [--size WxH]\n");
      return 2;
    }
  }
  const FrameLayout layout = FrameLayout::packed(PixelFormat::kRGBA, width, height);
  std::printf("%d frames a round, best of %d rounds, overlapped, ring-size 3, pinned input\n\n",
              frames, rounds);
  std::printf(
      "| backend | frame | frames/s timing off | frames/s timing on | us/frame off | "
      "us/frame on | cost us/frame |\n|---|---|---:|---:|---:|---:|---:|\n");
  try {
    if (backend == "cpu" || backend == "auto")
      measure("cpu", make_cpu_device(), layout, frames, rounds);
    if (backend == "cuda" || backend == "auto") {
      std::string why;
      if (cuda_device_count(&why) > 0)
        measure("cuda", make_cuda_device(0), layout, frames, rounds);
      else
        std::printf("| cuda | skipped: %s | | | | | |\n", why.c_str());
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "timing-cost: %s\n", e.what());
    return 1;
  }
  return 0;
}
