// See negotiation.h.
#include "negotiation.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "fixate_size.h"
#include "kernels/chain/chain.h"
#include "kernels/error.h"

namespace cudaoverlap {

namespace {

// videoflip's caps for the directions that swap axes: width and height
// exchanged, and a fixed pixel-aspect-ratio inverted.
GstCaps* swap_axes(GstCaps* caps) {
  if (gst_caps_is_any(caps) || gst_caps_is_empty(caps)) return gst_caps_ref(caps);
  GstCaps* swapped = gst_caps_copy(caps);
  for (guint i = 0; i < gst_caps_get_size(swapped); ++i) {
    GstStructure* s = gst_caps_get_structure(swapped, i);
    const GValue* width = gst_structure_get_value(s, "width");
    const GValue* height = gst_structure_get_value(s, "height");
    if (width != nullptr && height != nullptr) {
      GValue w = G_VALUE_INIT;
      GValue h = G_VALUE_INIT;
      g_value_init(&w, G_VALUE_TYPE(width));
      g_value_copy(width, &w);
      g_value_init(&h, G_VALUE_TYPE(height));
      g_value_copy(height, &h);
      gst_structure_take_value(s, "width", &h);
      gst_structure_take_value(s, "height", &w);
    } else if (width != nullptr || height != nullptr) {
      // Only one of them constrained: the other side's is unconstrained.
      gst_structure_remove_fields(s, "width", "height", nullptr);
    }
    gint par_n, par_d;
    if (gst_structure_get_fraction(s, "pixel-aspect-ratio", &par_n, &par_d))
      gst_structure_set(s, "pixel-aspect-ratio", GST_TYPE_FRACTION, par_d, par_n, nullptr);
  }
  return swapped;
}

bool is_yuv(const GstVideoInfo& info) { return GST_VIDEO_INFO_IS_YUV(&info); }

// Both YUV, both RGB or both grey: a colorimetry means the same on both.
bool same_family(const GstVideoInfo& a, const GstVideoInfo& b) {
  return (GST_VIDEO_INFO_IS_YUV(&a) && GST_VIDEO_INFO_IS_YUV(&b)) ||
         (GST_VIDEO_INFO_IS_RGB(&a) && GST_VIDEO_INFO_IS_RGB(&b)) ||
         (GST_VIDEO_INFO_IS_GRAY(&a) && GST_VIDEO_INFO_IS_GRAY(&b));
}

// The formats a caps structure allows: its format field's strings (one or a
// list) that the engine knows, or every format of its kind (video/x-bayer's
// or video/x-raw's) when it has none.
std::vector<PixelFormat> formats_of(const GstStructure* s, bool* has_field) {
  const bool bayer = is_bayer_structure(s);
  const GValue* value = gst_structure_get_value(s, "format");
  *has_field = value != nullptr;
  if (value == nullptr) return formats_of_kind(bayer);
  std::vector<PixelFormat> formats;
  auto add = [&formats, bayer](const GValue* v) {
    PixelFormat f;
    if (G_VALUE_HOLDS_STRING(v) && format_named(g_value_get_string(v), bayer, &f))
      formats.push_back(f);
  };
  if (GST_VALUE_HOLDS_LIST(value)) {
    for (guint i = 0; i < gst_value_list_get_size(value); ++i)
      add(gst_value_list_get_value(value, i));
  } else {
    add(value);
  }
  return formats;
}

void add_unique(std::vector<PixelFormat>* formats, PixelFormat f) {
  if (std::find(formats->begin(), formats->end(), f) == formats->end()) formats->push_back(f);
}

// What `op` makes from any of `formats` (direction SINK), or what makes any
// of them (SRC), in order of preference.
std::vector<PixelFormat> formats_through(const Operation& op, GstPadDirection direction,
                                         const std::vector<PixelFormat>& formats) {
  std::vector<PixelFormat> other;
  if (direction == GST_PAD_SINK) {
    for (PixelFormat f : formats)
      for (PixelFormat g : op.output_formats(f)) add_unique(&other, g);
  } else {
    for (PixelFormat f : formats)
      for (PixelFormat g : all_pixel_formats()) {
        const std::vector<PixelFormat> made = op.output_formats(g);
        if (std::find(made.begin(), made.end(), f) != made.end()) add_unique(&other, g);
      }
  }
  return other;
}

bool same_set(std::vector<PixelFormat> a, std::vector<PixelFormat> b) {
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  return a == b;
}

// Width and height free, and the pixel-aspect-ratio where there is one.
void free_size(GstStructure* s) {
  gst_structure_set(s, "width", GST_TYPE_INT_RANGE, 1, G_MAXINT, "height", GST_TYPE_INT_RANGE, 1,
                    G_MAXINT, nullptr);
  if (gst_structure_has_field(s, "pixel-aspect-ratio"))
    gst_structure_set(s, "pixel-aspect-ratio", GST_TYPE_FRACTION_RANGE, 1, G_MAXINT, G_MAXINT, 1,
                      nullptr);
}

}  // namespace

GstCaps* transform_caps(const Operation& op, GstPadDirection direction, GstCaps* caps) {
  if (gst_caps_is_any(caps) || gst_caps_is_empty(caps)) return gst_caps_ref(caps);
  GstCaps* result = gst_caps_new_empty();
  for (guint i = 0; i < gst_caps_get_size(caps); ++i) {
    const GstStructure* structure = gst_caps_get_structure(caps, i);
    const bool bayer_here = is_bayer_structure(structure);
    bool has_format = false;
    const std::vector<PixelFormat> here = formats_of(structure, &has_format);
    const std::vector<PixelFormat> there = formats_through(op, direction, here);
    // One structure for the raw formats there, then one for the mosaics.
    for (const bool bayer : {false, true}) {
      std::vector<PixelFormat> kind;
      for (PixelFormat f : there)
        if (is_bayer(f) == bayer) kind.push_back(f);
      if (kind.empty()) continue;
      GstStructure* s = gst_structure_copy(structure);
      if (bayer != bayer_here) gst_structure_set_name(s, bayer ? kBayerCaps : "video/x-raw");
      // A field the operation does not change stays as it came, so caps it
      // leaves alone compare equal.
      if (!(bayer == bayer_here && same_set(here, kind) &&
            (has_format || kind.size() == formats_of_kind(bayer).size())))
        set_formats(s, kind);
      // Colorimetry and chroma siting go with the format (a mosaic has
      // neither).
      if (op.format_from_downstream() || bayer)
        gst_structure_remove_fields(s, "colorimetry", "chroma-site", nullptr);
      GstCapsFeatures* features = gst_caps_get_features(caps, i);
      GstCaps* one = gst_caps_new_full(s, nullptr);
      if (features) gst_caps_set_features(one, 0, gst_caps_features_copy(features));
      // Each swapping direction is its own inverse up to the pixels, so the
      // same transform serves both pad directions.
      if (op.swaps_axes()) {
        GstCaps* swapped = swap_axes(one);
        gst_caps_unref(one);
        one = swapped;
      }
      // A size downstream chooses: any, and any PAR, as videoscale offers.
      if (op.size_from_downstream()) free_size(gst_caps_get_structure(one, 0));
      result = gst_caps_merge(result, one);
    }
  }
  return result;
}

bool output_info_for(const Operation& op, const GstVideoInfo& in, PixelFormat in_format,
                     GstVideoInfo* out) {
  // Only convert takes a mosaic, and convert's format is downstream's
  // choice (negotiate_output_info): no operation here does.
  if (is_bayer(in_format)) return false;
  if (!op.swaps_axes()) {
    *out = in;  // the input's format and size
    return true;
  }
  // Through caps, so the result is exactly what negotiation announces.
  GstCaps* in_caps = gst_video_info_to_caps(&in);
  GstCaps* out_caps = transform_caps(op, GST_PAD_SINK, in_caps);
  const bool ok = !gst_caps_is_empty(out_caps) && gst_video_info_from_caps(out, out_caps);
  gst_caps_unref(out_caps);
  gst_caps_unref(in_caps);
  return ok;
}

bool negotiate_output_info(const Operation& op, const GstVideoInfo& in, PixelFormat in_format,
                           bool in_colorimetry, GstPad* srcpad, bool cuda, GstVideoInfo* out,
                           GstCaps** out_caps) {
  if (out_caps) *out_caps = nullptr;
  if (!op.format_from_downstream() && !op.size_from_downstream())
    return output_info_for(op, in, in_format, out);
  // What is left of the input after its crop is what is negotiated.
  const Crop crop = op.crop();
  GstVideoInfo view = in;
  GST_VIDEO_INFO_WIDTH(&view) -= crop.left + crop.right;
  GST_VIDEO_INFO_HEIGHT(&view) -= crop.top + crop.bottom;
  if (GST_VIDEO_INFO_WIDTH(&view) < 1 || GST_VIDEO_INFO_HEIGHT(&view) < 1) return false;
  // A quarter turn: what is negotiated is the window turned, its width and
  // height and its pixels' aspect ratio swapped.
  if (op.swaps_axes()) {
    std::swap(GST_VIDEO_INFO_WIDTH(&view), GST_VIDEO_INFO_HEIGHT(&view));
    std::swap(GST_VIDEO_INFO_PAR_N(&view), GST_VIDEO_INFO_PAR_D(&view));
  }
  if (crop.any() || op.swaps_axes()) {
    // Strides, offsets and size for the window's width and height.
    GstVideoAlignment align;
    gst_video_alignment_reset(&align);
    if (!gst_video_info_align(&view, &align)) return false;
  }
  GstCaps* in_system = caps_from_info(view, in_format);
  GstCaps* in_caps = in_memories(in_system, cuda);
  gst_caps_unref(in_system);
  GstCaps* transformed = transform_caps(op, GST_PAD_SINK, in_caps);
  GstCaps* any = in_memories(transformed, cuda);
  gst_caps_unref(transformed);
  GstCaps* templ = gst_pad_get_pad_template_caps(srcpad);
  GstCaps* allowed = gst_caps_intersect_full(any, templ, GST_CAPS_INTERSECT_FIRST);
  GstCaps* peer = gst_pad_peer_query_caps(srcpad, allowed);
  GstCaps* candidates = gst_caps_intersect_full(peer, allowed, GST_CAPS_INTERSECT_FIRST);
  bool ok = false;
  if (gst_caps_can_intersect(candidates, in_caps)) {
    // Downstream takes the input as it is: no conversion (videoconvert's
    // passthrough preference).
    *out = view;
    ok = true;
  } else if (!gst_caps_is_empty(candidates)) {
    // Downstream's first preference, fixated towards the input's values.
    GstCaps* chosen = gst_caps_truncate(gst_caps_copy(candidates));
    chosen = gst_caps_make_writable(chosen);
    GstStructure* s = gst_caps_get_structure(chosen, 0);
    const bool had_colorimetry = gst_structure_has_field(s, "colorimetry");
    if (op.size_from_downstream()) {
      fixate_size(view, s);
    } else {
      gst_structure_fixate_field_nearest_int(s, "width", GST_VIDEO_INFO_WIDTH(&in));
      gst_structure_fixate_field_nearest_int(s, "height", GST_VIDEO_INFO_HEIGHT(&in));
      gst_structure_fixate_field_nearest_fraction(
          s, "pixel-aspect-ratio", GST_VIDEO_INFO_PAR_N(&in), GST_VIDEO_INFO_PAR_D(&in));
    }
    gst_structure_fixate_field_nearest_fraction(s, "framerate", GST_VIDEO_INFO_FPS_N(&in),
                                                GST_VIDEO_INFO_FPS_D(&in));
    chosen = gst_caps_fixate(chosen);
    ok = gst_video_info_from_caps(out, chosen);
    // The siting downstream names, read here: GStreamer 1.22 reads
    // chroma-site only beside a colorimetry; none named, none assumed.
    const gchar* site = gst_structure_get_string(s, "chroma-site");
    out->chroma_site =
        site != nullptr ? gst_video_chroma_site_from_string(site) : GST_VIDEO_CHROMA_SITE_UNKNOWN;
    // Unless downstream asks for one, the colorimetry follows the input's
    // caps' as videoconvert's does: kept whole within YUV, RGB or grey; across them
    // the input's transfer and primaries with the output's own range and
    // matrix (the pixels are not re-graded, so the label must not change).
    // A mosaic's output keeps the defaults.
    if (ok && !had_colorimetry && in_colorimetry && !is_bayer(in_format)) {
      if (same_family(in, *out)) {
        out->colorimetry = in.colorimetry;
      } else {
        out->colorimetry.transfer = in.colorimetry.transfer;
        out->colorimetry.primaries = in.colorimetry.primaries;
      }
    }
    // Downstream's own fields go back as they came, only a colorimetry
    // taken from the input added: written from the info, RGB's "bt709"
    // would come out as "2:1:5:1" (the same range, GStreamer's RGB
    // matrix), and chroma-site=mpeg2 as jpeg (GStreamer 1.22 reads no
    // other name), which a capsfilter asking for them refuses.
    if (ok && out_caps) {
      if (!had_colorimetry) {
        gchar* text = gst_video_colorimetry_to_string(&out->colorimetry);
        if (text) gst_structure_set(s, "colorimetry", G_TYPE_STRING, text, nullptr);
        g_free(text);
      }
      *out_caps = gst_caps_ref(chosen);
    }
    gst_caps_unref(chosen);
  }
  gst_caps_unref(candidates);
  gst_caps_unref(peer);
  gst_caps_unref(allowed);
  gst_caps_unref(templ);
  gst_caps_unref(any);
  gst_caps_unref(in_caps);
  return ok;
}

namespace {

// Empty when `op` treats each row on its own, or mixes rows only within one
// field, so interlaced frames (two fields in alternate rows) come out right;
// else a sentence saying why they are refused.
std::string interlace_check(const Operation& op, const GstVideoInfo& in, PixelFormat in_format,
                            PixelFormat out_format) {
  if (!GST_VIDEO_INFO_IS_INTERLACED(&in) || !op.mixes_rows(in_format, out_format)) return {};
  return std::string("kernel '") + op.name() +
         "' would mix the two fields of interlaced video (interlace-mode=" +
         gst_video_interlace_mode_to_string(GST_VIDEO_INFO_INTERLACE_MODE(&in)) +
         "); put deinterlace before it, or use copy, invert, balance, flip "
         "video-direction=horiz or convert between formats without vertical chroma "
         "subsampling, which keep each row to itself";
}

// The colorimetry of one side, from the caps, for the operations that use
// a matrix; empty, or which matrices they take when this one is not one.
std::string colorimetry_of(const GstVideoInfo& info, Colorimetry* c) {
  if (GST_VIDEO_INFO_IS_RGB(&info)) {
    // RGB with range 16-235 in its caps (colorimetry=bt709 says so).
    c->rgb_limited = info.colorimetry.range == GST_VIDEO_COLOR_RANGE_16_235;
    return {};
  }
  if (!is_yuv(info)) return {};
  c->full_range = info.colorimetry.range == GST_VIDEO_COLOR_RANGE_0_255;
  // Caps that name no matrix mean BT.601, as videoconvert takes them.
  const GstVideoColorMatrix matrix = info.colorimetry.matrix == GST_VIDEO_COLOR_MATRIX_UNKNOWN
                                         ? GST_VIDEO_COLOR_MATRIX_BT601
                                         : info.colorimetry.matrix;
  YuvMatrix ours = YuvMatrix::kBT601;
  switch (matrix) {
    case GST_VIDEO_COLOR_MATRIX_BT601:
      ours = YuvMatrix::kBT601;
      break;
    case GST_VIDEO_COLOR_MATRIX_BT709:
      ours = YuvMatrix::kBT709;
      break;
    case GST_VIDEO_COLOR_MATRIX_FCC:
      ours = YuvMatrix::kFCC;
      break;
    case GST_VIDEO_COLOR_MATRIX_SMPTE240M:
      ours = YuvMatrix::kSMPTE240M;
      break;
    case GST_VIDEO_COLOR_MATRIX_BT2020:
      ours = YuvMatrix::kBT2020;
      break;
    default: {
      gchar* text = gst_video_colorimetry_to_string(&info.colorimetry);
      const std::string message =
          std::string(
              "the BT.601, BT.709, BT.2020, SMPTE 240M and FCC matrices, not the one of "
              "colorimetry ") +
          (text ? text : "?");
      g_free(text);
      return message;
    }
  }
  gdouble kr = 0, kb = 0;
  gst_video_color_matrix_get_Kr_Kb(matrix, &kr, &kb);
  c->set_matrix(ours, kr, kb);
  return {};
}

// add-borders: where the output's display aspect ratio is not the input
// window's, the picture's place in the output, keeping the window's, as
// videoconvertscale works it out (centred; its left and top edges brought
// down to a whole group of pixels of `out_format`, chroma pairs included).
void place_picture(const ParamValues& values, const GstVideoInfo& in, const GstVideoInfo& out,
                   PixelFormat out_format, FrameSizes* sizes) {
  auto value = [&values](const char* name) { return values.has(name) ? values.integer(name) : 0; };
  if (value("add-borders") == 0) return;
  int in_w = GST_VIDEO_INFO_WIDTH(&in) - value("crop-left") - value("crop-right");
  int in_h = GST_VIDEO_INFO_HEIGHT(&in) - value("crop-top") - value("crop-bottom");
  int par_n = GST_VIDEO_INFO_PAR_N(&in), par_d = GST_VIDEO_INFO_PAR_D(&in);
  // A quarter turn turns the window and its pixels.
  if (flip_swaps_size(static_cast<FlipDirection>(value("video-direction")))) {
    std::swap(in_w, in_h);
    std::swap(par_n, par_d);
  }
  const int out_w = GST_VIDEO_INFO_WIDTH(&out), out_h = GST_VIDEO_INFO_HEIGHT(&out);
  gint from_n, from_d, to_n, to_d, n, d;
  if (in_w < 1 || in_h < 1 ||
      !gst_util_fraction_multiply(in_w, in_h, par_n, par_d, &from_n, &from_d) ||
      !gst_util_fraction_multiply(out_w, out_h, GST_VIDEO_INFO_PAR_N(&out),
                                  GST_VIDEO_INFO_PAR_D(&out), &to_n, &to_d) ||
      (from_n == to_n && from_d == to_d) ||
      !gst_util_fraction_multiply(from_n, from_d, GST_VIDEO_INFO_PAR_D(&out),
                                  GST_VIDEO_INFO_PAR_N(&out), &n, &d))
    return;
  int borders_w = 0, borders_h = 0;
  const int to_h = static_cast<int>(gst_util_uint64_scale_int(out_w, d, n));
  if (to_h <= out_h)
    borders_h = out_h - to_h;
  else
    borders_w = out_w - static_cast<int>(gst_util_uint64_scale_int(out_h, n, d));
  if (borders_w <= 0 && borders_h <= 0) return;
  const FormatInfo& info = format_info(out_format);
  int group_x = 1, group_y = 1;
  for (int p = 0; p < info.n_planes; ++p) {
    group_x = std::max(group_x, 1 << info.x_shift[p]);
    group_y = std::max(group_y, 1 << info.y_shift[p]);
  }
  // Interlaced rows keep their field: the picture starts on an even row.
  if (GST_VIDEO_INFO_IS_INTERLACED(&in)) group_y = std::max(group_y, 2);
  // A picture of at least a pixel (of a group where it can be), however
  // far apart the aspect ratios (1 pixel of 0.3 rounds to none).
  sizes->dest_width = std::min(out_w, std::max(out_w - borders_w, group_x));
  sizes->dest_height = std::min(out_h, std::max(out_h - borders_h, group_y));
  sizes->dest_x = (out_w - sizes->dest_width) / 2 / group_x * group_x;
  sizes->dest_y = (out_h - sizes->dest_height) / 2 / group_y * group_y;
}

}  // namespace

std::shared_ptr<const Operation> operation_for(const std::string& kernel, KernelParams params,
                                               const GstVideoInfo& in, PixelFormat in_format,
                                               const GstVideoInfo& out, std::string* problem) {
  ImageRef a, b;
  a.format = in_format;
  if (!pixel_format_from_gst(GST_VIDEO_INFO_FORMAT(&out), &b.format)) {
    *problem = "cudaoverlap does not take this format";
    return nullptr;
  }
  a.width = GST_VIDEO_INFO_WIDTH(&in);
  a.height = GST_VIDEO_INFO_HEIGHT(&in);
  b.width = GST_VIDEO_INFO_WIDTH(&out);
  b.height = GST_VIDEO_INFO_HEIGHT(&out);
  params.sizes = FrameSizes{a.width, a.height, b.width, b.height};
  // A chain's borders are its last step's (chain.h: the only one sized
  // by downstream), placed in what the steps before it made: the input
  // turned where they turn it.
  GstVideoInfo placed_from = in;
  ParamValues placing = params.values;
  if (params.chain) {
    try {
      const ChainStep& last = params.chain->steps.back();
      placing = last.values.resolve(operation_entry(last.name).params);  // its defaults too
      if (ChainOperation(params.chain, params).turns_before_last()) {
        std::swap(GST_VIDEO_INFO_WIDTH(&placed_from), GST_VIDEO_INFO_HEIGHT(&placed_from));
        std::swap(GST_VIDEO_INFO_PAR_N(&placed_from), GST_VIDEO_INFO_PAR_D(&placed_from));
      }
    } catch (const Error& e) {
      *problem = e.what();
      return nullptr;
    }
  }
  place_picture(placing, placed_from, out, b.format, &params.sizes);
  params.convert.cosited_x = (out.chroma_site & GST_VIDEO_CHROMA_SITE_H_COSITED) != 0;
  params.convert.cosited_y = (out.chroma_site & GST_VIDEO_CHROMA_SITE_V_COSITED) != 0;
  // A matrix the kernels do not know (BT.2020's, SMPTE 240M's) matters
  // only to an operation that uses one.
  const std::string in_problem =
      is_bayer(in_format) ? std::string() : colorimetry_of(in, &params.convert.in);
  const std::string out_problem = colorimetry_of(out, &params.convert.out);
  const std::string matrix_problem = in_problem.empty() ? out_problem : in_problem;
  std::shared_ptr<const Operation> op;
  try {
    op = make_operation(kernel, params);
  } catch (const Error& e) {
    *problem = e.what();
    return nullptr;
  }
  // Two YUV sides of different matrices (convert's alone) would need one.
  const bool matrices_differ =
      is_yuv(in) && is_yuv(out) && in.colorimetry.matrix != out.colorimetry.matrix;
  if (!matrix_problem.empty() && (matrices_differ || op->uses_matrix(a.format, b.format))) {
    *problem = std::string("kernel '") + op->name() + "' takes " + matrix_problem;
    return nullptr;
  }
  *problem = interlace_check(*op, in, a.format, b.format);
  // The operation's own check with every parameter known: asked here, at
  // caps time, so a refusal is a negotiation error naming what is allowed.
  if (problem->empty()) *problem = op->check(a, b);
  return problem->empty() ? op : nullptr;
}

std::string negotiate_output(const std::string& kernel, const KernelParams& params,
                             const GstVideoInfo& in, PixelFormat in_format, bool in_colorimetry,
                             GstPad* srcpad, bool cuda, std::shared_ptr<const Operation>* op,
                             GstVideoInfo* out, GstCaps** out_caps) {
  if (out_caps) *out_caps = nullptr;
  std::shared_ptr<const Operation> rules;
  try {
    rules = make_operation(kernel, params);
  } catch (const Error& e) {
    return e.what();
  }
  const Crop crop = rules->crop();
  if (crop.left + crop.right >= GST_VIDEO_INFO_WIDTH(&in) ||
      crop.top + crop.bottom >= GST_VIDEO_INFO_HEIGHT(&in))
    return "crop-left " + std::to_string(crop.left) + ", crop-right " + std::to_string(crop.right) +
           ", crop-top " + std::to_string(crop.top) + " and crop-bottom " +
           std::to_string(crop.bottom) + " leave nothing of " +
           std::to_string(GST_VIDEO_INFO_WIDTH(&in)) + "x" +
           std::to_string(GST_VIDEO_INFO_HEIGHT(&in)) + " " + format_name(in, in_format);
  if (!negotiate_output_info(*rules, in, in_format, in_colorimetry, srcpad, cuda, out, out_caps)) {
    return std::string("kernel '") + kernel + "' cannot make anything downstream accepts from " +
           std::to_string(GST_VIDEO_INFO_WIDTH(&in)) + "x" +
           std::to_string(GST_VIDEO_INFO_HEIGHT(&in)) + " " + format_name(in, in_format);
  }
  std::string problem;
  *op = operation_for(kernel, params, in, in_format, *out, &problem);
  if (!problem.empty() && out_caps && *out_caps) gst_caps_replace(out_caps, nullptr);
  return problem;
}

GstCaps* in_memories(GstCaps* caps, bool cuda) {
  if (gst_caps_is_any(caps) || gst_caps_is_empty(caps)) return gst_caps_ref(caps);
  GstCaps* system = gst_caps_new_empty();
  GstCaps* device = gst_caps_new_empty();
  for (guint i = 0; i < gst_caps_get_size(caps); ++i) {
    GstStructure* s = gst_structure_copy(gst_caps_get_structure(caps, i));
    if (cuda && gst_structure_has_name(s, "video/x-raw")) {
      GstCaps* one = gst_caps_new_full(gst_structure_copy(s), nullptr);
      gst_caps_set_features(one, 0,
                            gst_caps_features_new(kCudaMemoryFeature, nullptr));
      device = gst_caps_merge(device, one);
    }
    system = gst_caps_merge(system, gst_caps_new_full(s, nullptr));
  }
  return gst_caps_merge(device, system);
}

bool caps_in_cuda_memory(GstCaps* caps) {
  if (!caps || gst_caps_get_size(caps) == 0) return false;
  const GstCapsFeatures* features = gst_caps_get_features(caps, 0);
  return features && gst_caps_features_contains(features, kCudaMemoryFeature);
}

GstCaps* query_caps_through(const Operation& op, GstPad* pad, GstPad* other, GstCaps* filter,
                            bool cuda) {
  // `op` through, then the memory the other side may be in.
  const auto through = [&](GstPadDirection from, GstCaps* caps) {
    GstCaps* transformed = transform_caps(op, from, caps);
    GstCaps* placed = in_memories(transformed, cuda);
    gst_caps_unref(transformed);
    return placed;
  };
  GstCaps* templ = gst_pad_get_pad_template_caps(pad);
  GstCaps* other_templ = gst_pad_get_pad_template_caps(other);
  GstCaps* peer_filter = gst_caps_ref(other_templ);
  if (filter) {
    GstCaps* transformed = through(GST_PAD_DIRECTION(pad), filter);
    gst_caps_unref(peer_filter);
    peer_filter = gst_caps_intersect_full(transformed, other_templ, GST_CAPS_INTERSECT_FIRST);
    gst_caps_unref(transformed);
  }
  GstCaps* peer = gst_pad_peer_query_caps(other, peer_filter);
  GstCaps* back = through(GST_PAD_DIRECTION(other), peer);
  GstCaps* result = gst_caps_intersect_full(back, templ, GST_CAPS_INTERSECT_FIRST);
  if (filter) {
    GstCaps* filtered = gst_caps_intersect_full(filter, result, GST_CAPS_INTERSECT_FIRST);
    gst_caps_unref(result);
    result = filtered;
  }
  gst_caps_unref(back);
  gst_caps_unref(peer);
  gst_caps_unref(peer_filter);
  gst_caps_unref(other_templ);
  gst_caps_unref(templ);
  return result;
}

bool caps_acceptable(GstCaps* caps, GstCaps* allowed) {
  // Intersecting, not a subset: fixed caps may leave out fields that have a
  // default (framerate 0/1, pixel-aspect-ratio 1/1), as videoconvert,
  // videoflip and queue accept.
  if (!gst_caps_can_intersect(caps, allowed)) return false;
  if (!gst_caps_is_fixed(caps)) return true;
  GstVideoInfo info;
  PixelFormat format;
  return video_info_from_caps(caps, &info, &format);
}

}  // namespace cudaoverlap
