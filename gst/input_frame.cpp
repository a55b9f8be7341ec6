// See input_frame.h.
#include "input_frame.h"

#include "video_mapping.h"

namespace cudaoverlap {

MappedInput::~MappedInput() {
  if (mapped_) gst_video_frame_unmap(&frame_);
}

std::string MappedInput::map(GstBuffer* buffer, const GstVideoInfo& info,
                             const FrameLayout& geometry) {
  if (gst_buffer_get_video_meta(buffer) == nullptr &&
      gst_buffer_get_size(buffer) < GST_VIDEO_INFO_SIZE(&info))
    return "it has " + std::to_string(gst_buffer_get_size(buffer)) + " bytes and needs " +
           std::to_string(GST_VIDEO_INFO_SIZE(&info));
  mapped_ = gst_video_frame_map(&frame_, &info, buffer, GST_MAP_READ);
  if (!mapped_) return "it could not be mapped for reading";
  if (GST_VIDEO_FRAME_WIDTH(&frame_) != GST_VIDEO_INFO_WIDTH(&info) ||
      GST_VIDEO_FRAME_HEIGHT(&frame_) != GST_VIDEO_INFO_HEIGHT(&info) ||
      GST_VIDEO_FRAME_FORMAT(&frame_) != GST_VIDEO_INFO_FORMAT(&info))
    return "its GstVideoMeta does not describe the caps' format and size";
  return check_frame_extent(frame_, geometry);
}

ImageRef MappedInput::image(PixelFormat format) const { return image_from_frame(frame_, format); }

}  // namespace cudaoverlap
