// The cpu backend's `balance`: videobalance's tables made once, at
// prepare (the chroma table in the workspace, as on the device), then one
// lookup a sample, row by row through plain pointers. The bytes are the
// reference's (tests/kernels/test_cpu_fast.cpp).
#include <cstring>

#include "kernels/balance/balance.h"
#include "kernels/balance/balance_math.h"
#include "kernels/copy/copy.h"

namespace cudaoverlap {
namespace {

// n bytes through `table`, eight at a time: eight lookups, one store (a
// byte stored a lookup stalls on the stores before it).
void luma_row(const uint8_t* s, uint8_t* d, int n, const uint8_t* table) {
  int x = 0;
  for (; x + 8 <= n; x += 8) {
    uint8_t v[8];
    for (int k = 0; k < 8; ++k) v[k] = table[s[x + k]];
    std::memcpy(d + x, v, 8);
  }
  for (; x < n; ++x) d[x] = table[s[x]];
}

// Chroma planes (a plane per component), eight pairs a step; returns where
// it stopped.
int chroma_planes_row(const uint8_t* u, const uint8_t* v, uint8_t* u_out, uint8_t* v_out, int n,
                      const uint16_t* chroma) {
  int x = 0;
  for (; x + 8 <= n; x += 8) {
    uint8_t us[8], vs[8];
    for (int k = 0; k < 8; ++k) {
      const uint16_t pair = chroma[u[x + k] * 256 + v[x + k]];
      us[k] = static_cast<uint8_t>(pair);
      vs[k] = static_cast<uint8_t>(pair >> 8);
    }
    std::memcpy(u_out + x, us, 8);
    std::memcpy(v_out + x, vs, 8);
  }
  return x;
}

void balance_rows(const ImageRef& in, const ImageRef& out, const uint8_t* table_y,
                  const uint16_t* chroma) {
  const balance_math::Layout l = balance_math::layout_of(in.format);
  if (l.rgb) {
    const auto lookup = [chroma](int index) { return static_cast<uint32_t>(chroma[index]); };
    for (int y = 0; y < in.height; ++y) {
      const uint8_t* s = in.planes[0].data + static_cast<size_t>(y) * in.planes[0].stride;
      uint8_t* d = out.planes[0].data + static_cast<size_t>(y) * out.planes[0].stride;
      // Alpha and padding as they came.
      std::memcpy(d, s, static_cast<size_t>(in.width) * l.pixel_stride);
      for (int x = 0; x < in.width; ++x, s += l.pixel_stride, d += l.pixel_stride) {
        uint8_t r = s[l.rgb_offset[0]], g = s[l.rgb_offset[1]], b = s[l.rgb_offset[2]];
        balance_math::balance_rgb(table_y, lookup, &r, &g, &b);
        d[l.rgb_offset[0]] = r;
        d[l.rgb_offset[1]] = g;
        d[l.rgb_offset[2]] = b;
      }
    }
    return;
  }
  // Packed 4:2:2 keeps bytes no sample covers (an odd row's last luma).
  if (l.chroma && l.plane[0] == l.plane[1]) copy_reference(in, out);
  const PlaneRef &sy = in.planes[l.plane[0]], &dy = out.planes[l.plane[0]];
  const int luma = balance_math::samples_per_row(l, 0, in.width);
  for (size_t y = 0; y < plane_rows(in.format, l.plane[0], in.height); ++y) {
    const uint8_t* s = sy.data + y * sy.stride + l.offset[0];
    uint8_t* d = dy.data + y * dy.stride + l.offset[0];
    if (l.step[0] == 1)
      luma_row(s, d, luma, table_y);
    else
      for (int x = 0; x < luma; ++x) d[x * l.step[0]] = table_y[s[x * l.step[0]]];
  }
  if (!l.chroma) return;
  const PlaneRef &su = in.planes[l.plane[1]], &sv = in.planes[l.plane[2]];
  const PlaneRef &du = out.planes[l.plane[1]], &dv = out.planes[l.plane[2]];
  const int pairs = balance_math::samples_per_row(l, 1, in.width);
  const int su_step = l.step[1], sv_step = l.step[2];
  for (size_t y = 0; y < plane_rows(in.format, l.plane[1], in.height); ++y) {
    const uint8_t* u = su.data + y * su.stride + l.offset[1];
    const uint8_t* v = sv.data + y * sv.stride + l.offset[2];
    uint8_t* u_out = du.data + y * du.stride + l.offset[1];
    uint8_t* v_out = dv.data + y * dv.stride + l.offset[2];
    int x = 0;
    if (su_step == 1 && sv_step == 1) x = chroma_planes_row(u, v, u_out, v_out, pairs, chroma);
    for (; x < pairs; ++x) {
      const uint16_t pair = chroma[u[x * su_step] * 256 + v[x * sv_step]];
      u_out[x * su_step] = static_cast<uint8_t>(pair);
      v_out[x * sv_step] = static_cast<uint8_t>(pair >> 8);
    }
  }
}

}  // namespace

void BalanceOperation::prepare_reference(const Workspace& workspace) const {
  balance_chroma_table(constants_, reinterpret_cast<uint16_t*>(workspace.data));
}

void BalanceOperation::run_cpu(const ImageRef& in, const ImageRef& out,
                               const Workspace& workspace) const {
  if (params_.is_identity()) return copy_reference(in, out);
  balance_rows(in, out, constants_.table_y, reinterpret_cast<const uint16_t*>(workspace.data));
}

void BalanceOperation::run_cpu_rows(const ImageRef& in, const ImageRef& out,
                                    const Workspace& workspace, int y0, int y1) const {
  run_cpu(image_rows(in, y0, y1), image_rows(out, y0, y1), workspace);
}

}  // namespace cudaoverlap
