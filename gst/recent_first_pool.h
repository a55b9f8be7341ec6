// A video buffer pool that hands out the buffer released last, not the one
// released first as GStreamer's own pools do.
//
// For the pinned pool offered upstream: a source that writes every frame
// then writes into the buffer whose upload just ended, whose cache lines
// are the most likely still to be in the caches, rather than into the one
// it filled longest ago; with ring-size + 2 buffers going round oldest
// first, the writer's cost per frame grew with the pool (docs/benchmarks.md,
// "A source that writes every frame").
//
// Only while the pool may grow (max-buffers 0, as offered): a pool with a
// maximum keeps GStreamer's order, so that an acquire waiting for a buffer
// is woken by each release as the base class wakes it.
#pragma once

#include <gst/gst.h>

namespace cudaoverlap {

// A new, unconfigured pool (configure it as a GstVideoBufferPool). Transfer
// full.
GstBufferPool* recent_first_pool_new();

}  // namespace cudaoverlap
