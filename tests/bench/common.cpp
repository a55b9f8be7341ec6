// The figures and helpers every table of cudaoverlap-bench shares.
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
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "bench.h"

namespace cudaoverlap::bench {

const std::map<std::string, Size> kSizes = {{"240p", {"240p", 320, 240}},
                                            {"720p", {"720p", 1280, 720}},
                                            {"1080p", {"1080p", 1920, 1080}},
                                            {"4k", {"4K", 3840, 2160}}};

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

// CPU time of the calling thread so far, in microseconds.
double thread_cpu_us() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e6 + static_cast<double>(t.tv_nsec) / 1e3;
}

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

std::vector<KernelCase> balanced_kernel_cases(uint32_t balanced_us) {
  return {{"copy", 0, "copy"},
          {"synthetic", balanced_us, "copy + " + std::to_string(balanced_us) + " us"}};
}

Spread spread_of(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return Spread{values[values.size() / 2], values.front(), values.back()};
}
std::string show(const Spread& s, const char* format) {
  char a[32], b[32], c[32];
  std::snprintf(a, sizeof a, format, s.median);
  std::snprintf(b, sizeof b, format, s.min);
  std::snprintf(c, sizeof c, format, s.max);
  return std::string(a) + " (" + b + "–" + c + ")";
}

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

// Bytes of pixels (no row padding) of every plane of a frame.
double frame_bytes(const FrameLayout& layout) {
  double bytes = 0;
  for (int p = 0; p < layout.n_planes(); ++p)
    bytes += static_cast<double>(layout.row_bytes(p)) * static_cast<double>(layout.rows(p));
  return bytes;
}

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

}  // namespace cudaoverlap::bench
