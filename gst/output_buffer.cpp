// See output_buffer.h.
#include "output_buffer.h"

#include <gst/video/video.h>

#include <cstring>
#include <mutex>

#include "kernels/error.h"

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

DeviceDestination::~DeviceDestination() {
  if (buffer_ == nullptr) return;
  gst_video_frame_unmap(&frame_);
  gst_buffer_unref(buffer_);
}

GstBuffer* DeviceDestination::take() {
  GstBuffer* buffer = buffer_;
  if (buffer != nullptr) gst_video_frame_unmap(&frame_);
  buffer_ = nullptr;
  return buffer;
}

OutputBuffers::OutputBuffers() : count_(std::make_shared<OutputBufferCount>()) {}

OutputBuffers::~OutputBuffers() { drop_copies(); }

void OutputBuffers::drop_copies() {
  drop_pool();
  copier_.reset();
}

void OutputBuffers::drop_pool() {
  if (pool_ == nullptr) return;
  gst_buffer_pool_set_active(pool_, FALSE);  // buffers out are freed as they come back
  gst_object_unref(pool_);
  pool_ = nullptr;
  pool_size_ = 0;
}

GstBuffer* OutputBuffers::acquire_copy(size_t size) {
  // A pool's buffer size is a guint.
  if (size > G_MAXUINT) return gst_buffer_new_allocate(nullptr, size, nullptr);
  if (pool_ != nullptr && pool_size_ != size) drop_pool();  // the threads stay
  if (pool_ == nullptr) {
    GstBufferPool* pool = gst_buffer_pool_new();
    GstStructure* config = gst_buffer_pool_get_config(pool);
    gst_buffer_pool_config_set_params(config, nullptr, static_cast<guint>(size), 0, kPooledCopies);
    if (!gst_buffer_pool_set_config(pool, config) || !gst_buffer_pool_set_active(pool, TRUE)) {
      gst_object_unref(pool);  // no pool this time: a buffer of its own
      return gst_buffer_new_allocate(nullptr, size, nullptr);
    }
    pool_ = pool;
    pool_size_ = size;
  }
  GstBuffer* buffer = nullptr;
  GstBufferPoolAcquireParams params{};
  params.flags = GST_BUFFER_POOL_ACQUIRE_FLAG_DONTWAIT;
  if (gst_buffer_pool_acquire_buffer(pool_, &buffer, &params) == GST_FLOW_OK) return buffer;
  // Downstream holds every pooled copy: one of its own, freed when dropped.
  return gst_buffer_new_allocate(nullptr, size, nullptr);
}

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
  FrameInfo* info = frame.user_as<FrameInfo>();
  const bool on_device = info != nullptr && info->destination != nullptr;
  GstBuffer* buffer;
  if (on_device) {
    // Written on the device into a CUDA pool's buffer, which carries its own
    // video meta: the slot is not needed any more.
    buffer = info->destination->take();
    frame.release();
    *copied = false;
  } else {
    buffer = from_slot(std::move(frame), format, copied);
    if (buffer == nullptr) return nullptr;
  }
  if (metadata) {
    gst_buffer_copy_into(
        buffer, metadata,
        static_cast<GstBufferCopyFlags>(GST_BUFFER_COPY_FLAGS | GST_BUFFER_COPY_TIMESTAMPS), 0, -1);
    transform_metas(metadata, buffer, format.geometry);
  }
  if (!on_device && !format.default_layout) {
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

GstBuffer* OutputBuffers::from_slot(OutputFrame frame, const OutputFormat& format, bool* copied) {
  const size_t size = format.layout.size;
  uint8_t* base = frame.image().planes[0].data - format.layout.offset[0];
  bool wrap;
  {
    std::lock_guard<std::mutex> lock(count_->mutex);
    wrap = count_->held < count_->limit;
    if (wrap) ++count_->held;
  }
  GstBuffer* buffer;
  if (wrap) {
    auto* held = new Held{std::move(frame), count_};
    buffer = gst_buffer_new();
    gst_buffer_append_memory(buffer, gst_memory_new_wrapped(static_cast<GstMemoryFlags>(0), base,
                                                            size, 0, size, held, release_held));
  } else {
    // Made before a buffer is taken, so that nothing thrown below leaves
    // one mapped.
    if (!copier_) {
      try {
        copier_ = std::make_unique<ParallelCopy>(ParallelCopy::automatic_threads(),
                                                 ParallelCopy::kDefaultMinChunkBytes, "co-copy");
      } catch (const Error&) {
        copier_ = std::make_unique<ParallelCopy>(1);  // no thread could start: this one copies
      }
    }
    buffer = acquire_copy(size);
    if (buffer == nullptr) return nullptr;  // the frame (its slot) goes back to the ring
    GstMapInfo map;
    if (!gst_buffer_map(buffer, &map, GST_MAP_WRITE)) {
      gst_buffer_unref(buffer);
      return nullptr;
    }
    if (map.size < size) {
      gst_buffer_unmap(buffer, &map);
      gst_buffer_unref(buffer);
      return nullptr;
    }
    // Rows of a fixed length, so that the threads share the block evenly
    // whatever the layout; the tail is the caller's.
    constexpr size_t kRow = 64 * 1024;
    const PlaneCopy rows{map.data, kRow, base, kRow, kRow, size / kRow};
    if (rows.rows > 0) copier_->copy(&rows, 1);
    const size_t done = rows.rows * kRow;
    std::memcpy(map.data + done, base + done, size - done);
    gst_buffer_unmap(buffer, &map);
    frame.release();
  }
  *copied = !wrap;
  return buffer;
}

}  // namespace cudaoverlap
