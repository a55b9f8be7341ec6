// See video_mapping.h.
#include "video_mapping.h"

#include <algorithm>

#include "kernels/error.h"
#include "kernels/operation_registry.h"

namespace cudaoverlap {

// The format table's names are GStreamer's.
bool pixel_format_from_gst(GstVideoFormat format, PixelFormat* out) {
  if (format == GST_VIDEO_FORMAT_UNKNOWN || format == GST_VIDEO_FORMAT_ENCODED) return false;
  const char* name = gst_video_format_to_string(format);
  if (name == nullptr) return false;
  for (PixelFormat f : all_pixel_formats())
    if (!is_bayer(f) && g_strcmp0(format_info(f).name, name) == 0) {
      *out = f;
      return true;
    }
  return false;
}

GstVideoFormat gst_format_of(PixelFormat format) {
  return is_bayer(format) ? GST_VIDEO_FORMAT_UNKNOWN
                          : gst_video_format_from_string(format_info(format).name);
}

bool is_bayer_structure(const GstStructure* s) { return gst_structure_has_name(s, kBayerCaps); }

std::vector<PixelFormat> formats_of_kind(bool bayer) {
  std::vector<PixelFormat> formats;
  for (PixelFormat f : all_pixel_formats())
    if (is_bayer(f) == bayer) formats.push_back(f);
  return formats;
}

bool format_named(const char* name, bool bayer, PixelFormat* out) {
  if (name == nullptr) return false;
  if (!bayer) return pixel_format_from_gst(gst_video_format_from_string(name), out);
  for (PixelFormat f : formats_of_kind(true))
    if (g_strcmp0(format_info(f).name, name) == 0) {
      *out = f;
      return true;
    }
  return false;
}

void set_formats(GstStructure* s, const std::vector<PixelFormat>& formats) {
  GValue value = G_VALUE_INIT;
  if (formats.size() == 1) {
    g_value_init(&value, G_TYPE_STRING);
    g_value_set_string(&value, format_info(formats[0]).name);
  } else {
    gst_value_list_init(&value, formats.size());
    for (PixelFormat f : formats) {
      GValue item = G_VALUE_INIT;
      g_value_init(&item, G_TYPE_STRING);
      g_value_set_string(&item, format_info(f).name);
      gst_value_list_append_and_take_value(&value, &item);
    }
  }
  gst_structure_take_value(s, "format", &value);
}

GstCaps* template_caps(GstPadDirection direction) {
  std::vector<GstVideoFormat> formats;
  for (PixelFormat f : formats_of_kind(false)) formats.push_back(gst_format_of(f));
  GstCaps* caps = gst_video_make_raw_caps(formats.data(), static_cast<guint>(formats.size()));
#ifdef CUDAOVERLAP_HAVE_GST_CUDA
  // GStreamer's CUDA memory on either side too, first (negotiation.h,
  // in_memories).
  GstCaps* cuda = gst_caps_copy(caps);
  gst_caps_set_features(cuda, 0, gst_caps_features_new(kCudaMemoryFeature, nullptr));
  caps = gst_caps_merge(cuda, caps);
#endif
  if (direction == GST_PAD_SINK) {
    // Bayer mosaics come in (for `convert`, which debayers them); nothing
    // makes one.
    GstStructure* bayer = gst_structure_new(kBayerCaps, "width", GST_TYPE_INT_RANGE, 1, G_MAXINT,
                                            "height", GST_TYPE_INT_RANGE, 1, G_MAXINT, "framerate",
                                            GST_TYPE_FRACTION_RANGE, 0, 1, G_MAXINT, 1, nullptr);
    set_formats(bayer, formats_of_kind(true));
    gst_caps_append_structure(caps, bayer);
  }
  return caps;
}

bool video_info_from_caps(GstCaps* caps, GstVideoInfo* info, PixelFormat* format) {
  if (caps == nullptr || !gst_caps_is_fixed(caps)) return false;
  const GstStructure* s = gst_caps_get_structure(caps, 0);
  if (!is_bayer_structure(s))
    return gst_video_info_from_caps(info, caps) &&
           pixel_format_from_gst(GST_VIDEO_INFO_FORMAT(info), format);
  // bayer2rgb's layout: one byte per pixel, rows GST_ROUND_UP_4(width)
  // apart, which is GRAY8's.
  gint width = 0, height = 0;
  if (!gst_structure_get_int(s, "width", &width) || !gst_structure_get_int(s, "height", &height) ||
      width <= 0 || height <= 0 ||
      !format_named(gst_structure_get_string(s, "format"), true, format))
    return false;
  gst_video_info_init(info);
  if (!gst_video_info_set_format(info, GST_VIDEO_FORMAT_GRAY8, static_cast<guint>(width),
                                 static_cast<guint>(height)))
    return false;
  gint n = 0, d = 1;
  if (gst_structure_get_fraction(s, "framerate", &n, &d)) {
    GST_VIDEO_INFO_FPS_N(info) = n;
    GST_VIDEO_INFO_FPS_D(info) = d;
  }
  if (gst_structure_get_fraction(s, "pixel-aspect-ratio", &n, &d)) {
    GST_VIDEO_INFO_PAR_N(info) = n;
    GST_VIDEO_INFO_PAR_D(info) = d;
  }
  return true;
}

GstCaps* caps_from_info(const GstVideoInfo& info, PixelFormat format) {
  if (!is_bayer(format)) return gst_video_info_to_caps(&info);
  return gst_caps_new_simple(kBayerCaps, "format", G_TYPE_STRING, format_info(format).name, "width",
                             G_TYPE_INT, GST_VIDEO_INFO_WIDTH(&info), "height", G_TYPE_INT,
                             GST_VIDEO_INFO_HEIGHT(&info), "framerate", GST_TYPE_FRACTION,
                             GST_VIDEO_INFO_FPS_N(&info), GST_VIDEO_INFO_FPS_D(&info),
                             "pixel-aspect-ratio", GST_TYPE_FRACTION, GST_VIDEO_INFO_PAR_N(&info),
                             GST_VIDEO_INFO_PAR_D(&info), nullptr);
}

std::string format_name(const GstVideoInfo& info, PixelFormat format) {
  return is_bayer(format) ? std::string(kBayerCaps) + " " + format_info(format).name
                          : std::string(GST_VIDEO_INFO_NAME(&info));
}

FrameLayout layout_from_info(const GstVideoInfo& info, PixelFormat format) {
  FrameLayout layout;
  layout.format = format;
  layout.width = GST_VIDEO_INFO_WIDTH(&info);
  layout.height = GST_VIDEO_INFO_HEIGHT(&info);
  // GStreamer pads I420/NV12 luma to an even number of rows before the
  // chroma planes, so the offsets are taken as GstVideoInfo computed them
  // rather than recomputed.
  for (guint p = 0; p < GST_VIDEO_INFO_N_PLANES(&info) && p < kMaxPlanes; ++p) {
    layout.offset[p] = GST_VIDEO_INFO_PLANE_OFFSET(&info, p);
    layout.stride[p] = static_cast<size_t>(GST_VIDEO_INFO_PLANE_STRIDE(&info, p));
  }
  layout.size = GST_VIDEO_INFO_SIZE(&info);
  return layout;
}

ImageRef image_from_frame(const GstVideoFrame& frame, PixelFormat format) {
  ImageRef image;
  image.format = format;
  image.width = GST_VIDEO_FRAME_WIDTH(&frame);
  image.height = GST_VIDEO_FRAME_HEIGHT(&frame);
  for (guint p = 0; p < GST_VIDEO_FRAME_N_PLANES(&frame) && p < kMaxPlanes; ++p) {
    image.planes[p].data = static_cast<uint8_t*>(GST_VIDEO_FRAME_PLANE_DATA(&frame, p));
    image.planes[p].stride = static_cast<size_t>(GST_VIDEO_FRAME_PLANE_STRIDE(&frame, p));
  }
  return image;
}

std::string check_frame_extent(const GstVideoFrame& frame, const FrameLayout& geometry, int x,
                               int y) {
  const FormatInfo& f = format_info(geometry.format);
  for (int p = 0; p < geometry.n_planes(); ++p) {
    const gint stride = GST_VIDEO_FRAME_PLANE_STRIDE(&frame, p);
    if (stride < 0 || static_cast<size_t>(stride) < geometry.row_bytes(p))
      return "plane " + std::to_string(p) + " has a stride of " + std::to_string(stride) +
             " bytes, less than its " + std::to_string(geometry.row_bytes(p)) +
             " bytes of pixels per row";
    // With a GstVideoMeta each plane is mapped on its own; without one the
    // whole buffer is map[0].
    const GstMapInfo& map = frame.meta != nullptr ? frame.map[p] : frame.map[0];
    const auto* begin = static_cast<const uint8_t*>(GST_VIDEO_FRAME_PLANE_DATA(&frame, p)) +
                        static_cast<size_t>(y >> f.y_shift[p]) * stride +
                        static_cast<size_t>(x >> f.x_shift[p]) * f.pixel_bytes[p];
    const size_t extent =
        static_cast<size_t>(stride) * (geometry.rows(p) - 1) + geometry.row_bytes(p);
    if (begin < map.data || begin + extent > map.data + map.size)
      return "plane " + std::to_string(p) + " needs " + std::to_string(extent) +
             " bytes but its memory ends " +
             std::to_string(static_cast<long long>(map.data + map.size - begin)) +
             " bytes after the plane's start";
  }
  return {};
}

}  // namespace cudaoverlap
