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
//   cudaoverlap-bench --kernels [--iterations N] [--hbm-gbps G] [--all-pairs]
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
#include <dirent.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "../engine/test_device.h"
#include "../kernels/custom_sources.h"
#include "cpu_device.h"
#include "cuda_device.h"
#include "engine.h"
#include "multi_engine.h"
#include "operation_registry.h"
#include "parallel_copy.h"
#include "runtime_compiler.h"

#ifdef CUDAOVERLAP_HAVE_CUDA
#include <cuda_runtime.h>

#include "cuda_check.h"
#endif

namespace cudaoverlap {
namespace {
using cudaoverlap::test::kInvertPixelSource;
using cudaoverlap::test::kInvertRawSource;

struct Options {
  std::string backend = "auto";
  int frames = 600;
  int warmup = 60;
  int ring = EngineConfig{}.ring_size;
  std::vector<std::string> sizes = {"1080p", "4k"};
  int synthetic_us = -1;   // -1: one frame's transfer time at the bound
  bool kernels = false;    // --kernels: the per-kernel GPU table instead
  int iterations = 200;    // launches timed per kernel and format
  double hbm_gbps = 0;     // device memory, read + write together; 0: the device's peak
  bool all_pairs = false;  // --all-pairs: convert between every pair of formats too
  bool staging = false;    // --staging: the staging vs pinning table instead
  int repeats = 40;        // copies and uploads timed per figure in --staging
  int register_runs = 5;   // registrations averaged per size in --staging
  bool pageable = true;    // the pageable-input table after the main one
  int runs = 5;            // repeats of each throughput figure (median, min, max)
  std::vector<int> rings = {2, 3, 4, 6};  // the ring table's sizes
  bool live = false;                      // --live: paced frames, latency and host cost
  bool calls = false;                     // --calls: the host time of each CUDA call of a frame
  int live_fps = 60;
  int live_frames = 300;
  // --pairs FROM:TO,...: only convert between these (format names as
  // GStreamer spells them), e.g. to profile one pair.
  std::vector<std::pair<PixelFormat, PixelFormat>> pairs;
  // --only KERNEL:FORMAT,...: only these rows of the kernel table.
  std::vector<std::pair<std::string, PixelFormat>> only;
  // --devices LIST: the multi-device table instead; empty: not asked.
  std::string devices;
  // --stand-in-link-us N (cpu backend, --devices): each stand-in's uploads
  // keep its upload stream busy N us first, as a link of that speed would.
  int stand_in_link_us = 0;
};

struct Size {
  const char* name;
  int width, height;
};
const std::map<std::string, Size> kSizes = {{"240p", {"240p", 320, 240}},
                                            {"720p", {"720p", 1280, 720}},
                                            {"1080p", {"1080p", 1920, 1080}},
                                            {"4k", {"4K", 3840, 2160}}};

struct Result {
  double fps = 0;
  bool output_ok = false;
  double staging_ms = 0;  // mean host staging copy per timed frame (pageable input)
  double cpu_us = 0;      // the process's user + system CPU time per timed frame
};

// User + system CPU time of the whole process so far (every thread: the
// engine's, the driver's), in microseconds.
double process_cpu_us() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return (usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1e6 + usage.ru_utime.tv_usec +
         usage.ru_stime.tv_usec;
}

// Frames whose output is compared with their input: every tenth of the
// warm-up and the last one, so the comparison (a 33 MB memcmp at 4K) stays
// out of the timed frames but a timed frame is still checked.
bool checked_frame(uint64_t sequence, int warmup, int frames) {
  return (sequence < static_cast<uint64_t>(warmup) && sequence % 10 == 0) ||
         sequence + 1 == static_cast<uint64_t>(warmup + frames);
}

// Input frames, written once and recycled: either in pinned memory, handed
// back by the engine via keep_alive (an upstream that writes into our pool),
// or in ordinary pageable memory that the engine stages (an upstream with its
// own allocator; submit() has copied the frame when it returns, so a buffer
// may be reused at once).
class InputPool {
 public:
  InputPool(Device& device, const FrameLayout& layout, int count, bool pinned)
      : layout_(layout), pinned_(pinned) {
    for (int i = 0; i < count; ++i) {
      uint8_t* data;
      if (pinned_) {
        buffers_.push_back(device.alloc_pinned(layout.size));
        data = buffers_.back()->data();
      } else {
        pageable_.emplace_back(layout.size);
        data = pageable_.back().data();
      }
      // Written once: the source's cost stays out of the figures.
      for (size_t b = 0; b < layout.size; ++b) data[b] = uint8_t(b * 7 + i);
      free_.push_back(i);
    }
  }
  InputFrame take() {
    std::unique_lock<std::mutex> lock(mutex_);
    back_.wait(lock, [&] { return !free_.empty(); });
    const int i = free_.front();
    free_.pop_front();
    InputFrame in;
    in.image = layout_.at(const_cast<uint8_t*>(data(i)));
    in.pinned = pinned_;
    if (pinned_) {
      in.keep_alive = std::shared_ptr<void>(this, [this, i](void*) {
        std::lock_guard<std::mutex> l(mutex_);
        free_.push_back(i);
        back_.notify_one();
      });
    } else {
      free_.push_back(i);
    }
    in.user = std::make_shared<int>(i);
    return in;
  }
  const uint8_t* data(int i) const {
    return pinned_ ? buffers_[i]->data() : pageable_[static_cast<size_t>(i)].data();
  }

 private:
  FrameLayout layout_;
  bool pinned_;
  std::vector<std::unique_ptr<Buffer>> buffers_;
  std::vector<std::vector<uint8_t>> pageable_;
  std::mutex mutex_;
  std::condition_variable back_;
  std::deque<int> free_;
};

// How the input reaches the engine in one case.
struct InputCase {
  bool pinned = true;
  int staging_threads = 0;  // EngineConfig::staging_threads, pageable input only
  int ring = 0;             // 0: --ring
  HostWait host_wait = HostWait::kPoll;
  int bands = 1;  // EngineConfig::bands
};

const char* wait_name(HostWait wait) {
  switch (wait) {
    case HostWait::kBlock:
      return "block";
    case HostWait::kSpin:
      return "spin";
    case HostWait::kPoll:
      return "poll";
  }
  return "";
}

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
  params.synthetic_us = synthetic_us;
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
      const int input = *static_cast<const int*>(frame.user().get());
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

// The plain loop the engine is measured against: the upload, compute and
// download of docs/architecture.md, "The engine", on three streams with the
// same events, written out
// on one thread with nothing else (no worker, no callbacks, no locks). Frame
// i goes into slot i % ring, after waiting for the download of the frame
// that had the slot before (the consumer reads its output at once). The
// same pinned input frames, operation and device layouts as the engine's.
Result run_plain_loop(const std::shared_ptr<Device>& device, const Options& opt, const Size& size,
                      const char* kernel, uint32_t synthetic_us, int ring, HostWait wait) {
  Device& dev = *device;
  dev.make_current();
  const FrameLayout layout = FrameLayout::packed(PixelFormat::kRGBA, size.width, size.height);
  const FrameLayout device_layout =
      FrameLayout::packed(PixelFormat::kRGBA, size.width, size.height, 256, 256);
  InputPool pool(dev, layout, ring + 2, true);
  KernelParams params;
  params.synthetic_us = synthetic_us;
  const auto op = make_operation(kernel, params);
  struct LoopSlot {
    std::unique_ptr<Buffer> device_in, device_out, pinned_out;
    std::unique_ptr<Event> uploaded, computed, downloaded;
    InputFrame input;  // its buffer goes back to the pool once downloaded
    uint64_t sequence = 0;
    bool busy = false;
  };
  std::vector<LoopSlot> slots(ring);
  for (LoopSlot& slot : slots) {
    slot.device_in = dev.alloc_device(device_layout.size);
    slot.device_out = dev.alloc_device(device_layout.size);
    slot.pinned_out = dev.alloc_pinned(layout.size);
    slot.uploaded = dev.create_event();
    slot.computed = dev.create_event();
    slot.downloaded = dev.create_host_event(wait, false);
  }
  auto up = dev.create_stream(), compute = dev.create_stream(), down = dev.create_stream();
  compute->prepare(*op, Workspace{});
  bool ok = true;
  // The frame in `slot` is out: check it when it is one of the checked ones.
  auto retire = [&](LoopSlot& slot) {
    if (!slot.busy) return;
    slot.downloaded->synchronize();
    if (checked_frame(slot.sequence, opt.warmup, opt.frames)) {
      const int input = *static_cast<const int*>(slot.input.user.get());
      ok = ok && std::memcmp(slot.pinned_out->data(), pool.data(input), layout.size) == 0;
    }
    slot.input = InputFrame{};
    slot.busy = false;
  };
  uint64_t sequence = 0;
  auto run_n = [&](int n) {
    for (int i = 0; i < n; ++i, ++sequence) {
      LoopSlot& slot = slots[sequence % ring];
      retire(slot);
      slot.input = pool.take();
      slot.sequence = sequence;
      slot.busy = true;
      const ImageRef in = slot.input.image;
      const ImageRef device_in = device_layout.at(slot.device_in->data());
      const ImageRef device_out = device_layout.at(slot.device_out->data());
      up->copy_2d(device_in.planes[0].data, device_in.planes[0].stride, in.planes[0].data,
                  in.planes[0].stride, layout.row_bytes(0), layout.rows(0),
                  CopyKind::kHostToDevice);
      up->record(*slot.uploaded);
      compute->wait(*slot.uploaded);
      compute->launch(*op, device_in, device_out, Workspace{});
      compute->record(*slot.computed);
      down->wait(*slot.computed);
      down->copy_2d(slot.pinned_out->data(), layout.stride[0], device_out.planes[0].data,
                    device_out.planes[0].stride, layout.row_bytes(0), layout.rows(0),
                    CopyKind::kDeviceToHost);
      down->record(*slot.downloaded);
    }
    for (int k = 0; k < ring; ++k) retire(slots[(sequence + k) % ring]);
  };
  run_n(opt.warmup);
  const double cpu_start = process_cpu_us();
  const auto start = std::chrono::steady_clock::now();
  run_n(opt.frames);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double cpu = process_cpu_us() - cpu_start;
  return Result{opt.frames / seconds, ok, 0, cpu / opt.frames};
}

// Median, lowest and highest of a figure over repeated runs.
struct Spread {
  double median = 0, min = 0, max = 0;
};
Spread spread_of(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return Spread{values[values.size() / 2], values.front(), values.back()};
}
std::string show(const Spread& s, const char* format = "%.0f") {
  char a[32], b[32], c[32];
  std::snprintf(a, sizeof a, format, s.median);
  std::snprintf(b, sizeof b, format, s.min);
  std::snprintf(c, sizeof c, format, s.max);
  return std::string(a) + " (" + b + "–" + c + ")";
}

// What the link moves, in GB/s (10^9 bytes): pinned host memory to the
// device, back, and both at once on two streams (as the engine's upload and
// download run), `bytes` per copy, 20 copies a run.
struct CopyRates {
  Spread h2d, d2h, both;
};
CopyRates measure_copy_rates(Device& dev, size_t bytes, int runs) {
  dev.make_current();
  auto host_a = dev.alloc_pinned(bytes), host_b = dev.alloc_pinned(bytes);
  auto dev_a = dev.alloc_device(bytes), dev_b = dev.alloc_device(bytes);
  std::memset(host_a->data(), 0x3c, bytes);
  std::memset(host_b->data(), 0xc3, bytes);
  auto s1 = dev.create_stream(), s2 = dev.create_stream();
  constexpr int kCopies = 20;
  auto timed = [&](bool h2d, bool d2h) {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < kCopies; ++i) {
      if (h2d)
        s1->copy_2d(dev_a->data(), bytes, host_a->data(), bytes, bytes, 1, CopyKind::kHostToDevice);
      if (d2h)
        s2->copy_2d(host_b->data(), bytes, dev_b->data(), bytes, bytes, 1, CopyKind::kDeviceToHost);
    }
    s1->synchronize();
    s2->synchronize();
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return (h2d + d2h) * kCopies * static_cast<double>(bytes) / seconds / 1e9;
  };
  timed(true, true);  // warm-up
  std::vector<double> h2d, d2h, both;
  for (int r = 0; r < runs; ++r) {
    h2d.push_back(timed(true, false));
    d2h.push_back(timed(false, true));
    both.push_back(timed(true, true));
  }
  return CopyRates{spread_of(h2d), spread_of(d2h), spread_of(both)};
}

// ---------------------------------------------------------------------------
// --live: frames paced as a live source sends them, one at a time; where
// each frame's time goes, and the host's CPU time per frame.

struct LiveResult {
  std::vector<double> latency_ms;  // submit to the host seeing the frame out, per frame
  std::vector<double> wake_us;     // the download's completion to the host seeing it
  double upload_ms = 0, compute_ms = 0, download_ms = 0;  // device stages, means
  double submit_us = 0;                                   // enqueueing the frame's work, mean
  double cpu_us = 0;                                      // process CPU time per frame
};

double mean_of(const std::vector<double>& v) {
  double sum = 0;
  for (double x : v) sum += x;
  return v.empty() ? 0 : sum / v.size();
}
double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p / 100 * v.size()))];
}

// Sleeps until frame `i`'s time at `fps` from `start`; fps 0: no pacing.
void pace(std::chrono::steady_clock::time_point start, int i, int fps) {
  if (fps > 0)
    std::this_thread::sleep_until(start + std::chrono::nanoseconds(int64_t{1000000000} * i / fps));
}

// The plain loop with one frame at a time: enqueue, wait for its download.
LiveResult live_plain_loop(Device& dev, const Options& opt, const Size& size, HostWait wait,
                           int fps) {
  dev.make_current();
  const FrameLayout layout = FrameLayout::packed(PixelFormat::kRGBA, size.width, size.height);
  const FrameLayout device_layout =
      FrameLayout::packed(PixelFormat::kRGBA, size.width, size.height, 256, 256);
  auto pinned_in = dev.alloc_pinned(layout.size), pinned_out = dev.alloc_pinned(layout.size);
  std::memset(pinned_in->data(), 0x5a, layout.size);
  auto device_in = dev.alloc_device(device_layout.size),
       device_out = dev.alloc_device(device_layout.size);
  const auto op = make_operation("copy");
  auto up = dev.create_stream(), compute = dev.create_stream(), down = dev.create_stream();
  auto up_started = dev.create_timing_event(), uploaded = dev.create_timing_event(),
       compute_started = dev.create_timing_event(), computed = dev.create_timing_event(),
       down_started = dev.create_timing_event(), downloaded = dev.create_host_event(wait, true);
  const ImageRef din = device_layout.at(device_in->data());
  const ImageRef dout = device_layout.at(device_out->data());
  LiveResult r;
  const int skip = std::min(opt.warmup, opt.live_frames / 4);
  double cpu_start = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < opt.live_frames; ++i) {
    pace(start, i, fps);
    if (i == skip) cpu_start = process_cpu_us();
    const int64_t t0 = host_now_ns();
    up->record(*up_started);
    up->copy_2d(din.planes[0].data, din.planes[0].stride, pinned_in->data(), layout.stride[0],
                layout.row_bytes(0), layout.rows(0), CopyKind::kHostToDevice);
    up->record(*uploaded);
    compute->wait(*uploaded);
    compute->record(*compute_started);
    compute->launch(*op, din, dout, Workspace{});
    compute->record(*computed);
    down->wait(*computed);
    down->record(*down_started);
    down->copy_2d(pinned_out->data(), layout.stride[0], dout.planes[0].data, dout.planes[0].stride,
                  layout.row_bytes(0), layout.rows(0), CopyKind::kDeviceToHost);
    down->record(*downloaded);
    const int64_t enqueued = host_now_ns();
    downloaded->synchronize();
    const int64_t t1 = host_now_ns();
    if (i < skip) continue;
    r.latency_ms.push_back((t1 - t0) / 1e6);
    r.submit_us += (enqueued - t0) / 1e3;
    const int64_t done = downloaded->completed_at_ns();
    r.wake_us.push_back((t1 - done) / 1e3);
    r.upload_ms += (uploaded->completed_at_ns() - up_started->completed_at_ns()) / 1e6;
    r.compute_ms += (computed->completed_at_ns() - compute_started->completed_at_ns()) / 1e6;
    r.download_ms += (done - down_started->completed_at_ns()) / 1e6;
  }
  const double n = static_cast<double>(r.latency_ms.size());
  r.cpu_us = (process_cpu_us() - cpu_start) / n;
  r.submit_us /= n;
  r.upload_ms /= n;
  r.compute_ms /= n;
  r.download_ms /= n;
  if (std::memcmp(pinned_out->data(), pinned_in->data(), layout.size) != 0)
    throw Error("the live plain loop's last frame is wrong");
  return r;
}

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
      const int input = *static_cast<const int*>(frame.user().get());
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

int usage(const char* why) {
  std::fprintf(
      stderr,
      "cudaoverlap-bench: %s\nusage: cudaoverlap-bench [--backend auto|cuda|cpu] "
      "[--frames N] [--warmup N] [--runs N] [--ring N] [--rings 2,3,4,6] "
      "[--sizes 720p,1080p,4k] [--synthetic-us N] [--no-pageable]\n"
      "       cudaoverlap-bench --live [--live-fps N] [--live-frames N] [--sizes ...]\n"
      "       cudaoverlap-bench --calls [--sizes ...] [--frames N] [--warmup N] [--ring N] "
      "[--live-fps N] [--live-frames N]\n"
      "       cudaoverlap-bench --kernels [--iterations N] "
      "[--hbm-gbps G] [--all-pairs | --pairs FROM:TO,... | --only KERNEL:FORMAT,...]\n       "
      "cudaoverlap-bench --staging "
      "[--backend auto|cuda|cpu] "
      "[--repeats N] [--register-runs N]\n"
      "       cudaoverlap-bench --devices all|0,1,... (cpu backend: a count) "
      "[--backend auto|cuda|cpu] [--sizes ...] [--frames N] [--warmup N] [--runs N] "
      "[--ring N] [--synthetic-us N] [--stand-in-link-us N (cpu)]\n",
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
  const char* kernel;
  KernelParams params;
};

// Every operation the element offers (convert has its own rows), with its
// defaults, then more parameters of those that take some.
std::vector<TimedKernel> timed_kernels() {
  std::vector<TimedKernel> kernels;
  for (const OperationEntry& entry : operation_registry())
    if (entry.offered && !entry.user_code && std::string(entry.name) != "convert" &&
        std::string(entry.name) != "flip")
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
    k.params.flip = direction;
    kernels.push_back(k);
  }
  TimedKernel balance{"balance 0.1 1.2 1.3 0.2", "balance", {}};
  balance.params.balance = {0.1, 1.2, 1.3, 0.2};
  kernels.push_back(balance);
  for (double sigma : {1.0, 5.0, 20.0}) {
    TimedKernel blur{"blur sigma " + std::to_string(static_cast<int>(sigma)), "blur", {}};
    blur.params.blur_sigma = sigma;
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
  // One row: `k` from a 4K frame of `in_format` to one of `out_format`.
  auto time_row = [&](const std::string& label, const char* kernel, const KernelParams& params,
                      PixelFormat in_format, PixelFormat out_format, int iterations, bool print) {
    const auto op = make_operation(kernel, params);
    const bool swap = op->swaps_axes();
    // 256-byte aligned planes, as the engine allocates them.
    const FrameLayout in_layout = FrameLayout::packed(in_format, width, height, 256, 256);
    const FrameLayout out_layout =
        FrameLayout::packed(out_format, swap ? height : width, swap ? width : height, 256, 256);
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
    const double ms = time_operation_cuda(*op, ins, outs, iterations);
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
  bt709.convert.in = bt709.convert.out = Colorimetry{YuvMatrix::kBT709, false};
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
  if (!opt.only.empty()) return 0;
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
  for (const auto& [from, to] : convert_pairs)
    time_row("convert", "convert", bt709, from, to, opt.iterations, true);
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

// ---------------------------------------------------------------------------
// --staging: what a frame in pageable memory costs, staged every frame or
// pinned once.

// Pageable memory as an upstream allocator hands it out: malloc'd, every
// page touched (so no first-touch fault lands in a timed region).
class PageableBlock {
 public:
  explicit PageableBlock(size_t bytes) : data_(static_cast<uint8_t*>(std::malloc(bytes))) {
    if (!data_) throw Error("out of host memory: " + std::to_string(bytes) + " bytes asked");
    for (size_t b = 0; b < bytes; ++b) data_[b] = uint8_t(b * 13 + b / 4099);
  }
  ~PageableBlock() { std::free(data_); }
  PageableBlock(const PageableBlock&) = delete;
  PageableBlock& operator=(const PageableBlock&) = delete;
  uint8_t* data() const { return data_; }

 private:
  uint8_t* data_;
};

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// GB/s of `repeats` staging copies of a frame from pageable into pinned
// memory on `threads` threads (the engine's ParallelCopy, its own
// threshold), after one copy untimed.
double staging_gbps(Device& device, const FrameLayout& layout, int threads, int repeats) {
  const PageableBlock source(layout.size);
  auto pinned = device.alloc_pinned(layout.size);
  const ImageRef from = layout.at(source.data());
  const ImageRef to = layout.at(pinned->data());
  PlaneCopy planes[kMaxPlanes];
  for (int p = 0; p < layout.n_planes(); ++p)
    planes[p] = PlaneCopy{to.planes[p].data,     to.planes[p].stride, from.planes[p].data,
                          from.planes[p].stride, layout.row_bytes(p), layout.rows(p)};
  ParallelCopy copier(threads);
  copier.copy(planes, layout.n_planes());
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < repeats; ++i) copier.copy(planes, layout.n_planes());
  return frame_bytes(layout) * repeats / seconds_since(start) / 1e9;
}

struct RegistrationCost {
  double register_ms = 0;
  double unregister_ms = 0;
};

// Means over `runs` registrations, each of a freshly allocated and touched
// block of `bytes`.
RegistrationCost registration_cost(Device& device, size_t bytes, int runs) {
  RegistrationCost cost;
  for (int r = 0; r < runs; ++r) {
    const PageableBlock block(bytes);
    auto start = std::chrono::steady_clock::now();
    auto registration = device.register_host(block.data(), bytes);
    cost.register_ms += seconds_since(start) * 1e3;
    start = std::chrono::steady_clock::now();
    registration.reset();
    cost.unregister_ms += seconds_since(start) * 1e3;
  }
  cost.register_ms /= runs;
  cost.unregister_ms /= runs;
  return cost;
}

// GB/s of uploading a frame from `host` into device memory laid out as the
// engine's (256-byte pitch), one frame at a time: a copy per plane, an event
// recorded after them and waited for, as a serial upload would.
double upload_gbps(Device& device, const FrameLayout& layout, uint8_t* host, int repeats) {
  const FrameLayout device_layout =
      FrameLayout::packed(layout.format, layout.width, layout.height, 256, 256);
  auto device_memory = device.alloc_device(device_layout.size);
  auto stream = device.create_stream();
  auto uploaded = device.create_event();
  const ImageRef from = layout.at(host);
  const ImageRef to = device_layout.at(device_memory->data());
  auto upload_once = [&] {
    for (int p = 0; p < layout.n_planes(); ++p)
      stream->copy_2d(to.planes[p].data, to.planes[p].stride, from.planes[p].data,
                      from.planes[p].stride, layout.row_bytes(p), layout.rows(p),
                      CopyKind::kHostToDevice);
    stream->record(*uploaded);
    uploaded->synchronize();
  };
  upload_once();
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < repeats; ++i) upload_once();
  return frame_bytes(layout) * repeats / seconds_since(start) / 1e9;
}

int run_staging_table(const std::shared_ptr<Device>& device, const Options& opt) {
  Device& dev = *device;
  dev.make_current();
  struct StagedSize {
    const char* name;
    PixelFormat format;
    int width, height;
  };
  const StagedSize sizes[] = {{"1080p RGBA", PixelFormat::kRGBA, 1920, 1080},
                              {"4K NV12", PixelFormat::kNV12, 3840, 2160},
                              {"4K RGBA", PixelFormat::kRGBA, 3840, 2160}};
  const int thread_counts[] = {1, 2, 4, 8};
  std::printf("cudaoverlap staging vs pinning upstream memory on %s\n", dev.describe().c_str());
  std::printf(
      "%d copies/uploads per figure, registration: mean of %d on fresh, touched memory; "
      "automatic staging-threads here: %d\n\n",
      opt.repeats, opt.register_runs, ParallelCopy::automatic_threads());
  std::printf(
      "| frame | MB | memcpy->pinned GB/s 1 thr | 2 thr | 4 thr | 8 thr | register ms | "
      "unregister ms | H2D GB/s pageable | registered | pinned |\n");
  std::printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  std::string break_even;
  for (const StagedSize& size : sizes) {
    const FrameLayout layout = FrameLayout::packed(size.format, size.width, size.height);
    const double bytes = frame_bytes(layout);
    double copy_gbps[4];
    int best = 0;
    for (int t = 0; t < 4; ++t) {
      copy_gbps[t] = staging_gbps(dev, layout, thread_counts[t], opt.repeats);
      if (copy_gbps[t] > copy_gbps[best]) best = t;
    }
    const RegistrationCost cost = registration_cost(dev, layout.size, opt.register_runs);
    const PageableBlock pageable(layout.size);
    const double from_pageable = upload_gbps(dev, layout, pageable.data(), opt.repeats);
    double from_registered;
    {
      const PageableBlock block(layout.size);
      auto registration = dev.register_host(block.data(), layout.size);
      from_registered = upload_gbps(dev, layout, block.data(), opt.repeats);
    }
    auto pinned = dev.alloc_pinned(layout.size);
    std::memset(pinned->data(), 0x5A, layout.size);
    const double from_pinned = upload_gbps(dev, layout, pinned->data(), opt.repeats);
    std::printf("| %s | %.1f | %.1f | %.1f | %.1f | %.1f | %.2f | %.2f | %.1f | %.1f | %.1f |\n",
                size.name, bytes / 1e6, copy_gbps[0], copy_gbps[1], copy_gbps[2], copy_gbps[3],
                cost.register_ms, cost.unregister_ms, from_pageable, from_registered, from_pinned);

    // Per frame, staging costs the copy at its best thread count plus an
    // upload from pinned memory; pinned once, a frame costs an upload from
    // registered memory, after registering and unregistering once.
    const double staged_ms =
        bytes / (copy_gbps[best] * 1e9) * 1e3 + bytes / (from_pinned * 1e9) * 1e3;
    const double registered_ms = bytes / (from_registered * 1e9) * 1e3;
    const double once_ms = cost.register_ms + cost.unregister_ms;
    char entry[160];
    if (staged_ms <= registered_ms)
      std::snprintf(entry, sizeof entry, "%s never (staging %.2f ms/frame <= registered %.2f)",
                    size.name, staged_ms, registered_ms);
    else {
      const double frames = std::max(1.0, std::ceil(once_ms / (staged_ms - registered_ms)));
      std::snprintf(entry, sizeof entry,
                    "%s after %.0f frame%s (%.2f ms once, %.2f ms/frame saved)", size.name, frames,
                    frames == 1.0 ? "" : "s", once_ms, staged_ms - registered_ms);
    }
    break_even += (break_even.empty() ? "" : "; ") + std::string(entry);
  }
  std::printf(
      "\nbreak-even, pinning once (register + unregister) vs staging every frame at the best "
      "thread count (copy + upload from pinned, vs upload from registered): %s\n",
      break_even.c_str());
  return 0;
}

std::vector<std::string> split_commas(const std::string& value) {
  std::vector<std::string> parts;
  size_t at = 0;
  while (at <= value.size()) {
    const size_t comma = value.find(',', at);
    parts.push_back(value.substr(at, comma == std::string::npos ? std::string::npos : comma - at));
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  return parts;
}

// The format GStreamer calls `name` (format_info's names).
bool format_named(const std::string& name, PixelFormat* format) {
  for (PixelFormat f : all_pixel_formats())
    if (name == format_info(f).name) {
      *format = f;
      return true;
    }
  return false;
}

// ---------------------------------------------------------------------------
// --devices: one stream of frames over several devices (MultiEngine), each
// device alone and all of them together.

// A device of --devices and the number it is shown by: its CUDA device
// number, or on the cpu backend its place in the list.
struct ListedDevice {
  int number = 0;
  std::shared_ptr<Device> device;
};

// A whole number and nothing else, or -1.
int parse_count(const std::string& text) {
  if (text.empty() || text.size() > 6) return -1;
  for (char c : text)
    if (c < '0' || c > '9') return -1;
  return std::atoi(text.c_str());
}

// The devices LIST names: `all` or CUDA device numbers (`0,1`); on the cpu
// backend a count of cpu devices standing in (`2`; `all` is two, a list one
// per entry). Empty with `why` set when LIST is not understood; throws
// Error when a CUDA device named does not exist, or none does for `all`.
std::vector<ListedDevice> listed_devices(const std::string& list, bool cuda, int link_us,
                                         std::string* why) {
  std::vector<ListedDevice> listed;
  const std::vector<std::string> entries = split_commas(list);
  if (!cuda) {
    int count = list == "all" ? 2 : static_cast<int>(entries.size());
    if (entries.size() == 1 && list != "all") count = parse_count(list);
    if (count < 1 || count > 16) {
      *why = "--devices on the cpu backend takes a count of cpu devices from 1 to 16, not " + list;
      return {};
    }
    for (int i = 0; i < count; ++i) {
      CpuDeviceOptions options;
      options.stand_in = count > 1 ? i : -1;
      std::shared_ptr<Device> device = make_cpu_device(options);
      if (link_us > 0) {
        // The frame's upload waits for a sleep on its stream: a link of
        // link_us a frame that costs the host nothing.
        test::TestDeviceOptions link;
        link.upload_delay_us = static_cast<uint32_t>(link_us);
        device = std::make_shared<test::TestDevice>(std::move(device), link);
      }
      listed.push_back({i, std::move(device)});
    }
    return listed;
  }
  std::vector<int> numbers;
  if (list == "all") {
    const int count = cuda_device_count(why);
    if (count == 0) throw Error("no CUDA device: " + *why);
    for (int i = 0; i < count; ++i) numbers.push_back(i);
  } else {
    for (const std::string& entry : entries) {
      const int number = parse_count(entry);
      if (number < 0) {
        *why = "--devices takes `all` or CUDA device numbers such as 0,1, not " + list;
        return {};
      }
      if (std::find(numbers.begin(), numbers.end(), number) != numbers.end()) {
        *why = "--devices names CUDA device " + entry + " twice";
        return {};
      }
      numbers.push_back(number);
    }
  }
  // make_cuda_device says which numbers exist when one does not.
  for (int number : numbers) listed.push_back({number, make_cuda_device(number)});
  return listed;
}

// "0,1": the numbers of `devices`.
std::string numbers_of(const std::vector<ListedDevice>& devices) {
  std::string text;
  for (const ListedDevice& d : devices)
    text += (text.empty() ? "" : ",") + std::to_string(d.number);
  return text;
}

// Where the copy probes' host memory comes from: the device's own pinned
// memory (Device::alloc_pinned, as the engine's), or anonymous memory the
// kernel is asked to back with 2 MB pages (transparent huge pages,
// MADV_HUGEPAGE), then registered with the device. Fewer, larger pages
// mean fewer translations for the DMA to look up where an IOMMU sits
// between the links and memory: whether that is what caps several links
// copying at once shows in the difference.
enum class HostPages { kPinned, kHuge };

// Host memory for a copy probe, as HostPages says.
class ProbeMemory {
 public:
  ProbeMemory(Device& device, size_t bytes, HostPages pages) {
    if (pages == HostPages::kPinned) {
      pinned_ = device.alloc_pinned(bytes);
      data_ = pinned_->data();
      return;
    }
    constexpr size_t kHuge = size_t{2} << 20;
    mapped_ = (bytes + kHuge - 1) / kHuge * kHuge + kHuge;  // room to align
    map_ = mmap(nullptr, mapped_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (map_ == MAP_FAILED) throw Error("mmap of " + std::to_string(mapped_) + " bytes failed");
    const uintptr_t at = reinterpret_cast<uintptr_t>(map_);
    data_ = reinterpret_cast<uint8_t*>((at + kHuge - 1) / kHuge * kHuge);
    const size_t usable = (bytes + kHuge - 1) / kHuge * kHuge;
    (void)madvise(data_, usable, MADV_HUGEPAGE);  // a kernel without it: small pages
    std::memset(data_, 0, usable);                // faulted in before pinning
    try {
      registration_ = device.register_host(data_, usable);
    } catch (...) {
      munmap(map_, mapped_);  // the destructor does not run for a throwing constructor
      throw;
    }
  }
  ~ProbeMemory() {
    registration_.reset();  // unpinned before unmapped
    if (map_) munmap(map_, mapped_);
  }
  ProbeMemory(const ProbeMemory&) = delete;
  ProbeMemory& operator=(const ProbeMemory&) = delete;
  uint8_t* data() const { return data_; }

 private:
  std::unique_ptr<Buffer> pinned_;
  void* map_ = nullptr;
  size_t mapped_ = 0;
  std::unique_ptr<HostRegistration> registration_;
  uint8_t* data_ = nullptr;
};

// How much of this process's anonymous memory the kernel backs with huge
// pages now (AnonHugePages of /proc/self/smaps_rollup), in bytes; -1 when
// it does not say.
int64_t anon_huge_bytes() {
  std::FILE* f = std::fopen("/proc/self/smaps_rollup", "r");
  if (!f) return -1;
  char line[256];
  long long kb = -1;
  while (std::fgets(line, sizeof line, f))
    if (std::sscanf(line, "AnonHugePages: %lld kB", &kb) == 1) break;
  std::fclose(f);
  return kb < 0 ? -1 : kb * 1024;
}

// Both directions at once on every device together (each device's upload
// and download on two streams, all devices started at the same moment from
// a thread each), in GB/s summed over the devices: what the host and its
// links move when every device copies, against the sum of each alone.
// `huge_bytes`, when given, gets how many bytes of the probe's host memory
// the kernel backed with huge pages.
Spread measure_copies_together(const std::vector<ListedDevice>& devices, size_t bytes, int runs,
                               HostPages pages = HostPages::kPinned,
                               int64_t* huge_bytes = nullptr) {
  struct Link {
    std::unique_ptr<ProbeMemory> host_a, host_b;
    std::unique_ptr<Buffer> dev_a, dev_b;
    std::unique_ptr<Stream> up, down;
  };
  const size_t n = devices.size();
  std::vector<Link> links(n);
  const int64_t huge_before = anon_huge_bytes();
  for (size_t d = 0; d < n; ++d) {
    Device& dev = *devices[d].device;
    dev.make_current();
    Link& link = links[d];
    link.host_a = std::make_unique<ProbeMemory>(dev, bytes, pages);
    link.host_b = std::make_unique<ProbeMemory>(dev, bytes, pages);
    link.dev_a = dev.alloc_device(bytes);
    link.dev_b = dev.alloc_device(bytes);
    std::memset(link.host_a->data(), 0x3c, bytes);
    std::memset(link.host_b->data(), 0xc3, bytes);
    link.up = dev.create_stream();
    link.down = dev.create_stream();
  }
  if (huge_bytes) {
    const int64_t huge_after = anon_huge_bytes();
    *huge_bytes = huge_before < 0 || huge_after < 0 ? -1 : huge_after - huge_before;
  }
  constexpr int kCopies = 20;
  auto once = [&] {
    std::mutex mutex;
    std::condition_variable changed;
    size_t ready = 0;
    bool go = false;
    std::vector<std::string> errors(n);
    std::vector<std::chrono::steady_clock::time_point> ends(n);
    std::vector<std::thread> threads;
    for (size_t d = 0; d < n; ++d)
      threads.emplace_back([&, d] {
        // Ready even when it failed, so that the others are not held.
        try {
          devices[d].device->make_current();
        } catch (const std::exception& e) {
          errors[d] = devices[d].device->describe() + ": " + e.what();
        }
        {
          std::unique_lock<std::mutex> lock(mutex);
          ++ready;
          changed.notify_all();
          changed.wait(lock, [&] { return go; });
        }
        if (!errors[d].empty()) return;
        try {
          Link& link = links[d];
          for (int i = 0; i < kCopies; ++i) {
            link.up->copy_2d(link.dev_a->data(), bytes, link.host_a->data(), bytes, bytes, 1,
                             CopyKind::kHostToDevice);
            link.down->copy_2d(link.host_b->data(), bytes, link.dev_b->data(), bytes, bytes, 1,
                               CopyKind::kDeviceToHost);
          }
          link.up->synchronize();
          link.down->synchronize();
          ends[d] = std::chrono::steady_clock::now();
        } catch (const std::exception& e) {
          errors[d] = devices[d].device->describe() + ": " + e.what();
        }
      });
    std::chrono::steady_clock::time_point start;
    {
      std::unique_lock<std::mutex> lock(mutex);
      changed.wait(lock, [&] { return ready == n; });
      go = true;
      start = std::chrono::steady_clock::now();
    }
    changed.notify_all();
    for (std::thread& t : threads) t.join();
    for (const std::string& e : errors)
      if (!e.empty()) throw Error(e);
    const auto end = *std::max_element(ends.begin(), ends.end());
    const double seconds = std::chrono::duration<double>(end - start).count();
    return 2.0 * kCopies * static_cast<double>(bytes) * static_cast<double>(n) / seconds / 1e9;
  };
  once();  // warm-up
  std::vector<double> rates;
  for (int r = 0; r < runs; ++r) rates.push_back(once());
  // Each device's streams and memory freed with it current.
  for (size_t d = 0; d < n; ++d) {
    devices[d].device->make_current();
    links[d] = Link{};
  }
  return spread_of(rates);
}

// How a MultiEngine run compares outputs with inputs. kSampled (the timed
// runs): whole frames as checked_frame() picks them, of every other frame
// kSampleRows rows spread over it, so the comparison stays out of the
// figures; kWhole (a run of its own, untimed): every frame whole.
enum class Check { kSampled, kWhole };
constexpr int kSampleRows = 8;

// Where a MultiEngine run's host time went, per timed frame (the
// --devices table's second table): whether one thread bounds the rate.
struct HostFigures {
  double producer_busy = 0;   // the producer thread's CPU time / the run's wall time
  double workers_cpu_us = 0;  // CPU time of the engines' workers (co-worker), all together
  double take_us = 0;         // producer waiting for an input frame (the pool: upstream)
  double submit_us = 0;       // producer in MultiEngine::submit (wall)
  double engine_us = 0;       // of which in Engine::submit
  double dealing_us = 0;      // of which in MultiEngine's own part: choosing a device, and
                              // waiting for one's slot
  double slot_us = 0;         // of which, in Engine::submit, waiting for a slot
  double enqueue_us = 0;      // and, in Engine::submit, enqueuing the device work
  double held_us = 0;         // a frame done, waiting for an earlier one (delivery order)
  double held_max_us = 0;
};

struct MultiResult {
  double fps = 0;
  double cpu_us = 0;               // the process's CPU time per timed frame
  int64_t bad = 0;                 // frames wrong, out of order, or never delivered
  std::vector<int64_t> by_device;  // timed frames each device computed
  HostFigures host;
  // Per device, over the timed frames (MultiEngine::lane_figures): the
  // dealing's mean time per frame (us), the frames of other devices its
  // worker handed out (per timed frame of the run), and us per such frame.
  std::vector<double> dealt_us, handed_share, handing_us;
};

// CPU time so far of this process's threads named `name`, in microseconds
// (the scheduler's own count, /proc/self/task/*/schedstat: ns on a CPU).
double threads_cpu_us(const std::string& name) {
  double total = 0;
  DIR* tasks = opendir("/proc/self/task");
  if (!tasks) return 0;
  while (const dirent* entry = readdir(tasks)) {
    if (entry->d_name[0] == '.') continue;
    const std::string dir = std::string("/proc/self/task/") + entry->d_name;
    char comm[64] = {};
    if (FILE* f = std::fopen((dir + "/comm").c_str(), "r")) {
      if (!std::fgets(comm, sizeof comm, f)) comm[0] = 0;
      std::fclose(f);
    }
    comm[std::strcspn(comm, "\n")] = 0;
    if (name != comm) continue;
    unsigned long long on_cpu_ns = 0;
    if (FILE* f = std::fopen((dir + "/schedstat").c_str(), "r")) {
      if (std::fscanf(f, "%llu", &on_cpu_ns) != 1) on_cpu_ns = 0;
      std::fclose(f);
    }
    total += static_cast<double>(on_cpu_ns) / 1e3;
  }
  closedir(tasks);
  return total;
}

// CPU time of the calling thread so far, in microseconds.
double thread_cpu_us() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e6 + static_cast<double>(t.tv_nsec) / 1e3;
}

// One run of a MultiEngine over `devices`: --warmup frames, then --frames
// timed, each of `kernel` (every kernel here copies), from one pool of
// pinned input frames that the first device allocates.
MultiResult run_multi(const std::vector<ListedDevice>& devices, const Options& opt,
                      const Size& size, const char* kernel, uint32_t synthetic_us, Check check) {
  const FrameLayout layout = FrameLayout::packed(PixelFormat::kRGBA, size.width, size.height);
  const int n = static_cast<int>(devices.size());
  std::vector<std::shared_ptr<Device>> engine_devices;
  for (const ListedDevice& d : devices) engine_devices.push_back(d.device);
  // A frame is dealt to a device only when submitted, after it left the
  // pool: one pool for all, pinned by the first device (portable to every
  // device under unified addressing), enough for every ring to be full.
  Device& first = *devices.front().device;
  first.make_current();
  InputPool pool(first, layout, opt.ring * n + 2, true);
  EngineConfig config;
  config.ring_size = opt.ring;
  config.input = config.output = layout;
  KernelParams params;
  params.synthetic_us = synthetic_us;
  config.operation = make_operation(kernel, params);

  // What a frame carries through the engine: its input buffer and the
  // number it was submitted as, which must come back as its sequence.
  struct Tag {
    int input;
    uint64_t submitted;
  };
  std::mutex mutex;
  MultiResult result;
  result.by_device.assign(static_cast<size_t>(n), 0);
  uint64_t expected = 0;  // the sequence the next frame out must have
  int64_t delivered = 0;
  std::string failure;
  std::chrono::steady_clock::time_point last;
  const size_t row_bytes = layout.row_bytes(0);
  const size_t stride = layout.stride[0];
  const int rows = layout.rows(0);
  MultiEngineCallbacks callbacks;
  callbacks.on_frame = [&](OutputFrame frame) {
    const int64_t now = host_now_ns();  // before the check below
    const uint64_t sequence = frame.sequence();
    const Tag& tag = *static_cast<const Tag*>(frame.user().get());
    const uint8_t* out = frame.image().planes[0].data;
    const uint8_t* in = pool.data(tag.input);
    bool same = true;
    if (check == Check::kWhole || checked_frame(sequence, opt.warmup, opt.frames)) {
      same = std::memcmp(out, in, layout.size) == 0;
    } else {
      for (int k = 0; k < kSampleRows && same; ++k) {
        const size_t y = static_cast<size_t>(k) * static_cast<size_t>(rows - 1) / (kSampleRows - 1);
        same = std::memcmp(out + y * stride, in + y * stride, row_bytes) == 0;
      }
    }
    const int device = frame.device();
    const bool numbered = tag.submitted == sequence;
    const FrameTiming timing = frame.timing();
    frame.release();
    std::lock_guard<std::mutex> lock(mutex);
    const bool in_order = sequence == expected;
    expected = sequence + 1;
    if (!same || !numbered || !in_order || device < 0 || device >= n) ++result.bad;
    if (sequence >= static_cast<uint64_t>(opt.warmup) && device >= 0 && device < n) {
      ++result.by_device[static_cast<size_t>(device)];
      HostFigures& h = result.host;
      h.slot_us += static_cast<double>(timing.wait_slot.end_ns - timing.wait_slot.start_ns) / 1e3;
      h.enqueue_us += static_cast<double>(timing.enqueued_ns - timing.wait_slot.end_ns) / 1e3;
      h.engine_us += static_cast<double>(timing.enqueued_ns - timing.wait_slot.start_ns) / 1e3;
      const double held = static_cast<double>(now - timing.delivered_ns) / 1e3;
      h.held_us += held;
      h.held_max_us = std::max(h.held_max_us, held);
    }
    ++delivered;
    last = std::chrono::steady_clock::now();
  };
  // A device lost, or all of them: the figures would not be this
  // configuration's. Said at once, and the run fails after its frames.
  auto fail = [&](const std::string& what, const std::string& message) {
    std::fprintf(stderr, "cudaoverlap-bench: %s: %s\n", what.c_str(), message.c_str());
    std::lock_guard<std::mutex> lock(mutex);
    if (failure.empty()) failure = what + ": " + message;
  };
  callbacks.on_warning = [&](int device, const std::string& message) {
    const bool known = device >= 0 && device < n;
    fail(known
             ? "device " + std::to_string(devices[static_cast<size_t>(device)].number) + " left out"
             : std::string("a device left out"),
         message);
  };
  callbacks.on_error = [&](const std::string& message) { fail("no device left", message); };
  MultiEngine engine(engine_devices, config, callbacks);
  engine.start();

  uint64_t submitted = 0;
  int64_t take_ns = 0, submit_ns = 0;  // the producer's waits, timed frames only
  auto submit_n = [&](int count) {
    for (int i = 0; i < count; ++i) {
      const int64_t t0 = host_now_ns();
      InputFrame in = pool.take();
      const int64_t t1 = host_now_ns();
      const int input = *static_cast<const int*>(in.user.get());
      in.user = std::make_shared<Tag>(Tag{input, submitted});
      if (engine.submit(std::move(in)) != Status::kOk)
        throw Error("a frame could not be submitted: " + engine.error());
      take_ns += t1 - t0;
      submit_ns += host_now_ns() - t1;
      ++submitted;
    }
    if (engine.drain() != Status::kOk) throw Error("draining failed: " + engine.error());
  };
  submit_n(opt.warmup);
  take_ns = submit_ns = 0;
  std::vector<MultiEngine::LaneFigures> lanes_before;
  for (int d = 0; d < n; ++d) lanes_before.push_back(engine.lane_figures(d));
  const double cpu_start = process_cpu_us();
  const double producer_start = thread_cpu_us();
  const double workers_start = threads_cpu_us("co-worker");
  const auto start = std::chrono::steady_clock::now();
  submit_n(opt.frames);
  const double cpu = process_cpu_us() - cpu_start;
  const double producer_cpu = thread_cpu_us() - producer_start;
  const double workers_cpu = threads_cpu_us("co-worker") - workers_start;
  for (int d = 0; d < n; ++d) {
    const MultiEngine::LaneFigures after = engine.lane_figures(d);
    const MultiEngine::LaneFigures& before = lanes_before[static_cast<size_t>(d)];
    const int64_t measured = after.measured - before.measured;
    const int64_t handed = after.handed_for_others - before.handed_for_others;
    result.dealt_us.push_back(measured > 0 ? (after.measured_ns - before.measured_ns) / 1e3 /
                                                 static_cast<double>(measured)
                                           : 0.0);
    result.handed_share.push_back(static_cast<double>(handed) / opt.frames);
    result.handing_us.push_back(handed > 0
                                    ? static_cast<double>(after.handing_ns - before.handing_ns) /
                                          1e3 / static_cast<double>(handed)
                                    : 0.0);
  }
  engine.stop();
  std::lock_guard<std::mutex> lock(mutex);
  {
    HostFigures& h = result.host;
    const double wall_us = std::chrono::duration<double, std::micro>(last - start).count();
    h.producer_busy = wall_us > 0 ? producer_cpu / wall_us : 0;
    h.workers_cpu_us = workers_cpu / opt.frames;
    h.take_us = static_cast<double>(take_ns) / 1e3 / opt.frames;
    h.submit_us = static_cast<double>(submit_ns) / 1e3 / opt.frames;
    h.slot_us /= opt.frames;
    h.engine_us /= opt.frames;
    h.dealing_us = h.submit_us - h.engine_us;
    h.enqueue_us /= opt.frames;
    h.held_us /= opt.frames;
  }
  if (!failure.empty())
    throw Error("a device failed during a run over devices " + numbers_of(devices) + ": " +
                failure);
  result.bad += std::max<int64_t>(0, static_cast<int64_t>(submitted) - delivered);
  result.fps = opt.frames / std::chrono::duration<double>(last - start).count();
  result.cpu_us = cpu / opt.frames;
  return result;
}

// The --devices table.
int run_devices_table(const std::vector<ListedDevice>& devices, const Options& opt) {
  const size_t n = devices.size();
  std::printf("cudaoverlap over several devices (MultiEngine): devices %s\n",
              numbers_of(devices).c_str());
  for (const ListedDevice& d : devices)
    std::printf("  device %d: %s\n", d.number, d.device->describe().c_str());
  std::printf(
      "RGBA, ring-size %d on each device; each figure the median (min–max) of %d runs of %d "
      "frames after %d warm-up\n",
      opt.ring, opt.runs, opt.frames, opt.warmup);
  std::printf(
      "input: one pool of pinned frames per run, allocated by the run's first device (on its "
      "NUMA node where the host has several) and shared by all: the MultiEngine deals a frame "
      "only when it is submitted; copy rates: each device its own pinned memory\n");
  std::printf(
      "bound: the sum of each device's bound alone (its pinned copies, the slower direction or "
      "half of both at once; for the synthetic kernel no more than 1/its busy time); speed-up: "
      "against the best device alone; %% of copies at once: what the run moved (each frame up "
      "and down) against plain copies both ways at once on the same devices (one device: its "
      "own rate; several: all of them together); CPU: the process's user + system time per "
      "frame; output: "
      "every frame's sequence and number checked in every run, its pixels against its input "
      "(whole in a run of its own, untimed, and every tenth warm-up frame and the last of each "
      "run; %d rows of every other frame)\n",
      kSampleRows);
  bool all_ok = true;
  for (const std::string& name : opt.sizes) {
    const Size& size = kSizes.at(name);
    const double bytes = 4.0 * size.width * size.height;
    std::vector<CopyRates> links;
    std::vector<double> bound_fps;
    for (const ListedDevice& d : devices) {
      links.push_back(measure_copy_rates(*d.device, static_cast<size_t>(bytes), opt.runs));
      const CopyRates& link = links.back();
      bound_fps.push_back(std::min({link.h2d.median, link.d2h.median, link.both.median / 2}) * 1e9 /
                          bytes);
    }
    std::printf("\n%s (%.1f MB a frame): pinned copies of a frame on each device alone\n\n",
                size.name, bytes / 1e6);
    std::printf("| device | H2D GB/s | D2H GB/s | both at once GB/s | bound frames/s |\n");
    std::printf("|---|---:|---:|---:|---:|\n");
    double both_sum = 0;
    for (size_t d = 0; d < n; ++d) {
      std::printf("| device %d | %s | %s | %s | %.0f |\n", devices[d].number,
                  show(links[d].h2d, "%.1f").c_str(), show(links[d].d2h, "%.1f").c_str(),
                  show(links[d].both, "%.1f").c_str(), bound_fps[d]);
      both_sum += links[d].both.median;
    }
    // What plain copies move with every device copying at once: the rate
    // the engine over all of them is compared with.
    double together_gbps = both_sum;
    if (n > 1) {
      const Spread together =
          measure_copies_together(devices, static_cast<size_t>(bytes), opt.runs);
      together_gbps = together.median;
      std::printf(
          "\ndevices %s copying at once, both directions on each: %s GB/s in all (%.0f %% of the "
          "sum of each alone, %.1f)\n",
          numbers_of(devices).c_str(), show(together, "%.1f").c_str(),
          100.0 * together.median / both_sum, both_sum);
    }
    // The same copies from host memory in 2 MB pages: does the size of the
    // host's pages (translations on the DMA's way, where an IOMMU is)
    // change what one link, or all at once, move?
    // Not placed on the device's NUMA node (the pinned memory above is,
    // where the host has several): on such a host the two differ in that
    // too. A probe that cannot be made says so and the tables go on.
    if (devices.front().device->cuda_device() >= 0) {
      try {
        std::string alone;
        double huge_sum = 0;
        int64_t huge_bytes = 0;  // of the probes alone, together; -1: unknown
        for (size_t d = 0; d < n; ++d) {
          int64_t one_huge = -1;
          const Spread one = measure_copies_together({devices[d]}, static_cast<size_t>(bytes),
                                                     opt.runs, HostPages::kHuge, &one_huge);
          huge_sum += one.median;
          huge_bytes = huge_bytes < 0 || one_huge < 0 ? -1 : huge_bytes + one_huge;
          alone += (d ? ", device " : "device ") + std::to_string(devices[d].number) + " " +
                   show(one, "%.1f");
        }
        std::string all;
        if (n > 1) {
          const Spread together = measure_copies_together(devices, static_cast<size_t>(bytes),
                                                          opt.runs, HostPages::kHuge);
          char text[160];
          std::snprintf(text, sizeof text,
                        "; all at once %s GB/s (%.0f %% of the sum of each alone)",
                        show(together, "%.1f").c_str(), 100.0 * together.median / huge_sum);
          all = text;
        }
        // The probes' host memory: two buffers a device, each in whole 2 MB.
        const double huge = static_cast<double>(size_t{2} << 20);
        const double probe_bytes = 2.0 * static_cast<double>(n) * std::ceil(bytes / huge) * huge;
        char share[32] = "unknown";
        if (huge_bytes >= 0)
          std::snprintf(share, sizeof share, "%.0f %%",
                        100.0 * static_cast<double>(huge_bytes) / probe_bytes);
        std::printf(
            "from 2 MB pages (anonymous memory, MADV_HUGEPAGE, registered), both directions at "
            "once, GB/s: %s%s; in huge pages: %s of the probe's memory\n",
            alone.c_str(), all.c_str(), share);
      } catch (const Error& e) {
        std::printf("from 2 MB pages: not measured (%s)\n", e.what());
      }
    }
    // The synthetic kernel's busy time: one frame's upload on the first
    // device (or --synthetic-us), so upload, compute and download match.
    const uint32_t balanced_us =
        opt.synthetic_us >= 0 ? static_cast<uint32_t>(opt.synthetic_us)
                              : static_cast<uint32_t>(bytes / (links.front().h2d.median * 1e3));
    struct KernelCase {
      const char* kernel;
      uint32_t us;
      std::string label;
    };
    const KernelCase kernels[] = {
        {"copy", 0, "copy"},
        {"synthetic", balanced_us, "copy + " + std::to_string(balanced_us) + " us"},
    };
    // The configurations: each device alone, then all together.
    std::vector<std::vector<ListedDevice>> sets;
    for (const ListedDevice& d : devices) sets.push_back({d});
    if (n > 1) sets.push_back(devices);
    std::printf(
        "\n| kernel | devices | frames/s | %% of bound | bound frames/s | %% of copies at once | "
        "speed-up vs best alone | engine CPU us/frame | frames by device | output |\n");
    std::printf("|---|---|---:|---:|---:|---:|---:|---:|---|---|\n");
    // Each kernel's host figures, per configuration and run: a table of
    // their own after the rates.
    std::vector<std::pair<std::string, std::vector<std::vector<HostFigures>>>> host_by_kernel;
    std::vector<std::string> dealing_rows;  // the devices' dealing figures, per kernel
    for (const KernelCase& k : kernels) {
      struct SetFigures {
        std::vector<double> fps, cpu;
        std::vector<int64_t> by_device;
        int64_t bad = 0;
        std::vector<HostFigures> host;
        // Per device of the set, one figure a run (MultiResult's).
        std::vector<std::vector<double>> dealt_us, handed_share, handing_us;
      };
      std::vector<SetFigures> figures(sets.size());
      for (size_t s = 0; s < sets.size(); ++s) figures[s].by_device.assign(sets[s].size(), 0);
      auto add = [](SetFigures& f, const MultiResult& r, bool timed) {
        if (timed) {
          f.fps.push_back(r.fps);
          f.cpu.push_back(r.cpu_us);
          f.host.push_back(r.host);
          for (size_t d = 0; d < r.by_device.size(); ++d) f.by_device[d] += r.by_device[d];
          f.dealt_us.resize(r.dealt_us.size());
          f.handed_share.resize(r.dealt_us.size());
          f.handing_us.resize(r.dealt_us.size());
          for (size_t d = 0; d < r.dealt_us.size(); ++d) {
            f.dealt_us[d].push_back(r.dealt_us[d]);
            f.handed_share[d].push_back(100.0 * r.handed_share[d]);
            f.handing_us[d].push_back(r.handing_us[d]);
          }
        }
        f.bad += r.bad;
      };
      // Runs taken in turn over the configurations, so a drift in the
      // machine's state spreads over all of them.
      for (int r = 0; r < opt.runs; ++r)
        for (size_t s = 0; s < sets.size(); ++s)
          add(figures[s], run_multi(sets[s], opt, size, k.kernel, k.us, Check::kSampled), true);
      for (size_t s = 0; s < sets.size(); ++s)
        add(figures[s], run_multi(sets[s], opt, size, k.kernel, k.us, Check::kWhole), false);
      double best_alone = 0;
      for (size_t s = 0; s < n; ++s)
        best_alone = std::max(best_alone, spread_of(figures[s].fps).median);
      for (size_t s = 0; s < sets.size(); ++s) {
        const SetFigures& f = figures[s];
        const Spread fps = spread_of(f.fps);
        // The kernel's own bound on each device: a stage cannot be shorter
        // than the kernel.
        double bound = 0, alone_gbps = 0;
        for (const ListedDevice& d : sets[s]) {
          const size_t i = static_cast<size_t>(
              std::find_if(devices.begin(), devices.end(),
                           [&](const ListedDevice& e) { return e.number == d.number; }) -
              devices.begin());
          bound += std::min(bound_fps[i], k.us > 0 ? 1e6 / k.us : bound_fps[i]);
          alone_gbps = links[i].both.median;
        }
        // What the run moved (each frame up and down) against what plain
        // copies moved both ways at once on the same devices: on one device
        // its own rate, on all of them their rate together.
        const double copies_gbps = sets[s].size() == 1 ? alone_gbps : together_gbps;
        const double moved_gbps = fps.median * 2.0 * bytes / 1e9;
        int64_t total = 0;
        for (int64_t c : f.by_device) total += c;
        std::string shares;
        for (size_t d = 0; d < sets[s].size(); ++d) {
          char share[48];
          std::snprintf(share, sizeof share, "%s%d: %.1f %%", d ? ", " : "", sets[s][d].number,
                        total > 0 ? 100.0 * f.by_device[d] / total : 0.0);
          shares += share;
        }
        const std::string label = sets[s].size() == 1
                                      ? "device " + numbers_of(sets[s]) + " alone"
                                      : "devices " + numbers_of(sets[s]) + " together";
        const std::string output =
            f.bad == 0 ? std::string("checked")
                       : std::to_string(f.bad) + (f.bad == 1 ? " bad frame" : " bad frames");
        std::printf("| %s | %s | %s | %.1f %% | %.0f | %.1f %% | %.2fx | %s | %s | %s |\n",
                    k.label.c_str(), label.c_str(), show(fps).c_str(), 100.0 * fps.median / bound,
                    bound, 100.0 * moved_gbps / copies_gbps, fps.median / best_alone,
                    show(spread_of(f.cpu)).c_str(), shares.c_str(), output.c_str());
        std::fflush(stdout);
        all_ok = all_ok && f.bad == 0;
      }
      host_by_kernel.emplace_back(k.label, std::vector<std::vector<HostFigures>>());
      for (const SetFigures& f : figures) host_by_kernel.back().second.push_back(f.host);
      if (n > 1) {
        const SetFigures& all = figures.back();
        std::string rows;
        for (size_t d = 0; d < n; ++d) {
          char row[256];
          std::snprintf(row, sizeof row, "| %s | %d | %s | %s %% | %s |\n", k.label.c_str(),
                        devices[d].number, show(spread_of(all.dealt_us[d]), "%.1f").c_str(),
                        show(spread_of(all.handed_share[d]), "%.1f").c_str(),
                        show(spread_of(all.handing_us[d]), "%.1f").c_str());
          rows += row;
        }
        dealing_rows.push_back(rows);
      }
    }
    // Where the host's time went in the same runs: a producer busy all the
    // time, or frames held long for their turn, bound the rate before the
    // devices do.
    std::printf(
        "\n%s: host time per frame, median (min–max) over the runs above; producer: the thread "
        "that takes input frames and submits them (busy: its CPU time / wall time); submit: in "
        "MultiEngine::submit, of which dealing: choosing a device and waiting for one's slot, "
        "slot: Engine::submit waiting for a free slot, enqueue: Engine::submit issuing the "
        "frame's device work; input: waiting for a pool frame; held: a frame done, waiting for "
        "an earlier one on another device; workers: the engines' worker threads' CPU time, all "
        "devices together\n\n",
        size.name);
    std::printf(
        "| kernel | devices | producer busy | submit us | dealing us | slot us | enqueue us | "
        "input us | held us (max) | workers CPU us |\n");
    std::printf("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (const auto& [label, by_set] : host_by_kernel)
      for (size_t s = 0; s < sets.size(); ++s) {
        const std::vector<HostFigures>& h = by_set[s];
        auto of = [&](double HostFigures::*field, double scale = 1.0) {
          std::vector<double> values;
          for (const HostFigures& one : h) values.push_back(one.*field * scale);
          return show(spread_of(values), "%.1f");
        };
        double held_max = 0;
        for (const HostFigures& one : h) held_max = std::max(held_max, one.held_max_us);
        std::printf("| %s | %s | %s %% | %s | %s | %s | %s | %s | %s (%.0f) | %s |\n",
                    label.c_str(), numbers_of(sets[s]).c_str(),
                    of(&HostFigures::producer_busy, 100.0).c_str(),
                    of(&HostFigures::submit_us).c_str(), of(&HostFigures::dealing_us).c_str(),
                    of(&HostFigures::slot_us).c_str(), of(&HostFigures::enqueue_us).c_str(),
                    of(&HostFigures::take_us).c_str(), of(&HostFigures::held_us).c_str(), held_max,
                    of(&HostFigures::workers_cpu_us).c_str());
      }
    // What the dealing saw of each device in the runs over all of them: a
    // device whose measured time is above the others' gets fewer frames;
    // its worker handing out the others' frames (the next in order was its
    // own) is time it does not look for its own.
    if (n > 1) {
      std::printf(
          "\n%s, devices %s together: per device, median (min–max) over the runs above; dealt "
          "us: the time per frame the dealing measured for it (MultiEngine::lane_figures); "
          "hands out: frames of other devices its worker handed out, %% of all frames; us each: "
          "the time that took per frame (the consumer's on_frame)\n\n",
          size.name, numbers_of(devices).c_str());
      std::printf("| kernel | device | dealt us | hands out | us each |\n");
      std::printf("|---|---:|---:|---:|---:|\n");
      for (const std::string& rows : dealing_rows) std::printf("%s", rows.c_str());
    }
    std::fflush(stdout);
  }
  return all_ok ? 0 : 1;
}

// --calls: what each CUDA call of a frame costs the thread that makes it,
// the enqueueing alone, for the engine's sequence of calls and for shorter
// ones the engine could make instead. One thread enqueues RGBA frames from a
// pool of pinned input frames into a ring of --ring slots, waiting (outside
// the timing) for a slot's last download before it is used again, so the GPU
// stays busy and every call is made while earlier frames run, as in the
// engine. Each call is timed on the steady clock: these calls do not block,
// so wall time is the thread's time, but for a preemption now and then,
// which the median per frame leaves out. The thread waits for a slot in one
// of three ways: spinning in cudaEventSynchronize (its caches stay warm);
// sleeping 50 us between looks (cudaEventQuery), as the engine's threads
// sleep between frames, so its calls are made by a thread just woken, and
// the looks at an event not yet done are timed too; or spinning while
// another thread looks at the newest frame's event every 20 us, as the
// engine's worker does, its calls taking the same driver locks. Then, as
// a live source's frames come (--live-fps, --live-frames of them after 10
// for warm-up), each frame a period after the one before, long done by
// then, the GPU idle in between: the thread sleeping through the period
// (as a live pipeline's threads do: what the calls cost a thread whose
// caches others used meanwhile), or spinning through it (its caches kept,
// the GPU idling all the same: which of the two makes a live frame's calls
// dearer). Sequences:
// - engine: cudaSetDevice, then the 2D H2D copy, record "uploaded", the
//   compute stream waits for it, the kernel, record "computed", the
//   download stream waits for it, the 2D D2H copy, record "downloaded";
// - the same without cudaSetDevice (the thread's device is already the
//   engine's);
// - a stream per slot: 1D copies (the frame's rows are contiguous on both
//   sides at these widths) and the kernel in stream order on the slot's own
//   stream, no events between stages, then record "downloaded";
// - the engine's in 4 bands (as it runs a live source's frames), band by
//   band as the engine makes them: each band's upload and "uploaded", the
//   compute stream's wait, the band's kernel and "computed", the download
//   stream's wait and the band's download, then "downloaded" (30 calls);
// - the engine's, whole and in 4 bands, as a CUDA graph: the sequence
//   captured once for each slot and input frame (the graph holds the
//   pointers), then a frame is one launch on the slot's stream and a record
//   of "downloaded" there. Graphs on a slot's stream run one after another;
//   those of different slots run as the GPU lets them, so the upload of
//   one frame may run beside that of the next (the engine's upload stream
//   keeps them in order).
#ifdef CUDAOVERLAP_HAVE_CUDA

// How the measuring thread waits for a slot's last download.
enum class SlotWait { kSpin, kSleep, kSpinWithLooker, kLiveSleep, kLiveSpin };

const char* wait_label(SlotWait how) {
  switch (how) {
    case SlotWait::kSpin:
      return "spins";
    case SlotWait::kSleep:
      return "sleeps (50 µs at a time)";
    case SlotWait::kSpinWithLooker:
      return "spins, another thread looking";
    case SlotWait::kLiveSleep:
      return "live: sleeps a frame period";
    case SlotWait::kLiveSpin:
      return "live: spins a frame period";
  }
  return "";
}

int run_calls_table(const Options& opt) {
  CO_CUDA_CHECK(cudaSetDevice(0));
  cudaDeviceProp prop{};
  CO_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  const int ring = opt.ring;
  std::printf(
      "host time of a frame's CUDA calls on %s (CUDA device 0), ring %d, %d frames after "
      "%d warm-up (live rows: %d frames at %d/s after 10); µs a frame, the median of the "
      "frames, and the mean of each call\n",
      prop.name, ring, opt.frames, opt.warmup, opt.live_frames, opt.live_fps);
  const auto op = make_operation("copy", KernelParams{});
  bool all_ok = true;
  for (const std::string& name : opt.sizes) {
    const Size& size = kSizes.at(name);
    const FrameLayout layout = FrameLayout::packed(PixelFormat::kRGBA, size.width, size.height);
    const FrameLayout device_layout =
        FrameLayout::packed(PixelFormat::kRGBA, size.width, size.height, 256, 256);
    const size_t row = layout.row_bytes(0), rows = layout.rows(0);
    const bool contiguous = layout.stride[0] == row && device_layout.stride[0] == row;
    std::shared_ptr<Device> device = make_cuda_device(0);
    InputPool pool(*device, layout, ring + 2, true);
    std::vector<const uint8_t*> inputs;
    for (int i = 0; i < ring + 2; ++i) inputs.push_back(pool.data(i));
    struct CallSlot {
      std::unique_ptr<Buffer> device_in, device_out, pinned_out;
      cudaEvent_t uploaded = nullptr, computed = nullptr, downloaded = nullptr;
      cudaStream_t stream = nullptr;  // the per-slot sequences'
      int input = -1;
    };
    std::vector<CallSlot> slots(ring);
    cudaStream_t up, compute, down;
    for (cudaStream_t* s : {&up, &compute, &down})
      CO_CUDA_CHECK(cudaStreamCreateWithFlags(s, cudaStreamNonBlocking));
    for (CallSlot& slot : slots) {
      slot.device_in = device->alloc_device(device_layout.size);
      slot.device_out = device->alloc_device(device_layout.size);
      slot.pinned_out = device->alloc_pinned(layout.size);
      for (cudaEvent_t* e : {&slot.uploaded, &slot.computed, &slot.downloaded})
        CO_CUDA_CHECK(cudaEventCreateWithFlags(e, cudaEventDisableTiming));
      CO_CUDA_CHECK(cudaStreamCreateWithFlags(&slot.stream, cudaStreamNonBlocking));
    }
    auto in_image = [&](CallSlot& slot) { return device_layout.at(slot.device_in->data()); };
    auto out_image = [&](CallSlot& slot) { return device_layout.at(slot.device_out->data()); };
    // The sequences; each enqueues frame `input` into `slot`, timing each
    // call into `t` (one steady-clock read after each call).
    using Clock = std::chrono::steady_clock;
    struct Sequence {
      const char* name;
      std::vector<const char*> calls;
      bool per_slot;
      std::function<void(CallSlot&, const uint8_t*, Clock::time_point*)> enqueue;
    };
    auto copy_up = [&](bool two_d, CallSlot& slot, const uint8_t* input, cudaStream_t s) {
      if (two_d)
        return cudaMemcpy2DAsync(slot.device_in->data(), device_layout.stride[0], input,
                                 layout.stride[0], row, rows, cudaMemcpyHostToDevice, s);
      return cudaMemcpyAsync(slot.device_in->data(), input, layout.size, cudaMemcpyHostToDevice, s);
    };
    auto copy_down = [&](bool two_d, CallSlot& slot, cudaStream_t s) {
      if (two_d)
        return cudaMemcpy2DAsync(slot.pinned_out->data(), layout.stride[0], slot.device_out->data(),
                                 device_layout.stride[0], row, rows, cudaMemcpyDeviceToHost, s);
      return cudaMemcpyAsync(slot.pinned_out->data(), slot.device_out->data(), layout.size,
                             cudaMemcpyDeviceToHost, s);
    };
    // The engine's sequence in `bands` equal bands on streams u, c and d,
    // each call timed into t (when t is not null); the 1-band sequence is
    // three_streams(true, true).
    constexpr int kBandsMax = 4;
    auto banded = [&](int bands, CallSlot& slot, const uint8_t* input, cudaStream_t u,
                      cudaStream_t c, cudaStream_t d, cudaEvent_t* uploaded, cudaEvent_t* computed,
                      Clock::time_point* t) {
      int i = 0;
      auto tick = [&] {
        if (t) t[i++] = Clock::now();
      };
      tick();
      const size_t band_rows = rows / bands;
      // Band by band, as Engine::submit (a copy's kernel reads its band's
      // rows only): upload, kernel, download.
      for (int k = 0; k < bands; ++k) {
        const size_t r0 = k * band_rows, n = k + 1 == bands ? rows - r0 : band_rows;
        const int y0 = static_cast<int>(r0), y1 = static_cast<int>(r0 + n);
        CO_CUDA_CHECK(cudaMemcpy2DAsync(slot.device_in->data() + r0 * device_layout.stride[0],
                                        device_layout.stride[0], input + r0 * layout.stride[0],
                                        layout.stride[0], row, n, cudaMemcpyHostToDevice, u));
        tick();
        CO_CUDA_CHECK(cudaEventRecord(uploaded[k], u));
        tick();
        CO_CUDA_CHECK(cudaStreamWaitEvent(c, uploaded[k], 0));
        tick();
        if (bands == 1)
          op->enqueue_cuda(in_image(slot), out_image(slot), Workspace{}, c);
        else
          op->enqueue_cuda_rows(in_image(slot), out_image(slot), Workspace{}, y0, y1, c);
        tick();
        CO_CUDA_CHECK(cudaEventRecord(computed[k], c));
        tick();
        CO_CUDA_CHECK(cudaStreamWaitEvent(d, computed[k], 0));
        tick();
        CO_CUDA_CHECK(
            cudaMemcpy2DAsync(slot.pinned_out->data() + r0 * layout.stride[0], layout.stride[0],
                              slot.device_out->data() + r0 * device_layout.stride[0],
                              device_layout.stride[0], row, n, cudaMemcpyDeviceToHost, d));
        tick();
      }
      CO_CUDA_CHECK(cudaEventRecord(slot.downloaded, d));
      tick();
    };
    std::vector<cudaEvent_t> band_events(2 * kBandsMax);
    for (cudaEvent_t& e : band_events)
      CO_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    // graphs[bands][slot][input], captured on three streams of their own.
    std::map<int, std::vector<std::vector<cudaGraphExec_t>>> graphs;
    cudaStream_t capture[3];
    for (cudaStream_t& s : capture)
      CO_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    auto capture_graphs = [&](int bands) {
      auto& per_slot = graphs[bands];
      per_slot.assign(ring, std::vector<cudaGraphExec_t>(inputs.size(), nullptr));
      for (int s = 0; s < ring; ++s) {
        for (size_t in = 0; in < inputs.size(); ++in) {
          cudaEvent_t fork = band_events[0];
          CO_CUDA_CHECK(cudaStreamBeginCapture(capture[0], cudaStreamCaptureModeThreadLocal));
          CO_CUDA_CHECK(cudaEventRecord(fork, capture[0]));
          CO_CUDA_CHECK(cudaStreamWaitEvent(capture[1], fork, 0));
          CO_CUDA_CHECK(cudaStreamWaitEvent(capture[2], fork, 0));
          banded(bands, slots[s], inputs[in], capture[0], capture[1], capture[2],
                 band_events.data(), band_events.data() + kBandsMax, nullptr);
          // Joins the download stream (its last record) and the compute
          // stream (its last record) back into the origin.
          CO_CUDA_CHECK(cudaStreamWaitEvent(capture[0], slots[s].downloaded, 0));
          CO_CUDA_CHECK(cudaStreamWaitEvent(capture[0], band_events[kBandsMax + bands - 1], 0));
          cudaGraph_t graph = nullptr;
          CO_CUDA_CHECK(cudaStreamEndCapture(capture[0], &graph));
          CO_CUDA_CHECK(cudaGraphInstantiate(&per_slot[s][in], graph, 0));
          CO_CUDA_CHECK(cudaGraphDestroy(graph));
        }
      }
    };
    auto graph_launch = [&](int bands) {
      return [&, bands](CallSlot& slot, const uint8_t* input, Clock::time_point* t) {
        const int s = static_cast<int>(&slot - slots.data());
        const size_t in = std::find(inputs.begin(), inputs.end(), input) - inputs.begin();
        t[0] = Clock::now();
        CO_CUDA_CHECK(cudaGraphLaunch(graphs.at(bands)[s][in], slot.stream));
        t[1] = Clock::now();
        CO_CUDA_CHECK(cudaEventRecord(slot.downloaded, slot.stream));
        t[2] = Clock::now();
      };
    };
    auto three_streams = [&](bool set_device, bool two_d) {
      return [&, set_device, two_d](CallSlot& slot, const uint8_t* input, Clock::time_point* t) {
        int i = 0;
        t[i++] = Clock::now();
        if (set_device) {
          CO_CUDA_CHECK(cudaSetDevice(0));
          t[i++] = Clock::now();
        }
        CO_CUDA_CHECK(copy_up(two_d, slot, input, up));
        t[i++] = Clock::now();
        CO_CUDA_CHECK(cudaEventRecord(slot.uploaded, up));
        t[i++] = Clock::now();
        CO_CUDA_CHECK(cudaStreamWaitEvent(compute, slot.uploaded, 0));
        t[i++] = Clock::now();
        op->enqueue_cuda(in_image(slot), out_image(slot), Workspace{}, compute);
        t[i++] = Clock::now();
        CO_CUDA_CHECK(cudaEventRecord(slot.computed, compute));
        t[i++] = Clock::now();
        CO_CUDA_CHECK(cudaStreamWaitEvent(down, slot.computed, 0));
        t[i++] = Clock::now();
        CO_CUDA_CHECK(copy_down(two_d, slot, down));
        t[i++] = Clock::now();
        CO_CUDA_CHECK(cudaEventRecord(slot.downloaded, down));
        t[i++] = Clock::now();
      };
    };
    std::vector<Sequence> sequences;
    sequences.push_back(
        {"engine: three streams, events between stages",
         {"set device", "H2D 2D", "record", "wait", "kernel", "record", "wait", "D2H 2D", "record"},
         false,
         three_streams(true, true)});
    sequences.push_back(
        {"… without cudaSetDevice",
         {"H2D 2D", "record", "wait", "kernel", "record", "wait", "D2H 2D", "record"},
         false,
         three_streams(false, true)});
    if (contiguous) {
      sequences.push_back({"a stream per slot, 1D copies",
                           {"H2D", "kernel", "D2H", "record"},
                           true,
                           [&](CallSlot& slot, const uint8_t* input, Clock::time_point* t) {
                             t[0] = Clock::now();
                             CO_CUDA_CHECK(copy_up(false, slot, input, slot.stream));
                             t[1] = Clock::now();
                             op->enqueue_cuda(in_image(slot), out_image(slot), Workspace{},
                                              slot.stream);
                             t[2] = Clock::now();
                             CO_CUDA_CHECK(copy_down(false, slot, slot.stream));
                             t[3] = Clock::now();
                             CO_CUDA_CHECK(cudaEventRecord(slot.downloaded, slot.stream));
                             t[4] = Clock::now();
                           }});
    }
    {
      std::vector<const char*> names{"set device"};
      for (int k = 0; k < kBandsMax; ++k)
        names.insert(names.end(),
                     {"H2D 2D", "record", "wait", "kernel", "record", "wait", "D2H 2D"});
      names.push_back("record");
      sequences.push_back({"engine in 4 bands", names, false,
                           [&](CallSlot& slot, const uint8_t* input, Clock::time_point* t) {
                             t[0] = Clock::now();
                             CO_CUDA_CHECK(cudaSetDevice(0));
                             banded(kBandsMax, slot, input, up, compute, down, band_events.data(),
                                    band_events.data() + kBandsMax, t + 1);
                           }});
    }
    for (int bands : {1, kBandsMax}) {
      capture_graphs(bands);
      sequences.push_back({bands == 1 ? "engine's as a graph per slot and input"
                                      : "engine's in 4 bands as a graph per slot and input",
                           {"graph launch", "record"},
                           true,
                           graph_launch(bands)});
    }
    std::printf("\n%s (%.1f MB a frame)\n\n", size.name, layout.size / 1e6);
    std::printf(
        "| calls | the thread between frames | µs a frame | each call, mean µs | a look "
        "at an event not done, µs | frames/s | output |\n|---|---|---:|---|---:|---:|---|\n");
    for (const Sequence& seq : sequences) {
      for (SlotWait how : {SlotWait::kSpin, SlotWait::kSleep, SlotWait::kSpinWithLooker,
                           SlotWait::kLiveSleep, SlotWait::kLiveSpin}) {
        const bool looker = how == SlotWait::kSpinWithLooker;
        const bool live = how == SlotWait::kLiveSleep || how == SlotWait::kLiveSpin;
        const int warmup = live ? 10 : opt.warmup;
        const int frames = live ? opt.live_frames : opt.frames;
        const auto period = std::chrono::nanoseconds(1'000'000'000LL / opt.live_fps);
        Clock::time_point next_frame = Clock::now();
        const int n_calls = static_cast<int>(seq.calls.size());
        std::vector<double> call_sum(n_calls, 0.0), per_frame;
        double look_sum = 0;  // kSleep: its looks at an event not yet done
        int64_t looks = 0;
        std::atomic<cudaEvent_t> newest{nullptr};
        std::atomic<bool> stop{false};
        std::thread looking;
        if (looker)
          looking = std::thread([&] {
            (void)cudaSetDevice(0);
            while (!stop.load()) {
              cudaEvent_t e = newest.load();
              if (e && cudaEventQuery(e) == cudaErrorNotReady) (void)cudaGetLastError();
              std::this_thread::sleep_for(std::chrono::microseconds(20));
            }
          });
        for (CallSlot& slot : slots) slot.input = -1;
        bool ok = true;
        Clock::time_point start;
        const int total = warmup + frames;
        for (int f = 0; f < total; ++f) {
          if (live) {
            next_frame += period;
            if (how == SlotWait::kLiveSleep) std::this_thread::sleep_until(next_frame);
            while (Clock::now() < next_frame) {
            }
          }
          if (f == warmup) start = Clock::now();
          CallSlot& slot = slots[f % ring];
          if (slot.input >= 0) {
            if (how == SlotWait::kSleep) {
              for (;;) {
                const Clock::time_point before = Clock::now();
                const cudaError_t status = cudaEventQuery(slot.downloaded);
                if (status == cudaSuccess) break;
                if (status != cudaErrorNotReady) CO_CUDA_CHECK(status);
                (void)cudaGetLastError();
                if (f >= warmup) {
                  look_sum +=
                      std::chrono::duration<double, std::micro>(Clock::now() - before).count();
                  ++looks;
                }
                std::this_thread::sleep_for(std::chrono::microseconds(50));
              }
            } else {
              CO_CUDA_CHECK(cudaEventSynchronize(slot.downloaded));
            }
            if ((f - ring) % 97 == 0)
              ok = ok && std::memcmp(slot.pinned_out->data(), inputs[slot.input], layout.size) == 0;
          }
          slot.input = f % (ring + 2);
          Clock::time_point t[40];
          seq.enqueue(slot, inputs[slot.input], t);
          newest.store(slot.downloaded);
          if (f >= warmup) {
            for (int c = 0; c < n_calls; ++c)
              call_sum[c] += std::chrono::duration<double, std::micro>(t[c + 1] - t[c]).count();
            per_frame.push_back(
                std::chrono::duration<double, std::micro>(t[n_calls] - t[0]).count());
          }
        }
        for (int k = 0; k < ring; ++k) {
          CallSlot& slot = slots[(total + k) % ring];
          if (slot.input < 0) continue;
          CO_CUDA_CHECK(cudaEventSynchronize(slot.downloaded));
          ok = ok && std::memcmp(slot.pinned_out->data(), inputs[slot.input], layout.size) == 0;
        }
        const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
        stop.store(true);
        if (looking.joinable()) looking.join();
        // Calls of one name (a banded sequence's) are summed: "name ×n".
        std::vector<std::pair<std::string, std::pair<double, int>>> by_name;
        for (int c = 0; c < n_calls; ++c) {
          auto it = std::find_if(by_name.begin(), by_name.end(),
                                 [&](const auto& e) { return e.first == seq.calls[c]; });
          if (it == by_name.end()) it = by_name.insert(by_name.end(), {seq.calls[c], {0.0, 0}});
          it->second.first += call_sum[c] / frames;
          ++it->second.second;
        }
        std::string each;
        for (const auto& [name, sum] : by_name) {
          char part[96];
          std::snprintf(part, sizeof part, "%s%s%s %.1f", each.empty() ? "" : ", ", name.c_str(),
                        sum.second > 1 ? (" ×" + std::to_string(sum.second)).c_str() : "",
                        sum.first);
          each += part;
        }
        std::sort(per_frame.begin(), per_frame.end());
        char look[32] = "";
        if (looks > 0) std::snprintf(look, sizeof look, "%.1f", look_sum / looks);
        std::printf("| %s | %s | %.1f | %s | %s | %.0f | %s |\n", seq.name, wait_label(how),
                    per_frame[per_frame.size() / 2], each.c_str(), look, frames / seconds,
                    ok ? "checked" : "WRONG");
        std::fflush(stdout);
        all_ok = all_ok && ok;
      }
    }
    for (CallSlot& slot : slots) {
      for (cudaEvent_t e : {slot.uploaded, slot.computed, slot.downloaded})
        (void)cudaEventDestroy(e);
      (void)cudaStreamDestroy(slot.stream);
    }
    for (cudaStream_t s : {up, compute, down}) (void)cudaStreamDestroy(s);
    for (auto& [bands, per_slot] : graphs)
      for (auto& per_input : per_slot)
        for (cudaGraphExec_t g : per_input) (void)cudaGraphExecDestroy(g);
    for (cudaStream_t s : capture) (void)cudaStreamDestroy(s);
    for (cudaEvent_t e : band_events) (void)cudaEventDestroy(e);
  }
  return all_ok ? 0 : 1;
}
#else
int run_calls_table(const Options&) {
  std::fprintf(stderr, "cudaoverlap-bench: --calls needs a build with CUDA\n");
  return 2;
}
#endif

int run(int argc, char** argv) {
  Options opt;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") return usage("measures the engine alone");
    if (arg == "--kernels") {
      opt.kernels = true;
      continue;
    }
    if (arg == "--staging") {
      opt.staging = true;
      continue;
    }
    if (arg == "--live") {
      opt.live = true;
      continue;
    }
    if (arg == "--calls") {
      opt.calls = true;
      continue;
    }
    if (arg == "--no-pageable") {
      opt.pageable = false;
      continue;
    }
    if (arg == "--all-pairs") {
      opt.all_pairs = true;
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
    } else if (arg == "--stand-in-link-us") {
      opt.stand_in_link_us = std::atoi(value.c_str());
    } else if (arg == "--synthetic-us") {
      opt.synthetic_us = std::atoi(value.c_str());
    } else if (arg == "--iterations") {
      opt.iterations = std::atoi(value.c_str());
    } else if (arg == "--hbm-gbps") {
      opt.hbm_gbps = std::atof(value.c_str());
    } else if (arg == "--repeats") {
      opt.repeats = std::atoi(value.c_str());
    } else if (arg == "--register-runs") {
      opt.register_runs = std::atoi(value.c_str());
    } else if (arg == "--pairs") {
      for (const std::string& pair : split_commas(value)) {
        const size_t colon = pair.find(':');
        PixelFormat from, to;
        if (colon == std::string::npos || !format_named(pair.substr(0, colon), &from) ||
            !format_named(pair.substr(colon + 1), &to))
          return usage(("--pairs takes FROM:TO format names, not " + pair).c_str());
        opt.pairs.push_back({from, to});
      }
    } else if (arg == "--only") {
      for (const std::string& row : split_commas(value)) {
        const size_t colon = row.rfind(':');
        PixelFormat format;
        if (colon == std::string::npos || !format_named(row.substr(colon + 1), &format))
          return usage(("--only takes KERNEL:FORMAT, not " + row).c_str());
        opt.only.push_back({row.substr(0, colon), format});
      }
    } else if (arg == "--sizes") {
      opt.sizes = split_commas(value);
    } else if (arg == "--runs") {
      opt.runs = std::atoi(value.c_str());
    } else if (arg == "--rings") {
      opt.rings.clear();
      for (const std::string& r : split_commas(value)) opt.rings.push_back(std::atoi(r.c_str()));
    } else if (arg == "--live-fps") {
      opt.live_fps = std::atoi(value.c_str());
    } else if (arg == "--live-frames") {
      opt.live_frames = std::atoi(value.c_str());
    } else if (arg == "--devices") {
      opt.devices = value;
      if (opt.devices.empty()) return usage("--devices takes all or a list such as 0,1");
    } else {
      return usage(("unknown option " + arg).c_str());
    }
  }
  if (opt.frames <= 0 || opt.warmup < 0) return usage("--frames must be positive");
  if (opt.runs <= 0 || opt.live_frames < 4 || opt.live_fps < 0 || opt.rings.empty())
    return usage("--runs and --rings must be positive, --live-frames at least 4");
  for (int r : opt.rings)
    if (r < 1 || r > 16) return usage("--rings takes ring sizes from 1 to 16");
  if (opt.iterations <= 0 || opt.hbm_gbps < 0)
    return usage("--iterations must be positive and --hbm-gbps not negative");
  if (opt.repeats <= 0 || opt.register_runs <= 0)
    return usage("--repeats and --register-runs must be positive");
  if (!opt.devices.empty() && (opt.kernels || opt.staging || opt.live))
    return usage("--devices is a table of its own: not with --kernels, --staging or --live");
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

  std::printf("cudaoverlap engine benchmark on %s\n", device->describe().c_str());
  std::printf(
      "RGBA, pinned input; each figure the median (min–max) of %d runs of %d frames after %d "
      "warm-up\n",
      opt.runs, opt.frames, opt.warmup);
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
        "\n%s (%.1f MB a frame): pinned copies of a frame, H2D %s GB/s, D2H %s, both at once %s; "
        "bound %.0f frames/s\n\n",
        size.name, bytes / 1e6, show(link.h2d, "%.1f").c_str(), show(link.d2h, "%.1f").c_str(),
        show(link.both, "%.1f").c_str(), bound_fps);
    std::printf(
        "| kernel | ring | host wait | bands | plain loop frames/s | engine frames/s | engine %% "
        "of "
        "loop | engine %% of bound | loop CPU us/frame | engine CPU us/frame | output |\n");
    std::printf("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---|\n");
    struct KernelCase {
      const char* kernel;
      uint32_t us;
      std::string label;
    };
    const KernelCase kernels[] = {
        {"copy", 0, "copy"},
        {"synthetic", balanced_us, "copy + " + std::to_string(balanced_us) + " us"},
    };
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
    std::printf("\npageable input (staged every frame), copy kernel, overlapped\n\n");
    std::printf(
        "| frame | staging threads | frames/s | staging ms/frame | H2D GB/s | vs 1 thread | "
        "output |\n");
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
