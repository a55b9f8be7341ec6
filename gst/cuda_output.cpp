// See cuda_output.h.
#include "cuda_output.h"

#include <utility>

#include "video_mapping.h"

#ifdef CUDAOVERLAP_HAVE_GST_CUDA
#include <gst/cuda/gstcudabufferpool.h>
#include <gst/cuda/gstcudacontext.h>
#include <gst/cuda/gstcudamemory.h>
#endif

namespace cudaoverlap {

GstCaps* caps_with_cuda_memory(GstCaps* caps) {
  GstCaps* cuda = gst_caps_copy(caps);
  for (guint i = 0; i < gst_caps_get_size(cuda); ++i)
    gst_caps_set_features(cuda, i, gst_caps_features_new(kCudaMemoryFeature, nullptr));
  return cuda;
}

#ifdef CUDAOVERLAP_HAVE_GST_CUDA

bool downstream_takes_cuda_memory(GstPad* srcpad, GstCaps* caps) {
  GstCaps* peer = gst_pad_peer_query_caps(srcpad, nullptr);
  GstCaps* cuda = caps_with_cuda_memory(caps);
  bool takes = false;
  // Structures that name CUDA memory; not those of any memory
  // (videocrop's, say, which then needs a crop meta downstream).
  for (guint i = 0; i < gst_caps_get_size(peer) && !takes; ++i) {
    const GstCapsFeatures* features = gst_caps_get_features(peer, i);
    if (features == nullptr || gst_caps_features_is_any(features) ||
        !gst_caps_features_contains(features, kCudaMemoryFeature))
      continue;
    GstCaps* one = gst_caps_copy_nth(peer, i);
    takes = gst_caps_can_intersect(one, cuda);
    gst_caps_unref(one);
  }
  gst_caps_unref(cuda);
  gst_caps_unref(peer);
  return takes;
}

namespace {

// A CUDA pool of `context` configured for `caps` with GstVideoMeta, `min`
// to `max` buffers, and active; null when it would not take that.
GstBufferPool* activate(GstBufferPool* pool, GstCaps* caps, guint size, guint min, guint max) {
  GstStructure* config = gst_buffer_pool_get_config(pool);
  gst_buffer_pool_config_set_params(config, caps, size, min, max);
  gst_buffer_pool_config_add_option(config, GST_BUFFER_POOL_OPTION_VIDEO_META);
  if (!gst_buffer_pool_set_config(pool, config) || !gst_buffer_pool_set_active(pool, TRUE)) {
    gst_object_unref(pool);
    return nullptr;
  }
  return pool;
}

// Downstream's first pool in `query`, where it is a CUDA pool of `context`.
GstBufferPool* downstream_cuda_pool(GstQuery* query, GstCudaContext* context, guint* min,
                                    guint* max) {
  if (gst_query_get_n_allocation_pools(query) == 0) return nullptr;
  GstBufferPool* pool = nullptr;
  guint size = 0;
  gst_query_parse_nth_allocation_pool(query, 0, &pool, &size, min, max);
  if (pool != nullptr && (!GST_IS_CUDA_BUFFER_POOL(pool) ||
                          GST_CUDA_BUFFER_POOL(pool)->context == nullptr ||
                          gst_cuda_context_get_handle(GST_CUDA_BUFFER_POOL(pool)->context) !=
                              gst_cuda_context_get_handle(context))) {
    gst_object_unref(pool);
    pool = nullptr;
  }
  return pool;
}

}  // namespace

std::string CudaOutputPool::configure(GstCaps* caps, void* context, guint min_buffers) {
  reset();
  auto* cuda_context = static_cast<GstCudaContext*>(context);
  if (cuda_context == nullptr) return "no CUDA context is shared with the pipeline";
  GstVideoInfo info;
  if (!gst_video_info_from_caps(&info, caps)) return "the output caps describe no video frame";
  const guint size = static_cast<guint>(GST_VIDEO_INFO_SIZE(&info));
  // Unbounded: a downstream that holds many buffers gets more, rather than
  // the streaming thread waiting for one.
  GstBufferPool* own = activate(gst_cuda_buffer_pool_new(cuda_context), caps, size, min_buffers, 0);
  if (own == nullptr)
    return "no pool of GStreamer's CUDA memory could be made for " + std::to_string(size) +
           "-byte frames";
  std::lock_guard<std::mutex> lock(mutex_);
  own_ = own;
  caps_ = gst_caps_ref(caps);
  context_ = gst_object_ref(cuda_context);
  info_ = info;
  return {};
}

bool CudaOutputPool::configured() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return own_ != nullptr;
}

bool CudaOutputPool::downstream_pool() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return downstream_ != nullptr;
}

void CudaOutputPool::ask_downstream(GstPad* srcpad, GstCaps* caps) {
  GstCaps* configured = nullptr;
  GstCudaContext* context = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (caps_ == nullptr || downstream_ != nullptr || !gst_caps_is_equal(caps, caps_)) return;
    configured = gst_caps_ref(caps_);
    context = static_cast<GstCudaContext*>(gst_object_ref(context_));
  }
  // Downstream's pool where it offers one of our context, as
  // GstBaseTransform's decide_allocation takes it; it may be bounded, so
  // our own stands behind it.
  GstBufferPool* pool = nullptr;
  GstQuery* query = gst_query_new_allocation(configured, TRUE);
  if (gst_pad_peer_query(srcpad, query)) {
    guint min = 0, max = 0;
    if (GstBufferPool* offered = downstream_cuda_pool(query, context, &min, &max))
      pool = activate(offered, configured,
                      static_cast<guint>(GST_VIDEO_INFO_SIZE(&info_)), min, max);
  }
  gst_query_unref(query);
  bool taken = false;
  if (pool != nullptr) {
    std::lock_guard<std::mutex> lock(mutex_);
    // Unless the caps changed meanwhile.
    taken = caps_ != nullptr && gst_caps_is_equal(caps_, configured) && downstream_ == nullptr;
    if (taken) downstream_ = pool;
  }
  if (pool != nullptr && !taken) {
    gst_buffer_pool_set_active(pool, FALSE);
    gst_object_unref(pool);
  }
  gst_caps_unref(configured);
  gst_object_unref(context);
}

std::unique_ptr<DeviceDestination> CudaOutputPool::acquire() {
  GstBufferPool* downstream = nullptr;
  GstBufferPool* own = nullptr;
  GstVideoInfo info;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (own_ == nullptr) return nullptr;
    own = GST_BUFFER_POOL(gst_object_ref(own_));
    if (downstream_) downstream = GST_BUFFER_POOL(gst_object_ref(downstream_));
    info = info_;
  }
  GstBuffer* buffer = nullptr;
  GstBufferPoolAcquireParams params{};
  params.flags = GST_BUFFER_POOL_ACQUIRE_FLAG_DONTWAIT;
  if (downstream == nullptr ||
      gst_buffer_pool_acquire_buffer(downstream, &buffer, &params) != GST_FLOW_OK)
    if (gst_buffer_pool_acquire_buffer(own, &buffer, nullptr) != GST_FLOW_OK) buffer = nullptr;
  if (downstream) gst_object_unref(downstream);
  gst_object_unref(own);
  if (buffer == nullptr) return nullptr;
  GstVideoFrame frame;
  if (!gst_video_frame_map(&frame, &info, buffer,
                           static_cast<GstMapFlags>(GST_MAP_WRITE | GST_MAP_CUDA))) {
    gst_buffer_unref(buffer);
    return nullptr;
  }
  return std::make_unique<DeviceDestination>(buffer, frame);
}

#else  // without gstreamer-cuda-1.0

bool downstream_takes_cuda_memory(GstPad*, GstCaps*) { return false; }

std::string CudaOutputPool::configure(GstCaps*, void*, guint) {
  return "this build has no GStreamer CUDA memory";
}

bool CudaOutputPool::configured() const { return false; }
bool CudaOutputPool::downstream_pool() const { return false; }
void CudaOutputPool::ask_downstream(GstPad*, GstCaps*) {}
std::unique_ptr<DeviceDestination> CudaOutputPool::acquire() { return nullptr; }

#endif

void CudaOutputPool::reset() {
  GstBufferPool* pools[2] = {};
  GstCaps* caps = nullptr;
  void* context = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    pools[0] = std::exchange(downstream_, nullptr);
    pools[1] = std::exchange(own_, nullptr);
    caps = std::exchange(caps_, nullptr);
    context = std::exchange(context_, nullptr);
  }
  for (GstBufferPool* pool : pools) {
    if (pool == nullptr) continue;
    gst_buffer_pool_set_active(pool, FALSE);
    gst_object_unref(pool);
  }
  if (caps) gst_caps_unref(caps);
  if (context) gst_object_unref(context);
}

CudaOutputPool::~CudaOutputPool() { reset(); }

}  // namespace cudaoverlap
