// The `edge` kernel: Sobel gradient magnitude, in the input's format.
//
// The gradient is taken on luma: the Y samples of YUV (at their depth:
// 8 or 10 bits), the grey samples of GRAY8 and GRAY16_LE, and for RGB
// (3- and 4-byte) the integer BT.601 luma (77 R + 150 G + 29 B + 128) >> 8.
// Both 3x3 Sobel kernels run with the image edges clamped; the magnitude is
// the integer square root of gx^2 + gy^2 (rounded down), clamped to the
// samples' maximum (255, 1023, 65535). It is written to R, G and B (alpha
// and padding kept), to Y with neutral chroma (half the maximum) for YUV,
// or to the grey samples. The bits around a 10-bit sample and the second
// luma of an odd-width YUY2/UYVY row's last pair are kept. Every step has
// an exact integer result, so GPU and CPU agree to the byte.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "kernels/operation.h"
#include "kernels/operation_entry.h"

namespace cudaoverlap {

class EdgeOperation final : public Operation {
 public:
  const char* name() const override { return "edge"; }
  // Every raw format.
  std::vector<PixelFormat> output_formats(PixelFormat in) const override;
  bool mixes_rows(PixelFormat, PixelFormat) const override { return true; }
  void enqueue_cuda(const ImageRef& in, const ImageRef& out, const Workspace& workspace,
                    CUstream_st* stream) const override;
  void run_reference(const ImageRef& in, const ImageRef& out,
                     const Workspace& workspace) const override;
  // Bandable: output row y reads luma rows y - 1 to y + 1 (and chroma only
  // in its own rows), so the halo is 1.
  int band_halo(PixelFormat in, PixelFormat out) const override;
  void enqueue_cuda_rows(const ImageRef& in, const ImageRef& out, const Workspace& workspace,
                         int y0, int y1, CUstream_st* stream) const override;
  void run_reference_rows(const ImageRef& in, const ImageRef& out, const Workspace& workspace,
                          int y0, int y1) const override;
};

// Output rows [y0, y1) of the whole images `in` and `out` (y0 and y1
// multiples of the format's vertical subsampling, or y1 its height), the
// image edges clamped where the whole image's are; nothing else of `out` is
// written. [0, height) is the whole frame.
void edge_reference(const ImageRef& in, const ImageRef& out, int y0, int y1);

// The reference's magnitude: min(floor(sqrt(gx^2 + gy^2)), max).
uint32_t edge_magnitude(int64_t gx, int64_t gy, uint32_t max = 255);

void edge_cuda(const ImageRef& in, const ImageRef& out, int y0, int y1, CUstream_st* stream);

// Its registry entry (operation_entry.h).
const OperationEntry& edge_entry();

}  // namespace cudaoverlap
