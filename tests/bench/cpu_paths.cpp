// The cpu backend's fast paths against the references they equal, one
// thread, on one frame: `cpu-paths [--size WxH] [--runs N] [--only TEXT]`
// prints a table of milliseconds a frame (Operation::run_reference against
// run_cpu), of every case or those whose label holds TEXT.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "frame_layout.h"
#include "kernels/operation_registry.h"

using namespace cudaoverlap;

namespace {

struct Case {
  const char* label;
  const char* kernel;
  PixelFormat in, out;
  std::vector<std::pair<const char*, double>> params;
  bool half;  // the output half the input's size (scale)
};

double ms_per_run(int runs, const std::function<void()>& run) {
  run();  // warm: tables, pages
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < runs; ++i) run();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
             .count() /
         runs;
}

}  // namespace

int main(int argc, char** argv) {
  int width = 1920, height = 1080, runs = 20;
  const char* only = "";
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--size") && std::sscanf(argv[i + 1], "%dx%d", &width, &height) == 2)
      continue;
    if (!std::strcmp(argv[i], "--runs")) {
      runs = std::max(1, std::atoi(argv[i + 1]));
      continue;
    }
    if (!std::strcmp(argv[i], "--only")) {
      only = argv[i + 1];
      continue;
    }
    std::fprintf(stderr, "usage: cpu-paths [--size WxH] [--runs N] [--only TEXT]\n");
    return 2;
  }
  using F = PixelFormat;
  const Case cases[] = {
      {"convert NV12 -> RGBA", "convert", F::kNV12, F::kRGBA, {}, false},
      {"convert I420 -> BGRx", "convert", F::kI420, F::kBGRx, {}, false},
      {"convert YUY2 -> RGBA", "convert", F::kYUY2, F::kRGBA, {}, false},
      {"invert RGBA", "invert", F::kRGBA, F::kRGBA, {}, false},
      {"flip horiz RGBA", "flip", F::kRGBA, F::kRGBA, {{"video-direction", 4}}, false},
      {"balance I420 (contrast 1.2, saturation 0.8)",
       "balance",
       F::kI420,
       F::kI420,
       {{"contrast", 1.2}, {"saturation", 0.8}},
       false},
      {"scale RGBA to half, bilinear", "scale", F::kRGBA, F::kRGBA, {}, true},
      {"blur sigma=2 RGBA", "blur", F::kRGBA, F::kRGBA, {{"sigma", 2.0}}, false},
  };
  std::printf("One thread, %dx%d, ms a frame (mean of %d runs)\n\n", width, height, runs);
  std::printf("| operation | reference | cpu backend | speed-up |\n|---|---:|---:|---:|\n");
  for (const Case& c : cases) {
    if (!std::strstr(c.label, only)) continue;
    KernelParams params;
    for (const auto& [name, value] : c.params) params.set(name, value);
    const int ow = c.half ? width / 2 : width, oh = c.half ? height / 2 : height;
    if (c.half) params.sizes = FrameSizes{width, height, ow, oh};
    const auto op = make_operation(c.kernel, params);
    const FrameLayout in_layout = FrameLayout::packed(c.in, width, height);
    const FrameLayout out_layout = FrameLayout::packed(c.out, ow, oh);
    std::vector<uint8_t> in_bytes(in_layout.size), out_bytes(out_layout.size);
    for (size_t i = 0; i < in_bytes.size(); ++i)
      in_bytes[i] = static_cast<uint8_t>((i * 2654435761u) >> 13);
    std::vector<uint8_t> memory(op->workspace_bytes());
    const Workspace workspace{memory.data(), memory.size()};
    op->prepare_reference(workspace);
    const ImageRef in = in_layout.at(in_bytes.data()), out = out_layout.at(out_bytes.data());
    const double reference =
        ms_per_run(std::max(1, runs / 10), [&] { op->run_reference(in, out, workspace); });
    const double fast = ms_per_run(runs, [&] { op->run_cpu(in, out, workspace); });
    std::printf("| %s | %.2f | %.2f | %.1fx |\n", c.label, reference, fast, reference / fast);
  }
  return 0;
}
