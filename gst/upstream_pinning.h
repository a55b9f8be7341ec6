// Pin-once for upstream memory that is not ours.
//
// A frame in pageable memory costs a staging copy into the ring's pinned
// memory before it can be uploaded. Most upstreams recycle a handful of
// memory blocks (buffer pools), and some push the very same block again and
// again (imagefreeze, a still picture): page-locking such a block once
// (Device::register_host) lets every later frame in it upload straight from
// where it is. Registering costs milliseconds (see `cudaoverlap-bench
// --staging`), so a block is pinned the second time it is seen, which leaves
// memory that is used once (freshly allocated per frame) to the staging copy.
//
// The registration lives in the GstMemory's qdata and is dropped, unpinning
// the pages, when the memory is freed: GStreamer calls qdata notifies before
// the allocator frees the memory. A block that cannot be pinned (its pages
// overlap a registered range, memory the OS will not lock) is remembered as
// such and staged without trying again. Only memory that stays at one address
// while it exists (system memory, fd memory kept mapped) is ever pinned: a
// dmabuf that is munmap'ed between frames is staged every time.
#pragma once

#include <gst/gst.h>

#include <cstdint>
#include <memory>

#include "device.h"
#include "frame_layout.h"

namespace cudaoverlap {

enum class UpstreamPin {
  kPinned,  // the planes lie in memory pinned for `device`: upload as is
  kStaged,  // first sighting, or not pinnable: stage it
};

// Streaming thread. `buffer` is mapped as `image`, laid out as `layout`'s
// format and size. Looks up, and on the second sighting creates, the
// registration of the buffer's memory for `device`. Buffers of more than one
// memory are staged. `memory_id`, if given, receives the registration's
// InputFrame::memory_id when kPinned (one per page-locking: memory freed and
// made again at the same address is registered, and named, anew), else 0.
UpstreamPin pin_upstream_memory(GstBuffer* buffer, const ImageRef& image, const FrameLayout& layout,
                                const std::shared_ptr<Device>& device,
                                uint64_t* memory_id = nullptr);

}  // namespace cudaoverlap
