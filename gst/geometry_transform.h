// What a kernel does to positions in the picture, applied to the things
// that carry positions: metas on the way down (a region of interest on a
// rotated frame must move with the pixels) and navigation events on the way
// up (a click on the flipped output lands on the input pixel it shows).
//
// Src side of the data flow: the src pad task copies each input buffer's
// metas onto its output buffer through transform_metas(); the src pad's
// event handler maps NAVIGATION events back through navigation_to_input().
// The rules follow GStreamer's video filters: metas without tags are
// copied; metas tagged as describing positions (size, orientation) are
// transformed where we know how (GstVideoRegionOfInterestMeta) and dropped
// otherwise when the kernel moves pixels; metas tagged colorspace are
// dropped when the output's format or colorimetry differs; metas tagged
// memory never travel (the output is other memory); GstVideoMeta never
// travels (the output is in GStreamer's default layout).
#pragma once

#include <gst/gst.h>

#include "kernels/kernel_params.h"

namespace cudaoverlap {

struct GeometryTransform {
  FlipDirection flip = FlipDirection::kIdentity;
  // The input's window: its origin in the input frame (the crop's left
  // and top) and its size.
  int crop_left = 0;
  int crop_top = 0;
  int in_width = 0;
  int in_height = 0;
  // The picture's size where the kernel scales (after the flip); 0: the
  // size the flip leaves. And its place in the output, where borders
  // surround it (add-borders).
  int scaled_width = 0;
  int scaled_height = 0;
  int picture_x = 0;
  int picture_y = 0;
  bool colours_change = false;  // the output has another format or colorimetry

  int flipped_width() const { return flip_swaps_size(flip) ? in_height : in_width; }
  int flipped_height() const { return flip_swaps_size(flip) ? in_width : in_height; }
  int out_width() const { return scaled_width > 0 ? scaled_width : flipped_width(); }
  int out_height() const { return scaled_height > 0 ? scaled_height : flipped_height(); }
  bool moves_pixels() const {
    return flip != FlipDirection::kIdentity || out_width() != flipped_width() ||
           out_height() != flipped_height() || crop_left != 0 || crop_top != 0 || picture_x != 0 ||
           picture_y != 0;
  }

  // Where the input point (x, y) ends up on the output, and back, in
  // continuous coordinates (pixel edges), as videocrop, videoflip and
  // videoscale map them: cropped, flipped, scaled, then placed.
  void to_output(double x, double y, double* out_x, double* out_y) const;
  void to_input(double x, double y, double* in_x, double* in_y) const;

 private:
  // The flip alone, onto a frame of the flipped size.
  void flip_to_output(double x, double y, double* out_x, double* out_y) const;
};

// Src pad task: adds to `to` the metas of `from` that still hold on the
// output, transformed by `geometry` (see the top of this file).
void transform_metas(GstBuffer* from, GstBuffer* to, const GeometryTransform& geometry);

// Src pad, upstream NAVIGATION event: the event with its pointer position
// mapped from the output to the input (a new reference when it had to be
// made writable). Events without a position are returned as they are.
// Takes `event`; returns transfer full.
GstEvent* navigation_to_input(GstEvent* event, const GeometryTransform& geometry);

}  // namespace cudaoverlap
