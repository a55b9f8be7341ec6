// See output_buffer.h.
#include "output_buffer.h"

#include <gst/video/video.h>

#include <cstring>
#include <mutex>

namespace cudaoverlap {

struct OutputBufferCount {
  // Guards the fields below; no other lock is taken while it is held.
  std::mutex mutex;
  int held = 0;   // wrapped buffers not yet dropped by downstream
  int limit = 0;  // ring-size - 1
};

namespace {

// What a wrapped GstMemory keeps alive: the frame (its slot) and the count
// it is part of.
struct Held {
  OutputFrame frame;
  std::shared_ptr<OutputBufferCount> count;
};

// Any thread: wherever downstream drops the last reference.
void release_held(gpointer data) {
  auto* held = static_cast<Held*>(data);
  held->frame.release();
  {
    std::lock_guard<std::mutex> lock(held->count->mutex);
    --held->count->held;
  }
  delete held;
}

}  // namespace

OutputBuffers::OutputBuffers() : count_(std::make_shared<OutputBufferCount>()) {}

void OutputBuffers::set_ring_size(int ring_size) {
  std::lock_guard<std::mutex> lock(count_->mutex);
  count_->limit = ring_size - 1;
}

int OutputBuffers::held() const {
  std::lock_guard<std::mutex> lock(count_->mutex);
  return count_->held;
}

GstBuffer* OutputBuffers::make(OutputFrame frame, const OutputFormat& format, GstBuffer* metadata,
                               bool* copied) {
  const size_t size = format.layout.size;
  uint8_t* base = frame.image().planes[0].data - format.layout.offset[0];
  bool wrap;
  {
    std::lock_guard<std::mutex> lock(count_->mutex);
    wrap = count_->held < count_->limit;
    if (wrap) ++count_->held;
  }
  GstMemory* memory;
  if (wrap) {
    auto* held = new Held{std::move(frame), count_};
    memory = gst_memory_new_wrapped(static_cast<GstMemoryFlags>(0), base, size, 0, size, held,
                                    release_held);
  } else {
    memory = gst_allocator_alloc(nullptr, size, nullptr);
    GstMapInfo map;
    if (gst_memory_map(memory, &map, GST_MAP_WRITE)) {
      std::memcpy(map.data, base, size);
      gst_memory_unmap(memory, &map);
    }
    frame.release();
  }
  *copied = !wrap;

  GstBuffer* buffer = gst_buffer_new();
  if (metadata) {
    gst_buffer_copy_into(
        buffer, metadata,
        static_cast<GstBufferCopyFlags>(GST_BUFFER_COPY_FLAGS | GST_BUFFER_COPY_TIMESTAMPS), 0, -1);
    transform_metas(metadata, buffer, format.geometry);
  }
  gst_buffer_append_memory(buffer, memory);
  if (!format.default_layout) {
    gsize offsets[GST_VIDEO_MAX_PLANES] = {};
    gint strides[GST_VIDEO_MAX_PLANES] = {};
    for (int p = 0; p < format.layout.n_planes(); ++p) {
      offsets[p] = format.layout.offset[p];
      strides[p] = static_cast<gint>(format.layout.stride[p]);
    }
    gst_buffer_add_video_meta_full(
        buffer, GST_VIDEO_FRAME_FLAG_NONE, GST_VIDEO_INFO_FORMAT(&format.info),
        GST_VIDEO_INFO_WIDTH(&format.info), GST_VIDEO_INFO_HEIGHT(&format.info),
        GST_VIDEO_INFO_N_PLANES(&format.info), offsets, strides);
  }
  return buffer;
}

}  // namespace cudaoverlap
