// The `invert` kernel: max - value on every colour, luma and chroma sample
// of every format (255 - v for 8-bit samples, 1023 - v for 10-bit ones,
// 65535 - v for GRAY16); alpha, padding bytes, and the bits of a 16-bit
// word outside a 10-bit sample are copied unchanged.
#pragma once

#include <cstdint>

#include "kernels/operation.h"
#include "kernels/operation_entry.h"

namespace cudaoverlap {

class InvertOperation final : public Operation {
 public:
  const char* name() const override { return "invert"; }
  std::vector<PixelFormat> output_formats(PixelFormat in) const override { return keep_format(in); }
  bool mixes_rows(PixelFormat, PixelFormat) const override { return false; }
  // Each output row from its own input row.
  int band_halo(PixelFormat, PixelFormat) const override { return 0; }
  // Packed 8-bit RGB: R, G and B flipped by a mask.
  bool pixel_stage(PixelFormat in, PixelFormat out, const Workspace& workspace,
                   PixelStage* stage) const override;
  void enqueue_cuda(const ImageRef& in, const ImageRef& out, const Workspace& workspace,
                    CUstream_st* stream) const override;
  void run_reference(const ImageRef& in, const ImageRef& out,
                     const Workspace& workspace) const override;
  void run_cpu(const ImageRef& in, const ImageRef& out, const Workspace& workspace) const override;
  void run_cpu_rows(const ImageRef& in, const ImageRef& out, const Workspace& workspace, int y0,
                    int y1) const override;
};

void invert_reference(const ImageRef& in, const ImageRef& out);
// The cpu backend's invert: each row XORed 8 bytes at a time with the
// format's masks (invert_masks).
void invert_cpu(const ImageRef& in, const ImageRef& out);
void invert_cuda(const ImageRef& in, const ImageRef& out, CUstream_st* stream);

// The bits to flip in each plane of `format` (the CUDA kernel's and the
// cpu backend's), as a pattern that repeats every 4 bytes of a row (x XOR max == max - x for a
// sample of all-ones max). Every format of the table has one.
void invert_masks(PixelFormat format, uint32_t masks[kMaxPlanes]);

// Its registry entry (operation_entry.h).
const OperationEntry& invert_entry();

}  // namespace cudaoverlap
