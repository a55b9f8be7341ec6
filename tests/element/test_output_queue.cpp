// The OutputQueue alone (gst/output_queue.h): the ordered hand-over between
// the engine's worker, the streaming thread and the src pad task, and the
// element's one flow state. Frames here carry no engine (no slot to free);
// a frame is "released" when its user data is destroyed, which the tests
// count.
#include <gst/gst.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "output_queue.h"

namespace cudaoverlap {
namespace {

using namespace std::chrono_literals;

class OutputQueueTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { gst_init(nullptr, nullptr); }

  // Counts its own end.
  struct Counted final : FrameUser {
    explicit Counted(std::atomic<int>* gone) : gone_(gone) {}
    ~Counted() override { ++*gone_; }
    std::atomic<int>* gone_;
  };
  // A frame numbered `sequence` whose destruction is counted in released_.
  OutputFrame frame(uint64_t sequence) {
    return OutputFrame(nullptr, 0, sequence, ImageRef{}, std::make_shared<Counted>(&released_));
  }

  static GstEvent* marker(const char* name) {
    return gst_event_new_custom(GST_EVENT_CUSTOM_DOWNSTREAM, gst_structure_new_empty(name));
  }

  // What the next pop() gives: "frame N" or "event <name>"; the item is
  // handed back with done(OK).
  std::string pop_one() {
    OutputItem item;
    if (!queue_.pop(&item)) return "nothing";
    std::string what;
    if (item.event != nullptr) {
      const bool custom = GST_EVENT_TYPE(item.event) == GST_EVENT_CUSTOM_DOWNSTREAM;
      what = std::string("event ") +
             (custom ? gst_structure_get_name(gst_event_get_structure(item.event))
                     : gst_event_type_get_name(GST_EVENT_TYPE(item.event)));
      gst_event_unref(item.event);
    } else {
      what = "frame " + std::to_string(item.frame.sequence());
    }
    queue_.done(GST_FLOW_OK);
    return what;
  }

  std::atomic<int> released_{0};
  OutputQueue queue_;
};

TEST_F(OutputQueueTest, TheFlowStateIsFlushingUntilTheFirstRestartAndOkAfter) {
  EXPECT_EQ(queue_.flow(), GST_FLOW_FLUSHING);
  OutputItem item;
  EXPECT_FALSE(queue_.pop(&item));
  queue_.restart();
  EXPECT_EQ(queue_.flow(), GST_FLOW_OK);
}

TEST_F(OutputQueueTest, AnEventAfterNFramesGoesOutAfterExactlyNFramesEvenWhenFramesComeLate) {
  const uint64_t epoch = queue_.restart();
  // The streaming thread submitted two frames, then an event: the event is
  // queued before the engine has finished either frame.
  ASSERT_TRUE(queue_.push_event(marker("after-two"), 2));
  queue_.push_frame(frame(0), epoch);
  EXPECT_EQ(pop_one(), "frame 0");
  auto second = std::async(std::launch::async, [&] { return pop_one(); });
  EXPECT_EQ(second.wait_for(50ms), std::future_status::timeout)
      << "the event went out before the frame submitted before it";
  queue_.push_frame(frame(1), epoch);
  EXPECT_EQ(second.get(), "frame 1");
  queue_.push_frame(frame(2), epoch);
  EXPECT_EQ(pop_one(), "event after-two");
  EXPECT_EQ(pop_one(), "frame 2");
}

TEST_F(OutputQueueTest, FramesOfAStaleEpochAreReleasedAtOnceAndNeverPopped) {
  const uint64_t old_epoch = queue_.restart();
  const uint64_t epoch = queue_.restart();  // a flush happened in between
  ASSERT_NE(old_epoch, epoch);
  queue_.push_frame(frame(7), old_epoch);
  EXPECT_EQ(released_.load(), 1);
  queue_.push_frame(frame(0), epoch);
  EXPECT_EQ(pop_one(), "frame 0");
}

TEST_F(OutputQueueTest, StickyEventsSurviveAFlushAndGoOutFirstAfterTheRestart) {
  const uint64_t epoch = queue_.restart();
  GstCaps* caps = gst_caps_from_string("video/x-raw,format=RGBA,width=4,height=4");
  GstSegment segment;
  gst_segment_init(&segment, GST_FORMAT_TIME);
  ASSERT_TRUE(queue_.push_event(gst_event_new_stream_start("s"), 0));
  ASSERT_TRUE(queue_.push_event(gst_event_new_caps(caps), 0));
  ASSERT_TRUE(queue_.push_event(gst_event_new_segment(&segment), 0));
  ASSERT_TRUE(queue_.push_event(marker("custom"), 0));
  queue_.push_frame(frame(0), epoch);
  ASSERT_TRUE(queue_.push_event(gst_event_new_tag(gst_tag_list_new_empty()), 1));
  queue_.push_frame(frame(1), epoch);
  queue_.set_flushing();
  EXPECT_EQ(queue_.flow(), GST_FLOW_FLUSHING);
  EXPECT_EQ(released_.load(), 2) << "queued frames must be released by the flush";
  // While flushing: sticky events that describe the stream are still taken,
  // others are refused and stay the caller's.
  GstEvent* refused = marker("during-flush");
  EXPECT_FALSE(queue_.push_event(refused, 0));
  gst_event_unref(refused);
  GstEvent* segment_event = gst_event_new_segment(&segment);
  EXPECT_FALSE(queue_.push_event(segment_event, 0));
  gst_event_unref(segment_event);

  queue_.restart();
  EXPECT_EQ(pop_one(), "event stream-start");
  EXPECT_EQ(pop_one(), "event caps");
  EXPECT_EQ(pop_one(), "event tag");
  EXPECT_TRUE(queue_.push_event(marker("after"), 0));
  EXPECT_EQ(pop_one(), "event after") << "segment and custom events must not survive a flush";
  gst_caps_unref(caps);
}

TEST_F(OutputQueueTest, AnErrorDownstreamStopsTheQueueAndHandsBackTheEosThatWasWaiting) {
  const uint64_t epoch = queue_.restart();
  queue_.push_frame(frame(0), epoch);
  queue_.push_frame(frame(1), epoch);
  GstEvent* upstream_eos = gst_event_new_eos();
  const guint32 seqnum = gst_event_get_seqnum(upstream_eos);
  ASSERT_TRUE(queue_.push_event(upstream_eos, 2));
  OutputItem item;
  ASSERT_TRUE(queue_.pop(&item));
  GstEvent* eos = queue_.done(GST_FLOW_ERROR);
  ASSERT_NE(eos, nullptr) << "the EOS behind the frame was not handed back";
  EXPECT_EQ(GST_EVENT_TYPE(eos), GST_EVENT_EOS);
  EXPECT_EQ(gst_event_get_seqnum(eos), seqnum) << "not upstream's own EOS";
  gst_event_unref(eos);
  EXPECT_EQ(queue_.flow(), GST_FLOW_ERROR);
  EXPECT_FALSE(queue_.pop(&item));
  EXPECT_EQ(released_.load(), 1) << "the frame still queued must be released";
  // A later answer does not overwrite the first.
  queue_.fail(GST_FLOW_NOT_NEGOTIATED);
  EXPECT_EQ(queue_.flow(), GST_FLOW_ERROR);
  // Frames still coming from the engine are released at once.
  queue_.push_frame(frame(2), epoch);
  EXPECT_EQ(released_.load(), 2);
}

TEST_F(OutputQueueTest, DownstreamEosWithoutAnEosQueuedIsNotReportedAsPending) {
  const uint64_t epoch = queue_.restart();
  queue_.push_frame(frame(0), epoch);
  OutputItem item;
  ASSERT_TRUE(queue_.pop(&item));
  EXPECT_EQ(queue_.done(GST_FLOW_EOS), nullptr);
  EXPECT_EQ(queue_.flow(), GST_FLOW_EOS);
  // EOS from upstream now is refused: the caller sends it on itself.
  GstEvent* eos = gst_event_new_eos();
  EXPECT_FALSE(queue_.push_event(eos, 1));
  gst_event_unref(eos);
  // A flush overrides downstream's answer; the restart clears both.
  queue_.set_flushing();
  EXPECT_EQ(queue_.flow(), GST_FLOW_FLUSHING);
  queue_.restart();
  EXPECT_EQ(queue_.flow(), GST_FLOW_OK);
}

TEST_F(OutputQueueTest, SetFlushingWakesAWaitingPopAndWaitEmpty) {
  const uint64_t epoch = queue_.restart();
  queue_.push_frame(frame(0), epoch);
  auto popper = std::async(std::launch::async, [&] {
    OutputItem item;
    return queue_.pop(&item) && queue_.pop(&item);  // the second waits
  });
  auto empty = std::async(std::launch::async, [&] { return queue_.wait_empty(); });
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(popper.wait_for(0ms), std::future_status::timeout);
  queue_.set_flushing();
  ASSERT_EQ(popper.wait_for(2s), std::future_status::ready);
  EXPECT_FALSE(popper.get());
  ASSERT_EQ(empty.wait_for(2s), std::future_status::ready);
  EXPECT_FALSE(empty.get());
}

// Frames passed through hold no slot: wait_room() holds the streaming
// thread while `most` frames wait, lets it go when the task takes one, and
// at once when the queue flushes.
TEST_F(OutputQueueTest, WaitRoomHoldsWhileMostFramesWaitAndFlushingFreesIt) {
  const uint64_t epoch = queue_.restart();
  EXPECT_TRUE(queue_.wait_room(2));
  queue_.push_frame(frame(0), epoch);
  queue_.push_frame(frame(1), epoch);
  auto room = std::async(std::launch::async, [&] { return queue_.wait_room(2); });
  EXPECT_EQ(room.wait_for(50ms), std::future_status::timeout) << "room with 2 of 2 waiting";
  OutputItem item;
  ASSERT_TRUE(queue_.pop(&item));
  ASSERT_EQ(room.wait_for(2s), std::future_status::ready);
  EXPECT_TRUE(room.get());
  queue_.done(GST_FLOW_OK);
  queue_.push_frame(frame(2), epoch);
  auto held = std::async(std::launch::async, [&] { return queue_.wait_room(2); });
  EXPECT_EQ(held.wait_for(50ms), std::future_status::timeout);
  queue_.set_flushing();
  ASSERT_EQ(held.wait_for(2s), std::future_status::ready);
  EXPECT_FALSE(held.get());
}

TEST_F(OutputQueueTest, WaitEmptyReturnsOnceTheLastItemWasPushed) {
  const uint64_t epoch = queue_.restart();
  queue_.push_frame(frame(0), epoch);
  auto empty = std::async(std::launch::async, [&] { return queue_.wait_empty(); });
  OutputItem item;
  ASSERT_TRUE(queue_.pop(&item));
  EXPECT_EQ(empty.wait_for(50ms), std::future_status::timeout)
      << "empty while the task still held a frame it had not pushed";
  queue_.done(GST_FLOW_OK);
  ASSERT_EQ(empty.wait_for(2s), std::future_status::ready);
  EXPECT_TRUE(empty.get());
}

// A frame lost with a failed device (several devices) still counts for
// the events behind it, and is never handed out.
TEST_F(OutputQueueTest, ALostFrameKeepsItsPlaceForTheEventsBehindIt) {
  const uint64_t epoch = queue_.restart();
  ASSERT_TRUE(queue_.push_event(marker("after-two"), 2));
  queue_.push_frame(frame(0), epoch);
  queue_.push_lost(epoch);
  queue_.push_frame(frame(2), epoch);
  EXPECT_EQ(pop_one(), "frame 0");
  EXPECT_EQ(pop_one(), "event after-two");
  EXPECT_EQ(pop_one(), "frame 2");
}

// The last thing queued is a lost frame: a serialized query waiting for
// the queue to empty returns once the task has passed over it.
TEST_F(OutputQueueTest, WaitEmptyReturnsWhenTheLastItemWasALostFrame) {
  const uint64_t epoch = queue_.restart();
  queue_.push_lost(epoch);
  auto empty = std::async(std::launch::async, [&] { return queue_.wait_empty(); });
  std::this_thread::sleep_for(20ms);  // wait_empty() sees the lost frame first
  auto popper = std::async(std::launch::async, [&] {
    OutputItem item;
    return queue_.pop(&item);  // passes over it, then waits
  });
  EXPECT_EQ(empty.wait_for(2s), std::future_status::ready)
      << "wait_empty() was not woken when the lost frame was passed over";
  queue_.set_flushing();
  ASSERT_EQ(popper.wait_for(2s), std::future_status::ready);
  EXPECT_FALSE(popper.get());
  if (empty.wait_for(2s) == std::future_status::ready) {
    EXPECT_TRUE(empty.get());
  }
}

// Pulling (an engine that is fetched from, EngineConfig::pull): a frame
// noted by the streaming thread makes pop_or_pull() ask for a fetch; the
// fetched frame comes straight back to be pushed; a fetch that found
// nothing ends the asking until the next note, unless a note came while it
// ran.
TEST_F(OutputQueueTest, ANotedFrameIsFetchedAndAFetchThatFoundNothingWaitsForTheNextNote) {
  queue_.restart();
  OutputItem item;
  uint64_t ticket = 0;
  queue_.note_submitted();
  ASSERT_EQ(queue_.pop_or_pull(&item, &ticket), OutputQueue::Next::kPull);
  EXPECT_EQ(ticket, 1u);
  ASSERT_TRUE(queue_.take_pulled(frame(0), queue_.epoch(), &item));  // what the fetch got
  EXPECT_EQ(item.frame.sequence(), 0u);
  item = OutputItem{};
  queue_.done(GST_FLOW_OK);
  // Nothing says the engine is empty yet: fetch again; it had nothing.
  ASSERT_EQ(queue_.pop_or_pull(&item, &ticket), OutputQueue::Next::kPull);
  queue_.pulled_nothing(ticket);
  auto next = std::async(std::launch::async, [this] {
    OutputItem waited;
    uint64_t noted = 0;
    const OutputQueue::Next what = queue_.pop_or_pull(&waited, &noted);
    return std::make_pair(what, noted);
  });
  EXPECT_EQ(next.wait_for(100ms), std::future_status::timeout) << "asked for a fetch after none";
  queue_.note_submitted();
  ASSERT_EQ(next.wait_for(5s), std::future_status::ready);
  const auto [what, noted] = next.get();
  EXPECT_EQ(what, OutputQueue::Next::kPull);
  EXPECT_EQ(noted, 2u);
  // A note while that fetch ran (it was handed ticket 2): the fetch finding
  // nothing does not cancel the later note.
  queue_.note_submitted();
  queue_.pulled_nothing(2);
  ASSERT_EQ(queue_.pop_or_pull(&item, &ticket), OutputQueue::Next::kPull);
  EXPECT_EQ(ticket, 3u);
  queue_.pulled_nothing(ticket);
  queue_.set_flushing();
  EXPECT_EQ(queue_.pop_or_pull(&item, &ticket), OutputQueue::Next::kStopped);
}

// A fetched frame keeps its place: before the frames drain() queued on the
// streaming thread while it was fetched (they left the engine after it),
// after an event already due; one of an older epoch is released and not
// pushed.
TEST_F(OutputQueueTest, AFetchedFrameGoesBeforeWhatDrainQueuedWhileItWasFetched) {
  const uint64_t epoch = queue_.restart();
  OutputItem item;
  uint64_t ticket = 0;
  queue_.note_submitted();
  queue_.note_submitted();
  ASSERT_EQ(queue_.pop_or_pull(&item, &ticket), OutputQueue::Next::kPull);
  queue_.push_frame(frame(1), epoch);  // drain() on the streaming thread
  ASSERT_TRUE(queue_.push_event(marker("m"), 1));
  ASSERT_TRUE(queue_.take_pulled(frame(0), epoch, &item));
  EXPECT_EQ(item.frame.sequence(), 0u);
  item = OutputItem{};
  queue_.done(GST_FLOW_OK);
  EXPECT_EQ(pop_one(), "event m");
  EXPECT_EQ(pop_one(), "frame 1");
  ASSERT_TRUE(queue_.push_event(marker("n"), 2));
  queue_.note_submitted();
  ASSERT_EQ(queue_.pop_or_pull(&item, &ticket), OutputQueue::Next::kItem);
  ASSERT_NE(item.event, nullptr) << "an event due goes before a fetch";
  gst_event_unref(item.event);
  item = OutputItem{};
  queue_.done(GST_FLOW_OK);
  ASSERT_EQ(queue_.pop_or_pull(&item, &ticket), OutputQueue::Next::kPull);
  const int released = released_.load();
  EXPECT_FALSE(queue_.take_pulled(frame(2), epoch + 1, &item));
  EXPECT_EQ(released_.load(), released + 1);
}

// wait_empty() (a serialized query) waits for a fetch under way: its frame
// is still to be pushed.
TEST_F(OutputQueueTest, WaitEmptyWaitsForAFetchUnderWay) {
  const uint64_t epoch = queue_.restart();
  OutputItem item;
  uint64_t ticket = 0;
  queue_.note_submitted();
  ASSERT_EQ(queue_.pop_or_pull(&item, &ticket), OutputQueue::Next::kPull);
  auto empty = std::async(std::launch::async, [this] { return queue_.wait_empty(); });
  EXPECT_EQ(empty.wait_for(100ms), std::future_status::timeout)
      << "wait_empty() returned while a fetched frame was still to come";
  ASSERT_TRUE(queue_.take_pulled(frame(0), epoch, &item));
  EXPECT_EQ(empty.wait_for(100ms), std::future_status::timeout);
  item = OutputItem{};
  queue_.done(GST_FLOW_OK);
  ASSERT_EQ(empty.wait_for(5s), std::future_status::ready);
  EXPECT_TRUE(empty.get());
}

TEST_F(OutputQueueTest, ClearReleasesEverythingAndStopsTheQueue) {
  const uint64_t epoch = queue_.restart();
  queue_.push_frame(frame(0), epoch);
  queue_.push_frame(frame(1), epoch);
  ASSERT_TRUE(queue_.push_event(marker("m"), 1));
  queue_.clear();
  EXPECT_EQ(released_.load(), 2);
  EXPECT_EQ(queue_.flow(), GST_FLOW_FLUSHING);
  queue_.restart();
  GstCaps* caps = gst_caps_from_string("video/x-raw");
  ASSERT_TRUE(queue_.push_event(gst_event_new_caps(caps), 0));
  gst_caps_unref(caps);
  EXPECT_EQ(pop_one(), "event caps") << "clear() must drop even sticky events";
}

}  // namespace
}  // namespace cudaoverlap
