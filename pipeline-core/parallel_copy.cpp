// The staging copy over several threads; see parallel_copy.h.
//
// A split copy is one generation: the caller publishes the job under the
// mutex, wakes the workers, copies band 0 itself and waits until every
// worker with a band has reported back under the same mutex, which is also
// what makes the workers' bytes visible to the caller (and, through it, to
// the upload that follows).
#include "parallel_copy.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <system_error>

#ifdef __linux__
#include <sched.h>
#include <sys/prctl.h>
#endif

#include "kernels/error.h"

namespace cudaoverlap {
namespace {

size_t plane_bytes(const PlaneCopy& plane) { return plane.rows * plane.row_bytes; }

// The first row boundary at or after byte `target` of the planes' pixels
// taken one after another, as a row index counted over all planes.
size_t row_at(const PlaneCopy* planes, int n_planes, size_t target) {
  size_t base_row = 0;
  size_t base_bytes = 0;
  for (int p = 0; p < n_planes; ++p) {
    const size_t bytes = plane_bytes(planes[p]);
    if (target < base_bytes + bytes) {
      const size_t into = target - base_bytes;
      return base_row + (into + planes[p].row_bytes - 1) / planes[p].row_bytes;
    }
    base_row += planes[p].rows;
    base_bytes += bytes;
  }
  return base_row;
}

// Copies rows [first, last) counted over all planes.
void copy_rows(const PlaneCopy* planes, int n_planes, size_t first, size_t last) {
  size_t base_row = 0;
  for (int p = 0; p < n_planes && base_row < last; ++p) {
    const PlaneCopy& plane = planes[p];
    const size_t begin = std::max(first, base_row);
    const size_t end = std::min(last, base_row + plane.rows);
    base_row += plane.rows;
    if (begin >= end || plane.row_bytes == 0) continue;
    const size_t y0 = begin - (base_row - plane.rows);
    const size_t n = end - begin;
    uint8_t* dst = plane.dst + y0 * plane.dst_stride;
    const uint8_t* src = plane.src + y0 * plane.src_stride;
    if (plane.dst_stride == plane.row_bytes && plane.src_stride == plane.row_bytes) {
      // Both sides packed: the band is one block.
      std::memcpy(dst, src, n * plane.row_bytes);
      continue;
    }
    for (size_t y = 0; y < n; ++y)
      std::memcpy(dst + y * plane.dst_stride, src + y * plane.src_stride, plane.row_bytes);
  }
}

}  // namespace

int ParallelCopy::automatic_threads() {
  int cores = static_cast<int>(std::thread::hardware_concurrency());
#ifdef __linux__
  // The cores this process may run on (a container or taskset may allow
  // fewer than the machine has).
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) cores = CPU_COUNT(&set);
#endif
  return std::clamp(cores, 1, kMaxAutomaticThreads);
}

ParallelCopy::ParallelCopy(int threads, size_t min_chunk_bytes, const char* name)
    : min_chunk_bytes_(min_chunk_bytes), name_(name) {
  if (threads < 1) throw Error("a copy needs at least one thread, not " + std::to_string(threads));
  try {
    workers_.reserve(static_cast<size_t>(threads - 1));
    for (int i = 0; i + 1 < threads; ++i) workers_.emplace_back([this, i] { run_worker(i); });
  } catch (const std::system_error& e) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    start_.notify_all();
    for (std::thread& worker : workers_) worker.join();
    throw Error("could not start " + std::to_string(threads - 1) +
                " staging copy threads: " + e.what() + "; lower staging-threads");
  }
}

ParallelCopy::~ParallelCopy() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  start_.notify_all();
  for (std::thread& worker : workers_) worker.join();
}

void ParallelCopy::copy_chunk(const Job& job, int chunk) {
  const auto boundary = [&](int k) {
    // Byte k/chunks of the way through, rounded to the next row.
    const size_t target =
        job.total_bytes / job.chunks * k + job.total_bytes % job.chunks * k / job.chunks;
    return row_at(job.planes, job.n_planes, target);
  };
  copy_rows(job.planes, job.n_planes, boundary(chunk), boundary(chunk + 1));
}

int ParallelCopy::bands(size_t total_bytes) const {
  const size_t threads = workers_.size() + 1;
  const size_t by_size = min_chunk_bytes_ == 0 ? threads : total_bytes / min_chunk_bytes_;
  return static_cast<int>(std::clamp<size_t>(by_size, 1, threads));
}

void ParallelCopy::copy(const PlaneCopy* planes, int n_planes) {
  if (n_planes < 0 || n_planes > kMaxPlanes)
    throw Error("a copy of " + std::to_string(n_planes) + " planes: at most " +
                std::to_string(kMaxPlanes) + " are supported");
  Job job;
  job.n_planes = n_planes;
  for (int p = 0; p < n_planes; ++p) {
    job.planes[p] = planes[p];
    job.total_bytes += plane_bytes(planes[p]);
  }
  job.chunks = bands(job.total_bytes);
  if (job.chunks == 1) {
    // Not worth a wake-up: the caller copies it all.
    copy_chunk(job, 0);
    return;
  }

  {
    std::lock_guard<std::mutex> lock(mutex_);
    job_ = job;
    ++generation_;
    pending_ = job.chunks - 1;
  }
  start_.notify_all();
  copy_chunk(job, 0);
  std::unique_lock<std::mutex> lock(mutex_);
  done_.wait(lock, [&] { return pending_ == 0; });
}

void ParallelCopy::run_worker(int index) {
#ifdef __linux__
  // Named, so a profiler or `top -H` tells the copying threads apart.
  const std::string name = name_ + "-" + std::to_string(index + 1);
  prctl(PR_SET_NAME, name.c_str(), 0UL, 0UL, 0UL);
#endif
  const int chunk = index + 1;
  uint64_t seen = 0;  // the last generation this worker looked at
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    start_.wait(lock, [&] { return stopping_ || generation_ != seen; });
    if (stopping_) return;
    seen = generation_;
    // A copy with fewer bands than threads leaves this one out; the caller
    // does not wait for it, and it may well sleep through such copies.
    if (chunk >= job_.chunks) continue;
    const Job job = job_;
    lock.unlock();
    copy_chunk(job, chunk);
    lock.lock();
    if (--pending_ == 0) done_.notify_one();
  }
}

}  // namespace cudaoverlap
