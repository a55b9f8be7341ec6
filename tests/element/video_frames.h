// Frames as the engine sees them, for the element tests that look into
// pixels: a mapped GstVideoFrame as an ImageRef, frames of one colour, and
// two samples compared byte for byte.
#pragma once

#include <gst/gst.h>
#include <gst/video/video.h>

#include <cstdint>
#include <string>

#include "kernels/video_format.h"

namespace cudaoverlap_test {

// "WxH".
std::string size_text(int w, int h);

// The engine's name for a GStreamer format (a test failure where none).
cudaoverlap::PixelFormat engine_format(GstVideoFormat format);

// The planes of a mapped frame, at its size.
cudaoverlap::ImageRef image_of(GstVideoFrame* frame);

// A frame of one colour: every colour component's samples `value` (on its
// depth's top bits), alpha opaque.
GstBuffer* uniform_frame(const GstVideoInfo& info, const uint32_t value[3]);

// Empty when two samples' frames have the same size and the same pixel
// bytes in every plane, else where they first differ.
std::string compare_samples(GstSample* a, GstSample* b);

}  // namespace cudaoverlap_test
