// See video_frames.h.
#include "video_frames.h"

#include <gtest/gtest.h>

namespace cudaoverlap_test {

using cudaoverlap::ImageRef;
using cudaoverlap::PixelFormat;

std::string size_text(int w, int h) { return std::to_string(w) + "x" + std::to_string(h); }

PixelFormat engine_format(GstVideoFormat format) {
  for (PixelFormat f : cudaoverlap::all_pixel_formats())
    if (std::string(cudaoverlap::format_info(f).name) == gst_video_format_to_string(format))
      return f;
  ADD_FAILURE() << "no engine format for " << gst_video_format_to_string(format);
  return PixelFormat::kRGBA;
}

ImageRef image_of(GstVideoFrame* frame) {
  ImageRef image;
  image.format = engine_format(GST_VIDEO_FRAME_FORMAT(frame));
  image.width = GST_VIDEO_FRAME_WIDTH(frame);
  image.height = GST_VIDEO_FRAME_HEIGHT(frame);
  for (guint p = 0; p < GST_VIDEO_FRAME_N_PLANES(frame); ++p)
    image.planes[p] = {static_cast<uint8_t*>(GST_VIDEO_FRAME_PLANE_DATA(frame, p)),
                       static_cast<size_t>(GST_VIDEO_FRAME_PLANE_STRIDE(frame, p))};
  return image;
}

GstBuffer* uniform_frame(const GstVideoInfo& info, const uint32_t value[3]) {
  GstBuffer* buffer = gst_buffer_new_allocate(nullptr, GST_VIDEO_INFO_SIZE(&info), nullptr);
  GstVideoFrame frame;
  if (!gst_video_frame_map(&frame, &info, buffer, GST_MAP_WRITE)) return buffer;
  const ImageRef image = image_of(&frame);
  const cudaoverlap::FormatInfo& f = cudaoverlap::format_info(image.format);
  for (int c = 0; c < f.n_components; ++c) {
    const cudaoverlap::Component& k = f.comp[c];
    const bool alpha = c >= 3;
    const uint32_t v = alpha ? (1u << k.depth) - 1 : value[c] << (k.depth - 8);
    // Samples on the component's own grid.
    const int w = (image.width + (1 << k.x_sub) - 1) >> k.x_sub;
    const int h = (image.height + (1 << k.y_sub) - 1) >> k.y_sub;
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < w; ++x) cudaoverlap::write_sample(image, c, x, y, v);
  }
  gst_video_frame_unmap(&frame);
  return buffer;
}

std::string compare_samples(GstSample* a, GstSample* b) {
  GstVideoInfo ia, ib;
  if (!gst_video_info_from_caps(&ia, gst_sample_get_caps(a)) ||
      !gst_video_info_from_caps(&ib, gst_sample_get_caps(b)))
    return "no video caps";
  if (GST_VIDEO_INFO_WIDTH(&ia) != GST_VIDEO_INFO_WIDTH(&ib) ||
      GST_VIDEO_INFO_HEIGHT(&ia) != GST_VIDEO_INFO_HEIGHT(&ib))
    return "sizes differ";
  GstVideoFrame fa, fb;
  if (!gst_video_frame_map(&fa, &ia, gst_sample_get_buffer(a), GST_MAP_READ)) return "cannot map";
  if (!gst_video_frame_map(&fb, &ib, gst_sample_get_buffer(b), GST_MAP_READ)) {
    gst_video_frame_unmap(&fa);
    return "cannot map";
  }
  const ImageRef x = image_of(&fa), y = image_of(&fb);
  std::string problem;
  for (int p = 0; p < cudaoverlap::format_info(x.format).n_planes && problem.empty(); ++p)
    for (size_t r = 0; r < cudaoverlap::plane_rows(x.format, p, x.height) && problem.empty(); ++r)
      for (size_t i = 0; i < cudaoverlap::plane_row_bytes(x.format, p, x.width); ++i) {
        const int u = x.planes[p].data[r * x.planes[p].stride + i];
        const int v = y.planes[p].data[r * y.planes[p].stride + i];
        if (u != v) {
          problem = "plane " + std::to_string(p) + " row " + std::to_string(r) + " byte " +
                    std::to_string(i) + ": " + std::to_string(u) + " against " + std::to_string(v);
          break;
        }
      }
  gst_video_frame_unmap(&fa);
  gst_video_frame_unmap(&fb);
  return problem;
}

}  // namespace cudaoverlap_test
