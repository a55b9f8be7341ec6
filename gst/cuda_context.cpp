// SharedCudaContext (cuda_context.h): the context dance of GStreamer's CUDA
// elements (query the neighbours, then ask the application through
// need-context, else make one and post have-context), with the device's
// primary context as the one made.
#include "cuda_context.h"

#include <gst/cuda/gstcudacontext.h>
#include <gst/cuda/gstcudaloader.h>
#include <gst/cuda/gstcudamemory.h>
#include <gst/cuda/gstcudautils.h>

#include "cuda_device.h"

GST_DEBUG_CATEGORY_STATIC(cuda_context_debug);
#define GST_CAT_DEFAULT cuda_context_debug

namespace cudaoverlap {
namespace {

// The element's category (gst_debug_category_new hands back an existing
// one), so `GST_DEBUG=cudaoverlap:5` shows all of it.
void init_debug() {
  static const bool ready = [] {
    GST_DEBUG_CATEGORY_INIT(cuda_context_debug, "cudaoverlap", 0, "cudaoverlap element");
    return true;
  }();
  (void)ready;
}

// Asks the peer of each of `element`'s pads, downstream first, for a CUDA
// context; returns the first answer's context (a reference), or null.
GstContext* ask_neighbours(GstElement* element) {
  for (GstPadDirection direction : {GST_PAD_SRC, GST_PAD_SINK}) {
    GstIterator* pads =
        direction == GST_PAD_SRC ? gst_element_iterate_src_pads(element)
                                 : gst_element_iterate_sink_pads(element);
    GstContext* found = nullptr;
    GValue item = G_VALUE_INIT;
    while (!found && gst_iterator_next(pads, &item) == GST_ITERATOR_OK) {
      GstPad* pad = GST_PAD(g_value_get_object(&item));
      GstQuery* query = gst_query_new_context(GST_CUDA_CONTEXT_TYPE);
      if (gst_pad_peer_query(pad, query)) {
        GstContext* context = nullptr;
        gst_query_parse_context(query, &context);
        if (context) found = gst_context_ref(context);
      }
      gst_query_unref(query);
      g_value_reset(&item);
    }
    g_value_unset(&item);
    gst_iterator_free(pads);
    if (found) return found;
  }
  return nullptr;
}

}  // namespace

SharedCudaContext::~SharedCudaContext() { reset(); }

void SharedCudaContext::set(GstElement* element, GstContext* context, int device_id) {
  init_debug();
  std::lock_guard<std::mutex> lock(mutex_);
  if (context_) return;
  // Takes a reference to the context in `context` where its device is
  // device_id's (or device_id is -1).
  if (gst_cuda_handle_set_context(element, context, device_id, &context_))
    GST_INFO_OBJECT(element, "taking the pipeline's CUDA context %p (device %d)", context_,
                    held_device());
}

bool SharedCudaContext::answer(GstElement* element, GstQuery* query) const {
  if (GST_QUERY_TYPE(query) != GST_QUERY_CONTEXT) return false;
  std::lock_guard<std::mutex> lock(mutex_);
  return context_ && gst_cuda_handle_context_query(element, query, context_);
}

std::string SharedCudaContext::ensure(GstElement* element, int device_id) {
  init_debug();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (context_ && held_device() == device_id) return {};
    // Kept from before device-id changed: another device's.
    if (context_) gst_object_unref(context_);
    context_ = nullptr;
  }
  if (!gst_cuda_load_library()) return "GStreamer's CUDA library could not load the CUDA driver";
  gst_cuda_memory_init_once();  // its allocator, so CUDA memory is known as such
  if (GstContext* answer = ask_neighbours(element)) {
    set(element, answer, device_id);
    gst_context_unref(answer);
  }
  if (handle()) return {};
  // The bin (from a context an element posted before) or the application
  // answers synchronously, through GstElement::set_context.
  gst_element_post_message(element,
                           gst_message_new_need_context(GST_OBJECT(element), GST_CUDA_CONTEXT_TYPE));
  if (handle()) return {};
  CUdevice cuda_device = 0;
  if (CuDeviceGet(&cuda_device, device_id) != CUDA_SUCCESS)
    return "CUDA device " + std::to_string(device_id) + " is not known to the CUDA driver";
  void* primary = nullptr;
  try {
    primary = cuda_retain_primary_context(device_id);
  } catch (const std::exception& e) {
    return e.what();
  }
  GstCudaContext* made = gst_cuda_context_new_wrapped(static_cast<CUcontext>(primary), cuda_device);
  if (!made) {
    cuda_release_primary_context(device_id);
    return "GStreamer's CUDA library could not wrap device " + std::to_string(device_id) +
           "'s CUDA context";
  }
  // A wrapped context is not GStreamer's to destroy: the primary context's
  // retain is let go of when the last reference to it goes.
  g_object_weak_ref(
      G_OBJECT(made),
      [](gpointer device, GObject*) { cuda_release_primary_context(GPOINTER_TO_INT(device)); },
      GINT_TO_POINTER(device_id));
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (context_) {
      gst_object_unref(made);  // one came in meanwhile: keep it
      return {};
    }
    context_ = made;
  }
  GST_INFO_OBJECT(element, "sharing device %d's primary CUDA context %p", device_id, made);
  gst_element_post_message(element, gst_message_new_have_context(
                                        GST_OBJECT(element), gst_context_new_cuda_context(made)));
  return {};
}

void SharedCudaContext::share(GstElement* element, int device_id) {
  if (device_id < 0 || cuda_device_count() == 0) return;
  const std::string problem = ensure(element, device_id);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    failed_ = !problem.empty();
  }
  if (!problem.empty())
    GST_ELEMENT_WARNING(element, RESOURCE, FAILED,
                        ("no CUDA context shared with the pipeline, so no CUDA memory is taken: %s",
                         problem.c_str()),
                        (nullptr));
}

bool SharedCudaContext::offers_memory(int device_id) const {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (failed_) return false;
  }
  return device_id >= 0 && cuda_device_count() > 0;
}

void SharedCudaContext::reset() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (context_) gst_object_unref(context_);
  context_ = nullptr;
}

CudaContextChoice SharedCudaContext::choice(int device_id) const {
  std::lock_guard<std::mutex> lock(mutex_);
  CudaContextChoice choice;
  if (!context_ || held_device() != device_id) return choice;
  choice.handle = gst_cuda_context_get_handle(context_);
  choice.shared = context_;
  choice.keep =
      std::shared_ptr<void>(gst_object_ref(context_), [](void* c) { gst_object_unref(c); });
  return choice;
}

void* SharedCudaContext::handle() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return context_ ? gst_cuda_context_get_handle(context_) : nullptr;
}

int SharedCudaContext::held_device() const {
  if (!context_) return -1;
  guint id = 0;
  g_object_get(context_, "cuda-device-id", &id, nullptr);
  return static_cast<int>(id);
}

}  // namespace cudaoverlap
