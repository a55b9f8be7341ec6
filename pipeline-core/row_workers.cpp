// See row_workers.h.
#include "row_workers.h"

#include <algorithm>
#include <string>
#include <system_error>

#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "kernels/error.h"

namespace cudaoverlap {

RowWorkers::RowWorkers(int threads, const char* name) : name_(name) {
  workers_.reserve(static_cast<size_t>(std::max(threads - 1, 0)));
  try {
    for (int i = 0; i + 1 < threads; ++i) workers_.emplace_back([this, i] { run_worker(i); });
  } catch (const std::system_error& e) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    start_.notify_all();
    for (std::thread& worker : workers_) worker.join();
    throw Error("cannot start thread " + std::to_string(workers_.size() + 2) + " of " +
                std::to_string(threads) + " (" + name_ + "): " + e.what());
  }
}

RowWorkers::~RowWorkers() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  start_.notify_all();
  for (std::thread& worker : workers_) worker.join();
}

void RowWorkers::run(int jobs, const std::function<void(int)>& job) {
  if (jobs > threads())
    throw Error(std::to_string(jobs) + " bands for " + std::to_string(threads()) + " threads");
  if (jobs <= 1) {
    for (int k = 0; k < jobs; ++k) job(k);
    return;
  }
  std::lock_guard<std::mutex> one_frame(run_mutex_);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    job_ = &job;
    jobs_ = jobs;
    pending_ = jobs_ - 1;
    failure_ = nullptr;
    ++generation_;
  }
  start_.notify_all();
  std::exception_ptr mine;
  try {
    job(0);
  } catch (...) {
    mine = std::current_exception();
  }
  std::unique_lock<std::mutex> lock(mutex_);
  done_.wait(lock, [&] { return pending_ == 0; });
  job_ = nullptr;
  if (mine) std::rethrow_exception(mine);
  if (failure_) std::rethrow_exception(failure_);
}

void RowWorkers::run_worker(int index) {
#ifdef __linux__
  // Named, so a profiler or `top -H` tells the threads apart.
  const std::string name = name_ + "-" + std::to_string(index + 1);
  prctl(PR_SET_NAME, name.c_str(), 0UL, 0UL, 0UL);
#endif
  const int k = index + 1;
  uint64_t seen = 0;  // the last generation this worker looked at
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    start_.wait(lock, [&] { return stopping_ || generation_ != seen; });
    if (stopping_) return;
    seen = generation_;
    // A frame of fewer bands than threads leaves this one out.
    if (k >= jobs_) continue;
    const std::function<void(int)>* job = job_;
    lock.unlock();
    std::exception_ptr failed;
    try {
      (*job)(k);
    } catch (...) {
      failed = std::current_exception();
    }
    lock.lock();
    if (failed && !failure_) failure_ = failed;
    if (--pending_ == 0) done_.notify_one();
  }
}

}  // namespace cudaoverlap
