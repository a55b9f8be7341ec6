// See video_mapping.h.
#include "video_mapping.h"

namespace cudaoverlap {

bool pixel_format_from_gst(GstVideoFormat format, PixelFormat* out) {
  switch (format) {
    case GST_VIDEO_FORMAT_RGBA:
      *out = PixelFormat::kRGBA;
      return true;
    case GST_VIDEO_FORMAT_BGRA:
      *out = PixelFormat::kBGRA;
      return true;
    case GST_VIDEO_FORMAT_RGBx:
      *out = PixelFormat::kRGBx;
      return true;
    case GST_VIDEO_FORMAT_BGRx:
      *out = PixelFormat::kBGRx;
      return true;
    case GST_VIDEO_FORMAT_ARGB:
      *out = PixelFormat::kARGB;
      return true;
    case GST_VIDEO_FORMAT_ABGR:
      *out = PixelFormat::kABGR;
      return true;
    case GST_VIDEO_FORMAT_NV12:
      *out = PixelFormat::kNV12;
      return true;
    case GST_VIDEO_FORMAT_I420:
      *out = PixelFormat::kI420;
      return true;
    case GST_VIDEO_FORMAT_GRAY8:
      *out = PixelFormat::kGRAY8;
      return true;
    default:
      return false;
  }
}

FrameLayout layout_from_info(const GstVideoInfo& info) {
  FrameLayout layout;
  pixel_format_from_gst(GST_VIDEO_INFO_FORMAT(&info), &layout.format);
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

std::string check_frame_extent(const GstVideoFrame& frame, const FrameLayout& geometry) {
  for (int p = 0; p < geometry.n_planes(); ++p) {
    const gint stride = GST_VIDEO_FRAME_PLANE_STRIDE(&frame, p);
    if (stride < 0 || static_cast<size_t>(stride) < geometry.row_bytes(p))
      return "plane " + std::to_string(p) + " has a stride of " + std::to_string(stride) +
             " bytes, less than its " + std::to_string(geometry.row_bytes(p)) +
             " bytes of pixels per row";
    // With a GstVideoMeta each plane is mapped on its own; without one the
    // whole buffer is map[0].
    const GstMapInfo& map = frame.meta != nullptr ? frame.map[p] : frame.map[0];
    const auto* begin = static_cast<const uint8_t*>(GST_VIDEO_FRAME_PLANE_DATA(&frame, p));
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

GstCaps* transform_caps(KernelId kernel, GstPadDirection, GstCaps* caps) {
  switch (kernel) {
    case KernelId::kCopy:
    case KernelId::kInvert:
    case KernelId::kSynthetic:
      return gst_caps_ref(caps);
  }
  return gst_caps_new_empty();
}

bool output_info_for(KernelId kernel, const GstVideoInfo& in, GstVideoInfo* out) {
  switch (kernel) {
    case KernelId::kCopy:
    case KernelId::kInvert:
    case KernelId::kSynthetic:
      *out = in;
      return true;
  }
  return false;
}

GstCaps* query_caps_through(KernelId kernel, GstPad* pad, GstPad* other, GstCaps* filter) {
  GstCaps* templ = gst_pad_get_pad_template_caps(pad);
  GstCaps* other_templ = gst_pad_get_pad_template_caps(other);
  GstCaps* peer_filter = gst_caps_ref(other_templ);
  if (filter) {
    GstCaps* transformed = transform_caps(kernel, GST_PAD_DIRECTION(pad), filter);
    gst_caps_unref(peer_filter);
    peer_filter = gst_caps_intersect_full(transformed, other_templ, GST_CAPS_INTERSECT_FIRST);
    gst_caps_unref(transformed);
  }
  GstCaps* peer = gst_pad_peer_query_caps(other, peer_filter);
  GstCaps* back = transform_caps(kernel, GST_PAD_DIRECTION(other), peer);
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
  if (!gst_caps_is_subset(caps, allowed)) return false;
  if (!gst_caps_is_fixed(caps)) return true;
  GstVideoInfo info;
  PixelFormat format;
  return gst_video_info_from_caps(&info, caps) &&
         pixel_format_from_gst(GST_VIDEO_INFO_FORMAT(&info), &format);
}

bool propose_video_pool(GstQuery* query, guint min_buffers) {
  GstCaps* caps = nullptr;
  gboolean need_pool = FALSE;
  gst_query_parse_allocation(query, &caps, &need_pool);
  GstVideoInfo info;
  if (caps == nullptr || !gst_video_info_from_caps(&info, caps)) return false;
  GstBufferPool* pool = nullptr;
  if (need_pool) {
    pool = gst_video_buffer_pool_new();
    GstStructure* config = gst_buffer_pool_get_config(pool);
    gst_buffer_pool_config_set_params(config, caps, GST_VIDEO_INFO_SIZE(&info), min_buffers, 0);
    gst_buffer_pool_config_add_option(config, GST_BUFFER_POOL_OPTION_VIDEO_META);
    if (!gst_buffer_pool_set_config(pool, config)) {
      gst_object_unref(pool);
      return false;
    }
  }
  gst_query_add_allocation_pool(query, pool, GST_VIDEO_INFO_SIZE(&info), min_buffers, 0);
  if (pool) gst_object_unref(pool);
  gst_query_add_allocation_meta(query, GST_VIDEO_META_API_TYPE, nullptr);
  return true;
}

}  // namespace cudaoverlap
