// The staging copy over several threads; see parallel_copy.h. RowWorkers::run
// returns once every band is copied, under the mutex the workers report to,
// which makes their bytes visible to the caller (and, through it, to the
// upload that follows).
#include "parallel_copy.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <thread>

#ifdef __linux__
#include <sched.h>
#endif

#include "kernels/error.h"

namespace cudaoverlap {
namespace {

int at_least_one(int threads) {
  if (threads < 1) throw Error("a copy needs at least one thread, not " + std::to_string(threads));
  return threads;
}

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

ParallelCopy::ParallelCopy(int threads, size_t min_chunk_bytes, const char* name) try
    : min_chunk_bytes_(min_chunk_bytes), workers_(at_least_one(threads), name) {
} catch (const Error& e) {
  if (threads < 1) throw;
  throw Error(std::string(e.what()) + "; lower staging-threads");
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
  const size_t threads = static_cast<size_t>(workers_.threads());
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
  // One band is not worth a wake-up: the caller copies it all.
  workers_.run(job.chunks, [&job](int chunk) { copy_chunk(job, chunk); });
}

}  // namespace cudaoverlap
