// The staging copy spread over CPU cores: Engine::submit() copies a pageable
// frame into its slot's pinned input through this, before the upload.
//
// One thread copying into pinned memory reaches ~10 GB/s
// (docs/architecture.md, "The engine"), well below the bus; several threads
// each copying a contiguous band of rows come close to the memory
// bandwidth. The bands run on RowWorkers: the calling thread copies one
// itself, nothing is allocated and no thread is created per copy. Frames
// too small to be worth waking anyone are copied by the calling thread
// alone.
#pragma once

#include <cstddef>
#include <cstdint>

#include "row_workers.h"

namespace cudaoverlap {

// One plane to copy: `rows` rows of `row_bytes` bytes, each at its own pitch
// on either side (a padded source into a packed destination, say).
struct PlaneCopy {
  uint8_t* dst = nullptr;
  size_t dst_stride = 0;
  const uint8_t* src = nullptr;
  size_t src_stride = 0;
  size_t row_bytes = 0;
  size_t rows = 0;
};

class ParallelCopy {
 public:
  // The most planes one copy() takes (every format here has at most three).
  static constexpr int kMaxPlanes = 4;
  // Below twice this many bytes a frame is copied by the caller alone; above,
  // each thread gets at least this much. Waking a sleeping thread costs tens
  // of microseconds, the time one thread takes to copy about this much.
  static constexpr size_t kDefaultMinChunkBytes = 128 * 1024;
  // What EngineConfig::staging_threads = 0 means: one thread per hardware
  // thread, at most kMaxAutomaticThreads (beyond that the memory bus, not
  // the cores, is the limit, and the threads only compete with the app).
  static constexpr int kMaxAutomaticThreads = 8;
  static int automatic_threads();

  // `threads` counts the caller: 1 makes no worker and copies row by row as
  // a plain loop would. Throws Error when a worker cannot be started.
  // `min_chunk_bytes` 0 splits every copy however small (tests). The
  // workers are named `name`-1, `name`-2, ... (at most 15 characters in
  // all show), so a profiler tells the users apart.
  explicit ParallelCopy(int threads, size_t min_chunk_bytes = kDefaultMinChunkBytes,
                        const char* name = "co-stage");

  // Copies every plane and returns when all bytes are written. Planes must
  // not overlap each other's destinations. One caller at a time (the
  // engine's producer thread); not reentrant.
  void copy(const PlaneCopy* planes, int n_planes);

  int threads() const { return workers_.threads(); }
  // How many threads, the caller included, copy a frame of `total_bytes`
  // bytes: 1 below twice the minimum band, at most threads().
  int bands(size_t total_bytes) const;

 private:
  // A copy split into `chunks` bands of rows of the planes taken one after
  // another, balanced by bytes; band k goes to the thread of index k (the
  // caller is 0).
  struct Job {
    PlaneCopy planes[kMaxPlanes];
    int n_planes = 0;
    int chunks = 1;
    size_t total_bytes = 0;
  };
  static void copy_chunk(const Job& job, int chunk);

  const size_t min_chunk_bytes_;
  RowWorkers workers_;
};

}  // namespace cudaoverlap
