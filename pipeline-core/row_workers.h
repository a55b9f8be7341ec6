// Threads that share one job cut into bands: the cpu backend's kernel
// launches (CpuDeviceOptions::threads) and the staging copies
// (ParallelCopy). The workers are made once and sleep between jobs; the
// calling thread runs band 0 itself, so N threads have N-1 workers.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace cudaoverlap {

class RowWorkers {
 public:
  // `threads` counts the caller. The workers are named `name`-1,
  // `name`-2, ... (15 characters show), so a profiler tells the users
  // apart. Throws Error when a worker cannot start.
  explicit RowWorkers(int threads, const char* name = "co-rows");
  // Joins the workers. Not while run() runs.
  ~RowWorkers();
  RowWorkers(const RowWorkers&) = delete;
  RowWorkers& operator=(const RowWorkers&) = delete;

  int threads() const { return static_cast<int>(workers_.size()) + 1; }

  // Calls job(k) for every k in [0, jobs), job 0 on the calling thread,
  // the others on workers, and returns when all have returned; the first
  // exception a job threw is then thrown again here. Throws Error where
  // jobs > threads().
  // One caller at a time: the device's streams take turns.
  void run(int jobs, const std::function<void(int)>& job);

 private:
  void run_worker(int index);

  const std::string name_;
  std::mutex run_mutex_;  // held by run() throughout: one job at a time
  // Lock order: run_mutex_, then mutex_; nothing else under mutex_.
  std::mutex mutex_;
  std::condition_variable start_;                  // generation_ or stopping_ changed
  std::condition_variable done_;                   // pending_ reached 0
  const std::function<void(int)>* job_ = nullptr;  // guarded by mutex_
  int jobs_ = 0;                                   // guarded by mutex_
  uint64_t generation_ = 0;                        // guarded by mutex_
  int pending_ = 0;                                // guarded by mutex_
  std::exception_ptr failure_;                     // guarded by mutex_: the first
  bool stopping_ = false;                          // guarded by mutex_
  std::vector<std::thread> workers_;               // worker i runs job i + 1
};

}  // namespace cudaoverlap
