// The pinned allocator and pool the element offers upstream: buffers come
// from the device's pinned memory and are recognised as such; anything else
// (system memory, another device's memory, a copy) is not; every pinned
// buffer is freed when GStreamer frees the memory.
#include <gst/gst.h>
#include <gst/video/video.h>
#include <gtest/gtest.h>

#include <cstring>

#include "cpu_device.h"
#include "pinned_allocator.h"

namespace cudaoverlap {
namespace {

class PinnedPoolTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { gst_init(nullptr, nullptr); }
  GstCaps* caps_ = gst_caps_from_string(
      "video/x-raw,format=NV12,width=65,height=33,framerate=30/1");
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
