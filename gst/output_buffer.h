// Turns the engine's finished frames into GstBuffers for the src pad.
//
// The normal path wraps the slot's pinned output memory without a copy; the
// slot returns to the ring when downstream drops the buffer. Downstream may
// hold buffers for a long time, though (basesink's last-sample, encoders
// with lookahead, a deep queue): if it held every slot, submit() would wait
// forever. So at most ring-size - 1 wrapped buffers are out at once; past
// that the frame is copied into system memory and its slot freed at once,
// which keeps one slot moving whatever downstream does.
//
// A syncing sink holds its last sample and the one waiting for the clock,
// plus what a queue before it holds, so the copy path is taken in live
// pipelines too (a live source's and the element's latency near two frame
// periods). It has to be cheap: a copy that takes longer than the stream
// allows makes the frame late, and the element measures its own latency
// from such stays, reports more, and has the sink hold more buffers still.
// A 4K RGBA frame (33 MB) into freshly allocated memory took 20-28 ms on a
// GPU machine (the pages faulted in as they were written), and the stall
// kept coming back every ring-size frames for seconds. So copies go into
// buffers of a pool, which come back when downstream drops them, and are
// spread over threads (ParallelCopy). The pool keeps at most kPooledCopies
// (a downstream that holds more gets the rest in memory of their own, freed
// when dropped), and is let go when the element stops.
#pragma once

#include <gst/gst.h>

#include <memory>

#include "engine.h"
#include "parallel_copy.h"
#include "video_mapping.h"

namespace cudaoverlap {

// A buffer the engine writes one frame into on the device
// (InputFrame::destination, cuda_output.h), mapped for that writing until
// the frame is done. Unmapped and dropped with it unless taken.
class DeviceDestination {
 public:
  // Takes `buffer` and `frame`, its mapping.
  DeviceDestination(GstBuffer* buffer, const GstVideoFrame& frame)
      : buffer_(buffer), frame_(frame) {}
  ~DeviceDestination();
  DeviceDestination(const DeviceDestination&) = delete;
  DeviceDestination& operator=(const DeviceDestination&) = delete;

  // The planes to write, device addresses.
  ImageRef image(PixelFormat format) const { return image_from_frame(frame_, format); }
  // The buffer, unmapped, the frame written: the caller's. Once.
  GstBuffer* take();

 private:
  GstBuffer* buffer_;
  GstVideoFrame frame_;
};

// What travels with a frame through the engine (InputFrame::user): the
// input buffer, whose timestamps, flags and metas go onto the output, and
// how to wrap the output.
struct FrameInfo final : FrameUser {
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
  // Where the frame is written where it goes out in GStreamer's CUDA
  // memory; null: the slot's pinned output.
  std::unique_ptr<DeviceDestination> destination;
};

struct OutputBufferCount;  // output_buffer.cpp

class OutputBuffers {
 public:
  OutputBuffers();
  ~OutputBuffers();
  OutputBuffers(const OutputBuffers&) = delete;
  OutputBuffers& operator=(const OutputBuffers&) = delete;

  // Streaming thread, when an engine of `ring_size` slots is made.
  void set_ring_size(int ring_size);

  // Src pad task. A buffer holding `frame` laid out as `format`, with the
  // timestamps and flags of `metadata`, and its metas as far as they still
  // hold on the output (geometry_transform.h): the frame's
  // DeviceDestination's where it has one (its slot back in the ring at
  // once), else its slot wrapped or copied. `copied` says which path was
  // taken. Copies come from a pool of buffers of the format's size (made
  // anew when the size changes; a copy the pool cannot give gets memory of
  // its own). nullptr when no memory could be had for a copy or mapped
  // whole; the frame's slot is back in the ring either way.
  GstBuffer* make(OutputFrame frame, const OutputFormat& format, GstBuffer* metadata, bool* copied);

  // Src pad task, or whoever stops it once it stopped: lets the copies'
  // pool and threads go (copies downstream still holds are freed when
  // dropped). The next copy makes them anew.
  void drop_copies();

  // Wrapped buffers downstream still holds (for tests and logs).
  int held() const;

  // Buffers the copies' pool keeps at most.
  static constexpr guint kPooledCopies = 4;

 private:
  // Src pad task: a buffer of `size` bytes for a copy, from pool_ where it
  // can give one, else of its own; nullptr only when no memory could be had.
  GstBuffer* acquire_copy(size_t size);
  // Src pad task: the frame's slot wrapped, or copied where downstream
  // holds too many; make()'s nullptr.
  GstBuffer* from_slot(OutputFrame frame, const OutputFormat& format, bool* copied);
  // Src pad task: lets the pool go (a new size), keeping the copy threads.
  void drop_pool();

  // Shared with every wrapped buffer, which may outlive the element.
  std::shared_ptr<OutputBufferCount> count_;
  // The copy path's, made at its first copy; src pad task only (and the
  // destructor). A pool's buffers that downstream still holds keep it.
  GstBufferPool* pool_ = nullptr;
  size_t pool_size_ = 0;
  std::unique_ptr<ParallelCopy> copier_;
};

}  // namespace cudaoverlap
