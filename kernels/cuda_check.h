// The one family of CUDA error checks: every CUDA runtime call in the project
// goes through one of these, so an error names the call, file and line.
//
//   CO_CUDA_CHECK(expr)          throws cudaoverlap::Error on failure
//   CO_CUDA_CHECK_LAUNCH(what)   checks the launch error after a kernel
//   CO_CUDA_CHECK_NOEXCEPT(expr) for destructors: reports on stderr, never throws
//
// Included only by CUDA translation units (needs cuda_runtime_api.h).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdio>
#include <string>

#include "kernels/error.h"

namespace cudaoverlap {

inline std::string cuda_error_message(cudaError_t status, const char* expr, const char* file,
                                      int line) {
  std::string where(file);
  const auto slash = where.find_last_of('/');
  if (slash != std::string::npos) where.erase(0, slash + 1);
  return std::string(cudaGetErrorName(status)) + " (" + cudaGetErrorString(status) + ") in " +
         expr + " at " + where + ":" + std::to_string(line);
}

// A failed call also leaves its error in CUDA's per-thread "last error",
// where the next launch check (cudaGetLastError) would find it and blame the
// wrong kernel; reading it here clears it. Sticky errors stay in the context
// whatever we do.
inline void cuda_check(cudaError_t status, const char* expr, const char* file, int line) {
  if (status != cudaSuccess) {
    (void)cudaGetLastError();
    throw Error(cuda_error_message(status, expr, file, line));
  }
}

inline void cuda_check_noexcept(cudaError_t status, const char* expr, const char* file,
                                int line) noexcept {
  if (status != cudaSuccess) {
    (void)cudaGetLastError();
    std::fprintf(stderr, "cudaoverlap: %s\n", cuda_error_message(status, expr, file, line).c_str());
  }
}

}  // namespace cudaoverlap

#define CO_CUDA_CHECK(expr) ::cudaoverlap::cuda_check((expr), #expr, __FILE__, __LINE__)
#define CO_CUDA_CHECK_LAUNCH(what) \
  ::cudaoverlap::cuda_check(cudaGetLastError(), "launch of " what, __FILE__, __LINE__)
#define CO_CUDA_CHECK_NOEXCEPT(expr) \
  ::cudaoverlap::cuda_check_noexcept((expr), #expr, __FILE__, __LINE__)
