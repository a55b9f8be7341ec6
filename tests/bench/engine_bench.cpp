// cudaoverlap-bench: drives the engine alone (no GStreamer) from pinned
// input and prints a table: frames/s, GB/s each way, % of the PCIe bound,
// overlapped vs serial. A program, not a test: it asserts nothing about
// speed, it measures.
//
//   cudaoverlap-bench [--backend auto|cuda|cpu] [--frames N] [--warmup N]
//                     [--ring N] [--sizes 1080p,4k] [--pcie-gbps 55]
//                     [--synthetic-us N]
//   cudaoverlap-bench --kernels [--iterations N] [--hbm-gbps 4300]
//
// Cases, for each size (RGBA): `copy` (transfer-bound) and `synthetic`
// (copy plus a GPU busy time equal to one frame's transfer at the PCIe
// bound, so upload, compute and download take about the same time), each
// overlapped and serial. The source's cost is kept out: input frames are
// written once into a pool of pinned buffers and recycled, as an upstream
// that writes into our pool would.
//
// --kernels times each kernel alone on the GPU instead, at 4K (3840x2160),
// for every format: CUDA events around N launches on device buffers
// (time_kernel_cuda), next to the time it takes just to read the input and
// write the output once at the device-memory bandwidth (H200: ~4.3 TB/s), so
// the ratio says how far a kernel is from being memory-bound.
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "cpu_device.h"
#include "cuda_device.h"
#include "engine.h"

namespace cudaoverlap {
namespace {

struct Options {
  std::string backend = "auto";
  int frames = 600;
  int warmup = 60;
  int ring = 3;
  std::vector<std::string> sizes = {"1080p", "4k"};
  double pcie_gbps = 55.0;  // one direction, pinned, H200 PCIe Gen5 x16 (DESIGN.md)
  int synthetic_us = -1;    // -1: one frame's transfer time at the bound
  bool kernels = false;     // --kernels: the per-kernel GPU table instead
  int iterations = 200;     // launches timed per kernel and format
  double hbm_gbps = 4300;   // device memory, read + write together (H200)
};

struct Size {
  const char* name;
  int width, height;
};
const std::map<std::string, Size> kSizes = {
    {"720p", {"720p", 1280, 720}}, {"1080p", {"1080p", 1920, 1080}}, {"4k", {"4K", 3840, 2160}}};

struct Result {
  double fps = 0;
  bool output_ok = false;
};

// Input frames in pinned memory, handed back by the engine via keep_alive.
class InputPool {
 public:
  InputPool(Device& device, const FrameLayout& layout, int count) : layout_(layout) {
    for (int i = 0; i < count; ++i) {
      buffers_.push_back(device.alloc_pinned(layout.size));
      // Written once: the source's cost stays out of the figures.
      for (size_t b = 0; b < layout.size; ++b) buffers_.back()->data()[b] = uint8_t(b * 7 + i);
      free_.push_back(i);
    }
  }
  InputFrame take() {
    std::unique_lock<std::mutex> lock(mutex_);
    back_.wait(lock, [&] { return !free_.empty(); });
    const int i = free_.front();
    free_.pop_front();
    InputFrame in;
    in.image = layout_.at(buffers_[i]->data());
    in.pinned = true;
    in.keep_alive = std::shared_ptr<void>(this, [this, i](void*) {
      std::lock_guard<std::mutex> l(mutex_);
      free_.push_back(i);
      back_.notify_one();
    });
    in.user = std::make_shared<int>(i);
    return in;
  }
  const uint8_t* data(int i) const { return buffers_[i]->data(); }

 private:
  FrameLayout layout_;
  std::vector<std::unique_ptr<Buffer>> buffers_;
  std::mutex mutex_;
  std::condition_variable back_;
  std::deque<int> free_;
};

Result run_case(const std::shared_ptr<Device>& device, const Options& opt, const Size& size,
                KernelId kernel, uint32_t synthetic_us, Mode mode) {
  const FrameLayout layout = FrameLayout::packed(PixelFormat::kRGBA, size.width, size.height);
  InputPool pool(*device, layout, opt.ring + 2);
  EngineConfig config;
  config.ring_size = opt.ring;
  config.mode = mode;
  config.input = layout;
  config.output = layout;
  config.kernel = kernel;
  config.params.synthetic_us = synthetic_us;

  std::mutex mutex;
  std::condition_variable done;
  int delivered = 0;
  bool output_ok = true;
  std::chrono::steady_clock::time_point last;
  EngineCallbacks callbacks;
  callbacks.on_frame = [&](OutputFrame frame) {
    // Check one frame in a hundred against its input (all kernels here copy).
    bool ok = true;
    if (frame.sequence() % 100 == 0) {
      const int input = *static_cast<const int*>(frame.user().get());
      ok = std::memcmp(frame.image().planes[0].data, pool.data(input), layout.size) == 0;
    }
    std::lock_guard<std::mutex> lock(mutex);
    output_ok = output_ok && ok;
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
  const auto start = std::chrono::steady_clock::now();
  submit_n(opt.frames);
  engine.stop();
  const double seconds = std::chrono::duration<double>(last - start).count();
  return Result{opt.frames / seconds, output_ok};
}

int usage(const char* why) {
  std::fprintf(stderr,
               "cudaoverlap-bench: %s\nusage: cudaoverlap-bench [--backend auto|cuda|cpu] "
               "[--frames N] [--warmup N] [--ring N] [--sizes 720p,1080p,4k] [--pcie-gbps G] "
               "[--synthetic-us N]\n       cudaoverlap-bench --kernels [--iterations N] "
               "[--hbm-gbps G]\n",
               why);
  return 2;
}

// Bytes of pixels (no row padding) of every plane of a frame.
double frame_bytes(const FrameLayout& layout) {
  double bytes = 0;
  for (int p = 0; p < layout.n_planes(); ++p)
    bytes += static_cast<double>(layout.row_bytes(p)) * static_cast<double>(layout.rows(p));
  return bytes;
}

struct TimedKernel {
  std::string label;
  KernelId id;
  KernelParams params;
};

std::vector<TimedKernel> timed_kernels() {
  std::vector<TimedKernel> kernels = {{"copy", KernelId::kCopy, {}},
                                      {"invert", KernelId::kInvert, {}}};
  for (auto [direction, name] : {std::pair{FlipDirection::kHoriz, "flip horiz"},
                                 {FlipDirection::k180, "flip 180"},
                                 {FlipDirection::k90R, "flip 90r"},
                                 {FlipDirection::kUlLr, "flip ul-lr"}}) {
    TimedKernel k{name, KernelId::kFlip, {}};
    k.params.flip = direction;
    kernels.push_back(k);
  }
  TimedKernel balance{"balance", KernelId::kBalance, {}};
  balance.params.balance = {0.1, 1.2, 1.3, 0.2};
  kernels.push_back(balance);
  for (double sigma : {1.0, 5.0, 20.0}) {
    TimedKernel blur{"blur sigma " + std::to_string(static_cast<int>(sigma)), KernelId::kBlur, {}};
    blur.params.blur_sigma = sigma;
    kernels.push_back(blur);
  }
  kernels.push_back({"edge", KernelId::kEdge, {}});
  return kernels;
}

// The --kernels table: GPU time of each kernel alone at 4K.
int run_kernel_table(const Options& opt) {
  std::string why;
  if (cuda_device_count(&why) == 0) {
    std::fprintf(stderr, "cudaoverlap-bench: --kernels needs a CUDA device: %s\n", why.c_str());
    return 1;
  }
  auto device = make_cuda_device(0);
  device->make_current();
  const int width = 3840, height = 2160;
  std::printf("cudaoverlap kernels alone on %s, %dx%d, %d launches each (CUDA events)\n",
              device->describe().c_str(), width, height, opt.iterations);
  std::printf("memory bound: input read once and output written once at %.0f GB/s\n\n",
              opt.hbm_gbps);
  std::printf("| kernel | format | GPU ms/frame | memory-bound ms | ratio |\n");
  std::printf("|---|---|---:|---:|---:|\n");
  // One row: `k` from a 4K frame of `in_format` to one of `out_format`.
  auto time_row = [&](const std::string& label, KernelId id, const KernelParams& params,
                      PixelFormat in_format, PixelFormat out_format) {
    const bool swap = id == KernelId::kFlip && flip_swaps_size(params.flip);
    // 256-byte aligned planes, as the engine allocates them.
    const FrameLayout in_layout = FrameLayout::packed(in_format, width, height, 256, 256);
    const FrameLayout out_layout =
        FrameLayout::packed(out_format, swap ? height : width, swap ? width : height, 256, 256);
    auto in = device->alloc_device(in_layout.size);
    auto out = device->alloc_device(out_layout.size);
    // Realistic pixel values (no kernel's speed depends on them today, but
    // a zero frame could flatter a future one).
    auto host = device->alloc_pinned(in_layout.size);
    for (size_t b = 0; b < in_layout.size; ++b) host->data()[b] = uint8_t(b * 7 + b / 4093);
    auto stream = device->create_stream();
    stream->copy_2d(in->data(), in_layout.size, host->data(), in_layout.size, in_layout.size, 1,
                    CopyKind::kHostToDevice);
    stream->synchronize();
    const double ms = time_kernel_cuda(id, params, in_layout.at(in->data()),
                                       out_layout.at(out->data()), opt.iterations);
    const double bound_ms =
        (frame_bytes(in_layout) + frame_bytes(out_layout)) / (opt.hbm_gbps * 1e9) * 1e3;
    const std::string format = in_format == out_format ? std::string(format_info(in_format).name)
                                                       : std::string(format_info(in_format).name) +
                                                             " -> " + format_info(out_format).name;
    std::printf("| %s | %s | %.4f | %.4f | %.2fx |\n", label.c_str(), format.c_str(), ms, bound_ms,
                ms / bound_ms);
  };
  const PixelFormat formats[] = {PixelFormat::kRGBA, PixelFormat::kBGRx, PixelFormat::kARGB,
                                 PixelFormat::kNV12, PixelFormat::kI420, PixelFormat::kGRAY8};
  for (const TimedKernel& k : timed_kernels())
    for (PixelFormat format : formats) time_row(k.label, k.id, k.params, format, format);
  const std::pair<PixelFormat, PixelFormat> convert_pairs[] = {
      {PixelFormat::kRGBA, PixelFormat::kNV12},  {PixelFormat::kRGBA, PixelFormat::kI420},
      {PixelFormat::kNV12, PixelFormat::kRGBA},  {PixelFormat::kI420, PixelFormat::kBGRx},
      {PixelFormat::kRGBA, PixelFormat::kBGRA},  {PixelFormat::kNV12, PixelFormat::kI420},
      {PixelFormat::kRGBA, PixelFormat::kGRAY8}, {PixelFormat::kGRAY8, PixelFormat::kRGBA}};
  KernelParams bt709;
  bt709.convert.in = bt709.convert.out = Colorimetry{YuvMatrix::kBT709, false};
  for (const auto& [from, to] : convert_pairs)
    time_row("convert", KernelId::kConvert, bt709, from, to);
  return 0;
}

int run(int argc, char** argv) {
  Options opt;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") return usage("measures the engine alone");
    if (arg == "--kernels") {
      opt.kernels = true;
      continue;
    }
    if (i + 1 >= argc) return usage(("missing value for " + arg).c_str());
    const std::string value = argv[++i];
    if (arg == "--backend") {
      opt.backend = value;
    } else if (arg == "--frames") {
      opt.frames = std::atoi(value.c_str());
    } else if (arg == "--warmup") {
      opt.warmup = std::atoi(value.c_str());
    } else if (arg == "--ring") {
      opt.ring = std::atoi(value.c_str());
    } else if (arg == "--pcie-gbps") {
      opt.pcie_gbps = std::atof(value.c_str());
    } else if (arg == "--synthetic-us") {
      opt.synthetic_us = std::atoi(value.c_str());
    } else if (arg == "--iterations") {
      opt.iterations = std::atoi(value.c_str());
    } else if (arg == "--hbm-gbps") {
      opt.hbm_gbps = std::atof(value.c_str());
    } else if (arg == "--sizes") {
      opt.sizes.clear();
      size_t at = 0;
      while (at <= value.size()) {
        const size_t comma = value.find(',', at);
        opt.sizes.push_back(
            value.substr(at, comma == std::string::npos ? std::string::npos : comma - at));
        if (comma == std::string::npos) break;
        at = comma + 1;
      }
    } else {
      return usage(("unknown option " + arg).c_str());
    }
  }
  if (opt.frames <= 0 || opt.warmup < 0) return usage("--frames must be positive");
  if (opt.iterations <= 0 || opt.hbm_gbps <= 0)
    return usage("--iterations and --hbm-gbps must be positive");
  if (opt.kernels) return run_kernel_table(opt);
  for (const auto& s : opt.sizes)
    if (!kSizes.count(s)) return usage(("unknown size " + s).c_str());

  std::shared_ptr<Device> device;
  std::string why;
  if (opt.backend == "cuda" || (opt.backend == "auto" && cuda_device_count(&why) > 0)) {
    device = make_cuda_device(0);
  } else if (opt.backend == "cpu" || opt.backend == "auto") {
    if (opt.backend == "auto")
      std::fprintf(stderr, "cudaoverlap-bench: no CUDA device (%s); measuring the cpu backend\n",
                   why.c_str());
    device = make_cpu_device();
  } else {
    return usage(("unknown backend " + opt.backend).c_str());
  }

  std::printf("cudaoverlap engine benchmark on %s\n", device->describe().c_str());
  std::printf(
      "%d frames a case after %d warm-up, ring-size %d, RGBA, pinned input; PCIe bound "
      "%.0f GB/s each way\n\n",
      opt.frames, opt.warmup, opt.ring, opt.pcie_gbps);
  std::printf(
      "| frame | kernel | mode | frames/s | H2D GB/s | D2H GB/s | %% of PCIe bound | "
      "overlapped/serial | output |\n");
  std::printf("|---|---|---|---:|---:|---:|---:|---:|---|\n");
  bool all_ok = true;
  for (const std::string& name : opt.sizes) {
    const Size& size = kSizes.at(name);
    const double bytes = 4.0 * size.width * size.height;
    const uint32_t balanced_us = opt.synthetic_us >= 0
                                     ? static_cast<uint32_t>(opt.synthetic_us)
                                     : static_cast<uint32_t>(bytes / (opt.pcie_gbps * 1e3));
    struct KernelCase {
      KernelId id;
      uint32_t us;
      std::string label;
    };
    const KernelCase kernels[] = {
        {KernelId::kCopy, 0, "copy"},
        {KernelId::kSynthetic, balanced_us, "copy + " + std::to_string(balanced_us) + " us"},
    };
    for (const KernelCase& k : kernels) {
      const Result overlapped = run_case(device, opt, size, k.id, k.us, Mode::kOverlapped);
      const Result serial = run_case(device, opt, size, k.id, k.us, Mode::kSerial);
      for (const auto& [mode, r] : {std::pair{"overlapped", overlapped}, {"serial", serial}}) {
        const double gbps = r.fps * bytes / 1e9;
        std::printf("| %s | %s | %s | %.0f | %.1f | %.1f | %.0f %% | %s | %s |\n", size.name,
                    k.label.c_str(), mode, r.fps, gbps, gbps, 100.0 * gbps / opt.pcie_gbps,
                    std::string(mode) == "overlapped"
                        ? (std::to_string(overlapped.fps / serial.fps).substr(0, 4) + "x").c_str()
                        : "",
                    r.output_ok ? "checked" : "WRONG");
        all_ok = all_ok && r.output_ok;
      }
    }
  }
  return all_ok ? 0 : 1;
}

}  // namespace
}  // namespace cudaoverlap

int main(int argc, char** argv) {
  try {
    return cudaoverlap::run(argc, argv);
  } catch (const cudaoverlap::Error& e) {
    std::fprintf(stderr, "cudaoverlap-bench: %s\n", e.what());
    return 1;
  }
}
