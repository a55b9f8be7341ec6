// The backend interface the engine is written against: streams, events and
// buffers with CUDA's semantics.
//
// The engine enqueues copies and kernels on Streams and orders them with
// Events exactly as docs/architecture.md, "The engine", describes; a backend
// supplies the real thing.
// `cuda` maps each call onto the CUDA runtime; `cpu` runs each Stream on a
// host thread, so the engine's barriers are the same code on both and the
// CPU tests exercise them.
//
// Semantics every backend keeps (CUDA's):
// - Stream operations are asynchronous and run in the order enqueued.
// - Event::record captures all work enqueued on the stream so far;
//   Stream::wait makes later work on the waiting stream start only after the
//   work captured by the event's most recent record at the time of the wait.
// - An operation that fails asynchronously makes the events recorded after it
//   report the failure from synchronize(), and from every wait that depends
//   on them.
// - Errors are thrown as cudaoverlap::Error.
//
// Timing (for statistics and traces): an event made by
// Device::create_timing_event() also knows *when* the work it captured
// completed, as a time on the host's std::chrono::steady_clock, so device
// times and host times share one clock. Barrier events stay plain
// (create_event()), the cheapest kind on CUDA.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "kernels/error.h"
#include "kernels/operation.h"

namespace cudaoverlap {

// kDeviceToDevice: between two device buffers, on the device (the engine's
// bands computed by view, Operation::bands_by_view).
enum class CopyKind { kHostToDevice, kDeviceToHost, kDeviceToDevice };

// How a host thread waits in Event::synchronize() for an event made by
// Device::create_host_event().
enum class HostWait {
  // Sleeps until the device signals completion (CUDA: cudaEventBlockingSync,
  // woken by the driver's interrupt): no CPU time while it waits.
  kBlock,
  // Polls (CUDA: the context's default, which spins while the process has
  // fewer CUDA contexts than cores): the quickest return, one core busy for
  // as long as it waits.
  kSpin,
  // For the engine's worker (EngineConfig::host_wait): sleeps until shortly
  // before the work is expected to be done, from the completions seen so
  // far, then polls (Event::query): without sleeping for a frame that found
  // the device idle (a live source's, whose latency counts), at intervals
  // doubling from 10 us for a frame queued behind others (a fast source's,
  // whose host time counts), and so up to 250 us apart when it has nothing
  // to expect from yet or the work is late (engine.cpp, PollingWait).
  // Events are made as kSpin's: a CUDA event that a thread may block on has
  // the driver's event thread woken for each one. On CUDA devices only; the
  // cpu backend's events wake their waiter at once, so there it is kBlock.
  kPoll,
};

class Event {
 public:
  virtual ~Event() = default;
  // Blocks the calling thread until the work captured by the last record()
  // has completed; throws Error if any of it failed. Returns at once when
  // the event was never recorded. Any thread.
  virtual void synchronize() = 0;
  // True when the work captured by the last record() has completed (or the
  // event was never recorded), false while it runs; throws Error if any of
  // it failed. Never blocks. Any thread.
  virtual bool query() = 0;
  // Timing events only, after synchronize() returned: the steady_clock time
  // (ns since its epoch) at which the work captured by the last record()
  // completed; -1 for events without timing. Throws Error when the backend
  // cannot tell (on CUDA: an event never recorded). Any thread, but not
  // concurrently with a record() of the same event.
  virtual int64_t completed_at_ns() { return -1; }
};

// Now on the clock that completed_at_ns() uses.
inline int64_t host_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Work captured once from streams (Stream::end_capture) and run again and
// again by one call (Stream::launch_graph): a CUDA graph.
class Graph {
 public:
  virtual ~Graph() = default;
};

class Stream {
 public:
  virtual ~Stream() = default;
  // Asynchronous 2D copy of `rows` rows of `row_bytes` bytes. Host memory
  // must come from Device::alloc_pinned (or be otherwise DMA-able).
  virtual void copy_2d(void* dst, size_t dst_pitch, const void* src, size_t src_pitch,
                       size_t row_bytes, size_t rows, CopyKind kind) = 0;
  // Enqueues `op` on device images, with the workspace the owner allocated
  // for it (device memory) and prepared on this stream. `op` must outlive
  // the work enqueued.
  virtual void launch(const Operation& op, const ImageRef& in, const ImageRef& out,
                      const Workspace& workspace) = 0;
  // Enqueues output rows [y0, y1) of `op` (Operation::enqueue_cuda_rows):
  // one band of a frame split into bands (EngineConfig::bands).
  virtual void launch_rows(const Operation& op, const ImageRef& in, const ImageRef& out,
                           const Workspace& workspace, int y0, int y1) = 0;
  // Enqueues part `part` of `op` alone (Operation::parts): the parts in
  // order make a frame, and an event recorded between them times each.
  virtual void launch_part(const Operation& op, size_t part, const ImageRef& in,
                           const ImageRef& out, const Workspace& workspace) = 0;
  // Enqueues `op`'s preparation of `workspace` (start-up only).
  virtual void prepare(const Operation& op, const Workspace& workspace) = 0;
  virtual void record(Event& event) = 0;
  virtual void wait(Event& event) = 0;
  // Blocks until everything enqueued so far has completed.
  virtual void synchronize() = 0;

  // Capture. Between begin_capture() and end_capture() the calling thread's
  // work on this stream, and on every stream that waits for an event
  // recorded in it (until this stream waits for their last events again),
  // does not run: it is recorded, with the order the events give it, and
  // end_capture() returns it as a Graph. launch_graph() runs a graph as a
  // whole, in this stream's order (after the stream's earlier work, before
  // its later work). begin_capture() returns false where the backend has no
  // graphs (the default); end_capture() returns null where the capture
  // failed (a call that cannot be captured was made), the streams back to
  // normal either way. Only the calling thread's calls are checked for
  // what cannot be captured; work any thread enqueues on a capturing
  // stream is captured too (the engine's producer alone enqueues).
  virtual bool begin_capture() { return false; }
  virtual std::unique_ptr<Graph> end_capture() { return nullptr; }
  virtual void launch_graph(Graph&) { throw Error("this backend has no graphs"); }
};

// Host memory owned by someone else, page-locked by Device::register_host
// for as long as this object lives; destroying it unpins the memory (any
// thread, before the memory is freed).
class HostRegistration {
 public:
  virtual ~HostRegistration() = default;
};

// Memory owned by a backend: device memory or pinned host memory.
class Buffer {
 public:
  virtual ~Buffer() = default;
  uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 protected:
  Buffer(uint8_t* data, size_t size) : data_(data), size_(size) {}
  uint8_t* data_;
  size_t size_;
};

class Device {
 public:
  virtual ~Device() = default;
  // A name for messages: "NVIDIA H200 (CUDA device 0)", "cpu backend".
  virtual std::string describe() const = 0;
  // The CUDA device number it runs on; -1 for a backend that is not CUDA
  // (and cannot run CUDA code of the user's: kernel=custom).
  virtual int cuda_device() const { return -1; }
  // True when its device memory is the host's own (the cpu backend): an
  // operation can read and write host images where they lie.
  virtual bool host_memory_is_device_memory() const { return false; }
  // Binds the calling thread to this device; call on each thread that
  // enqueues work or waits on events.
  virtual void make_current() = 0;
  // Device memory that can still be allocated, or SIZE_MAX when unknown.
  virtual size_t device_memory_free() = 0;
  // Resource creation: start-up only, never per frame.
  virtual std::unique_ptr<Stream> create_stream() = 0;
  virtual std::unique_ptr<Event> create_event() = 0;
  // An event that also records when its work completed (completed_at_ns).
  // A backend without timing returns a plain event.
  virtual std::unique_ptr<Event> create_timing_event() { return create_event(); }
  // An event a host thread waits on with synchronize(), waiting as `wait`
  // says; with `timing`, a timing event. A backend that waits only one way
  // (cpu: a condition variable, always asleep) returns its ordinary event.
  virtual std::unique_ptr<Event> create_host_event(HostWait wait, bool timing) {
    (void)wait;
    return timing ? create_timing_event() : create_event();
  }
  virtual std::unique_ptr<Buffer> alloc_device(size_t bytes) = 0;
  virtual std::unique_ptr<Buffer> alloc_pinned(size_t bytes) = 0;
  // Page-locks `bytes` of existing host memory at `data`, so copies DMA
  // straight from it (CUDA: cudaHostRegister): costly (pages are locked one
  // by one), worth it for memory that is copied from again and again. The
  // memory must outlive the registration. Throws Error when it cannot be
  // done (a range overlapping one already registered, memory the OS will
  // not lock).
  virtual std::unique_ptr<HostRegistration> register_host(void* data, size_t bytes) = 0;
};

}  // namespace cudaoverlap
