// The `balance` kernel: videobalance's brightness, contrast, saturation and
// hue, with videobalance's arithmetic so the two agree to the byte.
//
// Luma goes through a table, y' = clamp(16 + (y - 16) * contrast +
// brightness * 255); chroma (u, v), centred on 128, is rotated by hue * pi and
// scaled by saturation, each result rounded to nearest-even and clamped.
// Packed RGB is taken to 8-bit BT.601 limited-range YCbCr and back with
// videobalance's fixed-point matrices (whatever the caps' colorimetry, as
// videobalance does); alpha and padding are kept. GRAY8 (which videobalance
// does not take) gets the luma table only. All parameters at their defaults
// copy the frame, as videobalance's passthrough does.
#pragma once

#include <cstdint>
#include <string>

#include "kernels/kernel_params.h"
#include "kernels/operation.h"
#include "kernels/operation_entry.h"
#include "kernels/pixel_stage.h"

namespace cudaoverlap {

// videobalance's properties, with its ranges and defaults.
struct BalanceParams {
  double brightness = 0.0;  // -1..1, added to luma as brightness * 255
  double contrast = 1.0;    // 0..2, luma gain around 16
  double saturation = 1.0;  // 0..2, chroma gain around 128
  double hue = 0.0;         // -1..1, chroma rotation by hue * 180 degrees

  bool is_identity() const {
    return brightness == 0.0 && contrast == 1.0 && saturation == 1.0 && hue == 0.0;
  }
};

// The luma table and the chroma constants both implementations use.
struct BalanceConstants {
  uint8_t table_y[256];
  double hue_cos;
  double hue_sin;
  double saturation;
};
BalanceConstants balance_constants(const BalanceParams& params);

// Byte offsets of R, G and B in a packed RGB pixel of `format` (3 or 4
// bytes); `format` must be packed RGB.
void rgb_byte_offsets(PixelFormat format, int* r, int* g, int* b);

// The dp4a coefficient words and byte_perm selectors of packed RGB
// `format` (RgbBalanceWords); the chroma table is left as it was.
void rgb_balance_words(PixelFormat format, RgbBalanceWords* words);

// The workspace holds the chroma table (256 x 256 entries of 2 bytes: the
// (u', v') pair for each (u, v)), built on the device by prepare_cuda, on
// the host by prepare_reference.
class BalanceOperation final : public Operation {
 public:
  explicit BalanceOperation(const ParamValues& values)
      : Operation(values),
        params_{values.number("brightness"), values.number("contrast"), values.number("saturation"),
                values.number("hue")},
        constants_(balance_constants(params_)) {}
  const char* name() const override { return "balance"; }
  // The 8-bit formats: videobalance's (4-byte and 3-byte RGB, I420, NV12,
  // NV21, Y42B, Y444, YUY2, UYVY), and GRAY8 and NV16.
  std::vector<PixelFormat> output_formats(PixelFormat in) const override;
  bool mixes_rows(PixelFormat, PixelFormat) const override { return false; }
  // Each output row from its own input row.
  int band_halo(PixelFormat, PixelFormat) const override { return 0; }
  // Packed 8-bit RGB: the luma table, the matrices and the chroma table.
  bool pixel_stage(PixelFormat in, PixelFormat out, const Workspace& workspace,
                   PixelStage* stage) const override;
  size_t workspace_bytes() const override;
  void prepare_cuda(const Workspace& workspace, CUstream_st* stream) const override;
  void enqueue_cuda(const ImageRef& in, const ImageRef& out, const Workspace& workspace,
                    CUstream_st* stream) const override;
  void run_reference(const ImageRef& in, const ImageRef& out,
                     const Workspace& workspace) const override;
  // The cpu backend (balance_cpu.cpp): the chroma table made once, into the
  // workspace, then looked up.
  void prepare_reference(const Workspace& workspace) const override;
  void run_cpu(const ImageRef& in, const ImageRef& out, const Workspace& workspace) const override;
  void run_cpu_rows(const ImageRef& in, const ImageRef& out, const Workspace& workspace, int y0,
                    int y1) const override;

 private:
  BalanceParams params_;
  BalanceConstants constants_;  // made once: pixel_stage() is asked every frame
};

void balance_reference(const ImageRef& in, const ImageRef& out, const BalanceParams& params);
// The chroma table as the reference builds it: (u', v') for each (u, v) at
// u * 256 + v, u' in the low byte.
void balance_chroma_table(const BalanceConstants& k, uint16_t* table);
// `chroma_table`: device memory of kBalanceChromaTableBytes, filled by
// balance_prepare_cuda with the same parameters.
constexpr size_t kBalanceChromaTableBytes = 256 * 256 * 2;
void balance_prepare_cuda(const BalanceParams& params, uint8_t* chroma_table, CUstream_st* stream);
void balance_cuda(const ImageRef& in, const ImageRef& out, const BalanceParams& params,
                  const uint8_t* chroma_table, CUstream_st* stream);

// Its registry entry (operation_entry.h).
const OperationEntry& balance_entry();

}  // namespace cudaoverlap
