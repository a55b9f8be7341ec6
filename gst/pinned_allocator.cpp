// See pinned_allocator.h. The allocator is a small GstAllocator subclass:
// each GstMemory owns one Buffer from Device::alloc_pinned and frees it when
// GStreamer frees the memory. Shares (sub-buffers, and what gst_memory_share
// makes) own no Buffer: they keep their parent, which owns the bytes, alive.
// Sharing matters: an element that pushes one buffer again and again
// (imagefreeze) copies it shallowly, and a memory that could not be shared
// would be copied into system memory for every frame instead.
#include "pinned_allocator.h"

#include <gst/video/video.h>

#include <cstring>
#include <mutex>
#include <vector>

#include "engine.h"
#include "kernels/error.h"
#include "recent_first_pool.h"
#include "video_mapping.h"

namespace {

struct PinnedMemory {
  GstMemory mem;
  std::unique_ptr<cudaoverlap::Buffer> buffer;  // owns the pinned bytes; null in a share
  // InputFrame::memory_id of the bytes: drawn when a memory is made, so that
  // memory freed and made again at the same address is told apart. A
  // share's is its parent's (the same bytes).
  uint64_t id = 0;
};

// The bytes of `mem`, a share or not.
uint8_t* pinned_base(GstMemory* mem) {
  GstMemory* owner = mem->parent ? mem->parent : mem;
  return reinterpret_cast<PinnedMemory*>(owner)->buffer->data();
}

// The C++ side of the allocator (GObject memory is not C++).
struct AllocatorState {
  std::shared_ptr<cudaoverlap::Device> device;
  // Blocks allocated in advance (reserve_pinned), handed out before new
  // ones: a pool offered upstream is known to fit before it is offered, and
  // the bytes are allocated once. Lock order: a leaf.
  std::mutex mutex;
  std::vector<std::unique_ptr<cudaoverlap::Buffer>> spare;  // guarded by mutex
};

struct GstCudaOverlapPinnedAllocator {
  GstAllocator parent;
  AllocatorState* state;
};

struct GstCudaOverlapPinnedAllocatorClass {
  GstAllocatorClass parent_class;
};

GType gst_cuda_overlap_pinned_allocator_get_type();
G_DEFINE_TYPE(GstCudaOverlapPinnedAllocator, gst_cuda_overlap_pinned_allocator, GST_TYPE_ALLOCATOR)

GstMemory* pinned_alloc(GstAllocator* allocator, gsize size, GstAllocationParams* params) {
  auto* self = reinterpret_cast<GstCudaOverlapPinnedAllocator*>(allocator);
  const gsize align = params ? params->align : 0;
  const gsize prefix = params ? params->prefix : 0;
  const gsize padding = params ? params->padding : 0;
  const gsize maxsize = size + prefix + padding + align;
  std::unique_ptr<cudaoverlap::Buffer> buffer;
  {
    std::lock_guard<std::mutex> lock(self->state->mutex);
    auto& spare = self->state->spare;
    for (auto it = spare.begin(); it != spare.end(); ++it) {
      if ((*it)->size() < maxsize) continue;
      buffer = std::move(*it);
      spare.erase(it);
      break;
    }
  }
  try {
    if (!buffer) buffer = self->state->device->alloc_pinned(maxsize);
  } catch (const cudaoverlap::Error& e) {
    GST_WARNING_OBJECT(allocator, "no pinned memory for %" G_GSIZE_FORMAT " bytes: %s", maxsize,
                       e.what());
    return nullptr;
  }
  // cudaMallocHost returns page-aligned memory; honour a stricter request.
  const gsize misalign = reinterpret_cast<guintptr>(buffer->data() + prefix) & align;
  const gsize offset = prefix + (misalign ? align + 1 - misalign : 0);
  auto* pm = new PinnedMemory();
  pm->buffer = std::move(buffer);
  pm->id = cudaoverlap::new_memory_id();
  const auto flags = static_cast<GstMemoryFlags>(params ? params->flags : 0);
  gst_memory_init(GST_MEMORY_CAST(pm), flags, allocator, nullptr, maxsize, align, offset, size);
  if (params && (params->flags & GST_MEMORY_FLAG_ZERO_PREFIXED) && offset)
    std::memset(pm->buffer->data(), 0, offset);
  return GST_MEMORY_CAST(pm);
}

void pinned_free(GstAllocator*, GstMemory* mem) { delete reinterpret_cast<PinnedMemory*>(mem); }

gpointer pinned_map(GstMemory* mem, gsize, GstMapFlags) { return pinned_base(mem); }

void pinned_unmap(GstMemory*) {}

GstMemory* pinned_copy(GstMemory* mem, gssize offset, gssize size) {
  // A copy lands in ordinary system memory: it is no longer ours.
  if (size < 0) size = static_cast<gssize>(mem->size) > offset ? mem->size - offset : 0;
  GstMemory* copy = gst_allocator_alloc(nullptr, static_cast<gsize>(size), nullptr);
  GstMapInfo out;
  if (copy == nullptr || !gst_memory_map(copy, &out, GST_MAP_WRITE)) return copy;
  const uint8_t* src = pinned_base(mem) + mem->offset + offset;
  std::memcpy(out.data, src, static_cast<size_t>(size));
  gst_memory_unmap(copy, &out);
  return copy;
}

GstMemory* pinned_share(GstMemory* mem, gssize offset, gssize size) {
  GstMemory* parent = mem->parent ? mem->parent : mem;
  if (size < 0) size = static_cast<gssize>(mem->size) - offset;
  auto* share = new PinnedMemory();
  share->id = reinterpret_cast<PinnedMemory*>(parent)->id;
  // gst_memory_init takes a reference on the parent (and a shared lock, so
  // the parent is never written while shared); _gst_memory_free drops both.
  // Shared memory is read-only, as GStreamer's own shares are.
  gst_memory_init(GST_MEMORY_CAST(share),
                  static_cast<GstMemoryFlags>(GST_MINI_OBJECT_FLAGS(parent) |
                                              GST_MINI_OBJECT_FLAG_LOCK_READONLY),
                  mem->allocator, parent, mem->maxsize, mem->align,
                  mem->offset + static_cast<gsize>(offset), static_cast<gsize>(size));
  return GST_MEMORY_CAST(share);
}

void gst_cuda_overlap_pinned_allocator_finalize(GObject* object) {
  auto* self = reinterpret_cast<GstCudaOverlapPinnedAllocator*>(object);
  delete self->state;
  G_OBJECT_CLASS(gst_cuda_overlap_pinned_allocator_parent_class)->finalize(object);
}

void gst_cuda_overlap_pinned_allocator_class_init(GstCudaOverlapPinnedAllocatorClass* klass) {
  GST_ALLOCATOR_CLASS(klass)->alloc = pinned_alloc;
  GST_ALLOCATOR_CLASS(klass)->free = pinned_free;
  G_OBJECT_CLASS(klass)->finalize = gst_cuda_overlap_pinned_allocator_finalize;
}

void gst_cuda_overlap_pinned_allocator_init(GstCudaOverlapPinnedAllocator* self) {
  GstAllocator* allocator = GST_ALLOCATOR_CAST(self);
  allocator->mem_type = GST_CUDA_OVERLAP_PINNED_MEMORY_TYPE;
  allocator->mem_map = pinned_map;
  allocator->mem_unmap = pinned_unmap;
  allocator->mem_copy = pinned_copy;
  allocator->mem_share = pinned_share;
  // Custom: gst_allocator_alloc(NULL, ...) must never pick this allocator.
  GST_OBJECT_FLAG_SET(allocator, GST_ALLOCATOR_FLAG_CUSTOM_ALLOC);
  self->state = new AllocatorState();
}

// Allocates `count` blocks of `bytes` now, for pinned_alloc to hand out.
// Throws cudaoverlap::Error (what is reserved so far stays reserved).
void reserve_pinned(GstAllocator* allocator, guint count, gsize bytes) {
  auto* state = reinterpret_cast<GstCudaOverlapPinnedAllocator*>(allocator)->state;
  for (guint i = 0; i < count; ++i) {
    auto buffer = state->device->alloc_pinned(bytes);
    std::lock_guard<std::mutex> lock(state->mutex);
    state->spare.push_back(std::move(buffer));
  }
}

}  // namespace

namespace cudaoverlap {

GstAllocator* pinned_allocator_new(std::shared_ptr<Device> device) {
  auto* self = static_cast<GstCudaOverlapPinnedAllocator*>(
      g_object_new(gst_cuda_overlap_pinned_allocator_get_type(), nullptr));
  self->state->device = std::move(device);
  gst_object_ref_sink(self);
  return GST_ALLOCATOR_CAST(self);
}

bool buffer_is_pinned(GstBuffer* buffer, const Device* device, uint64_t* memory_id) {
  if (memory_id) *memory_id = 0;
  const guint n = gst_buffer_n_memory(buffer);
  if (n == 0) return false;
  for (guint i = 0; i < n; ++i) {
    GstMemory* mem = gst_buffer_peek_memory(buffer, i);
    if (!gst_memory_is_type(mem, GST_CUDA_OVERLAP_PINNED_MEMORY_TYPE)) return false;
    auto* allocator = reinterpret_cast<GstCudaOverlapPinnedAllocator*>(mem->allocator);
    if (allocator->state->device.get() != device) return false;
  }
  // One identity names one memory; a frame spread over several has none.
  if (memory_id && n == 1)
    *memory_id = reinterpret_cast<PinnedMemory*>(gst_buffer_peek_memory(buffer, 0))->id;
  return true;
}

GstBufferPool* pinned_pool_new(std::shared_ptr<Device> device, GstCaps* caps, guint min_buffers,
                               std::string* problem) {
  GstVideoInfo info;
  PixelFormat format;
  if (!video_info_from_caps(caps, &info, &format)) return nullptr;
  GstAllocator* allocator = pinned_allocator_new(std::move(device));
  // The pool allocates its minimum when upstream activates it, where a
  // failure is a bare not-negotiated: allocate it here instead, where it can
  // be said. A page more than a frame covers any alignment asked for.
  const gsize block = GST_VIDEO_INFO_SIZE(&info) + 4096;
  try {
    reserve_pinned(allocator, min_buffers, block);
  } catch (const Error& e) {
    gst_object_unref(allocator);
    if (problem)
      *problem =
          "the pool of pinned memory offered upstream (" + std::to_string(min_buffers) +
          " buffers of " + std::to_string(block) + " bytes, " +
          std::to_string((static_cast<uint64_t>(min_buffers) * block + (1 << 20) - 1) >> 20) +
          " MiB in all) cannot be allocated: " + e.what() +
          "; upstream writes into its own memory instead, which is staged or pinned once "
          "(a smaller ring-size leaves more pinned memory)";
    return nullptr;
  }
  // A video pool parses raw video caps only; a Bayer mosaic's is a plain one.
  // Raw video's hands out the buffer released last (recent_first_pool.h).
  GstBufferPool* pool = is_bayer(format) ? gst_buffer_pool_new() : recent_first_pool_new();
  GstStructure* config = gst_buffer_pool_get_config(pool);
  gst_buffer_pool_config_set_params(config, caps, GST_VIDEO_INFO_SIZE(&info), min_buffers, 0);
  gst_buffer_pool_config_set_allocator(config, allocator, nullptr);
  if (!is_bayer(format))
    gst_buffer_pool_config_add_option(config, GST_BUFFER_POOL_OPTION_VIDEO_META);
  gst_object_unref(allocator);
  if (!gst_buffer_pool_set_config(pool, config)) {
    gst_object_unref(pool);
    return nullptr;
  }
  return pool;
}

namespace {

// The raw video (or Bayer mosaic) an ALLOCATION query asks about; false for
// other caps.
bool allocation_video(GstQuery* query, GstCaps** caps, bool* need_pool, GstVideoInfo* info,
                      PixelFormat* format) {
  gboolean need = FALSE;
  gst_query_parse_allocation(query, caps, &need);
  *need_pool = need != FALSE;
  return video_info_from_caps(*caps, info, format);
}

// The answer's pool (none when null) and, for raw video, GstVideoMeta.
void add_pool_and_meta(GstQuery* query, GstBufferPool* pool, const GstVideoInfo& info,
                       PixelFormat format, guint min_buffers) {
  gst_query_add_allocation_pool(query, pool, GST_VIDEO_INFO_SIZE(&info), min_buffers, 0);
  // A GstVideoMeta describes raw video only.
  if (!is_bayer(format)) gst_query_add_allocation_meta(query, GST_VIDEO_META_API_TYPE, nullptr);
}

}  // namespace

bool propose_pinned_pool(GstQuery* query, const std::shared_ptr<Device>& device, guint min_buffers,
                         std::string* problem) {
  GstCaps* caps = nullptr;
  bool need_pool = false;
  GstVideoInfo info;
  PixelFormat format;
  if (!allocation_video(query, &caps, &need_pool, &info, &format)) return false;
  GstBufferPool* pool = pinned_pool_new(device, caps, min_buffers, problem);
  if (pool == nullptr) return false;
  // The pool's own allocator, so that memory upstream allocates beside the
  // pool is pinned too, and the pool's reserve is found by either.
  GstAllocator* allocator = nullptr;
  GstStructure* config = gst_buffer_pool_get_config(pool);
  gst_buffer_pool_config_get_allocator(config, &allocator, nullptr);
  GstAllocationParams params;
  gst_allocation_params_init(&params);
  gst_query_add_allocation_param(query, allocator, &params);
  gst_structure_free(config);
  add_pool_and_meta(query, pool, info, format, min_buffers);
  gst_object_unref(pool);
  return true;
}

bool propose_video_pool(GstQuery* query, guint min_buffers) {
  GstCaps* caps = nullptr;
  bool need_pool = false;
  GstVideoInfo info;
  PixelFormat format;
  if (!allocation_video(query, &caps, &need_pool, &info, &format)) return false;
  GstBufferPool* pool = nullptr;
  if (need_pool) {
    // A video pool parses raw video caps only; a mosaic's is a plain one.
    pool = is_bayer(format) ? gst_buffer_pool_new() : gst_video_buffer_pool_new();
    GstStructure* config = gst_buffer_pool_get_config(pool);
    gst_buffer_pool_config_set_params(config, caps, GST_VIDEO_INFO_SIZE(&info), min_buffers, 0);
    if (!is_bayer(format))
      gst_buffer_pool_config_add_option(config, GST_BUFFER_POOL_OPTION_VIDEO_META);
    if (!gst_buffer_pool_set_config(pool, config)) {
      gst_object_unref(pool);
      return false;
    }
  }
  add_pool_and_meta(query, pool, info, format, min_buffers);
  if (pool) gst_object_unref(pool);
  return true;
}

}  // namespace cudaoverlap
