// The `scale` operation (see scale.h), its tables (scale_image.h) and the
// CPU pass, which runs scale_math.h's arithmetic sample by sample.
#include "kernels/scale/scale.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "kernels/copy/copy.h"
#include "kernels/error.h"
#include "kernels/scale/scale_math.h"

namespace cudaoverlap {
namespace {

// A subsampled grid's size, as GStreamer rounds it: the last sample covers
// what is left.
int halved(int size) { return (size + 1) / 2; }

// The windows of an x axis (ScaleTables::Axis::window_groups), if its
// input is wide enough and its weights fit 16 bits.
template <typename Put>
void put_windows(ScaleTables::Axis* a, const ScaleAxis& axis, const Put& put) {
  const int span = (axis.taps + 3) / 4 * 4;
  if (axis.taps < 2 || axis.in_size < span || a->abs_sum > INT16_MAX) return;
  const int groups = span / 4;
  std::vector<int32_t> starts(axis.out_size);
  std::vector<uint32_t> words(static_cast<size_t>(groups) * axis.out_size * 2);
  for (int o = 0; o < axis.out_size; ++o) {
    const int start = std::clamp(axis.first[o], 0, axis.in_size - span);
    starts[o] = start;
    std::vector<int> merged(span, 0);
    for (int i = 0; i < axis.taps; ++i) {
      const int at = std::clamp(axis.first[o] + i, 0, axis.in_size - 1) - start;
      merged[at] += axis.weight[static_cast<size_t>(o) * axis.taps + i];
    }
    for (int j = 0; j < span; ++j) {
      const size_t pair = (static_cast<size_t>(j / 4) * axis.out_size + o) * 2;
      const int shift = 8 * (j % 4);
      words[pair] |= static_cast<uint32_t>(merged[j] & 0xFF) << shift;
      words[pair + 1] |= static_cast<uint32_t>((merged[j] >> 8) & 0xFF) << shift;
    }
  }
  a->window_groups = groups;
  a->window_start_at = put(starts.data(), starts.size() * sizeof(int32_t));
  a->window_weight_at = put(words.data(), words.size() * sizeof(uint32_t));
}

void append(ScaleTables* tables, int index, const ScaleAxis& axis) {
  ScaleTables::Axis& a = tables->axes[index];
  a.taps = axis.taps;
  a.in_size = axis.in_size;
  a.out_size = axis.out_size;
  // Over every run of `rows` outputs, not only those from a multiple of
  // `rows`: a band of rows may start anywhere.
  auto reach = [&axis](int rows) {
    int most = 0;
    for (int y = 0; y < axis.out_size; ++y) {
      const int last = std::min(y + rows, axis.out_size) - 1;
      most = std::max(most, axis.first[last] + axis.taps - axis.first[y]);
    }
    return most;
  };
  if (axis.taps > 1) {
    a.block_rows = reach(kScaleBlockRows);
    a.tall_rows = reach(kScaleTallRows);
  }
  std::vector<uint8_t>& bytes = tables->bytes;
  auto put = [&bytes](const void* data, size_t n) {
    const size_t at = (bytes.size() + 15) / 16 * 16;  // aligned for the device's loads
    bytes.resize(at + n);
    std::memcpy(bytes.data() + at, data, n);
    return at;
  };
  for (int o = 0; o < axis.out_size; ++o) {
    int sum = 0;
    for (int i = 0; i < axis.taps; ++i)
      sum += std::abs(axis.weight[static_cast<size_t>(o) * axis.taps + i]);
    a.abs_sum = std::max(a.abs_sum, sum);
  }
  a.first_at = put(axis.first.data(), axis.first.size() * sizeof(int32_t));
  a.weight_at = put(axis.weight.data(), axis.weight.size() * sizeof(int16_t));
  const float unit = 1.0f / (1 << kScaleWeightBits);
  if (index % 2 != 0) {
    std::vector<float> weights(axis.weight.size());
    for (size_t i = 0; i < weights.size(); ++i) weights[i] = axis.weight[i] * unit;
    a.fweight_at = put(weights.data(), weights.size() * sizeof(float));
    return;
  }
  // Along x (axes 0 and 2), the taps as the CUDA kernels read them:
  // neighbouring outputs' taps side by side, the edge already clamped.
  std::vector<int32_t> taps(axis.weight.size() * 2);
  std::vector<int32_t> ftaps(taps.size());
  for (int o = 0; o < axis.out_size; ++o)
    for (int i = 0; i < axis.taps; ++i) {
      const size_t at = (static_cast<size_t>(i) * axis.out_size + o) * 2;
      const int16_t w = axis.weight[static_cast<size_t>(o) * axis.taps + i];
      const float f = w * unit;
      taps[at] = ftaps[at] = std::clamp(axis.first[o] + i, 0, axis.in_size - 1);
      taps[at + 1] = w;
      std::memcpy(&ftaps[at + 1], &f, sizeof f);
    }
  a.tap_at = put(taps.data(), taps.size() * sizeof(int32_t));
  a.ftap_at = put(ftaps.data(), ftaps.size() * sizeof(int32_t));
  put_windows(&a, axis, put);
}

// Whether 8-bit samples summed in float are exact (ScaleTables::float_exact),
// in units of 2^-14: a row's partial sums reach at most x's abs_sum * 255
// (plus the half that rounds), so its rounded sum at most `row`; a column's
// reach y's abs_sum * row. Both must stay below 2^24, and the rounded row
// below 2^22, the floor's range.
bool float_exact(const ScaleTables& tables) {
  const int64_t half = 1 << (kScaleWeightBits - 1);
  int64_t x = 0, y = 0;
  for (int i = 0; i < 4; ++i)
    (i % 2 == 0 ? x : y) = std::max<int64_t>(i % 2 == 0 ? x : y, tables.axes[i].abs_sum);
  const int64_t limit = int64_t{1} << 24;
  const int64_t row_units = x * 255 + half;
  const int64_t row = row_units / (1 << kScaleWeightBits) + 1;
  return row_units < limit && row < (int64_t{1} << 22) && y * row + half < limit;
}

ScaleAxisView view(const ScaleTables& tables, int index, const uint8_t* workspace) {
  const ScaleTables::Axis& a = tables.axes[index];
  ScaleAxisView v;
  v.first = reinterpret_cast<const int32_t*>(workspace + a.first_at);
  v.weight = reinterpret_cast<const int16_t*>(workspace + a.weight_at);
  if (index % 2 == 0) {
    v.tap = reinterpret_cast<const int32_t*>(workspace + a.tap_at);
    v.ftap = reinterpret_cast<const int32_t*>(workspace + a.ftap_at);
    v.window_groups = a.window_groups;
    if (a.window_groups > 0) {
      v.window_start = reinterpret_cast<const int32_t*>(workspace + a.window_start_at);
      v.window_weight = reinterpret_cast<const uint32_t*>(workspace + a.window_weight_at);
    }
  } else {
    v.fweight = reinterpret_cast<const float*>(workspace + a.fweight_at);
  }
  v.taps = a.taps;
  v.in_size = a.in_size;
  v.abs_sum = a.abs_sum;
  return v;
}

// Keeps component `c` of `format` to the rows of picture rows [y0, y1)
// (y1 < 0: all of them).
void scale_rows(ScaleComponent* c, PixelFormat format, int component, int y0, int y1) {
  if (y1 < 0) return;
  const bool sub = format_info(format).comp[component].y_sub;
  c->out_rows = std::min(c->out_rows, sub ? halved(y1) : y1);
  c->row0 = std::min(sub ? y0 / 2 : y0, c->out_rows);
}

}  // namespace

ScaleTables scale_tables(ScaleMethod method, const FrameSizes& s) {
  ScaleTables tables;
  append(&tables, 0, scale_axis(method, s.in_width, s.out_width));
  append(&tables, 1, scale_axis(method, s.in_height, s.out_height));
  append(&tables, 2, scale_axis(method, halved(s.in_width), halved(s.out_width)));
  append(&tables, 3, scale_axis(method, halved(s.in_height), halved(s.out_height)));
  tables.float_exact = float_exact(tables);
  return tables;
}

int scale_components(const ImageRef& in, const ImageRef& out, const ScaleTables& tables,
                     const uint8_t* workspace, ScaleComponent* components, int y0, int y1) {
  const FormatInfo& info = format_info(in.format);
  int n = 0;
  for (int c = 0; c < info.n_components; ++c) {
    const Component& k = info.comp[c];
    ScaleComponent& s = components[n++];
    s.src = in.planes[k.plane].data;
    s.src_stride = in.planes[k.plane].stride;
    s.dst = out.planes[k.plane].data;
    s.dst_stride = out.planes[k.plane].stride;
    s.offset = k.offset;
    s.pixel_stride = k.pixel_stride;
    s.sample_bytes = info.sample_bytes;
    s.depth = k.depth;
    s.shift = k.shift;
    s.out_width = k.x_sub ? halved(out.width) : out.width;
    s.out_samples = stored_samples(out.format, c, out.width);
    s.out_rows = k.y_sub ? halved(out.height) : out.height;
    s.x = view(tables, k.x_sub ? 2 : 0, workspace);
    s.y = view(tables, k.y_sub ? 3 : 1, workspace);
    scale_rows(&s, in.format, c, y0, y1);
  }
  if (info.alpha_byte >= 0 && !info.has_alpha) {
    // RGBx and the like: the padding byte.
    ScaleComponent& s = components[n++];
    s = components[0];
    s.offset = info.alpha_byte;
    s.fill = 255;
  }
  return n;
}

void scale_reference(const ImageRef& in, const ImageRef& out, const ScaleTables& tables,
                     const uint8_t* workspace, int y0, int y1) {
  ScaleComponent components[kMaxComponents + 1];
  const int n = scale_components(in, out, tables, workspace, components, y0, y1);
  for (int c = 0; c < n; ++c)
    for (int y = components[c].row0; y < components[c].out_rows; ++y)
      for (int x = 0; x < components[c].out_samples; ++x) scale_one(components[c], x, y);
}

std::vector<PixelFormat> ScaleOperation::output_formats(PixelFormat in) const {
  if (!resize_.can_turn(in)) return {};
  return keep_format(in);
}

std::string ScaleOperation::check(const ImageRef& in, const ImageRef& out) const {
  if (!resize_.sizes().known()) return Operation::check(in, out);  // the input's size: a copy
  // A format the turn cannot make: the turn's own sentence.
  if (!resize_.can_turn(out.format)) return resize_.check("scale", in, out);
  // The base check with the output's size taken as given.
  ImageRef same = out;
  same.width = swaps_axes() ? in.height : in.width;
  same.height = swaps_axes() ? in.width : in.height;
  const std::string base = Operation::check(in, same);
  return base.empty() ? resize_.check("scale", in, out) : base;
}

bool ScaleOperation::same_as(const Operation& other) const {
  return Operation::same_as(other) && static_cast<const ScaleOperation&>(other).resize_ == resize_;
}

void ScaleOperation::prepare_cuda(const Workspace& workspace, CUstream_st* stream) const {
  resize_.prepare_cuda(workspace.data, stream);
}

void ScaleOperation::prepare_reference(const Workspace& workspace) const {
  resize_.prepare_reference(workspace.data);
}

void ScaleOperation::enqueue_cuda(const ImageRef& in, const ImageRef& out,
                                  const Workspace& workspace, CUstream_st* stream) const {
  if (!resize_.active()) {
    CO_CUDA_ONLY(copy_cuda(in, out, stream));
    return;
  }
  resize_.fill_borders_cuda(out, stream);
  const ImageRef target = resize_.target(out, workspace.data);
  if (!resize_.scales())
    CO_CUDA_ONLY(copy_cuda(resize_.window(in), target, stream));
  else
    resize_.scale_cuda(resize_.window(in), target, workspace.data, stream);
  resize_.turn_cuda(out, workspace.data, stream);
}

void ScaleOperation::run_reference(const ImageRef& in, const ImageRef& out,
                                   const Workspace& workspace) const {
  run_host(in, out, workspace, 0, -1, false);
}

void ScaleOperation::run_cpu(const ImageRef& in, const ImageRef& out,
                             const Workspace& workspace) const {
  run_host(in, out, workspace, 0, -1, true);
}

void ScaleOperation::enqueue_cuda_rows(const ImageRef& in, const ImageRef& out,
                                       const Workspace& workspace, int y0, int y1,
                                       CUstream_st* stream) const {
  if (!resize_.active()) {
    Operation::enqueue_cuda_rows(in, out, workspace, y0, y1, stream);
    return;
  }
  resize_.fill_borders_cuda(out, stream, y0, y1);
  const RowRange rows = resize_.picture_rows(y0, y1);
  if (rows.first >= rows.last) return;
  const ImageRef picture = resize_.picture(out);
  if (!resize_.scales())
    CO_CUDA_ONLY(copy_cuda(image_rows(resize_.window(in), rows.first, rows.last),
                           image_rows(picture, rows.first, rows.last), stream));
  else
    resize_.scale_cuda(resize_.window(in), picture, workspace.data, stream, rows.first, rows.last);
}

void ScaleOperation::run_reference_rows(const ImageRef& in, const ImageRef& out,
                                        const Workspace& workspace, int y0, int y1) const {
  run_host(in, out, workspace, y0, y1, false);
}

void ScaleOperation::run_cpu_rows(const ImageRef& in, const ImageRef& out,
                                  const Workspace& workspace, int y0, int y1) const {
  run_host(in, out, workspace, y0, y1, true);
}

void ScaleOperation::run_host(const ImageRef& in, const ImageRef& out, const Workspace& workspace,
                              int y0, int y1, bool fast) const {
  if (!resize_.active()) {
    if (y1 < 0)
      copy_reference(in, out);
    else
      copy_reference(image_rows(in, y0, y1), image_rows(out, y0, y1));
    return;
  }
  const auto scale = [&](const ImageRef& from, const ImageRef& to, int first, int last) {
    if (fast)
      resize_.scale_cpu(from, to, workspace.data, first, last);
    else
      resize_.scale_reference(from, to, workspace.data, first, last);
  };
  if (y1 < 0) {
    resize_.fill_borders_reference(out);
    const ImageRef target = resize_.target(out, workspace.data);
    if (!resize_.scales())
      copy_reference(resize_.window(in), target);
    else
      scale(resize_.window(in), target, 0, -1);
    resize_.turn_reference(out, workspace.data);
    return;
  }
  resize_.fill_borders_reference(out, y0, y1);
  const RowRange rows = resize_.picture_rows(y0, y1);
  if (rows.first >= rows.last) return;
  const ImageRef picture = resize_.picture(out);
  if (!resize_.scales())
    copy_reference(image_rows(resize_.window(in), rows.first, rows.last),
                   image_rows(picture, rows.first, rows.last));
  else
    scale(resize_.window(in), picture, rows.first, rows.last);
}

const ParamSpec& scale_method_param() {
  static const ParamSpec spec{
      "method",
      "Method",
      "kernel=scale and kernel=convert: the resampling filter when the size changes; bilinear, "
      "bicubic and lanczos widen when shrinking, so the picture does not alias",
      ParamSpec::Type::kEnum,
      0,
      3,
      static_cast<double>(ScaleMethod::kBilinear),
      {{0, "nearest", "Nearest neighbour"},
       {1, "bilinear", "Bilinear (2 taps, more when shrinking)"},
       {2, "bicubic", "Bicubic, Mitchell-Netravali (4 taps, more when shrinking)"},
       {3, "lanczos", "Lanczos, three lobes (6 taps, more when shrinking)"}},
      "GstCudaOverlapScaleMethod",
      false};
  return spec;
}

const OperationEntry& scale_entry() {
  static const OperationEntry entry{
      "scale",
      "Scale: resize to the width and height downstream asks for, keeping the format, as "
      "videoscale does",
      true, resize_params(), [](const KernelParams& p) -> std::shared_ptr<const Operation> {
        return std::make_shared<ScaleOperation>(p.values, p.sizes, p.convert.out);
      }};
  return entry;
}

}  // namespace cudaoverlap
