// See input_frame.h.
#include "input_frame.h"

#include "video_mapping.h"

namespace cudaoverlap {

MappedInput::~MappedInput() {
  if (mapped_) gst_video_frame_unmap(&frame_);
}

std::string MappedInput::map(GstBuffer* buffer, const GstVideoInfo& info,
                             const FrameLayout& geometry) {
  const GstVideoMeta* meta = gst_buffer_get_video_meta(buffer);
  if (meta == nullptr && gst_buffer_get_size(buffer) < GST_VIDEO_INFO_SIZE(&info))
    return "it has " + std::to_string(gst_buffer_get_size(buffer)) + " bytes and needs " +
           std::to_string(GST_VIDEO_INFO_SIZE(&info));
  // A meta may describe a larger picture than the caps (a decoder's coded
  // size); its top-left part of the caps' size is the frame, as
  // gst_video_frame_map() and GStreamer's own filters take it.
  if (meta != nullptr && (meta->format != GST_VIDEO_INFO_FORMAT(&info) ||
                          meta->n_planes != GST_VIDEO_INFO_N_PLANES(&info) ||
                          static_cast<gint>(meta->width) < GST_VIDEO_INFO_WIDTH(&info) ||
                          static_cast<gint>(meta->height) < GST_VIDEO_INFO_HEIGHT(&info)))
    return std::string("its GstVideoMeta (") + gst_video_format_to_string(meta->format) + " " +
           std::to_string(meta->width) + "x" + std::to_string(meta->height) +
           ") does not describe the caps' format at their size or larger";
  mapped_ = gst_video_frame_map(&frame_, &info, buffer, GST_MAP_READ);
  if (!mapped_) return "it could not be mapped for reading";
  width_ = GST_VIDEO_INFO_WIDTH(&info);
  height_ = GST_VIDEO_INFO_HEIGHT(&info);
  return check_frame_extent(frame_, geometry);
}

ImageRef MappedInput::image(PixelFormat format) const {
  ImageRef image = image_from_frame(frame_, format);
  image.width = width_;  // the caps' size, where a meta describes more
  image.height = height_;
  return image;
}

}  // namespace cudaoverlap
