#include "slot_ring.h"

#include <cstdio>
#include <string>

#include "kernels/error.h"

namespace cudaoverlap {
std::string megabytes(size_t bytes) {
  char text[64];
  std::snprintf(text, sizeof text, "%.1f MB", static_cast<double>(bytes) / 1e6);
  return text;
}

SlotLayouts slot_layouts(const EngineConfig& config) {
  const FrameLayout& in = config.input;
  const FrameLayout& out = config.output;
  SlotLayouts layouts;
  layouts.staging = FrameLayout::packed(in.format, in.width, in.height);
  layouts.device_in =
      FrameLayout::packed(in.format, in.width, in.height, kDeviceAlign, kDeviceAlign);
  layouts.device_out =
      FrameLayout::packed(out.format, out.width, out.height, kDeviceAlign, kDeviceAlign);
  layouts.output = out;
  return layouts;
}

std::vector<Slot> allocate_slots(Device& device, const EngineConfig& config,
                                 const SlotLayouts& layouts, int bands, size_t scratch_bytes,
                                 std::unique_ptr<Buffer>* scratch) {
  const int n = config.ring_size;
  const FrameLayout& in = config.input;
  const size_t device_bytes =
      n * (layouts.device_in.size + layouts.device_out.size) + scratch_bytes;
  const size_t pinned_bytes = n * (layouts.staging.size + layouts.output.size);
  const std::string ring = "ring-size " + std::to_string(n);
  const size_t free_bytes = device.device_memory_free();
  if (device_bytes > free_bytes)
    throw Error(ring + " needs " + megabytes(device_bytes) + " of device memory for " +
                std::to_string(in.width) + "x" + std::to_string(in.height) + " frames, but " +
                device.describe() + " has only " + megabytes(free_bytes) +
                " free; lower ring-size or the frame size");

  std::vector<Slot> slots(n);
  try {
    if (scratch_bytes > 0) *scratch = device.alloc_device(scratch_bytes);
    for (Slot& slot : slots) {
      slot.device_in = device.alloc_device(layouts.device_in.size);
      slot.device_out = device.alloc_device(layouts.device_out.size);
    }
  } catch (const Error& e) {
    throw Error(ring + " needs " + megabytes(device_bytes) + " of device memory on " +
                device.describe() + "; allocating it failed (" + e.what() +
                "); lower ring-size or the frame size");
  }
  for (Slot& slot : slots) {
    try {
      slot.pinned_in = device.alloc_pinned(layouts.staging.size);
      slot.pinned_out = device.alloc_pinned(layouts.output.size);
    } catch (const Error& e) {
      throw Error(ring + " needs " + megabytes(pinned_bytes) +
                  " of pinned host memory; allocating it failed (" + e.what() +
                  "); lower ring-size or the frame size");
    }
    SlotEvents& events = slot.events;
    for (int k = 0; k < bands; ++k) {
      events.uploaded.push_back(config.timing ? device.create_timing_event()
                                              : device.create_event());
      events.computed.push_back(config.timing ? device.create_timing_event()
                                              : device.create_event());
    }
    if (config.timing) {
      events.downloaded = device.create_host_event(config.host_wait, true);
      events.upload_started = device.create_timing_event();
      events.compute_started = device.create_timing_event();
      events.download_started = device.create_timing_event();
      const size_t parts =
          config.operation->parts(config.input.format, config.output.format).size();
      if (bands == 1 && parts >= 1 && parts <= static_cast<size_t>(FrameTiming::kMaxParts))
        for (size_t k = 0; k < parts; ++k)
          events.parts_done.push_back(device.create_timing_event());
    } else {
      events.downloaded = device.create_host_event(config.host_wait, false);
    }
  }
  return slots;
}

void read_device_times(const SlotEvents& events, FrameTiming* timing) {
  const auto span = [](Event& start, Event& end) {
    TimeSpan t;
    try {
      t.start_ns = start.completed_at_ns();
      t.end_ns = end.completed_at_ns();
    } catch (const Error&) {
      t = TimeSpan{};
    }
    return t;
  };
  timing->upload = span(*events.upload_started, *events.uploaded.back());
  timing->compute = span(*events.compute_started, *events.computed.back());
  timing->download = span(*events.download_started, *events.downloaded);
  timing->parts = 0;
  if (!timing->compute.valid() || events.parts_done.empty()) return;
  // Each part's end after the one before, within the compute stage: else
  // the events are an earlier frame's (this one ran whole: an operation
  // that replaced the first has other parts).
  try {
    int64_t last = timing->compute.start_ns;
    for (size_t k = 0; k < events.parts_done.size(); ++k) {
      const int64_t end = events.parts_done[k]->completed_at_ns();
      if (end < last || end > timing->compute.end_ns) return;
      timing->part_end_ns[k] = last = end;
    }
    timing->parts = static_cast<int>(events.parts_done.size());
  } catch (const Error&) {
    timing->parts = 0;
  }
}

SlotImages slot_images(const Slot& slot, const SlotLayouts& layouts) {
  SlotImages images;
  images.staging = layouts.staging.at(slot.pinned_in->data());
  images.device_in = layouts.device_in.at(slot.device_in->data());
  images.device_out = layouts.device_out.at(slot.device_out->data());
  images.output = layouts.output.at(slot.pinned_out->data());
  return images;
}

}  // namespace cudaoverlap
