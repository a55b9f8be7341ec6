// --kernels: each kernel's GPU time alone at 4K (scale: 4K to 1080p and
// back), against the time just
// reading and writing its frames takes at the device memory's peak.
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

#include "../kernels/custom_sources.h"
#include "bench.h"
#include "cpu_device.h"
#include "cuda_device.h"
#include "kernels/chain/chain.h"
#include "kernels/custom/runtime_compiler.h"
#include "kernels/kernel_timing.h"
#include "kernels/operation_registry.h"

#ifdef CUDAOVERLAP_HAVE_CUDA
#include <cuda_runtime.h>

#include "kernels/cuda_check.h"
#endif

namespace cudaoverlap::bench {
namespace {

using cudaoverlap::test::kInvertPixelSource;
using cudaoverlap::test::kInvertRawSource;

struct TimedKernel {
  std::string label;
  const char* kernel;
  KernelParams params;
};

// Every operation the element offers (convert and scale have their own rows), with its
// defaults, then more parameters of those that take some.
std::vector<TimedKernel> timed_kernels() {
  std::vector<TimedKernel> kernels;
  for (const OperationEntry& entry : operation_registry())
    if (entry.offered && !entry.user_code && std::string(entry.name) != "convert" &&
        std::string(entry.name) != "flip" && std::string(entry.name) != "scale")
      kernels.push_back({entry.name, entry.name, {}});
  // kernel=custom, the same inversion from the user's side: a per-pixel
  // function and a whole kernel on raw samples (custom_sources.h).
  for (auto [name, source, launch] : {std::tuple{"custom invert", kInvertPixelSource, 0},
                                      {"custom invert raw", kInvertRawSource, 32}}) {
    TimedKernel k{name, "custom", {}};
    k.params.custom.source = source;
    k.params.custom.source_name = std::string(name) + ".cu";
    k.params.custom.block_x = launch;
    k.params.custom.block_y = launch ? 8 : 0;
    kernels.push_back(k);
  }
  for (auto [direction, name] : {std::pair{FlipDirection::kHoriz, "flip horiz"},
                                 {FlipDirection::k180, "flip 180"},
                                 {FlipDirection::k90R, "flip 90r"},
                                 {FlipDirection::kUlLr, "flip ul-lr"}}) {
    TimedKernel k{name, "flip", {}};
    k.params.set("video-direction", direction);
    kernels.push_back(k);
  }
  TimedKernel balance{"balance 0.1 1.2 1.3 0.2", "balance", {}};
  balance.params.set("brightness", 0.1).set("contrast", 1.2).set("saturation", 1.3).set("hue", 0.2);
  kernels.push_back(balance);
  for (double sigma : {1.0, 5.0, 20.0}) {
    TimedKernel blur{"blur sigma " + std::to_string(static_cast<int>(sigma)), "blur", {}};
    blur.params.set("sigma", sigma);
    kernels.push_back(blur);
  }
  return kernels;
}

// What kernel=custom adds to a start, against the built-in invert, for 4K
// RGBA: making and checking the operation (where the program is compiled,
// or read back from the disk cache, and loaded), and an engine's whole start
// up to its first frame out (the operation made, the ring allocated, the
// program's first launch). Median of 5 of each; a cache directory of its
// own, so the first is a real compile.
void print_custom_start(const std::shared_ptr<Device>& device) {
  char dir_template[] = "/tmp/cudaoverlap-bench-cache-XXXXXX";
  const char* dir = mkdtemp(dir_template);
  if (!dir) return;
  setenv("CUDAOVERLAP_KERNEL_CACHE", dir, 1);
  const FrameLayout layout = FrameLayout::packed(PixelFormat::kRGBA, 3840, 2160, 256, 256);
  const ImageRef geometry = layout.at(nullptr);
  auto elapsed_ms = [](std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  };
  auto check_ms = [&](const char* kernel, const KernelParams& params) {
    const auto t0 = std::chrono::steady_clock::now();
    const std::string problem = make_operation(kernel, params)->check(geometry, geometry);
    if (!problem.empty()) throw Error(problem);
    return elapsed_ms(t0);
  };
  auto input = device->alloc_pinned(layout.size);
  std::memset(input->data(), 0x5a, layout.size);
  auto first_frame_ms = [&](const char* kernel, const KernelParams& params) {
    const auto t0 = std::chrono::steady_clock::now();
    EngineConfig config;
    config.input = config.output = layout;
    config.operation = make_operation(kernel, params);
    EngineCallbacks callbacks;
    callbacks.on_frame = [](OutputFrame) {};
    Engine engine(device, config, callbacks);
    engine.start();
    InputFrame frame;
    frame.image = layout.at(input->data());
    frame.pinned = true;
    if (engine.submit(frame) != Status::kOk || engine.drain() != Status::kOk)
      throw Error(engine.error());
    const double ms = elapsed_ms(t0);
    engine.stop();
    return ms;
  };
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  KernelParams custom;
  custom.custom.source = kInvertPixelSource;
  std::vector<double> compiled, cached, built_in, first_custom, first_built_in;
  for (int i = 0; i < 5; ++i) {
    custom.custom.source_name = "invert" + std::to_string(i) + ".cu";  // a new program
    compiled.push_back(check_ms("custom", custom));
    cached.push_back(check_ms("custom", custom));
    built_in.push_back(check_ms("invert", {}));
    first_custom.push_back(first_frame_ms("custom", custom));
    first_built_in.push_back(first_frame_ms("invert", {}));
  }
  std::printf("\nkernel=custom at start, 4K RGBA, NVRTC %s, median of 5:\n\n",
              runtime_compiler_version().c_str());
  std::printf("| start | custom invert ms | built-in invert ms |\n|---|---:|---:|\n");
  std::printf("| operation made and checked, compiled (empty cache) | %.1f | %.3f |\n",
              median(compiled), median(built_in));
  std::printf("| operation made and checked, from the disk cache | %.1f | %.3f |\n", median(cached),
              median(built_in));
  std::printf("| engine start to first frame out (cached) | %.1f | %.1f |\n", median(first_custom),
              median(first_built_in));
  std::system((std::string("rm -rf '") + dir + "'").c_str());
  unsetenv("CUDAOVERLAP_KERNEL_CACHE");
}

}  // namespace

// The --kernels table: GPU time of each kernel alone at 4K.
int run_kernel_table(const Options& opt) {
  std::string why;
  if (cuda_device_count(&why) == 0) {
    std::fprintf(stderr, "cudaoverlap-bench: --kernels needs a CUDA device: %s\n", why.c_str());
    return 1;
  }
  std::shared_ptr<Device> device = make_cuda_device(0);
  device->make_current();
  const int width = 3840, height = 2160;
  std::printf("cudaoverlap kernels alone on %s, %dx%d, %d launches each (CUDA events)\n",
              device->describe().c_str(), width, height, opt.iterations);
  const double peak_gbps = cuda_memory_peak_gbps(0);
  const size_t l2_bytes = cuda_l2_cache_bytes(0);
  const double bound_gbps = opt.hbm_gbps > 0 ? opt.hbm_gbps : peak_gbps;
  if (bound_gbps <= 0) {
    std::fprintf(stderr,
                 "cudaoverlap-bench: the device does not tell its memory bandwidth; give "
                 "--hbm-gbps\n");
    return 1;
  }
  {
    const size_t bytes = size_t{1} << 30;
    auto a = device->alloc_device(bytes);
    auto b = device->alloc_device(bytes);
    const double ms = time_device_copy_cuda(b->data(), a->data(), bytes, 20);
    const double gbps = 2.0 * bytes / (ms * 1e-3) / 1e9;
    std::printf("device memory peak: %.0f GB/s (memory clock and bus width)%s\n", peak_gbps,
                opt.hbm_gbps > 0 ? "; bound given by --hbm-gbps instead" : "");
    std::printf(
        "L2 cache: %.0f MB; each kernel's launches cycle through frames that hold 3 times "
        "that\n",
        l2_bytes / 1e6);
    std::printf(
        "a 1 GiB device-to-device cudaMemcpy: %.0f GB/s read + write, %.0f %% of the peak\n", gbps,
        peak_gbps > 0 ? 100.0 * gbps / peak_gbps : 0.0);
  }
  std::printf("memory bound: input read once and output written once at %.0f GB/s\n\n", bound_gbps);
  std::printf("| kernel | format | GPU ms/frame | memory-bound ms | ratio |\n");
  std::printf("|---|---|---:|---:|---:|\n");
  // One row: `k` from a frame of `in_format` to one of `out_format`, 4K
  // unless `params` give other sizes (scale).
  // `given`: that operation rather than one made from `kernel` and `params`.
  auto time_row = [&](const std::string& label, const char* kernel, const KernelParams& params,
                      PixelFormat in_format, PixelFormat out_format, int iterations, bool print,
                      std::shared_ptr<const Operation> given = nullptr) {
    const auto op = given ? given : make_operation(kernel, params);
    const bool swap = op->swaps_axes();
    const FrameSizes& sizes = params.sizes;
    const int in_w = sizes.known() ? sizes.in_width : width;
    const int in_h = sizes.known() ? sizes.in_height : height;
    const int out_w = sizes.known() ? sizes.out_width : swap ? height : width;
    const int out_h = sizes.known() ? sizes.out_height : swap ? width : height;
    // 256-byte aligned planes, as the engine allocates them.
    const FrameLayout in_layout = FrameLayout::packed(in_format, in_w, in_h, 256, 256);
    const FrameLayout out_layout = FrameLayout::packed(out_format, out_w, out_h, 256, 256);
    // Enough input and output frames that together they hold three times
    // the L2 cache, launches cycling through them: a frame that fits in L2
    // (4K NV12 in and out is 25 MB, an H100's L2 50 MB) would otherwise be
    // read from it, not from memory, and flatter the kernel.
    const size_t set_bytes = in_layout.size + out_layout.size;
    const size_t sets = std::max<size_t>(1, (3 * l2_bytes + set_bytes - 1) / set_bytes);
    std::vector<std::unique_ptr<Buffer>> buffers;
    std::vector<ImageRef> ins, outs;
    // Realistic pixel values (no kernel's speed depends on them today, but
    // a zero frame could flatter a future one).
    auto host = device->alloc_pinned(in_layout.size);
    for (size_t b = 0; b < in_layout.size; ++b) host->data()[b] = uint8_t(b * 7 + b / 4093);
    auto stream = device->create_stream();
    for (size_t i = 0; i < sets; ++i) {
      buffers.push_back(device->alloc_device(in_layout.size));
      ins.push_back(in_layout.at(buffers.back()->data()));
      stream->copy_2d(buffers.back()->data(), in_layout.size, host->data(), in_layout.size,
                      in_layout.size, 1, CopyKind::kHostToDevice);
      buffers.push_back(device->alloc_device(out_layout.size));
      outs.push_back(out_layout.at(buffers.back()->data()));
    }
    stream->synchronize();
    const double ms = time_operation_cuda(*op, ins, outs, iterations, opt.hold);
    const double bound_ms =
        (frame_bytes(in_layout) + frame_bytes(out_layout)) / (bound_gbps * 1e9) * 1e3;
    const std::string format = in_format == out_format ? std::string(format_info(in_format).name)
                                                       : std::string(format_info(in_format).name) +
                                                             " -> " + format_info(out_format).name;
    if (print)
      std::printf("| %s | %s | %.4f | %.4f | %.2fx |\n", label.c_str(), format.c_str(), ms,
                  bound_ms, ms / bound_ms);
    return ms / bound_ms;
  };
  // Three of the six 4-byte RGB orders (the others run the same code), then
  // every other format; each kernel in those it takes.
  std::vector<PixelFormat> formats;
  for (PixelFormat f : all_pixel_formats())
    if (f != PixelFormat::kBGRA && f != PixelFormat::kRGBx && f != PixelFormat::kABGR)
      formats.push_back(f);
  KernelParams bt709;
  bt709.convert.in = bt709.convert.out =
      Colorimetry().set_matrix(YuvMatrix::kBT709, 0.2126, 0.0722);
  if (!opt.pairs.empty()) {
    for (const auto& [from, to] : opt.pairs)
      time_row("convert", "convert", bt709, from, to, opt.iterations, true);
    return 0;
  }
  auto chosen = [&](const std::string& label, PixelFormat format) {
    if (opt.only.empty()) return true;
    for (const auto& [l, f] : opt.only)
      if (l == label && f == format) return true;
    return false;
  };
  for (const TimedKernel& k : timed_kernels())
    for (PixelFormat format : formats)
      for (PixelFormat made : make_operation(k.kernel, k.params)->output_formats(format))
        if (made == format && chosen(k.label, format))
          time_row(k.label, k.kernel, k.params, format, format, opt.iterations, true);
  const std::pair<PixelFormat, PixelFormat> convert_pairs[] = {
      {PixelFormat::kRGBA, PixelFormat::kNV12},      {PixelFormat::kRGBA, PixelFormat::kI420},
      {PixelFormat::kNV12, PixelFormat::kRGBA},      {PixelFormat::kI420, PixelFormat::kBGRx},
      {PixelFormat::kRGBA, PixelFormat::kBGRA},      {PixelFormat::kNV12, PixelFormat::kI420},
      {PixelFormat::kRGBA, PixelFormat::kGRAY8},     {PixelFormat::kGRAY8, PixelFormat::kRGBA},
      {PixelFormat::kYUY2, PixelFormat::kRGBA},      {PixelFormat::kUYVY, PixelFormat::kBGRx},
      {PixelFormat::kRGBA, PixelFormat::kYUY2},      {PixelFormat::kNV21, PixelFormat::kRGBA},
      {PixelFormat::kY444, PixelFormat::kRGBA},      {PixelFormat::kRGB, PixelFormat::kNV12},
      {PixelFormat::kBGR, PixelFormat::kRGBA},       {PixelFormat::kYUY2, PixelFormat::kNV12},
      {PixelFormat::kP010_10LE, PixelFormat::kRGBA}, {PixelFormat::kRGBA, PixelFormat::kP010_10LE},
      {PixelFormat::kI420_10LE, PixelFormat::kNV12}, {PixelFormat::kGRAY16_LE, PixelFormat::kRGBA},
      {PixelFormat::kBayerRGGB, PixelFormat::kRGBA}, {PixelFormat::kBayerBGGR, PixelFormat::kBGR},
      {PixelFormat::kRGBA, PixelFormat::kNV21}};
  if (opt.only.empty())
    for (const auto& [from, to] : convert_pairs)
      time_row("convert", "convert", bt709, from, to, opt.iterations, true);
  // scale by each method, 4K to 1080p and back; the bound reads the larger
  // frame once and writes the smaller once (or the reverse).
  const char* const methods[] = {"nearest", "bilinear", "bicubic", "lanczos"};
  for (int m = 0; m < 4; ++m)
    for (auto [iw, ih, ow, oh] : {std::tuple{3840, 2160, 1920, 1080}, {1920, 1080, 3840, 2160}})
      for (PixelFormat f : {PixelFormat::kRGBA, PixelFormat::kNV12, PixelFormat::kP010_10LE}) {
        if (!chosen("scale", f)) continue;
        KernelParams p;
        p.set("method", m);
        p.sizes = FrameSizes{iw, ih, ow, oh};
        time_row(std::string("scale ") + methods[m] + (iw > ow ? " 4K->1080p" : " 1080p->4K"),
                 "scale", p, f, f, opt.iterations, true);
      }
  // A chain of three per-pixel steps (balance, invert, convert between RGB
  // orders) in one fused launch and as three launches, beside each step
  // alone.
  if (chosen("chain", PixelFormat::kRGBA)) {
    const std::string text = "balance contrast=1.2 saturation=0.8 ! invert ! convert";
    KernelParams chain;
    chain.chain = parse_chain(text);
    chain.sizes = FrameSizes{width, height, width, height};
    const PixelFormat in = PixelFormat::kRGBA, out = PixelFormat::kBGRx;
    KernelParams balance;
    balance.set("contrast", 1.2).set("saturation", 0.8);
    const double one = time_row("balance 1.2 0.8 (chain's step 1)", "balance", balance, in, in,
                                opt.iterations, true);
    time_row("invert (chain's step 2)", "invert", {}, in, in, opt.iterations, true);
    time_row("convert (chain's step 3)", "convert", {}, in, out, opt.iterations, true);
    const double apart =
        time_row("chain \"" + text + "\", 3 launches", "chain", chain, in, out, opt.iterations,
                 true, std::make_shared<ChainOperation>(chain.chain, chain, false));
    const double fused = time_row("chain \"" + text + "\", fused: 1 launch", "chain", chain, in,
                                  out, opt.iterations, true);
    // The user's per-pixel invert (custom) for invert: one launch compiled
    // with the user's function.
    const std::string user_text = "balance contrast=1.2 saturation=0.8 ! custom ! convert";
    auto spec = std::make_shared<ChainSpec>(*parse_chain(user_text));
    CustomKernelParams invert;
    invert.source = kInvertPixelSource;
    invert.source_name = "invert_pixel.cu";
    for (ChainStep& step : spec->steps)
      if (step.name == "custom") step.custom = std::make_shared<const CustomKernelParams>(invert);
    KernelParams user_chain = chain;
    user_chain.chain = spec;
    const double user = time_row("chain \"" + user_text + "\" (custom invert), fused", "chain",
                                 user_chain, in, out, opt.iterations, true);
    // time_row gives ratios to the memory bound, the same for these rows
    // (4K RGBA in, 4-byte pixels out): their ratios are those of the times.
    std::printf(
        "\nfused chain of 3 per-pixel steps: %.2fx the time of its slowest step alone "
        "(balance), %.2fx of its 3 launches; with the user's invert for invert: %.2fx\n\n",
        fused / one, fused / apart, user / one);
  }
  if (!opt.only.empty()) return 0;
  print_custom_start(device);
  if (!opt.all_pairs) return 0;
  // Every pair, fewer launches each; a matrix of ratios, then the worst.
  // Inputs: every format above (Bayer mosaics included); outputs: those
  // that can be output.
  const std::vector<PixelFormat>& inputs = formats;
  std::vector<PixelFormat> outputs;
  for (PixelFormat f : formats)
    if (!is_bayer(f)) outputs.push_back(f);
  const auto convert = make_operation("convert", bt709);
  std::vector<std::pair<double, std::string>> ratios;
  std::printf(
      "\nconvert, every pair (BT.709 limited range), %d launches each: ratio to the bound\n\n",
      std::max(1, opt.iterations / 10));
  std::printf("| from \\ to |");
  for (PixelFormat to : outputs) std::printf(" %s |", format_info(to).name);
  std::printf("\n|---|");
  for (size_t i = 0; i < outputs.size(); ++i) std::printf("---:|");
  std::printf("\n");
  for (PixelFormat from : inputs) {
    std::printf("| %s |", format_info(from).name);
    const std::vector<PixelFormat> made = convert->output_formats(from);
    for (PixelFormat to : outputs) {
      // Pairs the operation refuses (GRAY8 with BT.709 YUV): no figure.
      const FrameLayout in_layout = FrameLayout::packed(from, 64, 64, 256, 256);
      const FrameLayout out_layout = FrameLayout::packed(to, 64, 64, 256, 256);
      std::vector<uint8_t> probe(std::max(in_layout.size, out_layout.size));
      if (std::find(made.begin(), made.end(), to) == made.end() ||
          !convert->check(in_layout.at(probe.data()), out_layout.at(probe.data())).empty()) {
        std::printf(" |");
        continue;
      }
      const double ratio =
          time_row("convert", "convert", bt709, from, to, std::max(1, opt.iterations / 10), false);
      std::printf(" %.2f |", ratio);
      std::fflush(stdout);
      ratios.push_back(
          {ratio, std::string(format_info(from).name) + " -> " + format_info(to).name});
    }
    std::printf("\n");
  }
  std::sort(ratios.rbegin(), ratios.rend());
  const auto beyond = [&ratios](double x) {
    return std::count_if(ratios.begin(), ratios.end(), [x](const auto& r) { return r.first > x; });
  };
  std::printf("\n%zu pairs: %zu within 2x, %zu within 2-4x, %zu beyond 4x of the bound\n",
              ratios.size(), ratios.size() - static_cast<size_t>(beyond(2.0)),
              static_cast<size_t>(beyond(2.0) - beyond(4.0)), static_cast<size_t>(beyond(4.0)));
  std::printf("furthest from the bound:");
  for (size_t i = 0; i < ratios.size() && i < 12; ++i)
    std::printf("%s %s %.2fx", i ? "," : "", ratios[i].second.c_str(), ratios[i].first);
  std::printf("\n");
  return 0;
}

}  // namespace cudaoverlap::bench
