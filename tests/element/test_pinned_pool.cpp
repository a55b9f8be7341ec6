// The pinned allocator and pool the element offers upstream: buffers come
// from the device's pinned memory and are recognised as such, shallow copies
// and sub-buffers too; anything else (system memory, another device's
// memory, a deep copy) is not; every pinned buffer is freed when GStreamer
// frees the memory. And pin-once of upstream memory that is not ours
// (upstream_pinning.h): pinned at the second sighting, unpinned when freed.
#include <gst/gst.h>
#include <gst/video/gstvideopool.h>
#include <gst/video/video.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "cpu_device.h"
#include "pinned_allocator.h"
#include "upstream_pinning.h"

namespace cudaoverlap {
namespace {

class PinnedPoolTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { gst_init(nullptr, nullptr); }
  GstCaps* caps_ =
      gst_caps_from_string("video/x-raw,format=NV12,width=65,height=33,framerate=30/1");
  void TearDown() override { gst_caps_unref(caps_); }
};

TEST_F(PinnedPoolTest, PoolBuffersArePinnedMemoryOfTheDeviceAndAreFreedWithThePool) {
  const size_t before = cpu_live_buffers();
  std::shared_ptr<Device> device = make_cpu_device();
  GstBufferPool* pool = pinned_pool_new(device, caps_, 3);
  ASSERT_NE(pool, nullptr);
  ASSERT_TRUE(gst_buffer_pool_set_active(pool, TRUE));
  EXPECT_EQ(cpu_live_buffers(), before + 3) << "min_buffers are preallocated";
  GstBuffer* buffers[3];
  for (GstBuffer*& b : buffers) {
    ASSERT_EQ(gst_buffer_pool_acquire_buffer(pool, &b, nullptr), GST_FLOW_OK);
    EXPECT_TRUE(buffer_is_pinned(b, device.get()));
    GstMapInfo map;
    ASSERT_TRUE(gst_buffer_map(b, &map, GST_MAP_READWRITE));
    GstVideoInfo info;
    gst_video_info_from_caps(&info, caps_);
    EXPECT_GE(map.size, GST_VIDEO_INFO_SIZE(&info));
    std::memset(map.data, 0x5A, map.size);  // the whole frame is writable
    gst_buffer_unmap(b, &map);
  }
  for (GstBuffer* b : buffers) gst_buffer_unref(b);
  ASSERT_TRUE(gst_buffer_pool_set_active(pool, FALSE));
  gst_object_unref(pool);
  EXPECT_EQ(cpu_live_buffers(), before) << "every pinned buffer freed";
}

// The pool offered upstream hands out the buffer released last (a writer
// then fills the buffer whose upload just ended, not the one it filled
// longest ago); with a maximum set it keeps GStreamer's order, and an
// acquire waiting for a buffer is woken by a release.
TEST_F(PinnedPoolTest, TheBufferReleasedLastIsHandedOutFirst) {
  const size_t before = cpu_live_buffers();
  std::shared_ptr<Device> device = make_cpu_device();
  GstBufferPool* pool = pinned_pool_new(device, caps_, 3);
  ASSERT_NE(pool, nullptr);
  ASSERT_TRUE(gst_buffer_pool_set_active(pool, TRUE));
  GstBuffer* b[4];
  for (GstBuffer*& x : b) ASSERT_EQ(gst_buffer_pool_acquire_buffer(pool, &x, nullptr), GST_FLOW_OK);
  std::vector<GstMemory*> memories;
  for (GstBuffer* x : b) memories.push_back(gst_buffer_peek_memory(x, 0));
  for (GstBuffer* x : b) gst_buffer_unref(x);  // released 0, 1, 2, 3
  for (int i = 3; i >= 0; --i) {
    ASSERT_EQ(gst_buffer_pool_acquire_buffer(pool, &b[i], nullptr), GST_FLOW_OK);
    EXPECT_EQ(gst_buffer_peek_memory(b[i], 0), memories[static_cast<size_t>(i)])
        << "expected the buffer released " << 3 - i << " releases before the last";
  }
  for (GstBuffer* x : b) gst_buffer_unref(x);
  // Flushing: none is handed out, kept ones included.
  gst_buffer_pool_set_flushing(pool, TRUE);
  GstBuffer* none = nullptr;
  EXPECT_EQ(gst_buffer_pool_acquire_buffer(pool, &none, nullptr), GST_FLOW_FLUSHING);
  gst_buffer_pool_set_flushing(pool, FALSE);
  ASSERT_EQ(gst_buffer_pool_acquire_buffer(pool, &none, nullptr), GST_FLOW_OK);
  gst_buffer_unref(none);
  // Stopped with buffers kept: every one freed with the pool.
  EXPECT_EQ(cpu_live_buffers(), before + 4);
  ASSERT_TRUE(gst_buffer_pool_set_active(pool, FALSE));
  EXPECT_EQ(cpu_live_buffers(), before);
  gst_object_unref(pool);
}

// Upstream asking for padded, aligned frames (as decoders do) grows the
// pool's buffer size; the order must hold there too.
TEST_F(PinnedPoolTest, TheBufferReleasedLastIsHandedOutFirstWithPaddedFrames) {
  std::shared_ptr<Device> device = make_cpu_device();
  GstBufferPool* pool = pinned_pool_new(device, caps_, 2);
  ASSERT_NE(pool, nullptr);
  GstStructure* config = gst_buffer_pool_get_config(pool);
  gst_buffer_pool_config_add_option(config, GST_BUFFER_POOL_OPTION_VIDEO_ALIGNMENT);
  GstVideoAlignment align;
  gst_video_alignment_reset(&align);
  align.padding_right = 32;
  align.padding_bottom = 16;
  gst_buffer_pool_config_set_video_alignment(config, &align);
  ASSERT_TRUE(gst_buffer_pool_set_config(pool, config));
  ASSERT_TRUE(gst_buffer_pool_set_active(pool, TRUE));
  GstBuffer *a = nullptr, *b = nullptr;
  ASSERT_EQ(gst_buffer_pool_acquire_buffer(pool, &a, nullptr), GST_FLOW_OK);
  ASSERT_EQ(gst_buffer_pool_acquire_buffer(pool, &b, nullptr), GST_FLOW_OK);
  GstMemory* last = gst_buffer_peek_memory(b, 0);
  gst_buffer_unref(a);
  gst_buffer_unref(b);  // released last
  GstBuffer* next = nullptr;
  ASSERT_EQ(gst_buffer_pool_acquire_buffer(pool, &next, nullptr), GST_FLOW_OK);
  EXPECT_EQ(gst_buffer_peek_memory(next, 0), last);
  gst_buffer_unref(next);
  ASSERT_TRUE(gst_buffer_pool_set_active(pool, FALSE));
  gst_object_unref(pool);
}

TEST_F(PinnedPoolTest, WithAMaximumTheOrderIsGStreamersAndAWaitingAcquireIsWoken) {
  std::shared_ptr<Device> device = make_cpu_device();
  GstBufferPool* pool = pinned_pool_new(device, caps_, 2);
  ASSERT_NE(pool, nullptr);
  GstStructure* config = gst_buffer_pool_get_config(pool);
  GstVideoInfo info;
  gst_video_info_from_caps(&info, caps_);
  gst_buffer_pool_config_set_params(config, caps_, GST_VIDEO_INFO_SIZE(&info), 2, 2);
  ASSERT_TRUE(gst_buffer_pool_set_config(pool, config));
  ASSERT_TRUE(gst_buffer_pool_set_active(pool, TRUE));
  GstBuffer *first = nullptr, *second = nullptr;
  ASSERT_EQ(gst_buffer_pool_acquire_buffer(pool, &first, nullptr), GST_FLOW_OK);
  ASSERT_EQ(gst_buffer_pool_acquire_buffer(pool, &second, nullptr), GST_FLOW_OK);
  GstMemory* first_memory = gst_buffer_peek_memory(first, 0);
  GstBuffer* waited = nullptr;
  std::thread waiter([&] { gst_buffer_pool_acquire_buffer(pool, &waited, nullptr); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  gst_buffer_unref(first);  // wakes the waiter
  waiter.join();
  ASSERT_NE(waited, nullptr);
  EXPECT_EQ(gst_buffer_peek_memory(waited, 0), first_memory);
  gst_buffer_unref(second);
  gst_buffer_unref(waited);
  // Released second, then waited's (first's): oldest first.
  GstBuffer* next = nullptr;
  ASSERT_EQ(gst_buffer_pool_acquire_buffer(pool, &next, nullptr), GST_FLOW_OK);
  EXPECT_NE(gst_buffer_peek_memory(next, 0), first_memory);
  gst_buffer_unref(next);
  ASSERT_TRUE(gst_buffer_pool_set_active(pool, FALSE));
  gst_object_unref(pool);
}

TEST_F(PinnedPoolTest, OtherMemoryIsNotTakenForPinned) {
  std::shared_ptr<Device> device = make_cpu_device();
  std::shared_ptr<Device> other = make_cpu_device();
  GstBuffer* system = gst_buffer_new_allocate(nullptr, 1024, nullptr);
  EXPECT_FALSE(buffer_is_pinned(system, device.get()));
  gst_buffer_unref(system);

  GstAllocator* allocator = pinned_allocator_new(device);
  GstBuffer* ours = gst_buffer_new_allocate(allocator, 4096, nullptr);
  ASSERT_NE(ours, nullptr);
  EXPECT_TRUE(buffer_is_pinned(ours, device.get()));
  EXPECT_FALSE(buffer_is_pinned(ours, other.get())) << "another device's pinned memory";

  // Appending system memory makes the buffer no longer wholly ours.
  GstBuffer* mixed = gst_buffer_copy(ours);
  gst_buffer_append_memory(mixed, gst_allocator_alloc(nullptr, 16, nullptr));
  EXPECT_FALSE(buffer_is_pinned(mixed, device.get()));
  gst_buffer_unref(mixed);

  // A deep copy lands in system memory, with the same bytes.
  GstMapInfo map;
  ASSERT_TRUE(gst_buffer_map(ours, &map, GST_MAP_WRITE));
  for (gsize i = 0; i < map.size; ++i) map.data[i] = static_cast<guint8>(i * 13);
  gst_buffer_unmap(ours, &map);
  GstBuffer* copy = gst_buffer_copy_deep(ours);
  EXPECT_FALSE(buffer_is_pinned(copy, device.get()));
  GstMapInfo a, b;
  ASSERT_TRUE(gst_buffer_map(ours, &a, GST_MAP_READ));
  ASSERT_TRUE(gst_buffer_map(copy, &b, GST_MAP_READ));
  ASSERT_EQ(a.size, b.size);
  EXPECT_EQ(std::memcmp(a.data, b.data, a.size), 0);
  gst_buffer_unmap(ours, &a);
  gst_buffer_unmap(copy, &b);
  gst_buffer_unref(copy);
  gst_buffer_unref(ours);
  gst_object_unref(allocator);
}

// imagefreeze pushes shallow copies of one buffer; parsers push sub-buffers.
// Both must stay our pinned memory (no copy into system memory per frame)
// and show the same bytes.
TEST_F(PinnedPoolTest, ShallowCopiesAndSubBuffersShareThePinnedMemory) {
  const size_t before = cpu_live_buffers();
  std::shared_ptr<Device> device = make_cpu_device();
  GstAllocator* allocator = pinned_allocator_new(device);
  GstBuffer* ours = gst_buffer_new_allocate(allocator, 4096, nullptr);
  ASSERT_NE(ours, nullptr);
  GstMapInfo map;
  ASSERT_TRUE(gst_buffer_map(ours, &map, GST_MAP_WRITE));
  for (gsize i = 0; i < map.size; ++i) map.data[i] = static_cast<guint8>(i * 7 + 1);
  gst_buffer_unmap(ours, &map);

  GstBuffer* copy = gst_buffer_copy(ours);
  GstBuffer* sub = gst_buffer_copy_region(ours, GST_BUFFER_COPY_MEMORY, 100, 1000);
  GstBuffer* sub_of_sub = gst_buffer_copy_region(sub, GST_BUFFER_COPY_MEMORY, 10, 50);
  for (GstBuffer* b : {copy, sub, sub_of_sub}) {
    EXPECT_TRUE(buffer_is_pinned(b, device.get()));
    EXPECT_EQ(gst_buffer_peek_memory(b, 0)->allocator, allocator);
  }
  GstMapInfo a, b, c;
  ASSERT_TRUE(gst_buffer_map(ours, &a, GST_MAP_READ));
  ASSERT_TRUE(gst_buffer_map(sub, &b, GST_MAP_READ));
  ASSERT_TRUE(gst_buffer_map(sub_of_sub, &c, GST_MAP_READ));
  ASSERT_EQ(b.size, 1000u);
  ASSERT_EQ(c.size, 50u);
  EXPECT_EQ(b.data, a.data + 100) << "a sub-buffer is the same bytes, not a copy";
  EXPECT_EQ(c.data, a.data + 110);
  EXPECT_EQ(std::memcmp(b.data, a.data + 100, b.size), 0);
  gst_buffer_unmap(ours, &a);
  gst_buffer_unmap(sub, &b);
  gst_buffer_unmap(sub_of_sub, &c);

  // The pinned bytes live until the last share is gone.
  gst_buffer_unref(ours);
  gst_buffer_unref(copy);
  gst_buffer_unref(sub);
  EXPECT_EQ(cpu_live_buffers(), before + 1);
  ASSERT_TRUE(gst_buffer_map(sub_of_sub, &c, GST_MAP_READ));
  EXPECT_EQ(c.data[0], static_cast<guint8>(110 * 7 + 1));
  gst_buffer_unmap(sub_of_sub, &c);
  gst_buffer_unref(sub_of_sub);
  EXPECT_EQ(cpu_live_buffers(), before);
  gst_object_unref(allocator);
}

// The identity cuda-graphs keys pinned input on (InputFrame::memory_id): one
// per memory made, kept by its shallow copies and sub-buffers (the same
// pages), never handed out again, not even to memory made anew at a freed
// one's address; none for a frame spread over several memories.
// A pool's buffers, from the memory reserved in advance and, once the pool
// was stopped and started again, from memory made anew: every one named
// apart.
TEST_F(PinnedPoolTest, APoolStartedAgainHasMemoryOfNewNames) {
  std::shared_ptr<Device> device = make_cpu_device();
  GstBufferPool* pool = pinned_pool_new(device, caps_, 2);
  ASSERT_NE(pool, nullptr);
  std::vector<uint64_t> seen;
  for (int round = 0; round < 2; ++round) {
    ASSERT_TRUE(gst_buffer_pool_set_active(pool, TRUE));
    GstBuffer* buffers[2];
    for (GstBuffer*& b : buffers) {
      ASSERT_EQ(gst_buffer_pool_acquire_buffer(pool, &b, nullptr), GST_FLOW_OK);
      uint64_t id = 0;
      EXPECT_TRUE(buffer_is_pinned(b, device.get(), &id));
      EXPECT_NE(id, 0u);
      EXPECT_EQ(std::count(seen.begin(), seen.end(), id), 0) << "round " << round;
      seen.push_back(id);
    }
    for (GstBuffer* b : buffers) gst_buffer_unref(b);
    ASSERT_TRUE(gst_buffer_pool_set_active(pool, FALSE));  // frees the memory
  }
  gst_object_unref(pool);
}

TEST_F(PinnedPoolTest, EachPinnedMemoryIsNamedOnceAndItsSharesByTheSameName) {
  std::shared_ptr<Device> device = make_cpu_device();
  GstAllocator* allocator = pinned_allocator_new(device);
  const auto id_of = [&](GstBuffer* b) {
    uint64_t id = 12345;
    EXPECT_TRUE(buffer_is_pinned(b, device.get(), &id));
    return id;
  };
  GstBuffer* first = gst_buffer_new_allocate(allocator, 4096, nullptr);
  GstBuffer* second = gst_buffer_new_allocate(allocator, 4096, nullptr);
  const uint64_t a = id_of(first), b = id_of(second);
  EXPECT_NE(a, 0u);
  EXPECT_NE(b, 0u);
  EXPECT_NE(a, b);
  GstBuffer* copy = gst_buffer_copy(first);
  GstBuffer* sub = gst_buffer_copy_region(first, GST_BUFFER_COPY_MEMORY, 100, 1000);
  GstBuffer* sub_of_sub = gst_buffer_copy_region(sub, GST_BUFFER_COPY_MEMORY, 10, 50);
  EXPECT_EQ(id_of(copy), a);
  EXPECT_EQ(id_of(sub), a);
  EXPECT_EQ(id_of(sub_of_sub), a);
  gst_buffer_unref(copy);
  gst_buffer_unref(sub);
  gst_buffer_unref(sub_of_sub);

  GstBuffer* both = gst_buffer_copy(first);
  gst_buffer_append_memory(both, gst_memory_ref(gst_buffer_peek_memory(second, 0)));
  EXPECT_EQ(id_of(both), 0u) << "two memories: pinned, but no one identity";
  gst_buffer_unref(both);

  // Memory freed and made again, wherever it lands, is new memory.
  gst_buffer_unref(first);
  GstBuffer* again = gst_buffer_new_allocate(allocator, 4096, nullptr);
  const uint64_t c = id_of(again);
  EXPECT_NE(c, 0u);
  EXPECT_NE(c, a);
  EXPECT_NE(c, b);
  GstBuffer* system = gst_buffer_new_allocate(nullptr, 64, nullptr);
  uint64_t none = 12345;
  EXPECT_FALSE(buffer_is_pinned(system, device.get(), &none));
  EXPECT_EQ(none, 0u);
  gst_buffer_unref(system);
  gst_buffer_unref(again);
  gst_buffer_unref(second);
  gst_object_unref(allocator);
}

class UpstreamPinningTest : public PinnedPoolTest {
 protected:
  // `buffer` seen as a 64x32 RGBA frame starting in its first memory. (Not
  // gst_buffer_map: that would merge a buffer of several memories into one.)
  UpstreamPin pin(GstBuffer* buffer, const std::shared_ptr<Device>& device,
                  uint64_t* memory_id = nullptr) {
    const FrameLayout layout = FrameLayout::packed(PixelFormat::kRGBA, 64, 32);
    GstMemory* memory = gst_buffer_peek_memory(buffer, 0);
    GstMapInfo map;
    EXPECT_TRUE(gst_memory_map(memory, &map, GST_MAP_READ));
    const ImageRef image = layout.at(map.data);
    const UpstreamPin result = pin_upstream_memory(buffer, image, layout, device, memory_id);
    gst_memory_unmap(memory, &map);
    return result;
  }
  static constexpr gsize kFrameBytes = 64 * 32 * 4;
};

TEST_F(UpstreamPinningTest, MemoryThatComesBackIsPinnedOnceAndUnpinnedWhenFreed) {
  std::shared_ptr<Device> device = make_cpu_device();
  const size_t before = cpu_live_registrations();
  GstBuffer* frame = gst_buffer_new_allocate(nullptr, kFrameBytes, nullptr);
  EXPECT_EQ(pin(frame, device), UpstreamPin::kStaged) << "first sighting: staged";
  EXPECT_EQ(cpu_live_registrations(), before);
  EXPECT_EQ(pin(frame, device), UpstreamPin::kPinned) << "second sighting: pinned";
  EXPECT_EQ(cpu_live_registrations(), before + 1);
  // A shallow copy (imagefreeze) is the same memory: already pinned.
  GstBuffer* copy = gst_buffer_copy(frame);
  EXPECT_EQ(pin(copy, device), UpstreamPin::kPinned);
  EXPECT_EQ(cpu_live_registrations(), before + 1) << "pinned once, not per frame";
  gst_buffer_unref(copy);
  EXPECT_EQ(cpu_live_registrations(), before + 1) << "the memory is still alive";
  gst_buffer_unref(frame);
  EXPECT_EQ(cpu_live_registrations(), before) << "freeing the memory unpins it";
}

// Upstream memory is named by its registration: a staged sighting has no
// name, every pinned frame in the memory the same, and memory freed and
// allocated again at the same address (as pools and malloc do) a new one
// once it is pinned again.
TEST_F(UpstreamPinningTest, PinnedUpstreamMemoryIsNamedByItsRegistration) {
  std::shared_ptr<Device> device = make_cpu_device();
  const size_t bytes = 4 * 4096;  // pages of its own, as a large frame's
  void* data = std::aligned_alloc(4096, bytes);
  GstBuffer* frame = gst_buffer_new_wrapped_full(static_cast<GstMemoryFlags>(0), data, bytes, 0,
                                                 kFrameBytes, data, std::free);
  uint64_t id = 12345;
  EXPECT_EQ(pin(frame, device, &id), UpstreamPin::kStaged);
  EXPECT_EQ(id, 0u) << "staged: no name";
  EXPECT_EQ(pin(frame, device, &id), UpstreamPin::kPinned);
  const uint64_t first = id;
  EXPECT_NE(first, 0u);
  GstBuffer* copy = gst_buffer_copy(frame);
  EXPECT_EQ(pin(copy, device, &id), UpstreamPin::kPinned);
  EXPECT_EQ(id, first) << "the same memory, the same registration";
  gst_buffer_unref(copy);
  gst_buffer_unref(frame);

  // Memory freed and allocated again (at the same address, as a rule):
  // new memory, so a new registration and name.
  void* again = std::aligned_alloc(4096, bytes);
  GstBuffer* next = gst_buffer_new_wrapped_full(static_cast<GstMemoryFlags>(0), again, bytes, 0,
                                                kFrameBytes, again, std::free);
  EXPECT_EQ(pin(next, device, &id), UpstreamPin::kStaged);
  EXPECT_EQ(pin(next, device, &id), UpstreamPin::kPinned);
  EXPECT_NE(id, 0u);
  EXPECT_NE(id, first) << (again == data ? "at the freed memory's address" : "elsewhere");
  gst_buffer_unref(next);
}

TEST_F(UpstreamPinningTest, MemoryThatCannotBePinnedIsStagedWithoutRetrying) {
  std::shared_ptr<Device> device = make_cpu_device();
  GstBuffer* frame = gst_buffer_new_allocate(nullptr, kFrameBytes, nullptr);
  GstMapInfo map;
  ASSERT_TRUE(gst_buffer_map(frame, &map, GST_MAP_READ));
  // Someone else registered part of it: the device refuses an overlap.
  auto other = device->register_host(map.data + 100, 16);
  gst_buffer_unmap(frame, &map);
  const size_t before = cpu_live_registrations();
  for (int i = 0; i < 4; ++i) {
    uint64_t id = 12345;
    EXPECT_EQ(pin(frame, device, &id), UpstreamPin::kStaged);
    EXPECT_EQ(id, 0u) << "refused: no name";
  }
  // Once the overlap is gone it could be registered, but a refusal is final:
  // no registration attempt per frame.
  other.reset();
  EXPECT_EQ(pin(frame, device), UpstreamPin::kStaged);
  EXPECT_EQ(cpu_live_registrations(), before - 1);
  gst_buffer_unref(frame);
}

TEST_F(UpstreamPinningTest, OtherDevicesAndSplitBuffersAreStaged) {
  std::shared_ptr<Device> device = make_cpu_device();
  std::shared_ptr<Device> other = make_cpu_device();
  GstBuffer* frame = gst_buffer_new_allocate(nullptr, kFrameBytes, nullptr);
  EXPECT_EQ(pin(frame, device), UpstreamPin::kStaged);
  EXPECT_EQ(pin(frame, device), UpstreamPin::kPinned);
  EXPECT_EQ(pin(frame, other), UpstreamPin::kStaged) << "pinned for another device only";
  gst_buffer_unref(frame);

  // Planes spread over two memories: one registration cannot cover them.
  GstBuffer* split = gst_buffer_new();
  gst_buffer_append_memory(split, gst_allocator_alloc(nullptr, kFrameBytes / 2, nullptr));
  gst_buffer_append_memory(split, gst_allocator_alloc(nullptr, kFrameBytes / 2, nullptr));
  const size_t before = cpu_live_registrations();
  for (int i = 0; i < 3; ++i) EXPECT_EQ(pin(split, device), UpstreamPin::kStaged);
  EXPECT_EQ(cpu_live_registrations(), before);
  gst_buffer_unref(split);
}

TEST_F(PinnedPoolTest, AlignmentRequestsAreHonoured) {
  std::shared_ptr<Device> device = make_cpu_device();
  GstAllocator* allocator = pinned_allocator_new(device);
  GstAllocationParams params;
  gst_allocation_params_init(&params);
  params.align = 511;  // 512-byte alignment
  params.prefix = 3;
  GstMemory* mem = gst_allocator_alloc(allocator, 1000, &params);
  ASSERT_NE(mem, nullptr);
  GstMapInfo map;
  ASSERT_TRUE(gst_memory_map(mem, &map, GST_MAP_READ));
  EXPECT_EQ(reinterpret_cast<guintptr>(map.data) & 511u, 0u);
  EXPECT_EQ(map.size, 1000u);
  gst_memory_unmap(mem, &map);
  gst_memory_unref(mem);
  gst_object_unref(allocator);
}

}  // namespace
}  // namespace cudaoverlap
