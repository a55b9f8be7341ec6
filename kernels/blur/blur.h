// The `blur` kernel: a Gaussian blur of standard deviation `sigma` (0.5
// to 20 pixels), separable (a horizontal then a vertical pass), with the image
// edges clamped (samples beyond an edge repeat the edge).
//
// Every colour component (R, G, B; Y, U, V; grey) is blurred at its own
// resolution: a subsampled chroma component with sigma scaled down by its
// subsampling in each direction (4:2:2 chroma: halved across, whole down),
// so the blur has the same extent on the picture for every component.
// Alpha and padding bytes, the bits around a 10-bit sample and the second
// luma of an odd-width YUY2/UYVY row's last pair are copied.
//
// The arithmetic is integer so the GPU and the CPU reference agree to the
// byte: the taps are the Gaussian quantised to integers summing to exactly
// 4096 (so a flat image stays flat), the horizontal pass keeps
// blur_fraction_bits(depth) fractional bits (8 for 8-bit samples, 6 for
// 10-bit, none for 16-bit: its results fit 16 bits), and the vertical pass
// rounds to nearest once at the end. Against an exact double-precision Gaussian with
// the same taps the result differs by at most 1 (tested).
#pragma once

#include <cstdint>

#include "kernels/operation.h"
#include "kernels/operation_entry.h"

namespace cudaoverlap {

constexpr double kBlurMinSigma = 0.5;
constexpr double kBlurMaxSigma = 20.0;
constexpr int kBlurMaxRadius = 60;   // ceil(3 * kBlurMaxSigma)
constexpr int kBlurWeightBits = 12;  // taps sum to 1 << 12

// Fractional bits the horizontal pass keeps for samples of `depth` bits
// (up to 16): (2^depth - 1) << bits fits 16 bits.
constexpr int blur_fraction_bits(int depth) { return 16 - depth; }

// Taps of one plane: weight[|d|] for offsets -radius..radius.
struct BlurTaps {
  int radius = 0;
  int32_t weight[kBlurMaxRadius + 1] = {};
};

// The taps for `sigma` in picture pixels, on a plane subsampled by
// 1 << shift (radius ceil(3 * sigma'), at least 1).
BlurTaps blur_taps(double sigma, int shift);

class BlurOperation final : public Operation {
 public:
  explicit BlurOperation(const ParamValues& values)
      : Operation(values), sigma_(values.number("sigma")) {}
  const char* name() const override { return "blur"; }
  // Every raw format.
  std::vector<PixelFormat> output_formats(PixelFormat in) const override;
  bool mixes_rows(PixelFormat, PixelFormat) const override { return true; }
  void enqueue_cuda(const ImageRef& in, const ImageRef& out, const Workspace& workspace,
                    CUstream_st* stream) const override;
  void run_reference(const ImageRef& in, const ImageRef& out,
                     const Workspace& workspace) const override;
  // Bandable: blur_band_halo rows.
  int band_halo(PixelFormat in, PixelFormat out) const override;
  void enqueue_cuda_rows(const ImageRef& in, const ImageRef& out, const Workspace& workspace,
                         int y0, int y1, CUstream_st* stream) const override;
  void run_reference_rows(const ImageRef& in, const ImageRef& out, const Workspace& workspace,
                          int y0, int y1) const override;
  // blur_cpu where it takes the format, else the reference.
  void run_cpu(const ImageRef& in, const ImageRef& out, const Workspace& workspace) const override;
  void run_cpu_rows(const ImageRef& in, const ImageRef& out, const Workspace& workspace, int y0,
                    int y1) const override;

 private:
  double sigma_;
};

// The picture rows a band of `format` blurred with `sigma` reads above and
// below its own: the largest vertical radius of its components, times
// their vertical subsampling.
int blur_band_halo(PixelFormat format, double sigma);

// Output rows [y0, y1) of the whole images `in` and `out` (y0 and y1
// multiples of the format's vertical subsampling, or y1 its height), the
// image edges clamped where the whole image's are; nothing else of `out` is
// written. [0, height) is the whole frame.
void blur_reference(const ImageRef& in, const ImageRef& out, double sigma, int y0, int y1);
// The cpu backend's (blur_cpu.cpp): the reference's bytes, faster, for
// 8-bit formats; false, having written nothing, for the others.
bool blur_cpu(const ImageRef& in, const ImageRef& out, double sigma, int y0, int y1);
void blur_cuda(const ImageRef& in, const ImageRef& out, double sigma, int y0, int y1,
               CUstream_st* stream);

// Its registry entry (operation_entry.h).
const OperationEntry& blur_entry();

}  // namespace cudaoverlap
