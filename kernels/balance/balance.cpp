// CPU reference of the `balance` kernel (see balance.h), written as
// videobalance computes: a luma table and two 256x256 chroma tables built in
// double precision, then per-pixel lookups.
#include "kernels/balance/balance.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <vector>

#include "kernels/balance/balance_math.h"
#include "kernels/copy/copy.h"

namespace cudaoverlap {
namespace {

uint8_t round_clamp(double v) {
  if (v < 0)
    v = 0;
  else if (v > 255)
    v = 255;
  return static_cast<uint8_t>(std::rint(v));
}

struct ChromaTables {
  std::vector<uint8_t> u, v;  // [u * 256 + v]
};

ChromaTables chroma_tables(const BalanceConstants& k) {
  ChromaTables t;
  t.u.resize(256 * 256);
  t.v.resize(256 * 256);
  for (int i = -128; i < 128; ++i)
    for (int j = -128; j < 128; ++j) {
      const double u = 128 + ((i * k.hue_cos + j * k.hue_sin) * k.saturation);
      const double v = 128 + ((-i * k.hue_sin + j * k.hue_cos) * k.saturation);
      t.u[(i + 128) * 256 + (j + 128)] = round_clamp(u);
      t.v[(i + 128) * 256 + (j + 128)] = round_clamp(v);
    }
  return t;
}

}  // namespace

BalanceConstants balance_constants(const BalanceParams& params) {
  BalanceConstants k;
  for (int i = 0; i < 256; ++i)
    k.table_y[i] = round_clamp(16 + ((i - 16) * params.contrast + params.brightness * 255));
  // G_PI's value.
  constexpr double kPi = 3.1415926535897932384626433832795028841971693993751;
  k.hue_cos = std::cos(kPi * params.hue);
  k.hue_sin = std::sin(kPi * params.hue);
  k.saturation = params.saturation;
  return k;
}

void balance_chroma_table(const BalanceConstants& k, uint16_t* table) {
  const ChromaTables t = chroma_tables(k);
  for (size_t i = 0; i < t.u.size(); ++i) table[i] = static_cast<uint16_t>(t.u[i] | t.v[i] << 8);
}

void rgb_byte_offsets(PixelFormat format, int* r, int* g, int* b) {
  const FormatInfo& info = format_info(format);
  *r = info.comp[0].offset, *g = info.comp[1].offset, *b = info.comp[2].offset;
}

void rgb_balance_words(PixelFormat format, RgbBalanceWords* words) {
  int r, g, b;
  rgb_byte_offsets(format, &r, &g, &b);
  const int alpha = 6 - r - g - b;  // the offsets are three of 0..3
  const auto coefs = [&](int cr, int cg, int cb) {
    return static_cast<uint32_t>(static_cast<uint8_t>(cr)) << (8 * r) |
           static_cast<uint32_t>(static_cast<uint8_t>(cg)) << (8 * g) |
           static_cast<uint32_t>(static_cast<uint8_t>(cb)) << (8 * b);
  };
  words->coef_y = coefs(66, 129, 25);
  words->coef_u = coefs(-38, -74, 112);
  words->coef_v = coefs(112, -94, -18);
  // Nibble k of a selector names the source of the result's byte k: 1 and 5
  // are byte 1 of the first and second operands (a clamped result), 3 is
  // byte 3 of the first (zero), and 4 + k is byte k of the pixel itself.
  words->sel_rg = words->sel_ba = 0;
  for (int k = 0; k < 4; ++k) {
    words->sel_rg |= (k == r ? 1u : k == g ? 5u : 3u) << (4 * k);
    words->sel_ba |= (k == b ? 1u : k == alpha ? 4u + k : 3u) << (4 * k);
  }
}

void balance_reference(const ImageRef& in, const ImageRef& out, const BalanceParams& params) {
  // Alpha and padding bytes come from here; the samples are written over.
  copy_reference(in, out);
  if (params.is_identity()) return;
  const BalanceConstants k = balance_constants(params);
  const ChromaTables t = chroma_tables(k);
  const auto chroma = [&t](int index) {
    return static_cast<uint32_t>(t.u[index]) | static_cast<uint32_t>(t.v[index]) << 8;
  };
  const balance_math::Layout l = balance_math::layout_of(in.format);
  if (l.rgb) {
    for (int y = 0; y < in.height; ++y) {
      const uint8_t* s = in.planes[0].data + static_cast<size_t>(y) * in.planes[0].stride;
      uint8_t* d = out.planes[0].data + static_cast<size_t>(y) * out.planes[0].stride;
      for (int x = 0; x < in.width; ++x, s += l.pixel_stride, d += l.pixel_stride) {
        uint8_t r = s[l.rgb_offset[0]], g = s[l.rgb_offset[1]], b = s[l.rgb_offset[2]];
        balance_math::balance_rgb(k.table_y, chroma, &r, &g, &b);
        d[l.rgb_offset[0]] = r;
        d[l.rgb_offset[1]] = g;
        d[l.rgb_offset[2]] = b;
      }
    }
    return;
  }
  // Luma (or grey) through the table, sample by sample.
  const PlaneRef &sy = in.planes[l.plane[0]], &dy = out.planes[l.plane[0]];
  const int luma = balance_math::samples_per_row(l, 0, in.width);
  for (size_t y = 0; y < plane_rows(in.format, l.plane[0], in.height); ++y)
    for (int x = 0; x < luma; ++x) {
      const size_t at = l.offset[0] + static_cast<size_t>(x) * l.step[0];
      dy.data[y * dy.stride + at] = k.table_y[sy.data[y * sy.stride + at]];
    }
  if (!l.chroma) return;
  // Each (u, v) pair through the chroma tables.
  const PlaneRef &su = in.planes[l.plane[1]], &sv = in.planes[l.plane[2]];
  const PlaneRef &du = out.planes[l.plane[1]], &dv = out.planes[l.plane[2]];
  const int pairs = balance_math::samples_per_row(l, 1, in.width);
  for (size_t y = 0; y < plane_rows(in.format, l.plane[1], in.height); ++y)
    for (int x = 0; x < pairs; ++x) {
      const size_t at_u = l.offset[1] + static_cast<size_t>(x) * l.step[1];
      const size_t at_v = l.offset[2] + static_cast<size_t>(x) * l.step[2];
      const int index = su.data[y * su.stride + at_u] * 256 + sv.data[y * sv.stride + at_v];
      du.data[y * du.stride + at_u] = t.u[index];
      dv.data[y * dv.stride + at_v] = t.v[index];
    }
}

std::vector<PixelFormat> BalanceOperation::output_formats(PixelFormat in) const {
  using F = PixelFormat;
  std::vector<F> taken = rgb32_yuv420_gray8_formats();
  taken.insert(taken.end(),
               {F::kRGB, F::kBGR, F::kNV21, F::kNV16, F::kY42B, F::kY444, F::kYUY2, F::kUYVY});
  return keep_format_of(in, taken);
}

bool BalanceOperation::pixel_stage(PixelFormat in, PixelFormat out, const Workspace& workspace,
                                   PixelStage* stage) const {
  if (in != out || !is_pixel_stage_format(in)) return false;
  *stage = PixelStage{};
  if (params_.is_identity()) return true;  // a copy, as balance_cuda makes
  stage->kind = PixelStage::Kind::kBalance;
  std::copy(std::begin(constants_.table_y), std::end(constants_.table_y), stage->table_y);
  rgb_balance_words(in, &stage->balance);
  stage->balance.chroma = reinterpret_cast<const uint16_t*>(workspace.data);
  return true;
}

size_t BalanceOperation::workspace_bytes() const { return kBalanceChromaTableBytes; }

void BalanceOperation::prepare_cuda(const Workspace& workspace, CUstream_st* stream) const {
  CO_CUDA_ONLY(balance_prepare_cuda(params_, workspace.data, stream));
}

void BalanceOperation::enqueue_cuda(const ImageRef& in, const ImageRef& out,
                                    const Workspace& workspace, CUstream_st* stream) const {
  CO_CUDA_ONLY(balance_cuda(in, out, params_, workspace.data, stream));
}

// The reference builds its tables per frame, as videobalance does: it is the
// oracle, not the fast path, and needs no workspace.
void BalanceOperation::run_reference(const ImageRef& in, const ImageRef& out,
                                     const Workspace&) const {
  balance_reference(in, out, params_);
}

const OperationEntry& balance_entry() {
  const BalanceParams d;  // videobalance's defaults
  static const OperationEntry entry{
      "balance",
      "Balance: brightness, contrast, saturation and hue as videobalance computes them",
      true,
      {{"brightness", "Brightness",
        "kernel=balance: added to luma as brightness * 255 (as videobalance)",
        ParamSpec::Type::kDouble, -1.0, 1.0, d.brightness},
       {"contrast", "Contrast", "kernel=balance: luma gain around 16 (as videobalance)",
        ParamSpec::Type::kDouble, 0.0, 2.0, d.contrast},
       {"saturation", "Saturation",
        "kernel=balance: chroma gain around 128; 0 makes grey (as videobalance)",
        ParamSpec::Type::kDouble, 0.0, 2.0, d.saturation},
       {"hue", "Hue", "kernel=balance: chroma rotation by hue * 180 degrees (as videobalance)",
        ParamSpec::Type::kDouble, -1.0, 1.0, d.hue}},
      [](const KernelParams& p) -> std::shared_ptr<const Operation> {
        return std::make_shared<BalanceOperation>(p.values);
      }};
  return entry;
}

}  // namespace cudaoverlap
