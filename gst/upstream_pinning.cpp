// See upstream_pinning.h.
#include "upstream_pinning.h"

#include <gst/allocators/gstfdmemory.h>
#include <gst/gst.h>

#include <algorithm>
#include <cstdint>
#include <mutex>

#include "engine.h"
#include "kernels/error.h"

GST_DEBUG_CATEGORY_STATIC(upstream_pinning_debug);
#define GST_CAT_DEFAULT upstream_pinning_debug

namespace cudaoverlap {
namespace {

// What we know of one upstream memory, in its qdata.
struct PinState {
  std::weak_ptr<Device> device;  // the device the registration is for
  int sightings = 0;
  bool refused = false;      // registering failed: stage it from now on
  uint8_t* begin = nullptr;  // the registered range
  uint8_t* end = nullptr;
  std::unique_ptr<HostRegistration> registration;
  uint64_t id = 0;  // InputFrame::memory_id of the registration
};

// The element's category (gst_debug_category_new hands back an existing
// one), so `GST_DEBUG=cudaoverlap:5` shows pinning too.
void init_debug() {
  static const bool done = [] {
    GST_DEBUG_CATEGORY_INIT(upstream_pinning_debug, "cudaoverlap", 0, "cudaoverlap element");
    return true;
  }();
  (void)done;
}

GQuark pin_quark() {
  static const GQuark quark = g_quark_from_static_string("cudaoverlap-upstream-pin");
  return quark;
}

// Serializes the qdata's read-modify-write: two elements (after a tee) may
// see one memory at once. Lock order: a leaf, but a registration is made
// under it (milliseconds, once per memory block).
std::mutex g_pin_mutex;

// Whether `memory` stays at one address for as long as it exists. A
// registration is made for an address: memory that is mapped only while
// someone maps it (GstFdMemory and GstDmaBufMemory without KEEP_MAPPED, which
// munmap when the last mapping goes) may sit elsewhere, or nowhere, by the
// time a later frame in it is uploaded. Memory of unknown allocators is
// taken to be of that kind.
bool address_is_stable(GstMemory* memory) {
  while (memory->parent != nullptr) memory = memory->parent;
  if (gst_memory_is_type(memory, GST_ALLOCATOR_SYSMEM)) return true;
  return gst_is_fd_memory(memory) && GST_MEMORY_FLAG_IS_SET(memory, GST_FD_MEMORY_FLAG_KEEP_MAPPED);
}

void free_pin_state(gpointer data) {
  // Called as the memory is finalized, before its allocator frees it: the
  // pages are unlocked while they still belong to the memory.
  delete static_cast<PinState*>(data);
}

}  // namespace

UpstreamPin pin_upstream_memory(GstBuffer* buffer, const ImageRef& image, const FrameLayout& layout,
                                const std::shared_ptr<Device>& device, uint64_t* memory_id) {
  init_debug();
  if (memory_id) *memory_id = 0;
  if (gst_buffer_n_memory(buffer) != 1) return UpstreamPin::kStaged;
  GstMemory* memory = gst_buffer_peek_memory(buffer, 0);
  if (!address_is_stable(memory)) return UpstreamPin::kStaged;

  // The bytes the planes occupy, which must lie in the registered range.
  uint8_t* first = nullptr;
  uint8_t* last = nullptr;
  for (int p = 0; p < layout.n_planes(); ++p) {
    uint8_t* begin = image.planes[p].data;
    uint8_t* end = begin + (layout.rows(p) - 1) * image.planes[p].stride + layout.row_bytes(p);
    first = first ? std::min(first, begin) : begin;
    last = last ? std::max(last, end) : end;
  }

  std::lock_guard<std::mutex> lock(g_pin_mutex);
  auto* state =
      static_cast<PinState*>(gst_mini_object_get_qdata(GST_MINI_OBJECT_CAST(memory), pin_quark()));
  if (state == nullptr) {
    state = new PinState;
    state->device = device;
    gst_mini_object_set_qdata(GST_MINI_OBJECT_CAST(memory), pin_quark(), state, free_pin_state);
  }
  if (state->device.lock() != device) {
    GST_LOG("upstream memory %p: other device", static_cast<void*>(memory));
    return UpstreamPin::kStaged;  // another element's device
  }
  const auto pinned_if_covered = [&] {
    if (first < state->begin || last > state->end) return UpstreamPin::kStaged;
    if (memory_id) *memory_id = state->id;
    return UpstreamPin::kPinned;
  };
  if (state->registration) return pinned_if_covered();
  if (state->refused) return UpstreamPin::kStaged;
  if (++state->sightings < 2) {
    GST_LOG("upstream memory %p: first sighting", static_cast<void*>(memory));
    return UpstreamPin::kStaged;
  }

  // Second sighting: this memory comes back. Register all of it that maps,
  // so frames at other offsets in it (sub-buffers) are covered too.
  GstMapInfo map;
  if (!gst_memory_map(memory, &map, GST_MAP_READ)) {
    state->refused = true;
    return UpstreamPin::kStaged;
  }
  try {
    state->registration = device->register_host(map.data, map.size);
    state->id = new_memory_id();
    state->begin = map.data;
    state->end = map.data + map.size;
    GST_DEBUG("pinned upstream memory %p: %" G_GSIZE_FORMAT " bytes", map.data, map.size);
  } catch (const Error& e) {
    state->refused = true;
    GST_DEBUG("upstream memory %p stays pageable: %s", map.data, e.what());
  }
  gst_memory_unmap(memory, &map);
  return state->registration ? pinned_if_covered() : UpstreamPin::kStaged;
}

}  // namespace cudaoverlap
