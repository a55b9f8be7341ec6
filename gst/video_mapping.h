// Translation between GStreamer's description of raw video (caps,
// GstVideoInfo, mapped GstVideoFrames) and the engine's (PixelFormat,
// FrameLayout, ImageRef).
//
// The element calls these at the two ends of the data flow: on the sink side
// to describe each mapped input frame to Engine::submit(), and on the src
// side to lay out the engine's output exactly as GStreamer's default layout
// for the src caps, so a downstream without GstVideoMeta support needs no
// copy. Nothing here holds state or calls into the engine.
#pragma once

#include <gst/video/video.h>

#include <string>

#include "frame_layout.h"
#include "kernel.h"

namespace cudaoverlap {

// The formats of both pad templates, in caps syntax.
#define GST_CUDA_OVERLAP_FORMATS "{ RGBA, BGRA, RGBx, BGRx, ARGB, ABGR, NV12, I420, GRAY8 }"

// False when the engine has no equivalent of `format`.
bool pixel_format_from_gst(GstVideoFormat format, PixelFormat* out);

// The plane offsets, strides and size GStreamer assumes for `info` when a
// buffer carries no GstVideoMeta. `info` must hold a supported format.
FrameLayout layout_from_info(const GstVideoInfo& info);

// Views of the planes of a frame mapped with gst_video_frame_map(), which
// already honours any GstVideoMeta (strides and offsets).
ImageRef image_from_frame(const GstVideoFrame& frame, PixelFormat format);

// Empty when every plane of `frame` lies inside the memory it was mapped
// from and every stride covers its row of pixels; otherwise a sentence
// naming the first plane that does not, for an error message.
std::string check_frame_extent(const GstVideoFrame& frame, const FrameLayout& geometry);

// What the src pad sends for one input configuration: caps-level info and
// the engine's output layout (always GStreamer's default layout today).
struct OutputFormat {
  GstVideoInfo info;
  FrameLayout layout;
  bool default_layout = true;  // false would need a GstVideoMeta on each buffer
};

// The caps on the other side of the element for `kernel`, given `caps` on
// the pad of direction `direction`. copy and invert keep format and size, so
// they give `caps` back; kernels that scale or convert will differ here.
// Transfer full.
GstCaps* transform_caps(KernelId kernel, GstPadDirection direction, GstCaps* caps);

// The caps of `pad` that the peer of `other` (the element's other pad) can
// take through `kernel`, limited to the pad templates and to `filter`.
// Transfer full. Answers the CAPS query of either pad.
GstCaps* query_caps_through(KernelId kernel, GstPad* pad, GstPad* other, GstCaps* filter);

// ACCEPT_CAPS: `caps` are within `allowed` (from query_caps_through) and,
// when fixed, describe a frame the engine can take.
bool caps_acceptable(GstCaps* caps, GstCaps* allowed);

// Answers an ALLOCATION query with a plain system-memory video pool of at
// least `min_buffers` buffers and GstVideoMeta support. False when the
// query's caps are not raw video. (A later change makes the pool pinned.)
bool propose_video_pool(GstQuery* query, guint min_buffers);

// The output video info `kernel` produces from `in`. False when it cannot.
bool output_info_for(KernelId kernel, const GstVideoInfo& in, GstVideoInfo* out);

}  // namespace cudaoverlap
