// Caps negotiation through an operation: the caps either pad can take,
// ACCEPT_CAPS, and the output info and operation for an input's caps,
// asking downstream where the output format is its choice.
#pragma once

#include <gst/video/video.h>

#include <memory>
#include <string>

#include "kernels/operation_registry.h"
#include "video_mapping.h"

namespace cudaoverlap {

// The caps on the other side of the element for `op`, given `caps` on the
// pad of direction `direction`: the formats the operation makes from (SINK)
// or makes (SRC) those of `caps`, structures it takes none of dropped; a
// format field it leaves alone stays as it came, so caps it keeps compare
// equal. Where the format is downstream's choice (convert), colorimetry and
// chroma-site go too; where the axes swap (flip's rotations), width and
// height swap and a fixed pixel-aspect-ratio is inverted, as videoflip does.
// Transfer full.
GstCaps* transform_caps(const Operation& op, GstPadDirection direction, GstCaps* caps);

// `caps` in the memory frames may be in on either side:
// system memory, and GStreamer's CUDA memory too where `cuda` (first, so
// that a neighbour that has it keeps frames on the GPU), for raw video but
// Bayer mosaics, which GStreamer's CUDA elements neither make nor take.
// Either side's memory is independent of the other's. Transfer full.
GstCaps* in_memories(GstCaps* caps, bool cuda);

// Whether fixed `caps` are in GStreamer's CUDA memory.
bool caps_in_cuda_memory(GstCaps* caps);

// The caps of `pad` that the peer of `other` (the element's other pad) can
// take through `op`, limited to the pad templates and to `filter`; CUDA
// memory on both sides too where `cuda` (in_memories). Transfer full.
// Answers the CAPS query of either pad.
GstCaps* query_caps_through(const Operation& op, GstPad* pad, GstPad* other, GstCaps* filter,
                            bool cuda = false);

// ACCEPT_CAPS: `caps` are within `allowed` (from query_caps_through) and,
// when fixed, describe a frame the engine can take.
bool caps_acceptable(GstCaps* caps, GstCaps* allowed);

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
// caps it chose, to send as they are (else null: send `out`'s caps), in
// the memory it chose: GStreamer's CUDA memory too where `cuda`.
bool negotiate_output_info(const Operation& op, const GstVideoInfo& in, PixelFormat in_format,
                           bool in_colorimetry, GstPad* srcpad, bool cuda, GstVideoInfo* out,
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
                             GstPad* srcpad, bool cuda, std::shared_ptr<const Operation>* op,
                             GstVideoInfo* out, GstCaps** out_caps = nullptr);

}  // namespace cudaoverlap
