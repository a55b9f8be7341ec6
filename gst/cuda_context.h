// The pipeline's CUDA context, shared with GStreamer's CUDA elements as
// they share theirs (a GstContext of type "gst.cuda.context"): the one a
// neighbour or the application gives, else this element's device's primary
// context (the one the CUDA runtime, and so the engine and applications'
// own CUDA code, use), wrapped and announced to the pipeline. Without
// gstreamer-cuda-1.0 (cuda_context_none.cpp) none is ever held and no CUDA
// memory is offered.
#pragma once

#include <gst/gst.h>

#include <memory>
#include <mutex>
#include <string>

#include "device_choice.h"

typedef struct _GstCudaContext GstCudaContext;

namespace cudaoverlap {

class SharedCudaContext {
 public:
  SharedCudaContext() = default;
  ~SharedCudaContext();
  SharedCudaContext(const SharedCudaContext&) = delete;
  SharedCudaContext& operator=(const SharedCudaContext&) = delete;

  // GstElement::set_context: keeps `context` when it is a CUDA context of
  // device `device_id` (-1: any) and none is held yet.
  void set(GstElement* element, GstContext* context, int device_id);
  // A neighbour's context query: answered (true) with the context held.
  bool answer(GstElement* element, GstQuery* query) const;
  // Holds the context of device `device_id`, found through the neighbours
  // and the application, else made from the device's primary context and
  // posted (have-context). Empty on success, else why not.
  std::string ensure(GstElement* element, int device_id);
  // NULL -> READY: where the element runs on one CUDA device
  // (`device_id`; -1: it does not), holds its context (ensure()); one that
  // cannot be had is an element warning, and no CUDA memory is offered
  // until the next try.
  void share(GstElement* element, int device_id);
  // Whether the pads offer GStreamer's CUDA memory for `device_id` (-1: not
  // one CUDA device): known before the context is taken, since gst-launch
  // links elements in NULL, as GStreamer's CUDA elements offer theirs; a
  // buffer of another context is refused when it comes (input_frame.h).
  bool offers_memory(int device_id) const;
  // Lets go of the context (READY -> NULL).
  void reset();

  // The context held, where it is device `device_id`'s: its CUcontext and
  // a reference that keeps it alive for as long as what is made in it.
  // Empty (the device's primary context) otherwise.
  CudaContextChoice choice(int device_id) const;

 private:
  void* handle() const;
  int held_device() const;  // under mutex_

  mutable std::mutex mutex_;
  GstCudaContext* context_ = nullptr;
  bool failed_ = false;  // the last share() took none
};

}  // namespace cudaoverlap
