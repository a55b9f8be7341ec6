// One input buffer mapped for Engine::submit(): checks that the buffer holds
// the whole frame its caps (or GstVideoMeta) describe, and unmaps on every
// path out of chain(). Sink side of the data flow; no engine calls here.
#pragma once

#include <gst/video/video.h>

#include <string>

#include "frame_layout.h"

namespace cudaoverlap {

class MappedInput {
 public:
  MappedInput() = default;
  MappedInput(const MappedInput&) = delete;
  MappedInput& operator=(const MappedInput&) = delete;
  ~MappedInput();

  // Maps `buffer` for reading as `info`; a GstVideoMeta of the caps' format
  // may describe a larger picture, whose top-left part is the frame, or
  // the part a GstVideoCropMeta places (videocrop and decoders send them
  // where ALLOCATION says we take them), of the caps' size. Returns an
  // empty string on success, else why the buffer cannot be a frame of
  // `info` (too small, a video meta that disagrees with the caps, strides
  // shorter than a row, a crop past the picture or splitting chroma pairs),
  // for an error message that continues "…describe: <reason>".
  // `cuda_context` (a CUcontext; builds with gstreamer-cuda-1.0): the
  // buffer is GStreamer's CUDA memory of that context, mapped for the
  // device (the planes are device addresses).
  std::string map(GstBuffer* buffer, const GstVideoInfo& info, const FrameLayout& geometry,
                  void* cuda_context = nullptr);
  // The mapped planes, honouring any GstVideoMeta strides and offsets and
  // any crop, at the caps' size.
  ImageRef image(PixelFormat format) const;

 private:
  GstVideoFrame frame_{};
  bool mapped_ = false;
  int width_ = 0;
  int height_ = 0;
  int crop_x_ = 0;  // the frame's origin in the picture (GstVideoCropMeta)
  int crop_y_ = 0;
};

// A new buffer in GStreamer's default layout for `info` (of `format`)
// holding the frame `buffer` carries, its crop meta applied, with its
// timestamps, flags and other metas; null, with why in `problem`, where it
// holds no such frame (MappedInput::map's sentence).
GstBuffer* copy_window(GstBuffer* buffer, const GstVideoInfo& info, PixelFormat format,
                       std::string* problem);

}  // namespace cudaoverlap
