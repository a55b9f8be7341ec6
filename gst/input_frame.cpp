// See input_frame.h.
#include "input_frame.h"

#include <cstring>

#include "video_mapping.h"

#ifdef CUDAOVERLAP_HAVE_GST_CUDA
#include <dlfcn.h>
#include <gst/cuda/gstcudacontext.h>
#include <gst/cuda/gstcudamemory.h>
#endif

namespace cudaoverlap {
namespace {

#ifdef CUDAOVERLAP_HAVE_GST_CUDA
// GStreamer 1.24 and later let a producer push CUDA memory its own stream
// is still writing, and have the consumer wait with gst_cuda_memory_sync();
// 1.22, which this is built against, has neither (its producers wait
// before they push). Found in the running library where it is there.
void sync_cuda_memory(GstMemory* memory) {
  using Sync = void (*)(GstMemory*);
  static const Sync sync = [] {
    void* library = dlopen("libgstcuda-1.0.so.0", RTLD_LAZY | RTLD_NOLOAD);
    return library ? reinterpret_cast<Sync>(dlsym(library, "gst_cuda_memory_sync")) : nullptr;
  }();
  if (sync) sync(memory);
}
#endif

// Why `buffer` is not GStreamer's CUDA memory of `context`; empty when it is.
std::string cuda_memory_problem(GstBuffer* buffer, void* context) {
#ifdef CUDAOVERLAP_HAVE_GST_CUDA
  for (guint i = 0; i < gst_buffer_n_memory(buffer); ++i) {
    GstMemory* memory = gst_buffer_peek_memory(buffer, i);
    if (!gst_is_cuda_memory(memory))
      return "its caps say CUDA memory, but its memory is " +
             std::string(memory->allocator ? GST_OBJECT_NAME(memory->allocator) : "unknown");
    GstCudaContext* owner = reinterpret_cast<GstCudaMemory*>(memory)->context;
    if (!owner) return "its CUDA memory has no CUDA context";
    if (gst_cuda_context_get_handle(owner) != context) {
      guint device = 0;
      g_object_get(owner, "cuda-device-id", &device, nullptr);
      return "its CUDA memory is in a CUDA context of device " + std::to_string(device) +
             " other than the one cudaoverlap shares with the pipeline (an element that made "
             "its own, or another device-id; give the elements one device-id)";
    }
  }
  return {};
#else
  (void)buffer;
  (void)context;
  return "this build takes no CUDA memory";
#endif
}

}  // namespace

MappedInput::~MappedInput() {
  if (mapped_) gst_video_frame_unmap(&frame_);
}

std::string MappedInput::map(GstBuffer* buffer, const GstVideoInfo& info,
                             const FrameLayout& geometry, void* cuda_context) {
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
  width_ = GST_VIDEO_INFO_WIDTH(&info);
  height_ = GST_VIDEO_INFO_HEIGHT(&info);
  if (const GstVideoCropMeta* crop = gst_buffer_get_video_crop_meta(buffer)) {
    const int picture_w = meta != nullptr ? static_cast<int>(meta->width) : width_;
    const int picture_h = meta != nullptr ? static_cast<int>(meta->height) : height_;
    const std::string where = "its GstVideoCropMeta (" + std::to_string(crop->x) + "," +
                              std::to_string(crop->y) + " " + std::to_string(crop->width) + "x" +
                              std::to_string(crop->height) + ")";
    if (static_cast<int>(crop->x) + width_ > picture_w ||
        static_cast<int>(crop->y) + height_ > picture_h)
      return where + " places the caps' " + std::to_string(width_) + "x" + std::to_string(height_) +
             " past the " + std::to_string(picture_w) + "x" + std::to_string(picture_h) +
             " picture the buffer holds";
    const FormatInfo& f = format_info(geometry.format);
    for (int p = 0; p < f.n_planes; ++p)
      if (crop->x % (1u << f.x_shift[p]) != 0 || crop->y % (1u << f.y_shift[p]) != 0)
        return where + " starts inside a group of pixels that share samples in " + f.name;
    crop_x_ = static_cast<int>(crop->x);
    crop_y_ = static_cast<int>(crop->y);
  }
  GstMapFlags flags = GST_MAP_READ;
  if (cuda_context) {
    const std::string problem = cuda_memory_problem(buffer, cuda_context);
    if (!problem.empty()) return problem;
#ifdef CUDAOVERLAP_HAVE_GST_CUDA
    flags = static_cast<GstMapFlags>(flags | GST_MAP_CUDA);  // device addresses
    for (guint i = 0; i < gst_buffer_n_memory(buffer); ++i)
      sync_cuda_memory(gst_buffer_peek_memory(buffer, i));
#endif
  }
  mapped_ = gst_video_frame_map(&frame_, &info, buffer, flags);
  if (!mapped_) return "it could not be mapped for reading";
  return check_frame_extent(frame_, geometry, crop_x_, crop_y_);
}

ImageRef MappedInput::image(PixelFormat format) const {
  ImageRef image = image_from_frame(frame_, format);
  image.width = width_;  // the caps' size, where a meta describes more
  image.height = height_;
  const FormatInfo& f = format_info(format);
  for (int p = 0; p < f.n_planes; ++p)
    image.planes[p].data += (crop_y_ >> f.y_shift[p]) * image.planes[p].stride +
                            static_cast<size_t>(crop_x_ >> f.x_shift[p]) * f.pixel_bytes[p];
  return image;
}

GstBuffer* copy_window(GstBuffer* buffer, const GstVideoInfo& info, PixelFormat format,
                       std::string* problem) {
  MappedInput mapped;
  *problem = mapped.map(buffer, info, layout_from_info(info, format));
  if (!problem->empty()) return nullptr;
  const ImageRef from = mapped.image(format);
  GstBuffer* copy = gst_buffer_new_allocate(nullptr, GST_VIDEO_INFO_SIZE(&info), nullptr);
  gst_buffer_copy_into(
      copy, buffer,
      static_cast<GstBufferCopyFlags>(GST_BUFFER_COPY_FLAGS | GST_BUFFER_COPY_TIMESTAMPS |
                                      GST_BUFFER_COPY_META),
      0, static_cast<gsize>(-1));
  // The copy is the window, in the default layout: no crop, no layout meta.
  gst_buffer_foreach_meta(
      copy,
      [](GstBuffer*, GstMeta** meta, gpointer) -> gboolean {
        const GType api = (*meta)->info->api;
        if (api == GST_VIDEO_CROP_META_API_TYPE || api == GST_VIDEO_META_API_TYPE) *meta = nullptr;
        return TRUE;
      },
      nullptr);
  GstVideoFrame to;
  if (!gst_video_frame_map(&to, &info, copy, GST_MAP_WRITE)) {
    gst_buffer_unref(copy);
    *problem = "its window could not be copied";
    return nullptr;
  }
  const ImageRef into = image_from_frame(to, format);
  for (int p = 0; p < format_info(format).n_planes; ++p)
    for (size_t y = 0; y < plane_rows(format, p, from.height); ++y)
      std::memcpy(into.planes[p].data + y * into.planes[p].stride,
                  from.planes[p].data + y * from.planes[p].stride,
                  plane_row_bytes(format, p, from.width));
  gst_video_frame_unmap(&to);
  return copy;
}

}  // namespace cudaoverlap
