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
#include <vector>

#include "frame_layout.h"
#include "geometry_transform.h"
#include "kernels/operation_registry.h"

namespace cudaoverlap {

// Caps of Bayer mosaics (the sink pad's, for convert).
inline constexpr const char* kBayerCaps = "video/x-bayer";
// GStreamer's CUDA memory (GST_CAPS_FEATURE_MEMORY_CUDA_MEMORY).
inline constexpr const char* kCudaMemoryFeature = "memory:CUDAMemory";
bool is_bayer_structure(const GstStructure* s);
// The table's formats of one kind: video/x-raw's, or video/x-bayer's.
std::vector<PixelFormat> formats_of_kind(bool bayer);
// The format of that kind called `name` in caps.
bool format_named(const char* name, bool bayer, PixelFormat* out);
// Sets a structure's format field: one string or a list of them.
void set_formats(GstStructure* s, const std::vector<PixelFormat>& formats);

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

// Empty when every plane of `frame` (from `x`, `y` of its picture, a
// crop's origin) lies inside the memory it was mapped from and every
// stride covers its row of pixels; otherwise a sentence naming the first
// plane that does not, for an error message.
std::string check_frame_extent(const GstVideoFrame& frame, const FrameLayout& geometry, int x = 0,
                               int y = 0);

// What the src pad sends for one input configuration: caps-level info and
// the engine's output layout (always GStreamer's default layout today).
struct OutputFormat {
  GstVideoInfo info;
  FrameLayout layout;
  bool default_layout = true;  // false would need a GstVideoMeta on each buffer
  GeometryTransform geometry;  // what the kernel does to positions: for metas
};

}  // namespace cudaoverlap
