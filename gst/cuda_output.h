// GStreamer's CUDA memory out of the src pad: whether downstream takes it,
// and the buffers the engine writes each frame into on the device
// (InputFrame::destination). Buffers come from downstream's CUDA pool where
// its ALLOCATION answer offers one in the pipeline's shared context, else
// from a pool of the element's own; neither ever stalls the streaming
// thread (a pool with nothing free lends to the next, the last one grows).
// Without gstreamer-cuda-1.0 downstream never takes CUDA memory from us.
#pragma once

#include <gst/video/video.h>

#include <memory>
#include <mutex>
#include <string>

#include "output_buffer.h"

namespace cudaoverlap {

// Whether the peer of `srcpad` takes `caps` (fixed, system memory) in
// GStreamer's CUDA memory: a structure of its caps names that memory (a
// peer that takes ANY caps, or raw video in any memory, gets system
// memory).
bool downstream_takes_cuda_memory(GstPad* srcpad, GstCaps* caps);

// `caps` with every structure in GStreamer's CUDA memory. Transfer full.
GstCaps* caps_with_cuda_memory(GstCaps* caps);

// The pools frames going out in CUDA memory are written into. Its own
// pool is made with the caps, on the streaming thread; downstream's is
// asked for on the src pad task once the CAPS event went out (downstream
// answers ALLOCATION for caps it has been sent, in data order, as
// GstBaseTransform's neighbours expect), and used for the frames
// submitted from then on.
class CudaOutputPool {
 public:
  CudaOutputPool() = default;
  ~CudaOutputPool();
  CudaOutputPool(const CudaOutputPool&) = delete;
  CudaOutputPool& operator=(const CudaOutputPool&) = delete;

  // Streaming thread, when the output caps (fixed, in CUDA memory) change:
  // lets the pools of the old caps go and makes one of its own in
  // `context` (a GstCudaContext) with `min_buffers` ready, unbounded.
  // Empty on success, else why not.
  std::string configure(GstCaps* caps, void* context, guint min_buffers);
  bool configured() const;

  // Src pad task, right after pushing a CAPS event of `caps`: where they
  // are the caps configured, asks downstream's ALLOCATION for them and
  // keeps its pool where it is a CUDA pool of the same context.
  void ask_downstream(GstPad* srcpad, GstCaps* caps);
  // Whether frames go into downstream's pool (for tests and logs).
  bool downstream_pool() const;

  // Streaming thread: a buffer for one frame of the caps configured,
  // mapped for writing on the device (the planes are device addresses):
  // downstream's pool first where it has one free, else our own; null
  // when no memory could be had.
  std::unique_ptr<DeviceDestination> acquire();

  // Lets both pools go (buffers downstream still holds are freed as they
  // come back).
  void reset();

 private:
  mutable std::mutex mutex_;  // guards the fields below; no call out under it
  GstBufferPool* downstream_ = nullptr;
  GstBufferPool* own_ = nullptr;
  GstCaps* caps_ = nullptr;
  void* context_ = nullptr;  // GstCudaContext, referenced while configured
  GstVideoInfo info_;
};

}  // namespace cudaoverlap
