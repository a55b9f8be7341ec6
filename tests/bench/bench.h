// cudaoverlap-bench's shared parts: its options, the frame sizes, the input
// frames it recycles, and the figures every table prints. main.cpp says
// what the program measures.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "device.h"
#include "engine.h"
#include "frame_layout.h"

namespace cudaoverlap::bench {

// Which of the bench's input buffers a frame came from (InputFrame::user).
struct InputIndex : FrameUser {
  explicit InputIndex(int i) : input(i) {}
  const int input;
};

// The input buffer of `frame` (InputIndex).
inline int input_of(const OutputFrame& frame) { return frame.user_as<InputIndex>()->input; }

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
  // --no-hold: the kernel table launches without holding its stream
  // first, for profilers, which serialize launches (the host's enqueueing
  // may then enter the figures).
  bool hold = true;
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
  // --only KERNEL:FORMAT,...: only these rows of the kernel table
  // (scale:FORMAT: every scale row of that format).
  std::vector<std::pair<std::string, PixelFormat>> only;
  // --devices LIST: the multi-device table instead; empty: not asked.
  std::string devices;
  // --stand-in-link-us N (cpu backend, --devices): each stand-in's uploads
  // keep its upload stream busy N us first, as a link of that speed would.
  int stand_in_link_us = 0;
};

// Reads the command line into `opt`; -1 when it is understood, else the
// program's exit status after printing why (usage()).
int parse_options(int argc, char** argv, Options* opt);
// Prints `why` and the command line's forms; the exit status 2.
int usage(const char* why);
std::vector<std::string> split_commas(const std::string& value);

struct Size {
  const char* name;
  int width, height;
};
extern const std::map<std::string, Size> kSizes;

struct Result {
  double fps = 0;
  bool output_ok = false;
  double staging_ms = 0;  // mean host staging copy per timed frame (pageable input)
  double cpu_us = 0;      // the process's user + system CPU time per timed frame
};

// User + system CPU time of the whole process so far (every thread: the
// engine's, the driver's), in microseconds.
double process_cpu_us();
// CPU time of the calling thread so far, in microseconds.
double thread_cpu_us();
// Frames whose output is compared with their input: every tenth of the
// warm-up and the last one.
bool checked_frame(uint64_t sequence, int warmup, int frames);
// Bytes of pixels (no row padding) of every plane of a frame.
double frame_bytes(const FrameLayout& layout);
const char* wait_name(HostWait wait);
// Sleeps until frame `i`'s time at `fps` from `start`; fps 0: no pacing.
void pace(std::chrono::steady_clock::time_point start, int i, int fps);

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
    in.user = std::make_shared<InputIndex>(i);
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

// Median, lowest and highest of a figure over repeated runs.
struct Spread {
  double median = 0, min = 0, max = 0;
};
Spread spread_of(std::vector<double> values);
// "median (min–max)", each as `format` prints it.
std::string show(const Spread& s, const char* format = "%.0f");
double mean_of(const std::vector<double>& v);
double percentile(std::vector<double> v, double p);

// What the link moves, in GB/s (10^9 bytes): pinned host memory to the
// device, back, and both at once on two streams (as the engine's upload and
// download run), `bytes` per copy, 20 copies a run.
struct CopyRates {
  Spread h2d, d2h, both;
};
CopyRates measure_copy_rates(Device& dev, size_t bytes, int runs);

// The two kernels the throughput tables run: the copy, and the copy kept
// busy for `balanced_us` on the GPU (the synthetic kernel), labelled.
struct KernelCase {
  const char* kernel;
  uint32_t us;
  std::string label;
};
std::vector<KernelCase> balanced_kernel_cases(uint32_t balanced_us);

// One frame at a time (--live): where each frame's time went.
struct LiveResult {
  std::vector<double> latency_ms;  // submit to the host seeing the frame out, per frame
  std::vector<double> wake_us;     // the download's completion to the host seeing it
  double upload_ms = 0, compute_ms = 0, download_ms = 0;  // device stages, means
  double submit_us = 0;                                   // enqueueing the frame's work, mean
  double cpu_us = 0;                                      // process CPU time per frame
};

// The references the engine is measured against (plain_loop.cpp): its
// streams and events written out on one thread, nothing else.
Result run_plain_loop(const std::shared_ptr<Device>& device, const Options& opt, const Size& size,
                      const char* kernel, uint32_t synthetic_us, int ring, HostWait wait);
LiveResult live_plain_loop(Device& dev, const Options& opt, const Size& size, HostWait wait,
                           int fps);

// The tables; each returns the program's exit status.
int run_throughput_table(const std::shared_ptr<Device>& device, const Options& opt);
int run_live_table(const std::shared_ptr<Device>& device, const Options& opt);
int run_kernel_table(const Options& opt);
int run_staging_table(const std::shared_ptr<Device>& device, const Options& opt);
int run_calls_table(const Options& opt);

}  // namespace cudaoverlap::bench
