// A GstAllocator whose memory is the device's pinned host memory
// (Device::alloc_pinned: cudaMallocHost on the cuda backend).
//
// Sink side of the data flow: the element answers the ALLOCATION query with
// a video buffer pool that allocates from here, so an upstream that honours
// the answer writes each frame straight into memory the GPU can DMA from, and
// the engine uploads it without a staging copy. The element recognises such
// buffers with gst_cuda_overlap_buffer_is_pinned().
#pragma once

#include <gst/gst.h>

#include <cstdint>
#include <memory>
#include <string>

#include "device.h"

G_BEGIN_DECLS

#define GST_CUDA_OVERLAP_PINNED_MEMORY_TYPE "CudaOverlapPinnedMemory"

G_END_DECLS

namespace cudaoverlap {

// A new allocator drawing from `device`. Transfer full. The allocator and
// every memory it made keep the device alive.
GstAllocator* pinned_allocator_new(std::shared_ptr<Device> device);

// True when every memory of `buffer` came from a pinned allocator of
// `device` (memory of another device's allocator is not DMA-able by ours).
// `memory_id`, if given, receives the InputFrame::memory_id of the buffer's
// memory when it is pinned and one memory, else 0.
bool buffer_is_pinned(GstBuffer* buffer, const Device* device, uint64_t* memory_id = nullptr);

// A video buffer pool for `caps` whose buffers are pinned memory from
// `device`, with GstVideoMeta support, at least `min_buffers` buffers, whose
// pinned memory is allocated here (so that activating the pool cannot run
// out of it). Transfer full; nullptr when `caps` are not raw video, or when
// the memory cannot be allocated: then `problem` (if given) says how much
// was asked for and why it failed.
GstBufferPool* pinned_pool_new(std::shared_ptr<Device> device, GstCaps* caps, guint min_buffers,
                               std::string* problem = nullptr);

// Answers an ALLOCATION query with a pinned pool of `device` (and its
// allocator, and GstVideoMeta support). False when the query's caps are not
// raw video, or the pool's memory cannot be allocated (`problem` says so);
// the caller then falls back to a plain pool.
bool propose_pinned_pool(GstQuery* query, const std::shared_ptr<Device>& device, guint min_buffers,
                         std::string* problem = nullptr);

// Answers an ALLOCATION query with a plain system-memory video pool of at
// least `min_buffers` buffers and GstVideoMeta support. False when the
// query's caps are not raw video. For when there is no pinned memory to offer.
bool propose_video_pool(GstQuery* query, guint min_buffers);

}  // namespace cudaoverlap
