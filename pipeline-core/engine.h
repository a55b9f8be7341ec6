// The overlap engine: a ring of staging slots, three streams and a worker
// thread that delivers finished frames in submission order.
//
// Data flow (docs/architecture.md, "The engine"): submit() takes a free
// slot (blocking while all are in flight), stages the frame into the slot's
// pinned input unless it is already pinned, and enqueues
//   upload stream:   H2D            -> record uploaded[i]
//   compute stream:  wait uploaded[i], kernel   -> record computed[i]
//   download stream: wait computed[i], D2H      -> record downloaded[i]
// The worker waits downloaded[i] for slots in submission order and hands each
// out as an OutputFrame; the slot is free again only when that OutputFrame is
// released (the host I/O barrier: the consumer may still be reading the
// slot's pinned output). `serial` mode does the same work on one stream and
// waits for it inside submit().
//
// Timing: submit() notes the host stages of each frame (waiting for a slot,
// staging) and, with EngineConfig::timing, records timing events at each
// device stage's start and end; the worker reads them once the frame's
// download completed and hands them out with the frame
// (OutputFrame::timing()), so measuring never waits on the producer's path.
//
// Threads: one *producer* thread calls submit(), drain(), flush_stop() (at
// most one of them at a time); start()/stop() are called by the owner when
// no producer call is running, or from the producer thread itself.
// flush_start() and OutputFrame::release() may be called from any thread.
// The staging copy's helper threads (EngineConfig::staging_threads) only
// ever run inside submit(), which waits for them.
// Callbacks run on the worker thread (on_frame, and on_error for failures it
// finds) or on the producer thread (on_error for failures in submit()); they
// must not call stop() or destroy the engine. With EngineConfig::pull there
// is no worker: deliver() returns each frame to the consumer's thread, and
// drain() hands to on_frame, on the producer's, what no deliver() fetched.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "device.h"
#include "frame_layout.h"
#include "kernels/error.h"
#include "kernels/operation.h"

namespace cudaoverlap {

enum class Mode { kOverlapped, kSerial };

enum class Status {
  kOk,
  kFlushing,  // a flush or stop began; the frame was not taken
  kError,     // the engine is in its error state; see Engine::error()
};

// Where one frame's time went, as times on the host's steady clock (ns, see
// host_now_ns()), so host and device stages can be compared and drawn on one
// timeline. A span that did not happen or was not measured stays invalid.
struct TimeSpan {
  int64_t start_ns = -1;
  int64_t end_ns = -1;
  bool valid() const { return start_ns >= 0 && end_ns >= start_ns; }
  double ms() const { return valid() ? static_cast<double>(end_ns - start_ns) / 1e6 : 0.0; }
};

struct FrameTiming {
  int64_t arrived_ns = -1;  // InputFrame::arrived_ns, else when submit() began
  TimeSpan wait_slot;       // submit() waiting for a free slot (backpressure)
  TimeSpan staging;         // host copy into the slot's pinned input; invalid for pinned input
  // Device work, from timing events at each stage's start and end on its
  // stream (EngineConfig::timing only). A stage starts when its stream
  // reaches it: after the stage it waits for, and after the previous frame's
  // work on the same stream.
  TimeSpan upload;
  TimeSpan compute;
  TimeSpan download;
  // The compute stage's parts (Operation::parts: a chain's launches) where
  // it has 1 to kMaxParts and the frame was computed whole (one band): when
  // each ended; each begins where the one before ended, the first at
  // compute.start_ns. parts 0: not measured.
  static constexpr int kMaxParts = 16;
  int parts = 0;
  int64_t part_end_ns[kMaxParts] = {};
  TimeSpan part(int k) const {
    return TimeSpan{k == 0 ? compute.start_ns : part_end_ns[k - 1], part_end_ns[k]};
  }
  int64_t enqueued_ns = -1;  // submit() had enqueued the frame's device work
  bool graph = false;        // enqueued as one graph launch (EngineConfig::graphs)
  // The worker waiting for the download to complete (its end is the wake-up:
  // minus download.end_ns, what waking the host cost).
  TimeSpan worker_wait;
  int64_t delivered_ns = -1;  // the worker saw the download complete and hands it out
  // When the download completed, as near as known: delivered_ns when the
  // worker (or whoever delivers) waited for it; when it had completed
  // before anyone looked (a consumer busy elsewhere, blocked downstream),
  // the "downloaded" barrier's own time where EngineConfig::timing makes it
  // a timing event. So ready_ns - arrived_ns is the frame's own stay,
  // whoever made it wait after.
  int64_t ready_ns = -1;
};

// EngineConfig::graphs: the graphs a slot keeps, one per input memory it met
// (a buffer pool's buffers): more than a GStreamer pool usually holds.
constexpr size_t kGraphsPerSlot = 16;

struct EngineConfig {
  // 1..16. 4: with upload, kernel and download about as long as one
  // another, three slots have no slack, and every microsecond between a
  // download's end and the next upload into its slot (the worker waking,
  // the consumer releasing, the producer waking) is lost from every frame;
  // a fourth absorbs it (cudaoverlap-bench: 93 -> 100 % of a plain loop's
  // rate at 1080p with a balanced kernel). It costs a frame's memory.
  int ring_size = 4;
  Mode mode = Mode::kOverlapped;
  // Geometry of submitted frames, and of the pinned output frames handed out
  // (any strides, e.g. GStreamer's default layout).
  FrameLayout input;
  FrameLayout output;
  // What runs on each frame (operation_registry.h makes one by name). No
  // default: the caller chooses; start() refuses an engine without one.
  std::shared_ptr<const Operation> operation;
  // Measure the device stages of every frame (OutputFrame::timing()): three
  // more events recorded per frame, and the barrier events become timing
  // events. Host stages (wait, staging) are measured always: two clock reads.
  bool timing = false;
  // With timing, the device stages of one frame in this many are measured
  // (frames 0, N, 2N, … in submission order); the others' upload, compute
  // and download stay invalid. Each measured frame costs three more event
  // records on the producer and six clock reads on the worker, a few
  // microseconds of host time: where every frame's times are not needed
  // (statistics, as opposed to a trace), sampling saves them. 1..1024.
  int timing_interval = 1;
  // Threads that copy a pageable frame into its slot's pinned input
  // (submit()'s staging copy), the producer thread included: 1 copies on the
  // producer alone, as a plain loop (~10 GB/s, 3.3 ms for a 4K RGBA frame);
  // N > 1 starts N-1 workers in start() that each copy a band of rows while
  // the producer copies one too, and sleep between frames; 0 (automatic) is
  // one per core this process may run on, at most 8. Frames under 256 KiB
  // are copied by the producer alone whatever this says. 0..64. Pinned input
  // is never staged, so the workers then just sleep.
  int staging_threads = 0;
  // How the worker waits for a frame's download (device.h, HostWait): kPoll
  // sleeps until shortly before the download is expected to be done and
  // then polls; kBlock sleeps until the device signals it; kSpin polls all
  // along, a core busy for the whole time frames are in flight.
  // cudaoverlap-bench and cudaoverlap-bench --live measure the three.
  HostWait host_wait = HostWait::kPoll;
  // Bands a frame is split into (1..16): horizontal bands, top to bottom,
  // each uploaded, computed and downloaded on its own with its own events,
  // so that within one frame the upload of band k+1, the kernel on band k
  // and the download of band k-1 overlap, and a frame is out sooner: one
  // frame's latency falls from upload + kernel + download towards the
  // longest of them. Only where the operation allows it
  // (Operation::band_halo) and in overlapped mode, with bands on rows the
  // formats' subsampling allows, and at most one per such row; otherwise
  // frames run whole (Engine::bands() says how many there are).
  int bands = 1;
  // Who hands finished frames out. false: the engine's own worker thread
  // waits for each frame's download and calls on_frame. true (pull): no
  // worker; the consumer's thread calls Engine::deliver(), which waits for
  // the next frame and returns it (one thread fewer to wake per frame: the
  // consumer would otherwise be woken by the worker), and drain() hands to
  // on_frame on the producer's thread whatever no deliver() is fetching
  // meanwhile, so draining never depends on the consumer.
  bool pull = false;
  // A frame submitted while no other is in flight (a live source's, each
  // long done before the next comes) is enqueued as one CUDA graph launch
  // and one event record instead of its copies, kernels, records and waits
  // one call at a time (4K RGBA copy in 4 bands: 3 calls for 31). The
  // graph is captured from those same calls the first time a slot meets
  // that input memory with that operation, and kept (kGraphsPerSlot a
  // slot), so a pool of input buffers costs a capture each once (of a pool
  // larger than that, the buffers beyond go call by call). The frame then runs
  // as a whole on the upload stream: a frame submitted while it runs waits
  // for all of it, not just its upload. Frames that queue behind others,
  // timed frames (EngineConfig::timing_interval), serial mode, pinned
  // frames without an InputFrame::memory_id, operations that are not
  // capturable() and backends without graphs (cpu) are enqueued call by
  // call, as they are when this is false.
  bool graphs = true;
  // With graphs: a frame alone runs as a graph only where the engine has
  // been idle, since the frame before it was found done, at least this many
  // times as long as that frame took from its enqueueing to found done
  // (which counts its time queued behind others and, with pull, until a
  // deliver() looked: after a burst the next graph may wait a frame more).
  // The next frame waits for all of a graph, so a source whose period is
  // under about twice a frame's time (4K RGBA at 700-1000 frames/s: every
  // other frame alone) would have its frames wait for graphs where call by
  // call they wait only for an upload; at 1 a frame runs as a graph only
  // where the source's period is at least twice that (a camera's, 60
  // frames/s, by far). 0: every frame alone.
  double graphs_idle = 1.0;
  // On a device whose memory is the host's (the cpu backend, see
  // Device::host_memory_is_device_memory), the operation reads each frame
  // where it lies and writes the slot's output: no staging, upload or
  // download copies; InputFrame::keep_alive is then held until the frame
  // is delivered or dropped. Streams, events and barriers stay as they
  // are. Ignored on other devices.
  bool host_in_place = false;

  // Every field: an owner keeps a running engine only for an equal config.
  bool operator==(const EngineConfig& o) const;
  bool operator!=(const EngineConfig& o) const { return !(*this == o); }
};

// EngineConfig::bands for frames that come one at a time (a live source's,
// each long done before the next): a live frame is out after its first
// band's upload, the whole frame's download and a few microseconds a band
// (each copy's own start), so the larger the frame, the more bands pay.
// About one band per kLiveBandBytes of the larger of the frame's input and
// output pixels, from kMinLiveBands to kMaxLiveBands: 4 for 1080p RGBA
// (8.3 MB), 8 for 4K RGBA (33 MB). Frames of a source faster than the
// device wait for the ones before them, and bands would only add host work:
// run those whole. At most 8: past it each band's own start costs about
// what a shorter first band saves (docs/benchmarks.md, "Bands").
constexpr size_t kLiveBandBytes = size_t{4} << 20;
constexpr int kMinLiveBands = 4;
constexpr int kMaxLiveBands = 8;
int live_bands(const FrameLayout& input, const FrameLayout& output);

// What the caller hands in with a frame and gets back with it, unchanged
// (timestamps, metas, its own numbering): a class of the caller's that
// derives from FrameUser. It goes when the engine and the consumer have let
// go of the frame (released, or dropped by a flush or stop).
class FrameUser {
 public:
  virtual ~FrameUser() = default;
};

// A frame to submit: host planes in any layout of config.input's format and
// size.
struct InputFrame {
  ImageRef image;
  // True when `image` lives in memory the device can DMA from
  // (Device::alloc_pinned): it is uploaded straight from there, without a
  // staging copy, and `keep_alive` is held until that upload has completed.
  bool pinned = false;
  // True when `image` lives in the engine's device memory, in the context
  // the device works in (GStreamer's CUDA memory), ready to be read:
  // nothing crosses from the host. Read by the kernel where it is when
  // every plane and row lies on the slot's alignment (kDeviceAlign), else
  // copied into the slot on the device; `keep_alive` is held until the
  // frame is delivered or dropped. Such frames are never launched as
  // graphs.
  bool on_device = false;
  std::shared_ptr<void> keep_alive;
  // Where the output goes when its first plane is set: device memory in
  // the context the device works in (GStreamer's CUDA memory), laid out as
  // config.output's format and size with strides of its own. The kernel
  // writes it there where it lies on the slot's alignment, else the frame
  // is copied there from the slot on the device; nothing crosses to the
  // host, and OutputFrame::image() is it. The caller keeps that memory
  // alive until the frame is delivered or dropped (through `user`). Such
  // frames are never launched as graphs. Empty: the slot's pinned output.
  ImageRef destination;
  // Handed back unchanged with the output frame; dropped without delivery
  // by flush or stop.
  std::shared_ptr<FrameUser> user;
  // With `pinned`: an identity of the memory `image` lies in, other for
  // every allocation or page-locking of memory over the process's life
  // (an address comes back when memory is freed and made again; its pages
  // and their locking do not). EngineConfig::graphs launches a kept graph
  // for such a frame only with the same identity: a graph reads from the
  // pages its upload was captured with, and memory freed and made again at
  // that address would have it read from pages no longer there. 0 (the
  // default): unknown, the frame goes call by call. Staged frames need
  // none (they are uploaded from the engine's own memory). Whoever makes or
  // page-locks the memory draws its identity from new_memory_id().
  uint64_t memory_id = 0;
  // When the frame reached the producer (host_now_ns()), for
  // FrameTiming::arrived_ns; -1: when submit() was called.
  int64_t arrived_ns = -1;
  // When the wait for a slot began, where a caller waited for one before
  // this engine's submit() (MultiEngine, choosing a device): the start of
  // FrameTiming::wait_slot. -1: when submit() was called.
  int64_t submitted_ns = -1;
};

// A fresh InputFrame::memory_id: never 0, and other than every one handed
// out before in this process. Any thread.
uint64_t new_memory_id();

class EngineCore;
struct EngineThreads;

class MultiEngine;

// A finished frame in a slot's pinned output memory, or in the frame's
// InputFrame::destination where it had one. Move-only; the slot
// returns to the ring when release() is called or the frame is destroyed,
// from any thread, also after the engine itself is gone.
class OutputFrame {
 public:
  OutputFrame() = default;
  OutputFrame(std::shared_ptr<EngineCore> core, int slot, uint64_t sequence, ImageRef image,
              std::shared_ptr<FrameUser> user);
  OutputFrame(std::shared_ptr<EngineCore> core, int slot, uint64_t sequence, ImageRef image,
              std::shared_ptr<FrameUser> user, const FrameTiming& timing);
  OutputFrame(OutputFrame&& other) noexcept;
  OutputFrame& operator=(OutputFrame&& other) noexcept;
  OutputFrame(const OutputFrame&) = delete;
  OutputFrame& operator=(const OutputFrame&) = delete;
  ~OutputFrame();

  explicit operator bool() const { return core_ != nullptr; }
  uint64_t sequence() const { return sequence_; }  // 0, 1, 2, … in submission order
  // Which device computed it: an index into a MultiEngine's devices; 0 from
  // an Engine of its own.
  int device() const { return device_; }
  int slot() const { return slot_; }
  const ImageRef& image() const { return image_; }  // laid out as config.output
  const std::shared_ptr<FrameUser>& user() const { return user_; }
  // user() as the caller's own class; null when it is none or another.
  template <class T>
  T* user_as() const {
    return dynamic_cast<T*>(user_.get());
  }
  // Where this frame's time went; kept after release().
  const FrameTiming& timing() const { return timing_; }
  void release() noexcept;

 private:
  friend class MultiEngine;  // numbers frames across its devices
  std::shared_ptr<EngineCore> core_;
  int slot_ = -1;
  uint64_t sequence_ = 0;
  int device_ = 0;
  ImageRef image_;
  std::shared_ptr<FrameUser> user_;
  FrameTiming timing_;
};

struct EngineCallbacks {
  std::function<void(OutputFrame frame)> on_frame;
  std::function<void(const std::string& message)> on_error;
  // A slot went back to the ring (a frame released, or a flush); called on
  // the thread that freed it, also after the engine is gone (frames may
  // outlive it), with no lock of the engine held. Must be quick and must
  // not call into the engine.
  std::function<void()> on_slot_freed;
};

class Engine {
 public:
  Engine(std::shared_ptr<Device> device, EngineConfig config, EngineCallbacks callbacks);
  ~Engine();  // stop()s
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Validates the config, allocates every buffer, stream and event, and
  // starts the worker. Throws Error with a sentence naming the cause (e.g.
  // how much memory the ring needs). Owner thread; once.
  void start();

  // Takes a free slot (blocking while none is free) and enqueues the frame.
  // Returns kFlushing as soon as a flush or stop begins, kError in the error
  // state. Producer thread.
  Status submit(InputFrame frame);

  // Frames submitted from now on run `operation` (frames already submitted
  // keep theirs): a kernel swapped between two frames, none lost, none with
  // a part of each. Its check must pass for the engine's input and output,
  // and neither it nor the current one may use a workspace. Throws Error
  // saying why not; the engine is then unchanged. Producer thread, between
  // submit() calls.
  void replace_operation(std::shared_ptr<const Operation> operation);

  // Blocks until every submitted frame has been handed to on_frame (not
  // necessarily released). Returns early with kFlushing or kError. With
  // EngineConfig::pull it hands out, on this thread, every frame that no
  // deliver() is handing out. Producer.
  Status drain();

  // EngineConfig::pull only: waits for the next frame in order to be done
  // and returns it to the caller (the consumer's thread), in place of
  // on_frame. An empty frame at once when no frame is in flight (or
  // flushing, stopped, failed; without pull, always); and when drain() was
  // handing the next frame out to on_frame meanwhile: then after it went.
  // Never waits for a submit(). The consumer thread, one at a time; also
  // after stop(), which waits for a deliver() under way.
  OutputFrame deliver();

  // Begins a flush: a blocked submit() returns kFlushing, later ones too, and
  // the worker stops delivering. Any thread.
  void flush_start();
  // Ends it: in-flight frames are dropped undelivered (after their device
  // work finishes) and the engine takes frames again. Producer thread.
  void flush_stop();
  void flush() {
    flush_start();
    flush_stop();
  }

  // Stops the worker and waits for device work; in-flight frames are dropped.
  // Safe to call twice and after a failed start(). Owner thread.
  void stop();

  // Bands each frame is split into, as started: 1 when EngineConfig::bands
  // is 1, or the operation or mode does not allow more (see there).
  int bands() const;

  // Frames enqueued so far as one graph launch (EngineConfig::graphs); 0
  // before start() and after stop(). Any thread.
  uint64_t graph_frames() const;
  // Graphs captured so far (each for a slot, an input memory and an
  // operation; a frame launched from a graph kept costs no capture).
  uint64_t graph_captures() const;

  // Slots free now (0 before start() and after stop()): a submit() now
  // would not wait. Any thread.
  int free_slots() const;

  // Empty unless the engine is in its error state.
  std::string error() const;
  // In the error state: whether it came from the operation itself
  // (OperationError, e.g. an application's handler refusing a frame), which
  // any device would fail the same way, rather than from the device.
  bool operation_failed() const;
  const EngineConfig& config() const { return config_; }
  Device& device() { return *device_; }

 private:
  // Producer thread: config_.operation's band_halo and bands_by_view.
  void note_operation_bands();

  std::shared_ptr<Device> device_;
  EngineConfig config_;
  std::unique_ptr<EngineThreads> threads_;  // worker and staging threads, callbacks
  std::shared_ptr<EngineCore> core_;        // null before start() and after stop()
};

}  // namespace cudaoverlap
