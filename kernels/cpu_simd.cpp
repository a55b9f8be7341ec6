#include "kernels/cpu_simd.h"

#include <atomic>

namespace cudaoverlap {
namespace {

std::atomic<bool> avx2_allowed{true};

}  // namespace

bool cpu_avx2() {
#if defined(__x86_64__) || defined(__i386__)
  static const bool has = __builtin_cpu_supports("avx2");
  return has && avx2_allowed.load(std::memory_order_relaxed);
#else
  return false;
#endif
}

void cpu_allow_avx2(bool allow) { avx2_allowed.store(allow, std::memory_order_relaxed); }

}  // namespace cudaoverlap
