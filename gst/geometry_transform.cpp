// See geometry_transform.h.
#include "geometry_transform.h"

#include <gst/video/navigation.h>
#include <gst/video/video.h>

#include <algorithm>
#include <cmath>

namespace cudaoverlap {
namespace {

bool has_tag(const GstMetaInfo* info, const char* tag) {
  return gst_meta_api_type_has_tag(info->api, g_quark_from_string(tag));
}

void copy_meta(GstBuffer* from, GstMeta* meta, GstBuffer* to) {
  if (meta->info->transform_func == nullptr) return;
  GstMetaTransformCopy copy = {FALSE, 0, static_cast<gsize>(-1)};
  meta->info->transform_func(to, meta, from, _gst_meta_transform_copy, &copy);
}

// The region's rectangle mapped corner by corner; the rest (type, ids,
// parameters) as it was.
void add_moved_region(const GstVideoRegionOfInterestMeta* roi, GstBuffer* to,
                      const GeometryTransform& g) {
  double x0, y0, x1, y1;
  g.to_output(roi->x, roi->y, &x0, &y0);
  g.to_output(static_cast<double>(roi->x) + roi->w, static_cast<double>(roi->y) + roi->h, &x1, &y1);
  // Scaled corners fall between pixels: the pixels they touch, within the
  // picture; a region the crop left out does not come out.
  auto within = [](double v, int from, int size) {
    return std::min<double>(std::max<double>(v, from), from + size);
  };
  const auto left =
      static_cast<guint>(std::floor(within(std::min(x0, x1), g.picture_x, g.out_width())));
  const auto top =
      static_cast<guint>(std::floor(within(std::min(y0, y1), g.picture_y, g.out_height())));
  const auto right =
      static_cast<guint>(std::ceil(within(std::max(x0, x1), g.picture_x, g.out_width())));
  const auto bottom =
      static_cast<guint>(std::ceil(within(std::max(y0, y1), g.picture_y, g.out_height())));
  if (right <= left || bottom <= top) return;
  GstVideoRegionOfInterestMeta* moved = gst_buffer_add_video_region_of_interest_meta_id(
      to, roi->roi_type, left, top, right - left, bottom - top);
  moved->id = roi->id;
  moved->parent_id = roi->parent_id;
  for (GList* l = roi->params; l != nullptr; l = l->next)
    gst_video_region_of_interest_meta_add_param(
        moved, gst_structure_copy(static_cast<const GstStructure*>(l->data)));
}

struct MetaCopy {
  GstBuffer* from;
  GstBuffer* to;
  const GeometryTransform* geometry;
};

gboolean transform_one(GstBuffer*, GstMeta** meta_ptr, gpointer user_data) {
  const auto* job = static_cast<const MetaCopy*>(user_data);
  GstMeta* meta = *meta_ptr;
  const GstMetaInfo* info = meta->info;
  const GeometryTransform& g = *job->geometry;
  // A crop meta was applied on the way in (input_frame.h): not again.
  if (info->api == GST_VIDEO_META_API_TYPE || info->api == GST_VIDEO_CROP_META_API_TYPE ||
      has_tag(info, GST_META_TAG_MEMORY_STR))
    return TRUE;
  if (info->api == GST_VIDEO_REGION_OF_INTEREST_META_API_TYPE) {
    const auto* roi = reinterpret_cast<const GstVideoRegionOfInterestMeta*>(meta);
    if (g.moves_pixels())
      add_moved_region(roi, job->to, g);
    else
      copy_meta(job->from, meta, job->to);
    return TRUE;
  }
  const gchar* const* tags = gst_meta_api_type_get_tags(info->api);
  bool keep = true;
  for (const gchar* const* tag = tags; tag != nullptr && *tag != nullptr && keep; ++tag) {
    const std::string t = *tag;
    if (t == GST_META_TAG_VIDEO_STR) continue;
    if (t == GST_META_TAG_VIDEO_SIZE_STR || t == GST_META_TAG_VIDEO_ORIENTATION_STR)
      keep = !g.moves_pixels();
    else if (t == GST_META_TAG_VIDEO_COLORSPACE_STR)
      keep = !g.colours_change;
    else  // a tag we know nothing of: it holds while the picture is unchanged
      keep = !g.moves_pixels() && !g.colours_change;
  }
  if (keep) copy_meta(job->from, meta, job->to);
  return TRUE;
}

}  // namespace

void GeometryTransform::to_output(double x, double y, double* ox, double* oy) const {
  flip_to_output(x - crop_left, y - crop_top, ox, oy);
  *ox = *ox * out_width() / flipped_width() + picture_x;
  *oy = *oy * out_height() / flipped_height() + picture_y;
}

void GeometryTransform::flip_to_output(double x, double y, double* ox, double* oy) const {
  const double w = in_width, h = in_height;
  switch (flip) {
    case FlipDirection::kIdentity:
      *ox = x;
      *oy = y;
      break;
    case FlipDirection::k90R:
      *ox = h - y;
      *oy = x;
      break;
    case FlipDirection::k180:
      *ox = w - x;
      *oy = h - y;
      break;
    case FlipDirection::k90L:
      *ox = y;
      *oy = w - x;
      break;
    case FlipDirection::kHoriz:
      *ox = w - x;
      *oy = y;
      break;
    case FlipDirection::kVert:
      *ox = x;
      *oy = h - y;
      break;
    case FlipDirection::kUlLr:
      *ox = y;
      *oy = x;
      break;
    case FlipDirection::kUrLl:
      *ox = h - y;
      *oy = w - x;
      break;
  }
}

void GeometryTransform::to_input(double x, double y, double* ix, double* iy) const {
  // Back through the flip is forward through its inverse, on the output
  // frame: the quarter turns undo each other, every other direction undoes
  // itself.
  // The scaling undone first.
  GeometryTransform back = *this;
  back.flip = flip == FlipDirection::k90R   ? FlipDirection::k90L
              : flip == FlipDirection::k90L ? FlipDirection::k90R
                                            : flip;
  back.in_width = flipped_width();
  back.in_height = flipped_height();
  back.flip_to_output((x - picture_x) * flipped_width() / out_width(),
                      (y - picture_y) * flipped_height() / out_height(), ix, iy);
  *ix += crop_left;
  *iy += crop_top;
}

void transform_metas(GstBuffer* from, GstBuffer* to, const GeometryTransform& geometry) {
  MetaCopy job{from, to, &geometry};
  gst_buffer_foreach_meta(from, transform_one, &job);
}

GstEvent* navigation_to_input(GstEvent* event, const GeometryTransform& geometry) {
  double x, y;
  if (!geometry.moves_pixels() || !gst_navigation_event_get_coordinates(event, &x, &y))
    return event;
  double in_x, in_y;
  geometry.to_input(x, y, &in_x, &in_y);
  event = GST_EVENT(gst_mini_object_make_writable(GST_MINI_OBJECT_CAST(event)));
  gst_navigation_event_set_coordinates(event, in_x, in_y);
  return event;
}

}  // namespace cudaoverlap
