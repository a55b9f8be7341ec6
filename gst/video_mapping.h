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

#include <memory>
#include <string>

#include "frame_layout.h"
#include "geometry_transform.h"
#include "operation_registry.h"

namespace cudaoverlap {

// The caps of a pad template: raw video in system memory in every format of
// the table (video_format.h), and on the sink pad also its Bayer mosaics
// (video/x-bayer). Transfer full.
GstCaps* template_caps(GstPadDirection direction);

// False when the engine has no equivalent of `format` (raw video only).
bool pixel_format_from_gst(GstVideoFormat format, PixelFormat* out);
// GStreamer's name for the same format; GST_VIDEO_FORMAT_UNKNOWN for a
// Bayer mosaic, which raw video has no name for.
GstVideoFormat gst_format_of(PixelFormat format);

// The video info and the engine's format of fixed caps, raw video or a
// Bayer mosaic. A mosaic is laid out as bayer2rgb reads it, one byte per
// pixel in rows GST_ROUND_UP_4(width) apart: GRAY8's layout, so its info
// is GRAY8's with the caps' size, framerate and pixel aspect ratio, and
// only `format` says which mosaic it is. False when the engine takes
// neither.
bool video_info_from_caps(GstCaps* caps, GstVideoInfo* info, PixelFormat* format);
// The caps of such a pair. Transfer full.
GstCaps* caps_from_info(const GstVideoInfo& info, PixelFormat format);
// The format's name for messages: "NV12", "video/x-bayer rggb".
std::string format_name(const GstVideoInfo& info, PixelFormat format);

// The plane offsets, strides and size GStreamer assumes for `info` when a
// buffer carries no GstVideoMeta; `format` is the engine's for `info`.
FrameLayout layout_from_info(const GstVideoInfo& info, PixelFormat format);

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

// The caps on the other side of the element for `op`, given `caps` on the
// pad of direction `direction`: the formats the operation makes from (SINK)
// or makes (SRC) those of `caps`, structures it takes none of dropped; a
// format field it leaves alone stays as it came, so caps it keeps compare
// equal. Where the format is downstream's choice (convert), colorimetry and
// chroma-site go too; where the axes swap (flip's rotations), width and
// height swap and a fixed pixel-aspect-ratio is inverted, as videoflip does.
// Transfer full.
GstCaps* transform_caps(const Operation& op, GstPadDirection direction, GstCaps* caps);

// The caps of `pad` that the peer of `other` (the element's other pad) can
// take through `op`, limited to the pad templates and to `filter`.
// Transfer full. Answers the CAPS query of either pad.
GstCaps* query_caps_through(const Operation& op, GstPad* pad, GstPad* other, GstCaps* filter);

// ACCEPT_CAPS: `caps` are within `allowed` (from query_caps_through) and,
// when fixed, describe a frame the engine can take.
bool caps_acceptable(GstCaps* caps, GstCaps* allowed);

// Answers an ALLOCATION query with a plain system-memory video pool of at
// least `min_buffers` buffers and GstVideoMeta support. False when the
// query's caps are not raw video. (A later change makes the pool pinned.)
bool propose_video_pool(GstQuery* query, guint min_buffers);

// The output video info of an `op` whose format is not downstream's
// choice (negotiate_output_info asks downstream for the others). False
// when it cannot, and for a Bayer mosaic (`in_format`), which only convert
// takes.
bool output_info_for(const Operation& op, const GstVideoInfo& in, PixelFormat in_format,
                     GstVideoInfo* out);

// Like output_info_for, but where the format is downstream's choice asks
// the peer of `srcpad` what it takes: the input's own format and
// colorimetry when downstream accepts them (no conversion), else
// downstream's first preference fixated towards the input's size and rate,
// with the colorimetry videoconvert would give it when downstream fixes
// none and the input's caps had one (`in_colorimetry`). False when
// downstream takes nothing.
// Where downstream fixed the colorimetry, *out_caps (unless null) gets the
// caps it chose, to send as they are (else null: send `out`'s caps).
bool negotiate_output_info(const Operation& op, const GstVideoInfo& in, PixelFormat in_format,
                           bool in_colorimetry, GstPad* srcpad, GstVideoInfo* out,
                           GstCaps** out_caps = nullptr);

// The operation that turns `in` into `out`: `kernel` made with `params` and
// what the caps add (convert: each side's colorimetry), refused where it
// would mix interlaced fields, and checked by the operation itself. Null,
// with a sentence in *problem, when it cannot.
std::shared_ptr<const Operation> operation_for(const std::string& kernel, KernelParams params,
                                               const GstVideoInfo& in, PixelFormat in_format,
                                               const GstVideoInfo& out, std::string* problem);

// negotiate_output_info then operation_for: the output info and the
// operation for `in`, or a sentence saying why there are none.
std::string negotiate_output(const std::string& kernel, const KernelParams& params,
                             const GstVideoInfo& in, PixelFormat in_format, bool in_colorimetry,
                             GstPad* srcpad, std::shared_ptr<const Operation>* op,
                             GstVideoInfo* out, GstCaps** out_caps = nullptr);

}  // namespace cudaoverlap
