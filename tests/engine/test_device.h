// A Device that wraps a real backend for the engine tests: it makes one
// operation of one frame fail through the real backend call, or takes one of
// the engine's device-side barriers out, so the tests can show that errors
// are handled and that every barrier is load-bearing. The engine itself
// carries no test-only switch: what it is given is simply a device that
// misbehaves.
//
// The wrapper learns what each stream is for from what the engine does on
// it: a stream that copied host to device is the upload stream, one that
// launched the compute stream, one that copied device to host the download
// stream. An event belongs to the stream that last recorded it, so "the
// uploaded barrier" is any wait on an event last recorded by the upload
// stream.
//
// The two host-side barriers (a slot reused only after release, zero-copy
// input kept until uploaded) are taken out by the test's own producer and
// consumer instead (engine_test_util.h), which misbehave the same way.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "device.h"
#include "kernels/error.h"

namespace cudaoverlap::test {

// The engine's barriers (docs/architecture.md, "The engine").
enum class Barrier {
  kNone,
  kUploaded,    // compute waits for the upload of its slot
  kComputed,    // download waits for the kernel of its slot
  kDownloaded,  // the worker waits for the download before handing out
  kRelease,     // a slot is reused only after its OutputFrame is released
  kKeepAlive,   // zero-copy input is held until its upload completed
};

enum class FaultStage { kNone, kUpload, kCompute, kDownload };

struct TestDeviceOptions {
  // Which operation fails: the upload, kernel or download of frame
  // `fault_frame` (frames counted from 0 in submission order). Uploads and
  // downloads fail through the backend's own copy, given an invalid pitch.
  FaultStage fault = FaultStage::kNone;
  uint64_t fault_frame = 0;
  int planes_per_frame = 1;  // copies per frame and direction
  // A device-side barrier to skip (kUploaded, kComputed or kDownloaded).
  Barrier skipped = Barrier::kNone;
  // cpu backend: each upload copy first keeps its stream busy this long, so
  // that uploads lag behind the kernels that wait for them.
  uint32_t upload_delay_us = 0;
  // Only this many of the device's first upload copies are delayed so (a
  // device slow for a while); 0: every one.
  uint64_t delayed_uploads = 0;
};

class TestDevice final : public Device {
 public:
  TestDevice(std::shared_ptr<Device> inner, TestDeviceOptions options)
      : inner_(std::move(inner)), options_(options) {}

  // The host's order of the engine's stream calls so far: 'U' an upload
  // copy, 'K' a kernel (launch, launch_rows), 'D' a download copy.
  std::string calls() {
    std::lock_guard<std::mutex> lock(calls_mutex_);
    return calls_;
  }

  std::string describe() const override { return inner_->describe(); }
  int cuda_device() const override { return inner_->cuda_device(); }
  void make_current() override { inner_->make_current(); }
  size_t device_memory_free() override { return inner_->device_memory_free(); }
  std::unique_ptr<Stream> create_stream() override {
    return std::make_unique<WrappedStream>(*this, inner_->create_stream());
  }
  std::unique_ptr<Event> create_event() override {
    return std::make_unique<WrappedEvent>(*this, inner_->create_event());
  }
  std::unique_ptr<Event> create_timing_event() override {
    return std::make_unique<WrappedEvent>(*this, inner_->create_timing_event());
  }
  std::unique_ptr<Event> create_host_event(HostWait wait, bool timing) override {
    return std::make_unique<WrappedEvent>(*this, inner_->create_host_event(wait, timing));
  }
  std::unique_ptr<Buffer> alloc_device(size_t bytes) override {
    return inner_->alloc_device(bytes);
  }
  std::unique_ptr<Buffer> alloc_pinned(size_t bytes) override {
    return inner_->alloc_pinned(bytes);
  }
  std::unique_ptr<HostRegistration> register_host(void* data, size_t bytes) override {
    return inner_->register_host(data, bytes);
  }

 private:
  // What a stream turned out to be for (bits), from what it did.
  enum Role { kUploadRole = 1, kComputeRole = 2, kDownloadRole = 4 };

  // An operation that fails where the real one would have run: at once on
  // CUDA (as a rejected launch does), asynchronously on the cpu backend.
  // Keeps a cpu stream busy for upload_delay_us.
  class SleepingOperation final : public Operation {
   public:
    explicit SleepingOperation(const TestDeviceOptions& options) : options_(options) {}
    const char* name() const override { return "sleep"; }
    std::vector<PixelFormat> output_formats(PixelFormat in) const override { return {in}; }
    bool mixes_rows(PixelFormat, PixelFormat) const override { return false; }
    bool same_as(const Operation& other) const override { return &other == this; }
    void enqueue_cuda(const ImageRef&, const ImageRef&, const Workspace&,
                      CUstream_st*) const override {
      throw Error("upload_delay_us works on the cpu backend only");
    }
    void run_reference(const ImageRef&, const ImageRef&, const Workspace&) const override {
      std::this_thread::sleep_for(std::chrono::microseconds(options_.upload_delay_us));
    }

   private:
    const TestDeviceOptions& options_;
  };

  class FailingOperation final : public Operation {
   public:
    explicit FailingOperation(const Operation& real) : real_(real) {}
    const char* name() const override { return real_.name(); }
    std::vector<PixelFormat> output_formats(PixelFormat in) const override {
      return real_.output_formats(in);
    }
    bool mixes_rows(PixelFormat in, PixelFormat out) const override {
      return real_.mixes_rows(in, out);
    }
    bool same_as(const Operation& other) const override { return &other == this; }
    void enqueue_cuda(const ImageRef&, const ImageRef&, const Workspace&,
                      CUstream_st*) const override {
      throw Error(std::string("injected failure of kernel '") + name() + "'");
    }
    void run_reference(const ImageRef&, const ImageRef&, const Workspace&) const override {
      throw Error(std::string("injected failure of kernel '") + name() + "'");
    }

   private:
    const Operation& real_;
  };

  class WrappedEvent final : public Event {
   public:
    WrappedEvent(TestDevice& device, std::unique_ptr<Event> inner)
        : device_(device), inner_(std::move(inner)) {}
    void synchronize() override {
      if (device_.options_.skipped == Barrier::kDownloaded && (recorded_by_ & kDownloadRole))
        return;
      inner_->synchronize();
    }
    bool query() override {
      if (device_.options_.skipped == Barrier::kDownloaded && (recorded_by_ & kDownloadRole))
        return true;
      return inner_->query();
    }
    int64_t completed_at_ns() override { return inner_->completed_at_ns(); }
    Event& inner() { return *inner_; }
    std::atomic<int> recorded_by_{0};  // the Role bits of the last recording stream

   private:
    TestDevice& device_;
    std::unique_ptr<Event> inner_;
  };

  class WrappedStream final : public Stream {
   public:
    WrappedStream(TestDevice& device, std::unique_ptr<Stream> inner)
        : device_(device), inner_(std::move(inner)) {}

    void copy_2d(void* dst, size_t dst_pitch, const void* src, size_t src_pitch, size_t row_bytes,
                 size_t rows, CopyKind kind) override {
      if (kind == CopyKind::kDeviceToDevice) {  // part of a band's kernel: not counted
        role_ |= kComputeRole;
        inner_->copy_2d(dst, dst_pitch, src, src_pitch, row_bytes, rows, kind);
        return;
      }
      const bool upload = kind == CopyKind::kHostToDevice;
      role_ |= upload ? kUploadRole : kDownloadRole;
      device_.note(upload ? 'U' : 'D');
      const uint64_t copy = (upload ? device_.uploads_ : device_.downloads_)++;
      const uint64_t frame = copy / static_cast<uint64_t>(device_.options_.planes_per_frame);
      const FaultStage stage = upload ? FaultStage::kUpload : FaultStage::kDownload;
      if (device_.options_.fault == stage && frame == device_.options_.fault_frame)
        dst_pitch = 0;  // every backend rejects it: a real failure of the real call
      if (upload && device_.options_.upload_delay_us > 0 &&
          (device_.options_.delayed_uploads == 0 || copy < device_.options_.delayed_uploads)) {
        static const ImageRef nothing{};
        inner_->launch(device_.sleeper_, nothing, nothing, Workspace{});
      }
      inner_->copy_2d(dst, dst_pitch, src, src_pitch, row_bytes, rows, kind);
    }
    void launch(const Operation& op, const ImageRef& in, const ImageRef& out,
                const Workspace& workspace) override {
      role_ |= kComputeRole;
      device_.note('K');
      const uint64_t frame = device_.launches_++;
      if (device_.options_.fault == FaultStage::kCompute && frame == device_.options_.fault_frame) {
        failing_ = std::make_unique<FailingOperation>(op);
        inner_->launch(*failing_, in, out, workspace);
        return;
      }
      inner_->launch(op, in, out, workspace);
    }
    void launch_rows(const Operation& op, const ImageRef& in, const ImageRef& out,
                     const Workspace& workspace, int y0, int y1) override {
      role_ |= kComputeRole;
      device_.note('K');
      // Frames are counted by their first band.
      const uint64_t frame = y0 == 0 ? device_.launches_++ : device_.launches_ - 1;
      if (device_.options_.fault == FaultStage::kCompute && frame == device_.options_.fault_frame) {
        if (y0 == 0) failing_ = std::make_unique<FailingOperation>(op);
        inner_->launch_rows(*failing_, in, out, workspace, y0, y1);
        return;
      }
      inner_->launch_rows(op, in, out, workspace, y0, y1);
    }
    void launch_part(const Operation& op, size_t part, const ImageRef& in, const ImageRef& out,
                     const Workspace& workspace) override {
      role_ |= kComputeRole;
      device_.note('K');
      if (part == 0) ++device_.launches_;
      inner_->launch_part(op, part, in, out, workspace);
    }
    void prepare(const Operation& op, const Workspace& workspace) override {
      inner_->prepare(op, workspace);
    }
    void record(Event& event) override {
      auto& e = static_cast<WrappedEvent&>(event);
      e.recorded_by_ = role_;
      inner_->record(e.inner());
    }
    void wait(Event& event) override {
      auto& e = static_cast<WrappedEvent&>(event);
      const int by = e.recorded_by_;
      if ((device_.options_.skipped == Barrier::kUploaded && (by & kUploadRole)) ||
          (device_.options_.skipped == Barrier::kComputed && (by & kComputeRole)))
        return;
      inner_->wait(e.inner());
    }
    void synchronize() override { inner_->synchronize(); }

   private:
    TestDevice& device_;
    // The stand-in for the failing frame's operation: declared before the
    // stream so it outlives the stream's queued work.
    std::unique_ptr<FailingOperation> failing_;
    std::unique_ptr<Stream> inner_;
    int role_ = 0;  // the producer thread's only
  };

  std::shared_ptr<Device> inner_;
  const TestDeviceOptions options_;
  // Queued on streams by upload_delay_us; the engine holds the device until
  // its streams are drained.
  SleepingOperation sleeper_{options_};
  // Calls so far, which tell the frame (the engine enqueues from one thread).
  std::atomic<uint64_t> uploads_{0}, downloads_{0}, launches_{0};
  void note(char call) {
    std::lock_guard<std::mutex> lock(calls_mutex_);
    calls_ += call;
  }
  std::mutex calls_mutex_;
  std::string calls_;  // guarded by calls_mutex_
};

}  // namespace cudaoverlap::test
