// The output size of an operation that scales (Operation::
// size_from_downstream), fixated among what downstream allows as
// videoconvertscale fixates it: the input's display aspect ratio is kept
// where downstream leaves room, by the width, the height or the
// pixel-aspect-ratio it leaves free, the input's own size preferred.
#pragma once

#include <gst/video/video.h>

namespace cudaoverlap {

// Fixates width, height and pixel-aspect-ratio of `s` (one structure of
// the caps downstream allows) for input `in`. Fields it cannot fix are
// left to gst_caps_fixate.
void fixate_size(const GstVideoInfo& in, GstStructure* s);

}  // namespace cudaoverlap
