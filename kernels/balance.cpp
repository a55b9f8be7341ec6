// CPU reference of the `balance` kernel (see balance.h), written as
// videobalance computes: a luma table and two 256x256 chroma tables built in
// double precision, then per-pixel lookups.
#include "balance.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "copy.h"

namespace cudaoverlap {
namespace {

// videobalance's 8-bit fixed-point BT.601 limited-range matrices.
constexpr int kRgbToYuv[12] = {66, 129, 25, 4096, -38, -74, 112, 32768, 112, -94, -18, 32768};
constexpr int kYuvToRgb[12] = {298, 0, 409, -57068, 298, -100, -208, 34707, 298, 516, 0, -70870};

int apply_matrix(const int* m, int row, int a, int b, int c) {
  // >> on a negative int is an arithmetic shift with GCC and Clang, as in
  // videobalance's C.
  return (m[row * 4] * a + m[row * 4 + 1] * b + m[row * 4 + 2] * c + m[row * 4 + 3]) >> 8;
}

uint8_t clamp_u8(int v) { return static_cast<uint8_t>(std::clamp(v, 0, 255)); }

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

void luma_plane(const PlaneRef& in, const PlaneRef& out, size_t row_bytes, size_t rows,
                const uint8_t* table) {
  for (size_t y = 0; y < rows; ++y) {
    const uint8_t* s = in.data + y * in.stride;
    uint8_t* d = out.data + y * out.stride;
    for (size_t x = 0; x < row_bytes; ++x) d[x] = table[s[x]];
  }
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

namespace {

std::string range_problem(const char* name, double value, double lo, double hi) {
  if (value >= lo && value <= hi) return {};
  return std::string(name) + " " + std::to_string(value) + " is out of range: it takes " +
         std::to_string(lo) + " to " + std::to_string(hi);
}

}  // namespace

std::string BalanceParams::check() const {
  for (const std::string& problem :
       {range_problem("brightness", brightness, -1, 1), range_problem("contrast", contrast, 0, 2),
        range_problem("saturation", saturation, 0, 2), range_problem("hue", hue, -1, 1)})
    if (!problem.empty()) return problem;
  return {};
}

void rgb_byte_offsets(PixelFormat format, int* r, int* g, int* b) {
  switch (format) {
    case PixelFormat::kBGRA:
    case PixelFormat::kBGRx:
      *r = 2, *g = 1, *b = 0;
      return;
    case PixelFormat::kARGB:
      *r = 1, *g = 2, *b = 3;
      return;
    case PixelFormat::kABGR:
      *r = 3, *g = 2, *b = 1;
      return;
    default:  // RGBA, RGBx
      *r = 0, *g = 1, *b = 2;
      return;
  }
}

void balance_reference(const ImageRef& in, const ImageRef& out, const BalanceParams& params) {
  if (params.is_identity()) {
    copy_reference(in, out);
    return;
  }
  const BalanceConstants k = balance_constants(params);
  const FormatInfo& info = format_info(in.format);
  if (in.format == PixelFormat::kGRAY8 || info.is_yuv)
    luma_plane(in.planes[0], out.planes[0], plane_row_bytes(in.format, 0, in.width),
               plane_rows(in.format, 0, in.height), k.table_y);
  if (in.format == PixelFormat::kGRAY8) return;

  const ChromaTables t = chroma_tables(k);
  if (in.format == PixelFormat::kI420) {
    const size_t w = plane_row_bytes(in.format, 1, in.width);
    const size_t h = plane_rows(in.format, 1, in.height);
    for (size_t y = 0; y < h; ++y) {
      const uint8_t* su = in.planes[1].data + y * in.planes[1].stride;
      const uint8_t* sv = in.planes[2].data + y * in.planes[2].stride;
      uint8_t* du = out.planes[1].data + y * out.planes[1].stride;
      uint8_t* dv = out.planes[2].data + y * out.planes[2].stride;
      for (size_t x = 0; x < w; ++x) {
        const int idx = su[x] * 256 + sv[x];
        du[x] = t.u[idx];
        dv[x] = t.v[idx];
      }
    }
    return;
  }
  if (in.format == PixelFormat::kNV12) {
    const size_t w = plane_row_bytes(in.format, 1, in.width);
    const size_t h = plane_rows(in.format, 1, in.height);
    for (size_t y = 0; y < h; ++y) {
      const uint8_t* s = in.planes[1].data + y * in.planes[1].stride;
      uint8_t* d = out.planes[1].data + y * out.planes[1].stride;
      for (size_t x = 0; x < w; x += 2) {
        const int idx = s[x] * 256 + s[x + 1];
        d[x] = t.u[idx];
        d[x + 1] = t.v[idx];
      }
    }
    return;
  }
  // Packed RGB.
  int ro, go, bo;
  rgb_byte_offsets(in.format, &ro, &go, &bo);
  for (int y = 0; y < in.height; ++y) {
    const uint8_t* s = in.planes[0].data + static_cast<size_t>(y) * in.planes[0].stride;
    uint8_t* d = out.planes[0].data + static_cast<size_t>(y) * out.planes[0].stride;
    for (int x = 0; x < in.width; ++x, s += 4, d += 4) {
      const int r = s[ro], g = s[go], b = s[bo];
      const int yy = std::clamp(apply_matrix(kRgbToYuv, 0, r, g, b), 0, 255);
      const int u0 = std::clamp(apply_matrix(kRgbToYuv, 1, r, g, b), 0, 255);
      const int v0 = std::clamp(apply_matrix(kRgbToYuv, 2, r, g, b), 0, 255);
      const int y1 = k.table_y[yy];
      const int u1 = t.u[u0 * 256 + v0];
      const int v1 = t.v[u0 * 256 + v0];
      // Alpha or padding first, then the colours over it.
      for (int c = 0; c < 4; ++c) d[c] = s[c];
      d[ro] = clamp_u8(apply_matrix(kYuvToRgb, 0, y1, u1, v1));
      d[go] = clamp_u8(apply_matrix(kYuvToRgb, 1, y1, u1, v1));
      d[bo] = clamp_u8(apply_matrix(kYuvToRgb, 2, y1, u1, v1));
    }
  }
}

std::string BalanceOperation::check(const ImageRef& in, const ImageRef& out) const {
  const std::string problem = params_.check();
  return problem.empty() ? Operation::check(in, out) : problem;
}

bool BalanceOperation::same_as(const Operation& other) const {
  const auto* o = dynamic_cast<const BalanceOperation*>(&other);
  return o != nullptr && o->params_ == params_;
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

}  // namespace cudaoverlap
