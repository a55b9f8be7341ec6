// cudaoverlap-bench --calls: the host time of each call of a frame's
// enqueueing, the engine's and shorter sequences it could make instead.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "bench.h"
#include "cuda_device.h"
#include "graph_cache.h"
#include "kernels/operation_registry.h"
#include "slot_pass.h"

#ifdef CUDAOVERLAP_HAVE_CUDA
#include <cuda_runtime.h>

#include "kernels/cuda_check.h"
#endif

namespace cudaoverlap::bench {

// --calls: what each CUDA call of a frame costs the thread that makes it,
// the enqueueing alone, for the engine's sequence of calls and for shorter
// ones the engine could make instead. One thread enqueues RGBA frames from a
// pool of pinned input frames into a ring of --ring slots, waiting (outside
// the timing) for a slot's last download before it is used again, so the GPU
// stays busy and every call is made while earlier frames run, as in the
// engine. Each call is timed on the steady clock: these calls do not block,
// so wall time is the thread's time, but for a preemption now and then,
// which the median per frame leaves out. The thread waits for a slot in one
// of three ways: spinning in cudaEventSynchronize (its caches stay warm);
// sleeping 50 us between looks (cudaEventQuery), as the engine's threads
// sleep between frames, so its calls are made by a thread just woken, and
// the looks at an event not yet done are timed too; or spinning while
// another thread looks at the newest frame's event every 20 us, as the
// engine's worker does, its calls taking the same driver locks. Then, as
// a live source's frames come (--live-fps, --live-frames of them after 10
// for warm-up), each frame a period after the one before, long done by
// then, the GPU idle in between: the thread sleeping through the period
// (as a live pipeline's threads do: what the calls cost a thread whose
// caches others used meanwhile), or spinning through it (its caches kept,
// the GPU idling all the same: which of the two makes a live frame's calls
// dearer). The engine's sequences are made by the engine's own code
// (SlotPass, capture_pass) on the cuda backend's streams, each call timed
// through a Stream that notes when it returns. Sequences:
// - engine: cudaSetDevice, then the 2D H2D copy, record "uploaded", the
//   compute stream waits for it, the kernel, record "computed", the
//   download stream waits for it, the 2D D2H copy, record "downloaded";
// - the same without cudaSetDevice (the thread's device is already the
//   engine's);
// - a stream per slot: 1D copies (the frame's rows are contiguous on both
//   sides at these widths) and the kernel in stream order on the slot's own
//   stream, no events between stages, then record "downloaded";
// - the engine's in 4 bands (as it runs a live source's frames), band by
//   band as the engine makes them: each band's upload and "uploaded", the
//   compute stream's wait, the band's kernel and "computed", the download
//   stream's wait and the band's download, then "downloaded" (30 calls);
// - the engine's, whole and in 4 bands, as a CUDA graph: the sequence
//   captured as the engine captures it, once for each slot and input frame
//   (the graph holds the pointers), then a frame is one launch on the
//   slot's stream and a record of "downloaded" there. Graphs on a slot's stream run one after
//   another; those of different slots run as the GPU lets them, so the upload of one frame may run
//   beside that of the next (the engine's upload stream keeps them in order).

#ifdef CUDAOVERLAP_HAVE_CUDA
namespace {

using Clock = std::chrono::steady_clock;

// How the measuring thread waits for a slot's last download.
enum class SlotWait { kSpin, kSleep, kSpinWithLooker, kLiveSleep, kLiveSpin };

const char* wait_label(SlotWait how) {
  switch (how) {
    case SlotWait::kSpin:
      return "spins";
    case SlotWait::kSleep:
      return "sleeps (50 µs at a time)";
    case SlotWait::kSpinWithLooker:
      return "spins, another thread looking";
    case SlotWait::kLiveSleep:
      return "live: sleeps a frame period";
    case SlotWait::kLiveSpin:
      return "live: spins a frame period";
  }
  return "";
}

// Where the calls of one frame note when each returned: t[0] before the
// first, t[i] after the i-th. Null `t`: not timing (a capture).
struct CallClock {
  Clock::time_point* t = nullptr;
  int i = 0;
  void start(Clock::time_point* times) {
    t = times;
    i = 0;
    tick();
  }
  void tick() {
    if (t) t[i++] = Clock::now();
  }
};

// A Stream that notes on `clock` when each call it passes on returns: the
// engine's calls, timed one by one without a line of the engine's code
// written out here.
class TimedStream final : public Stream {
 public:
  TimedStream(Stream& stream, CallClock& clock) : stream_(stream), clock_(clock) {}
  void copy_2d(void* dst, size_t dst_pitch, const void* src, size_t src_pitch, size_t row_bytes,
               size_t rows, CopyKind kind) override {
    stream_.copy_2d(dst, dst_pitch, src, src_pitch, row_bytes, rows, kind);
    clock_.tick();
  }
  void launch(const Operation& op, const ImageRef& in, const ImageRef& out,
              const Workspace& workspace) override {
    stream_.launch(op, in, out, workspace);
    clock_.tick();
  }
  void launch_rows(const Operation& op, const ImageRef& in, const ImageRef& out,
                   const Workspace& workspace, int y0, int y1) override {
    stream_.launch_rows(op, in, out, workspace, y0, y1);
    clock_.tick();
  }
  void launch_part(const Operation& op, size_t part, const ImageRef& in, const ImageRef& out,
                   const Workspace& workspace) override {
    stream_.launch_part(op, part, in, out, workspace);
    clock_.tick();
  }
  void prepare(const Operation& op, const Workspace& workspace) override {
    stream_.prepare(op, workspace);
  }
  void record(Event& event) override {
    stream_.record(event);
    clock_.tick();
  }
  void wait(Event& event) override {
    stream_.wait(event);
    clock_.tick();
  }
  void synchronize() override { stream_.synchronize(); }
  bool begin_capture() override { return stream_.begin_capture(); }
  std::unique_ptr<Graph> end_capture() override { return stream_.end_capture(); }
  void launch_graph(Graph& graph) override {
    stream_.launch_graph(graph);
    clock_.tick();
  }

 private:
  Stream& stream_;
  CallClock& clock_;
};

// A CUDA event of this file's own (the sequence that is not the engine's
// records it) seen as the engine's Event, so every sequence's last download
// is waited for alike.
class RawEvent final : public Event {
 public:
  RawEvent() { CO_CUDA_CHECK(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming)); }
  ~RawEvent() override { (void)cudaEventDestroy(event_); }
  RawEvent(const RawEvent&) = delete;
  RawEvent& operator=(const RawEvent&) = delete;
  void synchronize() override { CO_CUDA_CHECK(cudaEventSynchronize(event_)); }
  bool query() override {
    const cudaError_t status = cudaEventQuery(event_);
    if (status == cudaErrorNotReady) {
      (void)cudaGetLastError();
      return false;
    }
    CO_CUDA_CHECK(status);
    return true;
  }
  cudaEvent_t get() const { return event_; }

 private:
  cudaEvent_t event_ = nullptr;
};

constexpr int kBandsMax = 4;

}  // namespace

int run_calls_table(const Options& opt) {
  CO_CUDA_CHECK(cudaSetDevice(0));
  cudaDeviceProp prop{};
  CO_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  const int ring = opt.ring;
  std::printf(
      "host time of a frame's CUDA calls on %s (CUDA device 0), ring %d, %d frames after "
      "%d warm-up (live rows: %d frames at %d/s after 10); µs a frame, the median of the "
      "frames, and the mean of each call\n",
      prop.name, ring, opt.frames, opt.warmup, opt.live_frames, opt.live_fps);
  const auto op = make_operation("copy", KernelParams{});
  bool all_ok = true;
  for (const std::string& name : opt.sizes) {
    const Size& size = kSizes.at(name);
    const FrameLayout layout = FrameLayout::packed(PixelFormat::kRGBA, size.width, size.height);
    const FrameLayout device_layout =
        FrameLayout::packed(PixelFormat::kRGBA, size.width, size.height, 256, 256);
    const bool contiguous =
        layout.stride[0] == layout.row_bytes(0) && device_layout.stride[0] == layout.row_bytes(0);
    std::shared_ptr<Device> device = make_cuda_device(0);
    InputPool pool(*device, layout, ring + 2, true);
    std::vector<const uint8_t*> inputs;
    for (int i = 0; i < ring + 2; ++i) inputs.push_back(pool.data(i));
    struct CallSlot {
      std::unique_ptr<Buffer> device_in, device_out, pinned_out;
      SlotEvents events;                  // the engine's sequences'
      std::unique_ptr<Stream> stream;     // the graphs' launches
      cudaStream_t raw_stream = nullptr;  // the sequence that is not the engine's
      std::unique_ptr<RawEvent> raw_downloaded;
      Event* downloaded = nullptr;  // the last sequence's "downloaded"
      int input = -1;
    };
    std::vector<CallSlot> slots(ring);
    for (CallSlot& slot : slots) {
      slot.device_in = device->alloc_device(device_layout.size);
      slot.device_out = device->alloc_device(device_layout.size);
      slot.pinned_out = device->alloc_pinned(layout.size);
      for (int k = 0; k < kBandsMax; ++k) {
        slot.events.uploaded.push_back(device->create_event());
        slot.events.computed.push_back(device->create_event());
      }
      // As the engine's worker waits by default (HostWait::kPoll's events).
      slot.events.downloaded = device->create_host_event(HostWait::kSpin, false);
      slot.stream = device->create_stream();
      CO_CUDA_CHECK(cudaStreamCreateWithFlags(&slot.raw_stream, cudaStreamNonBlocking));
      slot.raw_downloaded = std::make_unique<RawEvent>();
    }
    // The engine's streams, each call on them timed on `clock`.
    CallClock clock;
    std::unique_ptr<Stream> up = device->create_stream(), compute = device->create_stream(),
                            down = device->create_stream();
    TimedStream timed_up(*up, clock), timed_compute(*compute, clock), timed_down(*down, clock);
    const PassStreams streams{&timed_up, &timed_compute, &timed_down};
    compute->prepare(*op, Workspace{});
    const PixelFormat rgba = PixelFormat::kRGBA;
    const BandReading reading{op->band_halo(rgba, rgba), op->bands_by_view(rgba, rgba)};
    std::map<int, SlotPass> passes;
    for (int bands : {1, kBandsMax})
      passes[bands] =
          SlotPass(streams, layout, layout, plan_bands(layout, layout, *op, bands, true, 256),
                   Workspace{}, nullptr);
    auto images = [&](CallSlot& slot, const uint8_t* input) {
      PassImages images;
      images.source = layout.at(const_cast<uint8_t*>(input));
      images.device_in = device_layout.at(slot.device_in->data());
      images.device_out = device_layout.at(slot.device_out->data());
      images.destination = layout.at(slot.pinned_out->data());
      return images;
    };
    // The sequences; each enqueues frame `input` into `slot`, timing each
    // call into `t` (one steady-clock read after each call).
    struct Sequence {
      const char* name;
      std::vector<const char*> calls;
      std::function<void(CallSlot&, const uint8_t*, Clock::time_point*)> enqueue;
    };
    // The engine's sequence in `bands` bands, as Engine::submit makes it:
    // the device made current (set_device), then the slot's pass.
    auto engine_pass = [&](int bands, bool set_device) {
      return [&, bands, set_device](CallSlot& slot, const uint8_t* input, Clock::time_point* t) {
        const PassImages frame = images(slot, input);
        clock.start(t);
        if (set_device) {
          device->make_current();
          clock.tick();
        }
        passes.at(bands).enqueue(slot.events, frame, *op, reading, false);
        slot.downloaded = slot.events.downloaded.get();
        clock.t = nullptr;
      };
    };
    // graphs[bands][slot][input], captured as the engine captures a frame's.
    std::map<int, std::vector<std::vector<std::unique_ptr<Graph>>>> graphs;
    auto capture_graphs = [&](int bands) {
      auto& per_slot = graphs[bands];
      per_slot.resize(ring);
      for (int s = 0; s < ring; ++s) {
        per_slot[s].clear();
        for (const uint8_t* input : inputs) {
          per_slot[s].push_back(capture_pass(passes.at(bands), slots[s].events,
                                             images(slots[s], input), *op, reading));
          if (!per_slot[s].back()) throw Error("capturing the engine's calls into a graph failed");
        }
      }
    };
    auto graph_launch = [&](int bands) {
      return [&, bands](CallSlot& slot, const uint8_t* input, Clock::time_point* t) {
        const int s = static_cast<int>(&slot - slots.data());
        const size_t in = std::find(inputs.begin(), inputs.end(), input) - inputs.begin();
        TimedStream stream(*slot.stream, clock);
        clock.start(t);
        stream.launch_graph(*graphs.at(bands)[s][in]);
        stream.record(*slot.events.downloaded);
        slot.downloaded = slot.events.downloaded.get();
        clock.t = nullptr;
      };
    };
    std::vector<Sequence> sequences;
    sequences.push_back(
        {"engine: three streams, events between stages",
         {"set device", "H2D 2D", "record", "wait", "kernel", "record", "wait", "D2H 2D", "record"},
         engine_pass(1, true)});
    sequences.push_back(
        {"… without cudaSetDevice",
         {"H2D 2D", "record", "wait", "kernel", "record", "wait", "D2H 2D", "record"},
         engine_pass(1, false)});
    if (contiguous) {
      sequences.push_back(
          {"a stream per slot, 1D copies",
           {"H2D", "kernel", "D2H", "record"},
           [&](CallSlot& slot, const uint8_t* input, Clock::time_point* t) {
             t[0] = Clock::now();
             CO_CUDA_CHECK(cudaMemcpyAsync(slot.device_in->data(), input, layout.size,
                                           cudaMemcpyHostToDevice, slot.raw_stream));
             t[1] = Clock::now();
             op->enqueue_cuda(device_layout.at(slot.device_in->data()),
                              device_layout.at(slot.device_out->data()), Workspace{},
                              slot.raw_stream);
             t[2] = Clock::now();
             CO_CUDA_CHECK(cudaMemcpyAsync(slot.pinned_out->data(), slot.device_out->data(),
                                           layout.size, cudaMemcpyDeviceToHost, slot.raw_stream));
             t[3] = Clock::now();
             CO_CUDA_CHECK(cudaEventRecord(slot.raw_downloaded->get(), slot.raw_stream));
             t[4] = Clock::now();
             slot.downloaded = slot.raw_downloaded.get();
           }});
    }
    {
      std::vector<const char*> names{"set device"};
      for (int k = 0; k < kBandsMax; ++k)
        names.insert(names.end(),
                     {"H2D 2D", "record", "wait", "kernel", "record", "wait", "D2H 2D"});
      names.push_back("record");
      sequences.push_back({"engine in 4 bands", names, engine_pass(kBandsMax, true)});
    }
    for (int bands : {1, kBandsMax}) {
      capture_graphs(bands);
      sequences.push_back({bands == 1 ? "engine's as a graph per slot and input"
                                      : "engine's in 4 bands as a graph per slot and input",
                           {"graph launch", "record"},
                           graph_launch(bands)});
    }
    std::printf("\n%s (%.1f MB a frame)\n\n", size.name, layout.size / 1e6);
    std::printf(
        "| calls | the thread between frames | µs a frame | each call, mean µs | a look "
        "at an event not done, µs | frames/s | output |\n|---|---|---:|---|---:|---:|---|\n");
    for (const Sequence& seq : sequences) {
      for (SlotWait how : {SlotWait::kSpin, SlotWait::kSleep, SlotWait::kSpinWithLooker,
                           SlotWait::kLiveSleep, SlotWait::kLiveSpin}) {
        const bool looker = how == SlotWait::kSpinWithLooker;
        const bool live = how == SlotWait::kLiveSleep || how == SlotWait::kLiveSpin;
        const int warmup = live ? 10 : opt.warmup;
        const int frames = live ? opt.live_frames : opt.frames;
        const auto period = std::chrono::nanoseconds(1'000'000'000LL / opt.live_fps);
        Clock::time_point next_frame = Clock::now();
        const int n_calls = static_cast<int>(seq.calls.size());
        std::vector<double> call_sum(n_calls, 0.0), per_frame;
        double look_sum = 0;  // kSleep: its looks at an event not yet done
        int64_t looks = 0;
        std::atomic<Event*> newest{nullptr};
        std::atomic<bool> stop{false};
        std::thread looking;
        if (looker)
          looking = std::thread([&] {
            (void)cudaSetDevice(0);
            while (!stop.load()) {
              Event* e = newest.load();
              try {
                if (e) (void)e->query();
              } catch (const Error&) {
                // A failure shows in the measuring thread's own wait.
              }
              std::this_thread::sleep_for(std::chrono::microseconds(20));
            }
          });
        for (CallSlot& slot : slots) slot.input = -1;
        bool ok = true;
        Clock::time_point start;
        const int total = warmup + frames;
        for (int f = 0; f < total; ++f) {
          if (live) {
            next_frame += period;
            if (how == SlotWait::kLiveSleep) std::this_thread::sleep_until(next_frame);
            while (Clock::now() < next_frame) {
            }
          }
          if (f == warmup) start = Clock::now();
          CallSlot& slot = slots[f % ring];
          if (slot.input >= 0) {
            if (how == SlotWait::kSleep) {
              for (;;) {
                const Clock::time_point before = Clock::now();
                if (slot.downloaded->query()) break;
                if (f >= warmup) {
                  look_sum +=
                      std::chrono::duration<double, std::micro>(Clock::now() - before).count();
                  ++looks;
                }
                std::this_thread::sleep_for(std::chrono::microseconds(50));
              }
            } else {
              slot.downloaded->synchronize();
            }
            if ((f - ring) % 97 == 0)
              ok = ok && std::memcmp(slot.pinned_out->data(), inputs[slot.input], layout.size) == 0;
          }
          slot.input = f % (ring + 2);
          Clock::time_point t[40];
          clock.i = 0;  // the engine's sequences count their calls there
          seq.enqueue(slot, inputs[slot.input], t);
          newest.store(slot.downloaded);
          if (f == 0 && clock.i != 0 && clock.i != n_calls + 1)
            throw Error(std::string("the engine makes ") + std::to_string(clock.i - 1) +
                        " calls for '" + seq.name + "', the table names " +
                        std::to_string(n_calls));
          if (f >= warmup) {
            for (int c = 0; c < n_calls; ++c)
              call_sum[c] += std::chrono::duration<double, std::micro>(t[c + 1] - t[c]).count();
            per_frame.push_back(
                std::chrono::duration<double, std::micro>(t[n_calls] - t[0]).count());
          }
        }
        for (int k = 0; k < ring; ++k) {
          CallSlot& slot = slots[(total + k) % ring];
          if (slot.input < 0) continue;
          slot.downloaded->synchronize();
          ok = ok && std::memcmp(slot.pinned_out->data(), inputs[slot.input], layout.size) == 0;
        }
        const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
        stop.store(true);
        if (looking.joinable()) looking.join();
        // Calls of one name (a banded sequence's) are summed: "name ×n".
        std::vector<std::pair<std::string, std::pair<double, int>>> by_name;
        for (int c = 0; c < n_calls; ++c) {
          auto it = std::find_if(by_name.begin(), by_name.end(),
                                 [&](const auto& e) { return e.first == seq.calls[c]; });
          if (it == by_name.end()) it = by_name.insert(by_name.end(), {seq.calls[c], {0.0, 0}});
          it->second.first += call_sum[c] / frames;
          ++it->second.second;
        }
        std::string each;
        for (const auto& [name, sum] : by_name) {
          char part[96];
          std::snprintf(part, sizeof part, "%s%s%s %.1f", each.empty() ? "" : ", ", name.c_str(),
                        sum.second > 1 ? (" ×" + std::to_string(sum.second)).c_str() : "",
                        sum.first);
          each += part;
        }
        std::sort(per_frame.begin(), per_frame.end());
        char look[32] = "";
        if (looks > 0) std::snprintf(look, sizeof look, "%.1f", look_sum / looks);
        std::printf("| %s | %s | %.1f | %s | %s | %.0f | %s |\n", seq.name, wait_label(how),
                    per_frame[per_frame.size() / 2], each.c_str(), look, frames / seconds,
                    ok ? "checked" : "WRONG");
        std::fflush(stdout);
        all_ok = all_ok && ok;
      }
    }
    for (CallSlot& slot : slots) (void)cudaStreamDestroy(slot.raw_stream);
    // The graphs go before the streams and events they were captured from.
    graphs.clear();
  }
  return all_ok ? 0 : 1;
}
#else
int run_calls_table(const Options&) {
  std::fprintf(stderr, "cudaoverlap-bench: --calls needs a build with CUDA\n");
  return 2;
}
#endif

}  // namespace cudaoverlap::bench
