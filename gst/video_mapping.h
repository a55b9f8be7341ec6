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
#include "geometry_transform.h"
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
  GeometryTransform geometry;  // what the kernel does to positions: for metas
};

// The caps on the other side of the element for `kernel` with `params`,
// given `caps` on the pad of direction `direction`. convert takes any of
// the formats at the same size (format, colorimetry and chroma-site are
// dropped); copy, invert, balance, blur and edge keep format and size, so they give `caps` back;
// flip swaps width and height (and inverts a fixed pixel-aspect-ratio) for the directions that swap
// axes, as videoflip does. Transfer full.
GstCaps* transform_caps(KernelId kernel, const KernelParams& params, GstPadDirection direction,
                        GstCaps* caps);

// The caps of `pad` that the peer of `other` (the element's other pad) can
// take through `kernel`, limited to the pad templates and to `filter`.
// Transfer full. Answers the CAPS query of either pad.
GstCaps* query_caps_through(KernelId kernel, const KernelParams& params, GstPad* pad, GstPad* other,
                            GstCaps* filter);

// ACCEPT_CAPS: `caps` are within `allowed` (from query_caps_through) and,
// when fixed, describe a frame the engine can take.
bool caps_acceptable(GstCaps* caps, GstCaps* allowed);

// Answers an ALLOCATION query with a plain system-memory video pool of at
// least `min_buffers` buffers and GstVideoMeta support. False when the
// query's caps are not raw video. (A later change makes the pool pinned.)
bool propose_video_pool(GstQuery* query, guint min_buffers);

// The output video info `kernel` with `params` produces from `in`. False
// when it cannot. For convert, without downstream's view: the input's format.
bool output_info_for(KernelId kernel, const KernelParams& params, const GstVideoInfo& in,
                     GstVideoInfo* out);

// Like output_info_for, but convert asks the peer of `srcpad` what it takes:
// the input's own format and colorimetry when downstream accepts them (no
// conversion), else downstream's first preference fixated towards the
// input's size and rate; between two YUV formats the input's colorimetry is
// kept unless downstream fixes one. False when downstream takes nothing.
bool negotiate_output_info(KernelId kernel, const KernelParams& params, const GstVideoInfo& in,
                           GstPad* srcpad, GstVideoInfo* out);

// Fills the parameters that come from the caps rather than from properties
// (convert: each side's colorimetry) and runs the kernel's check with all of
// them. Empty on success, else a sentence saying what is not supported.
std::string complete_kernel_params(KernelId kernel, const GstVideoInfo& in, const GstVideoInfo& out,
                                   KernelParams* params);

// negotiate_output_info then complete_kernel_params: the output info and
// the full parameters for `in`, or a sentence saying why there are none.
std::string negotiate_output(KernelId kernel, const GstVideoInfo& in, GstPad* srcpad,
                             KernelParams* params, GstVideoInfo* out);

// Whether two output infos need the same engine (format, size, colorimetry).
bool same_output(const GstVideoInfo& a, const GstVideoInfo& b);

}  // namespace cudaoverlap
