// The kernel interface the engine calls on its compute stream.
//
// Each kernel has a CUDA implementation (kernels/<name>.cu, compiled only
// when the CUDA backend is built) and a CPU reference (kernels/<name>_ref.cpp)
// that the cpu backend runs and that the tests use as the oracle. This header
// holds no CUDA syntax: cudaStream_t is only forward-declared, so gst/ and
// the tests build with the ordinary C++ compiler.
#pragma once

#include <cstdint>
#include <string>

#include "video_format.h"

struct CUstream_st;  // cudaStream_t is CUstream_st*

namespace cudaoverlap {

enum class KernelId {
  kCopy,       // output = input, byte for byte
  kInvert,     // 255 - value on colour, luma and chroma samples; alpha/padding kept
  kSynthetic,  // copy plus params.synthetic_us of GPU busy time (benchmarks)
};

const char* kernel_name(KernelId id);

// Parameters every kernel receives. Kernels that take none ignore them.
struct KernelParams {
  // kSynthetic: how long the kernel keeps the compute stream busy per frame.
  uint32_t synthetic_us = 0;
  // Test-only: make the launch itself fail (the CUDA launcher launches an
  // empty grid, which CUDA rejects; the CPU reference throws), so error
  // handling can be exercised through the real launch path.
  bool inject_launch_failure = false;
};

// Whether `id` can turn an `in` image into an `out` image of this format and
// size. Returns an empty string when it can, otherwise a sentence saying what
// is allowed.
std::string kernel_check(KernelId id, const ImageRef& in, const ImageRef& out);

// Runs the CPU reference of `id` synchronously. Throws cudaoverlap::Error.
void run_kernel_reference(KernelId id, const KernelParams& params, const ImageRef& in,
                          const ImageRef& out);

// Enqueues the CUDA implementation of `id` on `stream` and checks the launch.
// `in` and `out` point into device memory. Throws cudaoverlap::Error; only
// available when built with CUDA (kernels_have_cuda()).
void launch_kernel_cuda(KernelId id, const KernelParams& params, const ImageRef& in,
                        const ImageRef& out, CUstream_st* stream);

bool kernels_have_cuda();

}  // namespace cudaoverlap
