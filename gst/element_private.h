// The cudaoverlap element's instance and private state, shared by its
// GObject half (gstcudaoverlap.cpp) and the loading of what its
// kernel=custom and chain properties name (element_kernels.cpp).
#pragma once

#include <gst/gst.h>

#include <memory>
#include <string>

#include "cuda_context.h"
#include "element_properties.h"
#include "gstcudaoverlap.h"
#include "kernels/chain/chain.h"
#include "kernels/kernel_params.h"
#include "kernels/operation.h"
#include "session.h"

struct GstCudaOverlapPrivate {
  // Properties. Guarded by the object lock; changed only in NULL and READY
  // but for the operations' parameters and kernel=custom's (pin-upstream-
  // memory lives in the session, which reads it per frame).
  gint kernel = cudaoverlap::DEFAULT_KERNEL;  // a GST_TYPE_CUDA_OVERLAP_KERNEL value
  int ring_size = cudaoverlap::DEFAULT_RING_SIZE;
  int bands = cudaoverlap::DEFAULT_BANDS;
  bool cuda_graphs = cudaoverlap::DEFAULT_CUDA_GRAPHS;
  GstCudaOverlapMode mode = cudaoverlap::DEFAULT_MODE;
  GstCudaOverlapBackend backend = cudaoverlap::DEFAULT_BACKEND;
  int device_id = cudaoverlap::DEFAULT_DEVICE_ID;
  std::string devices;  // empty: device_id alone
  guint n_threads = cudaoverlap::DEFAULT_N_THREADS;
  // The operations' parameters, by name; these may change while playing
  // where declared so (ParamSpec::while_playing).
  cudaoverlap::ParamValues parameters = cudaoverlap::default_parameters();
  std::string kernel_file;
  std::string kernel_source;
  GstStructure* kernel_params = nullptr;  // owned
  std::string kernel_entry = cudaoverlap::DEFAULT_KERNEL_ENTRY;
  std::string kernel_launch;
  // kernel=custom's parameters made from the five above when the element
  // starts (the file is read then).
  cudaoverlap::CustomKernelParams custom;
  // kernel=application: emits `process` (made in _init, for the element's
  // whole life; engines are stopped before it goes).
  std::shared_ptr<const cudaoverlap::ApplicationProcess> application;
  // chain: its text, the steps parsed from it, or why they could not be
  // (an error when the element starts).
  std::string chain_text;
  std::shared_ptr<const cudaoverlap::ChainSpec> chain;
  std::string chain_problem;
  // The operation the properties above make, for the caps queries; made
  // when first asked for after any of them changed (null until then).
  std::shared_ptr<const cudaoverlap::Operation> operation;

  ~GstCudaOverlapPrivate() {
    if (kernel_params) gst_structure_free(kernel_params);
  }

  // The pipeline's CUDA context, held from NULL->READY to READY->NULL on the
  // cuda backend with one device (the engine's device and its memory hold
  // their own references).
  cudaoverlap::SharedCudaContext cuda_context;
  // pin-upstream-memory, stats-interval, trace-file and qos are kept by the
  // session, which reads them.
  std::unique_ptr<cudaoverlap::Session> session;
};

struct _GstCudaOverlap {
  GstElement parent;
  GstPad* sinkpad;
  GstPad* srcpad;
  GstCudaOverlapPrivate* priv;
};

namespace cudaoverlap {

// READY->PAUSED: the kernels of the chain's custom steps and kernel=custom's
// made from their properties (files read now). False after posting an
// error, when kernel=custom cannot start with its properties, or the chain
// cannot be read or a custom step of it loaded.
bool element_load_kernels(GstCudaOverlap* self);

// A kernel=custom property changed while playing: the new kernel goes to
// the session to be compiled and swapped in; what cannot be taken is a
// warning, and the running kernel stays.
void element_replace_custom(GstCudaOverlap* self);

}  // namespace cudaoverlap
