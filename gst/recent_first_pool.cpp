// See recent_first_pool.h. Buffers released while the pool may grow are
// kept on a stack of its own; an acquire takes the top one, or, when the
// stack is empty or the pool is flushing, asks the base class (which
// allocates a new buffer). Everything else (reset, the checks that decide
// whether a buffer is kept, freeing on stop) stays the base class's.
#include "recent_first_pool.h"

#include <gst/video/gstvideopool.h>

#include <mutex>
#include <vector>

namespace {

// The C++ side of the pool (GObject instances are not C++).
struct RecentFirstState {
  // Lock order: a leaf (only buffer queries are made with it held).
  std::mutex mutex;
  std::vector<GstBuffer*> released;  // guarded by mutex: the last released at the back
  bool growable = false;             // guarded by mutex: max-buffers 0
  guint size = 0;                    // guarded by mutex: the configured buffer size
};

struct GstCudaOverlapRecentFirstPool {
  GstVideoBufferPool parent;
  RecentFirstState* state;
};

struct GstCudaOverlapRecentFirstPoolClass {
  GstVideoBufferPoolClass parent_class;
};

GType gst_cuda_overlap_recent_first_pool_get_type();
G_DEFINE_TYPE(GstCudaOverlapRecentFirstPool, gst_cuda_overlap_recent_first_pool,
              GST_TYPE_VIDEO_BUFFER_POOL)

RecentFirstState* state_of(GstBufferPool* pool) {
  return reinterpret_cast<GstCudaOverlapRecentFirstPool*>(pool)->state;
}

GstBufferPoolClass* parent_pool_class() {
  return GST_BUFFER_POOL_CLASS(gst_cuda_overlap_recent_first_pool_parent_class);
}

gboolean recent_first_set_config(GstBufferPool* pool, GstStructure* config) {
  if (!parent_pool_class()->set_config(pool, config)) return FALSE;
  // Read after the video pool's own: padding it was asked for (alignment)
  // grows the size it writes back into the config.
  guint size = 0, max = 0;
  if (!gst_buffer_pool_config_get_params(config, nullptr, &size, nullptr, &max)) return FALSE;
  RecentFirstState* state = state_of(pool);
  std::lock_guard<std::mutex> lock(state->mutex);
  state->growable = max == 0;
  state->size = size;
  return TRUE;
}

GstFlowReturn recent_first_acquire(GstBufferPool* pool, GstBuffer** buffer,
                                   GstBufferPoolAcquireParams* params) {
  if (!GST_BUFFER_POOL_IS_FLUSHING(pool)) {
    RecentFirstState* state = state_of(pool);
    std::lock_guard<std::mutex> lock(state->mutex);
    if (!state->released.empty()) {
      *buffer = state->released.back();
      state->released.pop_back();
      return GST_FLOW_OK;
    }
  }
  return parent_pool_class()->acquire_buffer(pool, buffer, params);
}

void recent_first_release(GstBufferPool* pool, GstBuffer* buffer) {
  RecentFirstState* state = state_of(pool);
  {
    std::lock_guard<std::mutex> lock(state->mutex);
    // What the base class would keep: untouched memory of the pool's size,
    // all of it writable (reset_buffer has run). Anything else it discards.
    if (state->growable && !GST_BUFFER_FLAG_IS_SET(buffer, GST_BUFFER_FLAG_TAG_MEMORY) &&
        gst_buffer_get_size(buffer) == state->size && gst_buffer_is_all_memory_writable(buffer)) {
      state->released.push_back(buffer);
      return;
    }
  }
  parent_pool_class()->release_buffer(pool, buffer);
}

// The stack goes back to the base class, which frees what it holds.
gboolean recent_first_stop(GstBufferPool* pool) {
  std::vector<GstBuffer*> released;
  {
    RecentFirstState* state = state_of(pool);
    std::lock_guard<std::mutex> lock(state->mutex);
    released.swap(state->released);
  }
  for (GstBuffer* buffer : released) parent_pool_class()->release_buffer(pool, buffer);
  return parent_pool_class()->stop(pool);
}

void recent_first_finalize(GObject* object) {
  auto* self = reinterpret_cast<GstCudaOverlapRecentFirstPool*>(object);
  // Stopped before (the base class stops an active pool when disposed), so
  // the stack is empty; a buffer left there is freed as a plain buffer.
  for (GstBuffer* buffer : self->state->released) gst_buffer_unref(buffer);
  delete self->state;
  G_OBJECT_CLASS(gst_cuda_overlap_recent_first_pool_parent_class)->finalize(object);
}

void gst_cuda_overlap_recent_first_pool_class_init(GstCudaOverlapRecentFirstPoolClass* klass) {
  G_OBJECT_CLASS(klass)->finalize = recent_first_finalize;
  GstBufferPoolClass* pool_class = GST_BUFFER_POOL_CLASS(klass);
  pool_class->set_config = recent_first_set_config;
  pool_class->acquire_buffer = recent_first_acquire;
  pool_class->release_buffer = recent_first_release;
  pool_class->stop = recent_first_stop;
}

void gst_cuda_overlap_recent_first_pool_init(GstCudaOverlapRecentFirstPool* self) {
  self->state = new RecentFirstState();
}

}  // namespace

namespace cudaoverlap {

GstBufferPool* recent_first_pool_new() {
  auto* pool = static_cast<GstBufferPool*>(
      g_object_new(gst_cuda_overlap_recent_first_pool_get_type(), nullptr));
  gst_object_ref_sink(pool);
  return pool;
}

}  // namespace cudaoverlap
