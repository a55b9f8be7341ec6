// --devices: one stream of frames over several devices (MultiEngine), each
// device alone and all of them together (main.cpp says more).
#include <dirent.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "bench.h"
#include "devices.h"
#include "kernels/operation_registry.h"
#include "multi_engine.h"

namespace cudaoverlap::bench {
namespace {

// How a MultiEngine run compares outputs with inputs. kSampled (the timed
// runs): whole frames as checked_frame() picks them, of every other frame
// kSampleRows rows spread over it, so the comparison stays out of the
// figures; kWhole (a run of its own, untimed): every frame whole.
enum class Check { kSampled, kWhole };
constexpr int kSampleRows = 8;

// Where a MultiEngine run's host time went, per timed frame (the
// --devices table's second table): whether one thread bounds the rate.
struct HostFigures {
  double producer_busy = 0;   // the producer thread's CPU time / the run's wall time
  double workers_cpu_us = 0;  // CPU time of the engines' workers (co-worker), all together
  double take_us = 0;         // producer waiting for an input frame (the pool: upstream)
  double submit_us = 0;       // producer in MultiEngine::submit (wall)
  double engine_us = 0;       // of which in Engine::submit
  double dealing_us = 0;      // of which in MultiEngine's own part: choosing a device, and
                              // waiting for one's slot
  double slot_us = 0;         // of which, in Engine::submit, waiting for a slot
  double enqueue_us = 0;      // and, in Engine::submit, enqueuing the device work
  double held_us = 0;         // a frame done, waiting for an earlier one (delivery order)
  double held_max_us = 0;
};

struct MultiResult {
  double fps = 0;
  double cpu_us = 0;               // the process's CPU time per timed frame
  int64_t bad = 0;                 // frames wrong, out of order, or never delivered
  std::vector<int64_t> by_device;  // timed frames each device computed
  HostFigures host;
  // Per device, over the timed frames (MultiEngine::lane_figures): the
  // dealing's mean time per frame (us), the frames of other devices its
  // worker handed out (per timed frame of the run), and us per such frame.
  std::vector<double> dealt_us, handed_share, handing_us;
};

// CPU time so far of this process's threads named `name`, in microseconds
// (the scheduler's own count, /proc/self/task/*/schedstat: ns on a CPU).
double threads_cpu_us(const std::string& name) {
  double total = 0;
  DIR* tasks = opendir("/proc/self/task");
  if (!tasks) return 0;
  while (const dirent* entry = readdir(tasks)) {
    if (entry->d_name[0] == '.') continue;
    const std::string dir = std::string("/proc/self/task/") + entry->d_name;
    char comm[64] = {};
    if (FILE* f = std::fopen((dir + "/comm").c_str(), "r")) {
      if (!std::fgets(comm, sizeof comm, f)) comm[0] = 0;
      std::fclose(f);
    }
    comm[std::strcspn(comm, "\n")] = 0;
    if (name != comm) continue;
    unsigned long long on_cpu_ns = 0;
    if (FILE* f = std::fopen((dir + "/schedstat").c_str(), "r")) {
      if (std::fscanf(f, "%llu", &on_cpu_ns) != 1) on_cpu_ns = 0;
      std::fclose(f);
    }
    total += static_cast<double>(on_cpu_ns) / 1e3;
  }
  closedir(tasks);
  return total;
}

// One run of a MultiEngine over `devices`: --warmup frames, then --frames
// timed, each of `kernel` (every kernel here copies), from one pool of
// pinned input frames that the first device allocates.
MultiResult run_multi(const std::vector<ListedDevice>& devices, const Options& opt,
                      const Size& size, const char* kernel, uint32_t synthetic_us, Check check) {
  const FrameLayout layout = FrameLayout::packed(PixelFormat::kRGBA, size.width, size.height);
  const int n = static_cast<int>(devices.size());
  std::vector<std::shared_ptr<Device>> engine_devices;
  for (const ListedDevice& d : devices) engine_devices.push_back(d.device);
  // A frame is dealt to a device only when submitted, after it left the
  // pool: one pool for all, pinned by the first device (portable to every
  // device under unified addressing), enough for every ring to be full.
  Device& first = *devices.front().device;
  first.make_current();
  InputPool pool(first, layout, opt.ring * n + 2, true);
  EngineConfig config;
  config.ring_size = opt.ring;
  config.input = config.output = layout;
  KernelParams params;
  params.set("synthetic-us", synthetic_us);
  config.operation = make_operation(kernel, params);

  // What a frame carries through the engine: its input buffer and the
  // number it was submitted as, which must come back as its sequence.
  struct Tag final : FrameUser {
    Tag(int i, uint64_t at) : input(i), submitted(at) {}
    const int input;
    const uint64_t submitted;
  };
  std::mutex mutex;
  MultiResult result;
  result.by_device.assign(static_cast<size_t>(n), 0);
  uint64_t expected = 0;  // the sequence the next frame out must have
  int64_t delivered = 0;
  std::string failure;
  std::chrono::steady_clock::time_point last;
  const size_t row_bytes = layout.row_bytes(0);
  const size_t stride = layout.stride[0];
  const int rows = layout.rows(0);
  MultiEngineCallbacks callbacks;
  callbacks.on_frame = [&](OutputFrame frame) {
    const int64_t now = host_now_ns();  // before the check below
    const uint64_t sequence = frame.sequence();
    const Tag& tag = *frame.user_as<Tag>();
    const uint8_t* out = frame.image().planes[0].data;
    const uint8_t* in = pool.data(tag.input);
    bool same = true;
    if (check == Check::kWhole || checked_frame(sequence, opt.warmup, opt.frames)) {
      same = std::memcmp(out, in, layout.size) == 0;
    } else {
      for (int k = 0; k < kSampleRows && same; ++k) {
        const size_t y = static_cast<size_t>(k) * static_cast<size_t>(rows - 1) / (kSampleRows - 1);
        same = std::memcmp(out + y * stride, in + y * stride, row_bytes) == 0;
      }
    }
    const int device = frame.device();
    const bool numbered = tag.submitted == sequence;
    const FrameTiming timing = frame.timing();
    frame.release();
    std::lock_guard<std::mutex> lock(mutex);
    const bool in_order = sequence == expected;
    expected = sequence + 1;
    if (!same || !numbered || !in_order || device < 0 || device >= n) ++result.bad;
    if (sequence >= static_cast<uint64_t>(opt.warmup) && device >= 0 && device < n) {
      ++result.by_device[static_cast<size_t>(device)];
      HostFigures& h = result.host;
      h.slot_us += static_cast<double>(timing.wait_slot.end_ns - timing.wait_slot.start_ns) / 1e3;
      h.enqueue_us += static_cast<double>(timing.enqueued_ns - timing.wait_slot.end_ns) / 1e3;
      h.engine_us += static_cast<double>(timing.enqueued_ns - timing.wait_slot.start_ns) / 1e3;
      const double held = static_cast<double>(now - timing.delivered_ns) / 1e3;
      h.held_us += held;
      h.held_max_us = std::max(h.held_max_us, held);
    }
    ++delivered;
    last = std::chrono::steady_clock::now();
  };
  // A device lost, or all of them: the figures would not be this
  // configuration's. Said at once, and the run fails after its frames.
  auto fail = [&](const std::string& what, const std::string& message) {
    std::fprintf(stderr, "cudaoverlap-bench: %s: %s\n", what.c_str(), message.c_str());
    std::lock_guard<std::mutex> lock(mutex);
    if (failure.empty()) failure = what + ": " + message;
  };
  callbacks.on_warning = [&](int device, const std::string& message) {
    const bool known = device >= 0 && device < n;
    fail(known
             ? "device " + std::to_string(devices[static_cast<size_t>(device)].number) + " left out"
             : std::string("a device left out"),
         message);
  };
  callbacks.on_error = [&](const std::string& message) { fail("no device left", message); };
  MultiEngine engine(engine_devices, config, callbacks);
  engine.start();

  uint64_t submitted = 0;
  int64_t take_ns = 0, submit_ns = 0;  // the producer's waits, timed frames only
  auto submit_n = [&](int count) {
    for (int i = 0; i < count; ++i) {
      const int64_t t0 = host_now_ns();
      InputFrame in = pool.take();
      const int64_t t1 = host_now_ns();
      const int input = static_cast<const InputIndex&>(*in.user).input;
      in.user = std::make_shared<Tag>(input, submitted);
      if (engine.submit(std::move(in)) != Status::kOk)
        throw Error("a frame could not be submitted: " + engine.error());
      take_ns += t1 - t0;
      submit_ns += host_now_ns() - t1;
      ++submitted;
    }
    if (engine.drain() != Status::kOk) throw Error("draining failed: " + engine.error());
  };
  submit_n(opt.warmup);
  take_ns = submit_ns = 0;
  std::vector<MultiEngine::LaneFigures> lanes_before;
  for (int d = 0; d < n; ++d) lanes_before.push_back(engine.lane_figures(d));
  const double cpu_start = process_cpu_us();
  const double producer_start = thread_cpu_us();
  const double workers_start = threads_cpu_us("co-worker");
  const auto start = std::chrono::steady_clock::now();
  submit_n(opt.frames);
  const double cpu = process_cpu_us() - cpu_start;
  const double producer_cpu = thread_cpu_us() - producer_start;
  const double workers_cpu = threads_cpu_us("co-worker") - workers_start;
  for (int d = 0; d < n; ++d) {
    const MultiEngine::LaneFigures after = engine.lane_figures(d);
    const MultiEngine::LaneFigures& before = lanes_before[static_cast<size_t>(d)];
    const int64_t measured = after.measured - before.measured;
    const int64_t handed = after.handed_for_others - before.handed_for_others;
    result.dealt_us.push_back(measured > 0 ? (after.measured_ns - before.measured_ns) / 1e3 /
                                                 static_cast<double>(measured)
                                           : 0.0);
    result.handed_share.push_back(static_cast<double>(handed) / opt.frames);
    result.handing_us.push_back(handed > 0
                                    ? static_cast<double>(after.handing_ns - before.handing_ns) /
                                          1e3 / static_cast<double>(handed)
                                    : 0.0);
  }
  engine.stop();
  std::lock_guard<std::mutex> lock(mutex);
  {
    HostFigures& h = result.host;
    const double wall_us = std::chrono::duration<double, std::micro>(last - start).count();
    h.producer_busy = wall_us > 0 ? producer_cpu / wall_us : 0;
    h.workers_cpu_us = workers_cpu / opt.frames;
    h.take_us = static_cast<double>(take_ns) / 1e3 / opt.frames;
    h.submit_us = static_cast<double>(submit_ns) / 1e3 / opt.frames;
    h.slot_us /= opt.frames;
    h.engine_us /= opt.frames;
    h.dealing_us = h.submit_us - h.engine_us;
    h.enqueue_us /= opt.frames;
    h.held_us /= opt.frames;
  }
  if (!failure.empty())
    throw Error("a device failed during a run over devices " + numbers_of(devices) + ": " +
                failure);
  result.bad += std::max<int64_t>(0, static_cast<int64_t>(submitted) - delivered);
  result.fps = opt.frames / std::chrono::duration<double>(last - start).count();
  result.cpu_us = cpu / opt.frames;
  return result;
}

}  // namespace

// The --devices table.
int run_devices_table(const std::vector<ListedDevice>& devices, const Options& opt) {
  const size_t n = devices.size();
  std::printf("cudaoverlap over several devices (MultiEngine): devices %s\n",
              numbers_of(devices).c_str());
  for (const ListedDevice& d : devices)
    std::printf("  device %d: %s\n", d.number, d.device->describe().c_str());
  std::printf(
      "RGBA, ring-size %d on each device; each figure the median (min–max) of %d runs of %d "
      "frames after %d warm-up\n",
      opt.ring, opt.runs, opt.frames, opt.warmup);
  std::printf(
      "input: one pool of pinned frames per run, allocated by the run's first device (on its "
      "NUMA node where the host has several) and shared by all: the MultiEngine deals a frame "
      "only when it is submitted; copy rates: each device its own pinned memory\n");
  std::printf(
      "bound: the sum of each device's bound alone (its pinned copies, the slower direction or "
      "half of both at once; for the synthetic kernel no more than 1/its busy time); speed-up: "
      "against the best device alone; %% of copies at once: what the run moved (each frame up "
      "and down) against plain copies both ways at once on the same devices (one device: its "
      "own rate; several: all of them together); CPU: the process's user + system time per "
      "frame; output: "
      "every frame's sequence and number checked in every run, its pixels against its input "
      "(whole in a run of its own, untimed, and every tenth warm-up frame and the last of each "
      "run; %d rows of every other frame)\n",
      kSampleRows);
  bool all_ok = true;
  for (const std::string& name : opt.sizes) {
    const Size& size = kSizes.at(name);
    const double bytes = 4.0 * size.width * size.height;
    std::vector<CopyRates> links;
    std::vector<double> bound_fps;
    for (const ListedDevice& d : devices) {
      links.push_back(measure_copy_rates(*d.device, static_cast<size_t>(bytes), opt.runs));
      const CopyRates& link = links.back();
      bound_fps.push_back(std::min({link.h2d.median, link.d2h.median, link.both.median / 2}) * 1e9 /
                          bytes);
    }
    std::printf("\n%s (%.1f MB a frame): pinned copies of a frame on each device alone\n\n",
                size.name, bytes / 1e6);
    std::printf("| device | H2D GB/s | D2H GB/s | both at once GB/s | bound frames/s |\n");
    std::printf("|---|---:|---:|---:|---:|\n");
    double both_sum = 0;
    for (size_t d = 0; d < n; ++d) {
      std::printf("| device %d | %s | %s | %s | %.0f |\n", devices[d].number,
                  show(links[d].h2d, "%.1f").c_str(), show(links[d].d2h, "%.1f").c_str(),
                  show(links[d].both, "%.1f").c_str(), bound_fps[d]);
      both_sum += links[d].both.median;
    }
    // What plain copies move with every device copying at once: the rate
    // the engine over all of them is compared with.
    double together_gbps = both_sum;
    if (n > 1) {
      const Spread together =
          measure_copies_together(devices, static_cast<size_t>(bytes), opt.runs);
      together_gbps = together.median;
      std::printf(
          "\ndevices %s copying at once, both directions on each: %s GB/s in all (%.0f %% of the "
          "sum of each alone, %.1f)\n",
          numbers_of(devices).c_str(), show(together, "%.1f").c_str(),
          100.0 * together.median / both_sum, both_sum);
    }
    // The same copies from host memory in 2 MB pages: does the size of the
    // host's pages (translations on the DMA's way, where an IOMMU is)
    // change what one link, or all at once, move?
    // Not placed on the device's NUMA node (the pinned memory above is,
    // where the host has several): on such a host the two differ in that
    // too. A probe that cannot be made says so and the tables go on.
    if (devices.front().device->cuda_device() >= 0) {
      try {
        std::string alone;
        double huge_sum = 0;
        int64_t huge_bytes = 0;  // of the probes alone, together; -1: unknown
        for (size_t d = 0; d < n; ++d) {
          int64_t one_huge = -1;
          const Spread one = measure_copies_together({devices[d]}, static_cast<size_t>(bytes),
                                                     opt.runs, HostPages::kHuge, &one_huge);
          huge_sum += one.median;
          huge_bytes = huge_bytes < 0 || one_huge < 0 ? -1 : huge_bytes + one_huge;
          alone += (d ? ", device " : "device ") + std::to_string(devices[d].number) + " " +
                   show(one, "%.1f");
        }
        std::string all;
        if (n > 1) {
          const Spread together = measure_copies_together(devices, static_cast<size_t>(bytes),
                                                          opt.runs, HostPages::kHuge);
          char text[160];
          std::snprintf(text, sizeof text,
                        "; all at once %s GB/s (%.0f %% of the sum of each alone)",
                        show(together, "%.1f").c_str(), 100.0 * together.median / huge_sum);
          all = text;
        }
        // The probes' host memory: two buffers a device, each in whole 2 MB.
        const double huge = static_cast<double>(size_t{2} << 20);
        const double probe_bytes = 2.0 * static_cast<double>(n) * std::ceil(bytes / huge) * huge;
        char share[32] = "unknown";
        if (huge_bytes >= 0)
          std::snprintf(share, sizeof share, "%.0f %%",
                        100.0 * static_cast<double>(huge_bytes) / probe_bytes);
        std::printf(
            "from 2 MB pages (anonymous memory, MADV_HUGEPAGE, registered), both directions at "
            "once, GB/s: %s%s; in huge pages: %s of the probe's memory\n",
            alone.c_str(), all.c_str(), share);
      } catch (const Error& e) {
        std::printf("from 2 MB pages: not measured (%s)\n", e.what());
      }
    }
    // The synthetic kernel's busy time: one frame's upload on the first
    // device (or --synthetic-us), so upload, compute and download match.
    const uint32_t balanced_us =
        opt.synthetic_us >= 0 ? static_cast<uint32_t>(opt.synthetic_us)
                              : static_cast<uint32_t>(bytes / (links.front().h2d.median * 1e3));
    const std::vector<KernelCase> kernels = balanced_kernel_cases(balanced_us);
    // The configurations: each device alone, then all together.
    std::vector<std::vector<ListedDevice>> sets;
    for (const ListedDevice& d : devices) sets.push_back({d});
    if (n > 1) sets.push_back(devices);
    std::printf(
        "\n| kernel | devices | frames/s | %% of bound | bound frames/s | %% of copies at once | "
        "speed-up vs best alone | engine CPU us/frame | frames by device | output |\n");
    std::printf("|---|---|---:|---:|---:|---:|---:|---:|---|---|\n");
    // Each kernel's host figures, per configuration and run: a table of
    // their own after the rates.
    std::vector<std::pair<std::string, std::vector<std::vector<HostFigures>>>> host_by_kernel;
    std::vector<std::string> dealing_rows;  // the devices' dealing figures, per kernel
    for (const KernelCase& k : kernels) {
      struct SetFigures {
        std::vector<double> fps, cpu;
        std::vector<int64_t> by_device;
        int64_t bad = 0;
        std::vector<HostFigures> host;
        // Per device of the set, one figure a run (MultiResult's).
        std::vector<std::vector<double>> dealt_us, handed_share, handing_us;
      };
      std::vector<SetFigures> figures(sets.size());
      for (size_t s = 0; s < sets.size(); ++s) figures[s].by_device.assign(sets[s].size(), 0);
      auto add = [](SetFigures& f, const MultiResult& r, bool timed) {
        if (timed) {
          f.fps.push_back(r.fps);
          f.cpu.push_back(r.cpu_us);
          f.host.push_back(r.host);
          for (size_t d = 0; d < r.by_device.size(); ++d) f.by_device[d] += r.by_device[d];
          f.dealt_us.resize(r.dealt_us.size());
          f.handed_share.resize(r.dealt_us.size());
          f.handing_us.resize(r.dealt_us.size());
          for (size_t d = 0; d < r.dealt_us.size(); ++d) {
            f.dealt_us[d].push_back(r.dealt_us[d]);
            f.handed_share[d].push_back(100.0 * r.handed_share[d]);
            f.handing_us[d].push_back(r.handing_us[d]);
          }
        }
        f.bad += r.bad;
      };
      // Runs taken in turn over the configurations, so a drift in the
      // machine's state spreads over all of them.
      for (int r = 0; r < opt.runs; ++r)
        for (size_t s = 0; s < sets.size(); ++s)
          add(figures[s], run_multi(sets[s], opt, size, k.kernel, k.us, Check::kSampled), true);
      for (size_t s = 0; s < sets.size(); ++s)
        add(figures[s], run_multi(sets[s], opt, size, k.kernel, k.us, Check::kWhole), false);
      double best_alone = 0;
      for (size_t s = 0; s < n; ++s)
        best_alone = std::max(best_alone, spread_of(figures[s].fps).median);
      for (size_t s = 0; s < sets.size(); ++s) {
        const SetFigures& f = figures[s];
        const Spread fps = spread_of(f.fps);
        // The kernel's own bound on each device: a stage cannot be shorter
        // than the kernel.
        double bound = 0, alone_gbps = 0;
        for (const ListedDevice& d : sets[s]) {
          const size_t i = static_cast<size_t>(
              std::find_if(devices.begin(), devices.end(),
                           [&](const ListedDevice& e) { return e.number == d.number; }) -
              devices.begin());
          bound += std::min(bound_fps[i], k.us > 0 ? 1e6 / k.us : bound_fps[i]);
          alone_gbps = links[i].both.median;
        }
        // What the run moved (each frame up and down) against what plain
        // copies moved both ways at once on the same devices: on one device
        // its own rate, on all of them their rate together.
        const double copies_gbps = sets[s].size() == 1 ? alone_gbps : together_gbps;
        const double moved_gbps = fps.median * 2.0 * bytes / 1e9;
        int64_t total = 0;
        for (int64_t c : f.by_device) total += c;
        std::string shares;
        for (size_t d = 0; d < sets[s].size(); ++d) {
          char share[48];
          std::snprintf(share, sizeof share, "%s%d: %.1f %%", d ? ", " : "", sets[s][d].number,
                        total > 0 ? 100.0 * f.by_device[d] / total : 0.0);
          shares += share;
        }
        const std::string label = sets[s].size() == 1
                                      ? "device " + numbers_of(sets[s]) + " alone"
                                      : "devices " + numbers_of(sets[s]) + " together";
        const std::string output =
            f.bad == 0 ? std::string("checked")
                       : std::to_string(f.bad) + (f.bad == 1 ? " bad frame" : " bad frames");
        std::printf("| %s | %s | %s | %.1f %% | %.0f | %.1f %% | %.2fx | %s | %s | %s |\n",
                    k.label.c_str(), label.c_str(), show(fps).c_str(), 100.0 * fps.median / bound,
                    bound, 100.0 * moved_gbps / copies_gbps, fps.median / best_alone,
                    show(spread_of(f.cpu)).c_str(), shares.c_str(), output.c_str());
        std::fflush(stdout);
        all_ok = all_ok && f.bad == 0;
      }
      host_by_kernel.emplace_back(k.label, std::vector<std::vector<HostFigures>>());
      for (const SetFigures& f : figures) host_by_kernel.back().second.push_back(f.host);
      if (n > 1) {
        const SetFigures& all = figures.back();
        std::string rows;
        for (size_t d = 0; d < n; ++d) {
          char row[256];
          std::snprintf(row, sizeof row, "| %s | %d | %s | %s %% | %s |\n", k.label.c_str(),
                        devices[d].number, show(spread_of(all.dealt_us[d]), "%.1f").c_str(),
                        show(spread_of(all.handed_share[d]), "%.1f").c_str(),
                        show(spread_of(all.handing_us[d]), "%.1f").c_str());
          rows += row;
        }
        dealing_rows.push_back(rows);
      }
    }
    // Where the host's time went in the same runs: a producer busy all the
    // time, or frames held long for their turn, bound the rate before the
    // devices do.
    std::printf(
        "\n%s: host time per frame, median (min–max) over the runs above; producer: the thread "
        "that takes input frames and submits them (busy: its CPU time / wall time); submit: in "
        "MultiEngine::submit, of which dealing: choosing a device and waiting for one's slot, "
        "slot: Engine::submit waiting for a free slot, enqueue: Engine::submit issuing the "
        "frame's device work; input: waiting for a pool frame; held: a frame done, waiting for "
        "an earlier one on another device; workers: the engines' worker threads' CPU time, all "
        "devices together\n\n",
        size.name);
    std::printf(
        "| kernel | devices | producer busy | submit us | dealing us | slot us | enqueue us | "
        "input us | held us (max) | workers CPU us |\n");
    std::printf("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (const auto& [label, by_set] : host_by_kernel)
      for (size_t s = 0; s < sets.size(); ++s) {
        const std::vector<HostFigures>& h = by_set[s];
        auto of = [&](double HostFigures::*field, double scale = 1.0) {
          std::vector<double> values;
          for (const HostFigures& one : h) values.push_back(one.*field * scale);
          return show(spread_of(values), "%.1f");
        };
        double held_max = 0;
        for (const HostFigures& one : h) held_max = std::max(held_max, one.held_max_us);
        std::printf("| %s | %s | %s %% | %s | %s | %s | %s | %s | %s (%.0f) | %s |\n",
                    label.c_str(), numbers_of(sets[s]).c_str(),
                    of(&HostFigures::producer_busy, 100.0).c_str(),
                    of(&HostFigures::submit_us).c_str(), of(&HostFigures::dealing_us).c_str(),
                    of(&HostFigures::slot_us).c_str(), of(&HostFigures::enqueue_us).c_str(),
                    of(&HostFigures::take_us).c_str(), of(&HostFigures::held_us).c_str(), held_max,
                    of(&HostFigures::workers_cpu_us).c_str());
      }
    // What the dealing saw of each device in the runs over all of them: a
    // device whose measured time is above the others' gets fewer frames;
    // its worker handing out the others' frames (the next in order was its
    // own) is time it does not look for its own.
    if (n > 1) {
      std::printf(
          "\n%s, devices %s together: per device, median (min–max) over the runs above; dealt "
          "us: the time per frame the dealing measured for it (MultiEngine::lane_figures); "
          "hands out: frames of other devices its worker handed out, %% of all frames; us each: "
          "the time that took per frame (the consumer's on_frame)\n\n",
          size.name, numbers_of(devices).c_str());
      std::printf("| kernel | device | dealt us | hands out | us each |\n");
      std::printf("|---|---:|---:|---:|---:|\n");
      for (const std::string& rows : dealing_rows) std::printf("%s", rows.c_str());
    }
    std::fflush(stdout);
  }
  return all_ok ? 0 : 1;
}

}  // namespace cudaoverlap::bench
