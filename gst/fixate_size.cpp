// See fixate_size.h. The cases, in the order videoconvertscale tries them:
// width and height both fixed (only the PAR can keep the aspect ratio), one
// of them fixed, the PAR fixed, or all three free.
#include "fixate_size.h"

#include <cstdint>
#include <cstdlib>

namespace cudaoverlap {
namespace {

struct Fraction {
  gint n = 1;
  gint d = 1;
  bool operator==(const Fraction& o) const { return n == o.n && d == o.d; }
};

Fraction times(Fraction a, Fraction b) {
  Fraction r;
  if (!gst_util_fraction_multiply(a.n, a.d, b.n, b.d, &r.n, &r.d)) {
    double x = 0;
    gst_util_fraction_to_double(a.n, a.d, &x);
    double y = 0;
    gst_util_fraction_to_double(b.n, b.d, &y);
    gst_util_double_to_fraction(x * y, &r.n, &r.d);
  }
  return r;
}

// v * f, rounded, at least 1 and at most G_MAXINT.
gint scaled(gint v, Fraction f) {
  const guint64 r = gst_util_uint64_scale_int_round(static_cast<guint64>(v), f.n, f.d);
  return r < 1 ? 1 : (r > G_MAXINT ? G_MAXINT : static_cast<gint>(r));
}

bool fixed_int(const GstStructure* s, const char* field, gint* v) {
  const GValue* value = gst_structure_get_value(s, field);
  if (value == nullptr || !G_VALUE_HOLDS_INT(value)) return false;
  *v = g_value_get_int(value);
  return true;
}

// The value of `field` nearest to `target` that `s` allows.
gint nearest_int(const GstStructure* s, const char* field, gint target) {
  GstStructure* t = gst_structure_copy(s);
  gst_structure_fixate_field_nearest_int(t, field, target);
  gint v = target;
  gst_structure_get_int(t, field, &v);
  gst_structure_free(t);
  return v;
}

// The pixel-aspect-ratio nearest to `target` that `s` allows (any, where
// it has no such field).
Fraction nearest_par(const GstStructure* s, Fraction target) {
  if (!gst_structure_has_field(s, "pixel-aspect-ratio")) return target;
  GstStructure* t = gst_structure_copy(s);
  gst_structure_fixate_field_nearest_fraction(t, "pixel-aspect-ratio", target.n, target.d);
  Fraction v = target;
  gst_structure_get_fraction(t, "pixel-aspect-ratio", &v.n, &v.d);
  gst_structure_free(t);
  return v;
}

void set_size(GstStructure* s, gint w, gint h) {
  gst_structure_set(s, "width", G_TYPE_INT, w, "height", G_TYPE_INT, h, nullptr);
}

// A PAR other than 1/1 is written even where downstream left the field
// out, since 1/1 is what its absence means.
void set_par(GstStructure* s, Fraction par) {
  if (gst_structure_has_field(s, "pixel-aspect-ratio") || par.n != par.d)
    gst_structure_set(s, "pixel-aspect-ratio", GST_TYPE_FRACTION, par.n, par.d, nullptr);
}

}  // namespace

void fixate_size(const GstVideoInfo& in, GstStructure* s) {
  const gint in_w = GST_VIDEO_INFO_WIDTH(&in), in_h = GST_VIDEO_INFO_HEIGHT(&in);
  const Fraction in_par{GST_VIDEO_INFO_PAR_N(&in) > 0 ? GST_VIDEO_INFO_PAR_N(&in) : 1,
                        GST_VIDEO_INFO_PAR_D(&in) > 0 ? GST_VIDEO_INFO_PAR_D(&in) : 1};
  // A missing PAR downstream is free (the element sets what it needs).
  const GValue* par_value = gst_structure_get_value(s, "pixel-aspect-ratio");
  const bool par_fixed =
      par_value != nullptr && gst_value_is_fixed(par_value) && GST_VALUE_HOLDS_FRACTION(par_value);
  Fraction par;
  if (par_fixed) {
    par.n = gst_value_get_fraction_numerator(par_value);
    par.d = gst_value_get_fraction_denominator(par_value);
  }
  // The display aspect ratio to keep: width x PAR / height.
  const Fraction dar = times(Fraction{in_w, in_h}, in_par);
  gint w = 0, h = 0;
  const bool w_fixed = fixed_int(s, "width", &w);
  const bool h_fixed = fixed_int(s, "height", &h);

  if (w_fixed && h_fixed) {
    if (!par_fixed) set_par(s, nearest_par(s, times(dar, Fraction{h, w})));
    return;
  }
  if (w_fixed || h_fixed) {
    // The free side of `fixed` ("width" or "height"), at the DAR with `p`:
    // height = width / (DAR / PAR), width = height x DAR / PAR.
    const char* free_field = w_fixed ? "height" : "width";
    auto other = [&](Fraction p) {
      const Fraction ratio = times(dar, Fraction{p.d, p.n});  // the size's own ratio
      return w_fixed ? scaled(w, Fraction{ratio.d, ratio.n}) : scaled(h, ratio);
    };
    if (par_fixed) {
      gst_structure_fixate_field_nearest_int(s, free_field, other(par));
      return;
    }
    // Keep the input's size on the free side and the DAR through the PAR,
    // if downstream takes that PAR; else the DAR through the free side.
    const gint kept = nearest_int(s, free_field, w_fixed ? in_h : in_w);
    const Fraction wanted = w_fixed ? times(dar, Fraction{kept, w}) : times(dar, Fraction{h, kept});
    const Fraction got = nearest_par(s, wanted);
    if (got == wanted) {
      gst_structure_set(s, free_field, G_TYPE_INT, kept, nullptr);
    } else {
      gst_structure_fixate_field_nearest_int(s, free_field, other(got));
    }
    set_par(s, got);
    return;
  }
  if (par_fixed) {
    // The input's height, the width at the DAR; else the input's width,
    // the height at the DAR; else whichever is nearer the DAR.
    const Fraction ratio = times(dar, Fraction{par.d, par.n});
    const gint h1 = nearest_int(s, "height", in_h);
    const gint w1 = scaled(h1, ratio);
    const gint w1_got = nearest_int(s, "width", w1);
    if (w1_got == w1) return set_size(s, w1, h1);
    const gint w2 = nearest_int(s, "width", in_w);
    const gint h2 = scaled(w2, Fraction{ratio.d, ratio.n});
    const gint h2_got = nearest_int(s, "height", h2);
    if (h2_got == h2) return set_size(s, w2, h2);
    // Of the two, the one whose aspect ratio is off by less.
    if (static_cast<gint64>(w2) * std::abs(h2_got - h2) <
        static_cast<gint64>(std::abs(w1_got - w1)) * h1)
      return set_size(s, w2, h2_got);
    return set_size(s, w1_got, h1);
  }
  // All free: the input's size as near as allowed, the DAR through the PAR;
  // else through the width, else the height, at the PAR downstream allows.
  const gint h1 = nearest_int(s, "height", in_h);
  const gint w1 = nearest_int(s, "width", in_w);
  const Fraction wanted = times(dar, Fraction{h1, w1});
  const Fraction got = nearest_par(s, wanted);
  if (!(got == wanted)) {
    const Fraction ratio = times(dar, Fraction{got.d, got.n});
    const gint w2 = scaled(h1, ratio);
    const gint h2 = scaled(w1, Fraction{ratio.d, ratio.n});
    if (nearest_int(s, "width", w2) == w2) {
      set_size(s, w2, h1);
    } else if (nearest_int(s, "height", h2) == h2) {
      set_size(s, w1, h2);
    } else {
      set_size(s, w1, h1);
    }
  } else {
    set_size(s, w1, h1);
  }
  set_par(s, got);
}

}  // namespace cudaoverlap
