// The main table: frames/s of the engine against the link's bound and the
// plain loop, per ring size and host wait; serial against overlapped; then
// pageable input, staged every frame (main.cpp says more).
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
#include "parallel_copy.h"

namespace cudaoverlap::bench {
namespace {

Result run_case(const std::shared_ptr<Device>& device, const Options& opt, const Size& size,
                const char* kernel, uint32_t synthetic_us, Mode mode, InputCase input = {}) {
  const FrameLayout layout = FrameLayout::packed(PixelFormat::kRGBA, size.width, size.height);
  const int ring = input.ring > 0 ? input.ring : opt.ring;
  InputPool pool(*device, layout, ring + 2, input.pinned);
  EngineConfig config;
  config.ring_size = ring;
  config.host_wait = input.host_wait;
  config.bands = input.bands;
  config.mode = mode;
  config.input = layout;
  config.output = layout;
  KernelParams params;
  params.set("synthetic-us", synthetic_us);
  config.operation = make_operation(kernel, params);
  config.staging_threads = input.staging_threads;

  std::mutex mutex;
  std::condition_variable done;
  int delivered = 0;
  bool output_ok = true;
  double staging_ms = 0;  // summed over the timed frames
  std::chrono::steady_clock::time_point last;
  EngineCallbacks callbacks;
  callbacks.on_frame = [&](OutputFrame frame) {
    // All kernels here copy.
    bool ok = true;
    if (checked_frame(frame.sequence(), opt.warmup, opt.frames)) {
      const int input = input_of(frame);
      ok = std::memcmp(frame.image().planes[0].data, pool.data(input), layout.size) == 0;
    }
    const double staged = frame.timing().staging.ms();
    std::lock_guard<std::mutex> lock(mutex);
    output_ok = output_ok && ok;
    if (frame.sequence() >= static_cast<uint64_t>(opt.warmup)) staging_ms += staged;
    ++delivered;
    last = std::chrono::steady_clock::now();
    done.notify_all();
  };
  callbacks.on_error = [](const std::string& message) {
    std::fprintf(stderr, "cudaoverlap-bench: %s\n", message.c_str());
  };
  Engine engine(device, config, callbacks);
  engine.start();

  auto submit_n = [&](int n) {
    for (int i = 0; i < n; ++i)
      if (engine.submit(pool.take()) != Status::kOk) throw Error(engine.error());
    if (engine.drain() != Status::kOk) throw Error(engine.error());
  };
  submit_n(opt.warmup);
  const double cpu_start = process_cpu_us();
  const auto start = std::chrono::steady_clock::now();
  submit_n(opt.frames);
  const double cpu = process_cpu_us() - cpu_start;
  engine.stop();
  const double seconds = std::chrono::duration<double>(last - start).count();
  return Result{opt.frames / seconds, output_ok, staging_ms / opt.frames, cpu / opt.frames};
}

}  // namespace

int run_throughput_table(const std::shared_ptr<Device>& device, const Options& opt) {
  // The cpu backend has no pinned memory and no link: its "device" memory
  // is host memory and its uploads and downloads are memcpy, so its tables
  // say so rather than speak of pinned memory and host-to-device copies.
  const bool on_cpu = device->cuda_device() < 0;
  std::printf("cudaoverlap engine benchmark on %s\n", device->describe().c_str());
  if (on_cpu)
    std::printf(
        "the cpu backend: the slow fallback for machines without a GPU; its copies in and out "
        "are memcpy in host memory and its figures are not a GPU's\n");
  std::printf(
      "RGBA, %s; each figure the median (min–max) of %d runs of %d frames after %d warm-up\n",
      on_cpu ? "input in the engine's own buffers" : "pinned input", opt.runs, opt.frames,
      opt.warmup);
  bool all_ok = true;
  for (const std::string& name : opt.sizes) {
    const Size& size = kSizes.at(name);
    const double bytes = 4.0 * size.width * size.height;
    const CopyRates link = measure_copy_rates(*device, static_cast<size_t>(bytes), opt.runs);
    // A frame moves its bytes each way: at most the slower direction's rate,
    // and half of what both directions move at once.
    const double bound_gbps = std::min({link.h2d.median, link.d2h.median, link.both.median / 2});
    const double bound_fps = bound_gbps * 1e9 / bytes;
    const uint32_t balanced_us = opt.synthetic_us >= 0
                                     ? static_cast<uint32_t>(opt.synthetic_us)
                                     : static_cast<uint32_t>(bytes / (link.h2d.median * 1e3));
    std::printf(
        on_cpu ? "\n%s (%.1f MB a frame): memcpy of a frame in, %s GB/s, out %s, both at once %s; "
                 "bound %.0f frames/s\n\n"
               : "\n%s (%.1f MB a frame): pinned copies of a frame, H2D %s GB/s, D2H %s, both at "
                 "once %s; bound %.0f frames/s\n\n",
        size.name, bytes / 1e6, show(link.h2d, "%.1f").c_str(), show(link.d2h, "%.1f").c_str(),
        show(link.both, "%.1f").c_str(), bound_fps);
    std::printf(
        "| kernel | ring | host wait | bands | plain loop frames/s | engine frames/s | engine %% "
        "of "
        "loop | engine %% of bound | loop CPU us/frame | engine CPU us/frame | output |\n");
    std::printf("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---|\n");
    const std::vector<KernelCase> kernels = balanced_kernel_cases(balanced_us);
    for (const KernelCase& k : kernels) {
      // The kernel's own bound: a stage cannot be shorter than the kernel.
      const double k_bound = std::min(bound_fps, k.us > 0 ? 1e6 / k.us : bound_fps);
      for (int ring : opt.rings) {
        for (auto [wait, bands] : {std::pair{HostWait::kPoll, 1},
                                   {HostWait::kBlock, 1},
                                   {HostWait::kSpin, 1},
                                   {HostWait::kPoll, 4}}) {
          if ((wait != HostWait::kPoll || bands != 1) && ring != opt.ring) continue;
          std::vector<double> loop_fps, engine_fps, loop_cpu, engine_cpu;
          bool ok = true;
          for (int r = 0; r < opt.runs; ++r) {
            const Result l =
                run_plain_loop(device, opt, size, k.kernel, k.us, ring, HostWait::kSpin);
            InputCase input;
            input.ring = ring;
            input.host_wait = wait;
            input.bands = bands;
            const Result e = run_case(device, opt, size, k.kernel, k.us, Mode::kOverlapped, input);
            loop_fps.push_back(l.fps);
            engine_fps.push_back(e.fps);
            loop_cpu.push_back(l.cpu_us);
            engine_cpu.push_back(e.cpu_us);
            ok = ok && l.output_ok && e.output_ok;
          }
          const Spread lf = spread_of(loop_fps), ef = spread_of(engine_fps);
          std::printf("| %s | %d | %s | %d | %s | %s | %.1f %% | %.1f %% | %s | %s | %s |\n",
                      k.label.c_str(), ring, wait_name(wait), bands, show(lf).c_str(),
                      show(ef).c_str(), 100.0 * ef.median / lf.median, 100.0 * ef.median / k_bound,
                      show(spread_of(loop_cpu)).c_str(), show(spread_of(engine_cpu)).c_str(),
                      ok ? "checked" : "WRONG");
          std::fflush(stdout);
          all_ok = all_ok && ok;
        }
      }
    }
    std::printf("\n| kernel | serial (one stream) frames/s | overlapped/serial, ring %d |\n",
                opt.ring);
    std::printf("|---|---:|---:|\n");
    for (const KernelCase& k : kernels) {
      std::vector<double> serial, overlapped;
      for (int r = 0; r < opt.runs; ++r) {
        const Result o = run_case(device, opt, size, k.kernel, k.us, Mode::kOverlapped);
        const Result s1 = run_case(device, opt, size, k.kernel, k.us, Mode::kSerial);
        overlapped.push_back(o.fps);
        serial.push_back(s1.fps);
        all_ok = all_ok && o.output_ok && s1.output_ok;
      }
      const Spread sp = spread_of(serial);
      std::printf("| %s | %s | %.2fx |\n", k.label.c_str(), show(sp).c_str(),
                  spread_of(overlapped).median / sp.median);
    }
  }

  if (opt.pageable) {
    // The same engine fed from pageable memory: every frame is staged into
    // pinned memory on the producer's path, on one thread or on the
    // automatic count, so the gain of the parallel copy shows in frames/s.
    const int automatic = ParallelCopy::automatic_threads();
    std::printf(on_cpu
                    ? "\ninput in memory not the engine's (copied into its buffers every frame), "
                      "copy kernel, overlapped\n\n"
                    : "\npageable input (staged every frame), copy kernel, overlapped\n\n");
    std::printf(
        "| frame | staging threads | frames/s | staging ms/frame | %s GB/s | vs 1 thread | "
        "output |\n",
        on_cpu ? "in" : "H2D");
    std::printf("|---|---:|---:|---:|---:|---:|---|\n");
    for (const std::string& name : opt.sizes) {
      const Size& size = kSizes.at(name);
      const double bytes = 4.0 * size.width * size.height;
      const Result one =
          run_case(device, opt, size, "copy", 0, Mode::kOverlapped, InputCase{false, 1});
      const Result many =
          run_case(device, opt, size, "copy", 0, Mode::kOverlapped, InputCase{false, 0});
      for (const auto& [label, r] :
           {std::pair{std::string("1"), one}, {"auto (" + std::to_string(automatic) + ")", many}}) {
        std::printf("| %s | %s | %.0f | %.2f | %.1f | %.2fx | %s |\n", size.name, label.c_str(),
                    r.fps, r.staging_ms, r.fps * bytes / 1e9, r.fps / one.fps,
                    r.output_ok ? "checked" : "WRONG");
        all_ok = all_ok && r.output_ok;
      }
    }
  }
  return all_ok ? 0 : 1;
}

}  // namespace cudaoverlap::bench
