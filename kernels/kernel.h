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

#include "convert.h"
#include "video_format.h"

struct CUstream_st;  // cudaStream_t is CUstream_st*

namespace cudaoverlap {

enum class KernelId {
  kCopy,       // output = input, byte for byte
  kInvert,     // 255 - value on colour, luma and chroma samples; alpha/padding kept
  kSynthetic,  // copy plus params.synthetic_us of GPU busy time (benchmarks)
  kFlip,       // rotation or mirror by params.flip (videoflip's video-direction)
  kBalance,    // brightness, contrast, saturation, hue (videobalance)
  kBlur,       // Gaussian blur by params.blur_sigma, edges clamped
  kEdge,       // Sobel gradient magnitude, in the input's format
  kConvert,    // pixel-format conversion as videoconvert does (params.convert)
};

// videoflip's video-direction values (GstVideoOrientationMethod, without
// auto and custom), in the same order so the numbers match.
enum class FlipDirection {
  kIdentity,
  k90R,  // clockwise
  k180,
  k90L,    // counter-clockwise
  kHoriz,  // mirror left-right
  kVert,   // mirror top-bottom
  kUlLr,   // across the upper-left/lower-right diagonal (transpose)
  kUrLl,   // across the upper-right/lower-left diagonal
};

// True when `direction` turns a WxH image into an HxW one.
bool flip_swaps_size(FlipDirection direction);

// videobalance's properties, with its ranges and defaults.
struct BalanceParams {
  double brightness = 0.0;  // -1..1, added to luma as brightness * 255
  double contrast = 1.0;    // 0..2, luma gain around 16
  double saturation = 1.0;  // 0..2, chroma gain around 128
  double hue = 0.0;         // -1..1, chroma rotation by hue * 180 degrees

  bool operator==(const BalanceParams& o) const {
    return brightness == o.brightness && contrast == o.contrast && saturation == o.saturation &&
           hue == o.hue;
  }
  bool is_identity() const {
    return brightness == 0.0 && contrast == 1.0 && saturation == 1.0 && hue == 0.0;
  }
  // Empty when every value is in range, else a sentence saying what is allowed.
  std::string check() const;
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
  // kFlip.
  FlipDirection flip = FlipDirection::kIdentity;
  // kBalance.
  BalanceParams balance;
  // kBlur: the Gaussian's standard deviation in pixels, 0.5 to 20.
  double blur_sigma = 2.0;
  // kConvert: the colorimetry of each side (used where that side is YUV).
  ConvertParams convert;

  // Every field: an engine made for other parameters computes other pixels.
  bool operator==(const KernelParams& o) const {
    return synthetic_us == o.synthetic_us && inject_launch_failure == o.inject_launch_failure &&
           flip == o.flip && balance == o.balance && blur_sigma == o.blur_sigma &&
           convert == o.convert;
  }
  bool operator!=(const KernelParams& o) const { return !(*this == o); }
};

// Whether `id` can turn an `in` image into an `out` image of this format and
// size. Returns an empty string when it can, otherwise a sentence saying what
// is allowed.
// Without params (the engine's start-up check) kFlip accepts both the same
// and the swapped size and kConvert any two formats of the same size; the
// overload with params also checks the size against the flip direction, the
// parameter ranges, and the colorimetry pairs convert can do.
std::string kernel_check(KernelId id, const ImageRef& in, const ImageRef& out);
std::string kernel_check(KernelId id, const KernelParams& params, const ImageRef& in,
                         const ImageRef& out);

// Runs the CPU reference of `id` synchronously. Throws cudaoverlap::Error.
void run_kernel_reference(KernelId id, const KernelParams& params, const ImageRef& in,
                          const ImageRef& out);

// Enqueues the CUDA implementation of `id` on `stream` and checks the launch.
// `in` and `out` point into device memory. Throws cudaoverlap::Error; only
// available when built with CUDA (kernels_have_cuda()).
void launch_kernel_cuda(KernelId id, const KernelParams& params, const ImageRef& in,
                        const ImageRef& out, CUstream_st* stream);

bool kernels_have_cuda();

// For benchmarks: enqueues `iterations` launches of `id` on a stream of its
// own between two CUDA events and returns the GPU milliseconds per launch.
// `in` and `out` point into device memory of the current device. Throws
// cudaoverlap::Error (also when built without CUDA).
double time_kernel_cuda(KernelId id, const KernelParams& params, const ImageRef& in,
                        const ImageRef& out, int iterations);

}  // namespace cudaoverlap
