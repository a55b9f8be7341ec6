// cudaoverlap-bench: drives the engine alone (no GStreamer) and prints
// tables: frames/s against what the link allows and against a plain loop,
// the host's CPU time per frame, live latency, what staging pageable input
// costs, and each kernel's GPU time. A program, not a test: it asserts
// nothing about speed, it measures.
//
//   cudaoverlap-bench [--backend auto|cuda|cpu] [--frames N] [--warmup N] [--runs N]
//                     [--ring N] [--rings 2,3,4,6] [--sizes 1080p,4k]
//                     [--synthetic-us N] [--no-pageable]
//   cudaoverlap-bench --live [--live-fps 60] [--live-frames 300] [--sizes ...]
//   cudaoverlap-bench --calls [--sizes ...] [--frames N] [--warmup N] [--ring N]
//                     [--live-fps N] [--live-frames N]
//   cudaoverlap-bench --kernels [--iterations N] [--hbm-gbps G] [--no-hold] [--all-pairs]
//                     [--pairs FROM:TO,...] [--only KERNEL:FORMAT,...]
//   cudaoverlap-bench --staging [--backend auto|cuda|cpu] [--repeats N]
//                     [--register-runs N]
//   cudaoverlap-bench --devices all|0,1,... [--backend auto|cuda|cpu] [--sizes ...]
//                     [--frames N] [--warmup N] [--runs N] [--ring N] [--synthetic-us N]
//
// The main table, per size (RGBA, pinned input): first what the link moves
// in the same process and run (pinned copies of a frame: host to device,
// device to host, both at once on two streams), hence the bound in frames/s
// (a frame crosses both ways: the slower direction, or half of both at
// once). Then, for `copy` (transfer-bound) and `synthetic` (copy plus a GPU
// busy time equal to one frame's upload, so upload, compute and download
// take about the same time): a plain loop (the three streams and events of
// docs/architecture.md, "The engine", written out on one thread, nothing
// else: run_plain_loop) and the
// engine on the same frames, for each ring size of --rings with its
// worker's default wait for downloads (poll) and, at the default ring, the
// other two (block, spin; EngineConfig::host_wait);
// each figure the median (min-max) of --runs runs; the engine as % of the
// loop and of the bound; CPU time per frame of the whole process. Then
// serial mode against overlapped. The source's cost is kept out: input
// frames are written once into a pool of pinned buffers and recycled, as an
// upstream that writes into our pool would. Outputs are compared with their
// input on warm-up frames and the last frame (outside the timed part but
// one). A last table (unless --no-pageable) feeds `copy` from pageable
// memory instead, so every frame is staged, with staging-threads 1 and
// automatic: the gain of the parallel staging copy.
//
// --live paces frames as a live source at --live-fps (4K and 1080p RGBA
// copy): the plain loop one frame at a time (back to back, then paced,
// spinning and asleep) and the engine (paced with each host wait, then
// flat out with the default one), with
// timing events on every stage: latency (submit to the host holding the
// output: mean, p50, p99, max), the device stages, the submit's enqueueing,
// the host's wake-up after the download completed, and CPU per frame.
//
// --kernels times each kernel alone on the GPU instead, at 4K (3840x2160),
// for every format: CUDA events around N launches on device buffers
// (time_operation_cuda), next to the time it takes just to read the input and
// write the output once at the device memory's peak bandwidth (from its
// clock and bus width, cuda_memory_peak_gbps; --hbm-gbps overrides it), so
// the ratio says how far a kernel is from being memory-bound. A 1 GB
// device-to-device cudaMemcpy in the same run says what a plain copy
// reaches of that peak. --all-pairs adds convert between every pair of
// formats (the 4-byte RGB orders represented by RGBA, BGRx and ARGB), then
// the pairs furthest from the bound. --pairs times only convert between the
// pairs named, --only only the kernels and formats named (the kernel as its
// row is labelled, e.g. `edge:GRAY8,flip 90r:RGB`): one case at a time, e.g.
// under a profiler.
//
// --staging measures what to do with upstream memory that is not ours, for
// 1080p RGBA, 4K NV12 and 4K RGBA: the staging copy into pinned memory on
// 1, 2, 4 and 8 threads (the engine's ParallelCopy), registering and
// unregistering a frame (Device::register_host on fresh, touched memory, the
// mean of --register-runs), and a serial upload (copy_2d per plane, event
// synchronize) from pageable, registered and pinned memory; then after how
// many frames registering once beats staging every frame. Any backend: on
// the cpu backend the figures are host memcpy and bookkeeping only.
//
// --devices runs one stream of frames over several devices (MultiEngine:
// an engine per device, each frame dealt to the device free first, output
// in submission order), all in one process. LIST is `all` or CUDA device
// numbers (`0,1`); on the cpu backend, a count of cpu devices standing in
// (`2`), so the mode runs without a GPU (its figures then say nothing about
// a GPU; --stand-in-link-us N makes each stand-in's upload of a frame wait
// N us on its stream, a link that costs the host nothing, so the dealing's
// own scaling shows: `--backend cpu --devices 2 --stand-in-link-us 400
// --sizes 240p`). Per size (RGBA, ring --ring on each device): first each device's
// pinned copy rates measured alone (H2D, D2H, both at once; made current
// and its own pinned memory) and its bound in frames/s, as in the main
// table, then all devices copying both ways at once (is the host's side
// shared?), and (cuda) the same copies, each device alone and all at once,
// from host memory in 2 MB pages (anonymous, MADV_HUGEPAGE, registered:
// do the host's page translations cap the links?). Then, for `copy` and `synthetic` (its busy time
// one frame's upload on the first device), a MultiEngine over each device alone and over all of
// LIST together, the runs taken in turn over these configurations: frames/s (median (min-max) of
// --runs runs of --frames after --warmup), % of the configuration's bound (the sum of its devices'
// bounds alone), % of what plain copies moved both ways at once on the
// same devices (one device: its own rate; several: theirs together), speed-up against the best
// device alone, the process's CPU time per frame, each device's share of the frames
// (OutputFrame::device()), and the output: in every run every frame's
// sequence must be the next one and the number it was submitted as; its
// pixels are compared with its input whole in one more run of each
// configuration (untimed), and in the timed runs whole on the frames
// checked_frame() picks, a few rows of every other frame. "checked", or how
// many frames were wrong, out of order or missing. The input frames of a
// run come from one pool of pinned memory that the run's first device
// allocates (on its NUMA node where the host has several), shared by all:
// the MultiEngine picks a frame's device only when it is submitted. A
// device lost during a run (on_warning), or all of them (on_error), is
// printed and fails the program. A second table per size says where the
// host's time went in the same runs, per frame: how busy the producer
// thread was (its CPU time / wall time: near 100 % it bounds the rate),
// its time in MultiEngine::submit and, within, the MultiEngine's dealing
// (choosing a device, waiting for one's slot), Engine::submit's wait for a
// slot and its enqueuing of the device work, its wait for an input frame,
// how long finished frames were held for an earlier one on another device,
// and the workers' CPU time.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "bench.h"
#include "cpu_device.h"
#include "cuda_device.h"
#include "devices.h"

namespace cudaoverlap::bench {
namespace {

int run(int argc, char** argv) {
  Options opt;
  const int parsed = parse_options(argc, argv, &opt);
  if (parsed >= 0) return parsed;
  if (opt.kernels) return run_kernel_table(opt);
  for (const auto& s : opt.sizes)
    if (!kSizes.count(s)) return usage(("unknown size " + s).c_str());
  if (opt.calls) {
    if (opt.ring < 1 || opt.ring > 16) return usage("--ring takes 1 to 16");
    if (opt.live_fps < 1) return usage("--calls paces its live rows: --live-fps takes 1 or more");
    std::string no_cuda;
    if (cuda_device_count(&no_cuda) == 0) {
      std::fprintf(stderr, "cudaoverlap-bench: --calls measures CUDA calls: %s\n", no_cuda.c_str());
      return 2;
    }
    return run_calls_table(opt);
  }

  std::shared_ptr<Device> device;
  std::string why;
  if (!opt.devices.empty()) {
    bool cuda = opt.backend == "cuda";
    if (opt.backend == "auto") {
      cuda = cuda_device_count(&why) > 0;
      if (!cuda)
        std::fprintf(stderr,
                     "cudaoverlap-bench: no CUDA device (%s); measuring cpu devices standing in\n",
                     why.c_str());
    } else if (opt.backend != "cpu" && opt.backend != "cuda") {
      return usage(("unknown backend " + opt.backend).c_str());
    }
    if (opt.stand_in_link_us > 0 && cuda)
      return usage("--stand-in-link-us is for the cpu backend's stand-ins");
    const std::vector<ListedDevice> listed =
        listed_devices(opt.devices, cuda, opt.stand_in_link_us, &why);
    if (listed.empty()) return usage(why.c_str());
    return run_devices_table(listed, opt);
  }
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
  if (opt.staging) return run_staging_table(device, opt);

  if (opt.live) return run_live_table(device, opt);
  return run_throughput_table(device, opt);
}

}  // namespace
}  // namespace cudaoverlap::bench

int main(int argc, char** argv) {
  try {
    return cudaoverlap::bench::run(argc, argv);
  } catch (const cudaoverlap::Error& e) {
    std::fprintf(stderr, "cudaoverlap-bench: %s\n", e.what());
    return 1;
  }
}
