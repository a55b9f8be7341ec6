// ThreadSanitizer cannot see GLib's locks: GMutex, GRecMutex and GCond are
// built on futexes and atomics inside libglib, which is not instrumented, so
// every hand-over GStreamer makes under them (a buffer pushed through a
// pad, a task started under the stream lock, a property set under the
// object lock) looks like a race to it. Preloaded into the test programs of
// a -Db_sanitize=thread build (tests/meson.build), this library
// wraps those calls and tells ThreadSanitizer what they mean, so that what
// it reports in our code is ours:
// - a lock taken acquires, a lock let go releases (GMutex, GRecMutex,
//   GRWLock, and the mutex a GCond wait lets go of and takes again);
// - g_once_init_leave releases what g_once_init_enter's readers acquire;
// - what is pushed into a GAsyncQueue (GstHarness's queues) is released to
//   the thread that pops it (GLib's own calls to its locks do not come
//   through here: libglib binds them inside itself);
// - the last unref of a GstMiniObject (a buffer, an event, memory) happens
//   after every earlier unref, as its atomic refcount guarantees (for the
//   unrefs made from outside libgstreamer: those inside it bind there).
#include <dlfcn.h>
#include <glib.h>
#include <gst/gst.h>

// The function, not GLib's macro around it.
#undef g_once_init_enter
#undef g_once_init_leave

extern "C" {
void __tsan_acquire(void* addr);
void __tsan_release(void* addr);
}

namespace {

template <typename F>
F real(const char* name) {
  return reinterpret_cast<F>(dlsym(RTLD_NEXT, name));
}

}  // namespace

extern "C" {

void g_mutex_lock(GMutex* m) {
  static auto next = real<void (*)(GMutex*)>("g_mutex_lock");
  next(m);
  __tsan_acquire(m);
}

gboolean g_mutex_trylock(GMutex* m) {
  static auto next = real<gboolean (*)(GMutex*)>("g_mutex_trylock");
  const gboolean locked = next(m);
  if (locked) __tsan_acquire(m);
  return locked;
}

void g_mutex_unlock(GMutex* m) {
  static auto next = real<void (*)(GMutex*)>("g_mutex_unlock");
  __tsan_release(m);
  next(m);
}

void g_rec_mutex_lock(GRecMutex* m) {
  static auto next = real<void (*)(GRecMutex*)>("g_rec_mutex_lock");
  next(m);
  __tsan_acquire(m);
}

gboolean g_rec_mutex_trylock(GRecMutex* m) {
  static auto next = real<gboolean (*)(GRecMutex*)>("g_rec_mutex_trylock");
  const gboolean locked = next(m);
  if (locked) __tsan_acquire(m);
  return locked;
}

void g_rec_mutex_unlock(GRecMutex* m) {
  static auto next = real<void (*)(GRecMutex*)>("g_rec_mutex_unlock");
  __tsan_release(m);
  next(m);
}

void g_rw_lock_writer_lock(GRWLock* l) {
  static auto next = real<void (*)(GRWLock*)>("g_rw_lock_writer_lock");
  next(l);
  __tsan_acquire(l);
}

void g_rw_lock_writer_unlock(GRWLock* l) {
  static auto next = real<void (*)(GRWLock*)>("g_rw_lock_writer_unlock");
  __tsan_release(l);
  next(l);
}

void g_rw_lock_reader_lock(GRWLock* l) {
  static auto next = real<void (*)(GRWLock*)>("g_rw_lock_reader_lock");
  next(l);
  __tsan_acquire(l);
}

void g_rw_lock_reader_unlock(GRWLock* l) {
  static auto next = real<void (*)(GRWLock*)>("g_rw_lock_reader_unlock");
  __tsan_release(l);
  next(l);
}

void g_cond_wait(GCond* c, GMutex* m) {
  static auto next = real<void (*)(GCond*, GMutex*)>("g_cond_wait");
  __tsan_release(m);
  next(c, m);
  __tsan_acquire(m);
}

gboolean g_cond_wait_until(GCond* c, GMutex* m, gint64 end_time) {
  static auto next = real<gboolean (*)(GCond*, GMutex*, gint64)>("g_cond_wait_until");
  __tsan_release(m);
  const gboolean signalled = next(c, m, end_time);
  __tsan_acquire(m);
  return signalled;
}

void g_once_init_leave(volatile void* location, gsize result) {
  static auto next = real<void (*)(volatile void*, gsize)>("g_once_init_leave");
  __tsan_release(const_cast<void*>(location));
  next(location, result);
}

gboolean g_once_init_enter(volatile void* location) {
  static auto next = real<gboolean (*)(volatile void*)>("g_once_init_enter");
  const gboolean first = next(location);
  __tsan_acquire(const_cast<void*>(location));
  return first;
}

void g_async_queue_push(GAsyncQueue* queue, gpointer data) {
  static auto next = real<void (*)(GAsyncQueue*, gpointer)>("g_async_queue_push");
  __tsan_release(queue);
  next(queue, data);
}

gpointer g_async_queue_pop(GAsyncQueue* queue) {
  static auto next = real<gpointer (*)(GAsyncQueue*)>("g_async_queue_pop");
  gpointer data = next(queue);
  __tsan_acquire(queue);
  return data;
}

gpointer g_async_queue_try_pop(GAsyncQueue* queue) {
  static auto next = real<gpointer (*)(GAsyncQueue*)>("g_async_queue_try_pop");
  gpointer data = next(queue);
  __tsan_acquire(queue);
  return data;
}

gpointer g_async_queue_timeout_pop(GAsyncQueue* queue, guint64 timeout) {
  static auto next = real<gpointer (*)(GAsyncQueue*, guint64)>("g_async_queue_timeout_pop");
  gpointer data = next(queue, timeout);
  __tsan_acquire(queue);
  return data;
}

// On the refcount's address, so that code that reads the refcount with an
// atomic load (GST_MINI_OBJECT_REFCOUNT_VALUE, a pool waiting for its
// buffer to come back) synchronises with the unrefs too.
void gst_mini_object_unref(GstMiniObject* object) {
  static auto next = real<void (*)(GstMiniObject*)>("gst_mini_object_unref");
  __tsan_release(&object->refcount);
  __tsan_acquire(&object->refcount);
  next(object);
}

}  // extern "C"
