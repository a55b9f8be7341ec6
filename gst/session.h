// What the cudaoverlap element does, apart from being a GObject: one
// streaming session from READY->PAUSED to PAUSED->READY. The GObject file
// (gstcudaoverlap.cpp) holds the type, the pads and the property table, and
// forwards every pad function here.
//
// Data flow: chain() maps each input buffer and submits it to the engine
// (which blocks while the ring is full: the element's backpressure);
// finished frames go, in order, to the OutputQueue; the src pad task
// (push_next) pops frames and serialized events from it and pushes them.
// Nothing else pushes buffers. Where the frames come from: with one device,
// the src pad task fetches each frame it was told of (MultiEngine::deliver(),
// EngineConfig::pull) when nothing is due in the queue and pushes it, and
// the streaming thread queues, whenever it drains the engine, what the task
// has not fetched; over several devices, the engines' workers queue them.
//
// One flow state: the OutputQueue's (output_queue.h) — OK, FLUSHING, or what
// downstream last answered. chain() returns it to upstream; a new engine
// starts flushing when it says FLUSHING; the engine's own flushing is
// driven from here and nowhere else.
//
// Threads, as GStreamer names them:
// - owner: the thread changing the element's state (start, stop, pad
//   activation);
// - streaming: upstream's thread in chain(), serialized events and queries
//   (the engine's single producer);
// - task: the src pad task (push_next);
// - any: FLUSH_START, upstream events from downstream, queries, the engines'
//   workers over several devices (callbacks; with one device on_frame comes
//   only on the streaming thread, in drain()).
#pragma once

#include <gst/gst.h>
#include <gst/video/video.h>

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "cuda_output.h"
#include "custom_swap.h"
#include "device_choice.h"
#include "engine.h"
#include "gstcudaoverlapenums.h"
#include "multi_engine.h"
#include "negotiation.h"
#include "output_buffer.h"
#include "output_queue.h"
#include "stats.h"
#include "video_mapping.h"

namespace cudaoverlap {

// The element's properties that shape an engine, read by the element under
// its object lock whenever the session asks (caps, renegotiation).
struct SessionSettings {
  std::string kernel = "copy";  // a name in operation_registry()
  KernelParams params;          // from the kernel properties
  int ring_size = EngineConfig{}.ring_size;
  int bands = 0;       // 0: automatic (see Session::configure)
  bool graphs = true;  // EngineConfig::graphs
  Mode mode = Mode::kOverlapped;
};

class Session {
 public:
  // `element` owns the session and both pads; none is referenced.
  Session(GstElement* element, GstPad* sinkpad, GstPad* srcpad,
          std::function<SessionSettings()> settings);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Any thread: stats, trace-file, qos (their own locks).
  Instruments& instruments() { return instruments_; }
  const Instruments& instruments() const { return instruments_; }
  // Any thread: pin-upstream-memory, read per frame.
  void set_pin_upstream(bool pin) { pin_upstream_ = pin; }
  bool pin_upstream() const { return pin_upstream_; }

  // Owner, READY->PAUSED: opens the devices (device_choice.h: `devices`,
  // else `device_id`), the trace file and the stats messages. False after
  // posting an error. Twice is fine. `cuda_context`: the pipeline's CUDA
  // context of device_id, which the cuda backend works in; `cpu_threads`
  // the cpu backend's (CpuDeviceOptions::threads).
  bool start(GstCudaOverlapBackend backend, int device_id, const std::string& devices = "",
             const CudaContextChoice& cuda_context = {}, int cpu_threads = 1);
  // Owner, PAUSED->READY and finalize: mirrors start(). Twice is fine.
  // `finalizing`: from the destructor, where nothing is posted (the
  // element is being finalized).
  void stop(bool finalizing = false);

  // Owner, pad (de)activation in push mode. Deactivating either pad flushes:
  // a chain() waiting for a free slot returns, the task stops.
  bool activate_src(bool active);
  void activate_sink(bool active);

  // Streaming: one input buffer (taken). Returns the flow state.
  GstFlowReturn chain(GstBuffer* buffer);
  // Streaming for serialized events, any thread for FLUSH_START. Takes
  // `event`.
  gboolean sink_event(GstEvent* event);
  // Streaming: ALLOCATION, answered with a pool of pinned memory.
  gboolean propose_allocation(GstQuery* query);
  // Streaming: a serialized query other than ALLOCATION sees the stream as
  // it is after the buffers before it: everything goes downstream first.
  // False when that could not be done (flushing, an error).
  bool drain_for_query();

  // Any thread (the application's, setting a kernel=custom property while
  // playing): compiles `params` for the stream as it is, on a thread of its
  // own, and has the frames submitted after that run it, those before
  // keeping the old kernel (Engine::replace_operation). A compile error is
  // a warning: the running kernel stays. Without a running kernel=custom
  // engine there is nothing to do: the next caps take the properties as
  // they are then.
  void replace_custom_kernel(CustomKernelParams params);

  // Any thread: an event from downstream (QOS, NAVIGATION, RECONFIGURE, …).
  gboolean src_event(GstEvent* event);
  // Any thread: the LATENCY query, already answered upstream; adds ours.
  void add_own_latency(GstQuery* query);
  // Any thread: ACCEPT_CAPS refused `caps`; named in a later error message.
  void note_refused_caps(GstCaps* caps);
  // Streaming thread, before a CAPS event's ACCEPT_CAPS: where the kernel
  // can never take `caps` (not raw video in system memory, or a format it
  // does not take), whatever downstream does, upstream will see
  // not-negotiated: posts the error that says what the kernel takes,
  // unless one was posted.
  void check_caps_event(GstCaps* caps);

 private:
  // Src pad task.
  static void task_loop(gpointer session);
  void push_next();
  bool start_task();

  // Streaming: a new CAPS event, or downstream's RECONFIGURE. Works out
  // the output and the engine for `caps`; drains and replaces the engine
  // when any part of its configuration changed; queues CAPS downstream when
  // the output caps changed. False after posting an error.
  bool configure(GstCaps* caps, guint32 seqnum);
  // Streaming thread: whether upstream answers the LATENCY query as live.
  bool upstream_is_live();
  GstFlowReturn submit(GstBuffer* buffer);
  // Streaming: a frame passed on untouched (passthrough_) takes its place
  // in the queue's order, as a frame without a slot.
  GstFlowReturn pass_through(std::shared_ptr<FrameInfo> info, int64_t arrived_ns);
  bool drain();
  // Any thread: the flow state becomes FLUSHING and the engine stops taking
  // frames; a submit() waiting for a slot returns.
  void begin_flush();
  // Streaming: downstream's EOS is forgotten (STREAM_START, SEGMENT), as
  // GStreamer's queue does: what is in flight is dropped and the task runs
  // again.
  void resume_after_eos();
  // Streaming: EOS when the flow state is not OK (nothing in flight goes
  // out any more): EOS still goes downstream, with an error first when
  // downstream's answer was one.
  gboolean finish_after_flow(GstEvent* event, GstFlowReturn flow);

  void install_engine(std::unique_ptr<MultiEngine> engine);
  // Src pad task: the engine to fetch frames from (MultiEngine::pulls()),
  // or null.
  std::shared_ptr<MultiEngine> pulled_engine();
  // Src pad task, the flow no longer OK: fetches what is in flight, which
  // the queue drops, so that a chain() waiting for a slot gets one.
  void release_unwanted();
  // Streaming: a replacement kernel=custom compiled for this engine, if one
  // is ready, goes into it before the next frame.
  void take_replacement_kernel();
  void on_frame(OutputFrame frame);  // engine worker
  // The epoch of the queue a frame was submitted in (FrameInfo::epoch).
  static uint64_t frame_epoch(const OutputFrame& frame);
  void on_error(const std::string& message);  // engine worker or streaming
  // Engine worker or streaming: a device failed and was left out.
  void on_device_warning(int device, const std::string& message);
  // The devices, for messages: "NVIDIA H100 (CUDA device 0)" or a list.
  std::string describe_devices() const;
  bool report(Status status);  // streaming: false unless kOk
  // Any thread: true for the first error of a run, which is posted as
  // GST_ELEMENT_ERROR; later ones are consequences of it and only logged.
  bool claim_error();

  GstElement* const element_;
  GstPad* const sinkpad_;
  GstPad* const srcpad_;
  const std::function<SessionSettings()> settings_;  // takes the object lock
  std::atomic<bool> pin_upstream_{true};

  // Lock order: pad stream locks, then engine_mutex_, then the OutputQueue's
  // mutex, then the engine's own; info_mutex_ is a leaf. No lock of ours is
  // held while calling submit(), drain() or stop() of an engine, which may
  // block, nor while calling settings_ (the element's object lock).
  std::mutex engine_mutex_;
  // Replaced only under engine_mutex_, and only by the streaming thread or by
  // the owner while streaming is stopped, so the streaming thread (the
  // engine's single producer) uses it without the lock; other threads
  // (flushes) use it under the lock.
  // One engine per device (multi_engine.h), frames in input order.
  // Shared with the src pad task while it fetches frames (pulled_engine()).
  std::shared_ptr<MultiEngine> engine_;

  // Owner thread, in start()/stop(); read by the others in between. device_
  // is the first of devices_: the pinned pool's, upstream pinning's and
  // kernel=custom's (compiled for its architecture).
  std::vector<std::shared_ptr<Device>> devices_;
  std::shared_ptr<Device> device_;
  // The context device_ works in where the pipeline shares one (the only
  // context whose CUDA memory comes in, and the one CUDA memory goes out
  // in); empty otherwise.
  CudaContextChoice cuda_context_;

  // Streaming thread only.
  GstCaps* in_caps_ = nullptr;  // the last CAPS event's, owned
  GstVideoInfo in_info_;
  bool in_cuda_ = false;  // in_caps_ are GStreamer's CUDA memory
  bool out_cuda_ = false;  // out_caps_ are: frames go into cuda_output_'s buffers
  CudaOutputPool cuda_output_;
  PixelFormat in_format_ = PixelFormat::kRGBA;  // the engine's name for in_info_'s format
  std::shared_ptr<const OutputFormat> out_format_;
  GstCaps* out_caps_ = nullptr;  // what was last queued downstream, owned
  uint64_t submitted_ = 0;       // frames submitted in the queue's epoch
  bool passthrough_ = false;     // the caps ask nothing of the frames: no engine
  int passthrough_depth_ = 0;    // the frames passed through that may wait: ring-size

  mutable std::mutex info_mutex_;
  // Guarded by info_mutex_: read by queries and errors on any thread.
  gint fps_n_ = 0;
  gint fps_d_ = 1;
  GeometryTransform geometry_;  // of the output now: for NAVIGATION events
  // The latency reported before any frame was measured, for the caps now.
  GstClockTime latency_estimate_ = GST_CLOCK_TIME_NONE;
  std::string refused_caps_;
  bool error_posted_ = false;

  CustomKernelSwap custom_swap_{element_};  // kernel=custom replaced while playing
  OutputQueue queue_;                       // the flow state; its own lock
  OutputBuffers outputs_;
  Instruments instruments_;  // stats, trace, QoS, measured latency: its own locks
};

}  // namespace cudaoverlap
