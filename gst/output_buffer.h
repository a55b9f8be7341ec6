// Turns the engine's finished frames into GstBuffers for the src pad.
//
// The normal path wraps the slot's pinned output memory without a copy; the
// slot returns to the ring when downstream drops the buffer. Downstream may
// hold buffers for a long time, though (basesink's last-sample, encoders
// with lookahead, a deep queue): if it held every slot, submit() would wait
// forever. So at most ring-size - 1 wrapped buffers are out at once; past
// that the frame is copied into ordinary memory and its slot freed at once,
// which keeps one slot moving whatever downstream does.
#pragma once

#include <gst/gst.h>

#include <memory>

#include "engine.h"
#include "video_mapping.h"

namespace cudaoverlap {

// What travels with a frame through the engine (InputFrame::user): the
// input buffer, whose timestamps, flags and metas go onto the output, and
// how to wrap the output.
struct FrameInfo {
  explicit FrameInfo(GstBuffer* buffer) : input(buffer) {}
  ~FrameInfo() {
    if (input) gst_buffer_unref(input);
  }
  FrameInfo(const FrameInfo&) = delete;
  FrameInfo& operator=(const FrameInfo&) = delete;

  // Owned; dropped by the src task as soon as its metadata is copied, so
  // upstream's buffers are not held while downstream holds the output.
  GstBuffer* input;
  uint64_t epoch = 0;
  std::shared_ptr<const OutputFormat> format;
};

struct OutputBufferCount;  // output_buffer.cpp

class OutputBuffers {
 public:
  OutputBuffers();

  // Streaming thread, when an engine of `ring_size` slots is made.
  void set_ring_size(int ring_size);

  // Src pad task. A buffer holding `frame` laid out as `format`, with the
  // timestamps and flags of `metadata`, and its metas as far as they still
  // hold on the output (geometry_transform.h). `copied` says which path was
  // taken.
  GstBuffer* make(OutputFrame frame, const OutputFormat& format, GstBuffer* metadata, bool* copied);

  // Wrapped buffers downstream still holds (for tests and logs).
  int held() const;

 private:
  // Shared with every wrapped buffer, which may outlive the element.
  std::shared_ptr<OutputBufferCount> count_;
};

}  // namespace cudaoverlap
