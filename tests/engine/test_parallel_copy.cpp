// The staging copy over several threads (ParallelCopy, and the engine's
// EngineConfig::staging_threads): every byte of every plane lands where it
// belongs, for any plane count, stride, odd size and thread count, copy after
// copy; nothing outside the rows is written; and the engine hands out exactly
// the pageable frames it was given when staging runs on four threads.
//
// Every copy goes into a destination first filled with a sentinel that
// changes from copy to copy, from one of two sources in turn, so a band that
// a worker skipped, finished late or copied from the previous job's planes
// leaves bytes that differ from the source.
#include <set>

#ifdef __linux__
#include <dirent.h>

#include <fstream>
#endif

#include "engine_test_util.h"
#include "parallel_copy.h"
#include "tests/sanitized.h"

namespace cudaoverlap::test {
namespace {

// Bytes past the end of each destination that no copy may touch.
constexpr size_t kGuard = 64;

struct CopyCase {
  PixelFormat format;
  int width, height;
  size_t source_pad;  // bytes of padding after every source row
  size_t dest_align;  // destination row alignment: 1 packs rows back to back
  int threads;
  int copies;
};

std::string case_name(const ::testing::TestParamInfo<CopyCase>& info) {
  const CopyCase& c = info.param;
  return std::string(format_info(c.format).name) + "_" + std::to_string(c.width) + "x" +
         std::to_string(c.height) + "_pad" + std::to_string(c.source_pad) + "_align" +
         std::to_string(c.dest_align) + "_threads" + std::to_string(c.threads);
}

// Checks that `dest` holds `source`'s pixels and the sentinel everywhere
// else (row padding, gaps between planes, the guard after the frame).
std::string check_copy(const FrameLayout& layout, const ImageRef& source, const FrameLayout& dest,
                       const std::vector<uint8_t>& dest_bytes, uint8_t sentinel) {
  std::vector<bool> pixel(dest_bytes.size(), false);
  for (int p = 0; p < layout.n_planes(); ++p)
    for (size_t y = 0; y < layout.rows(p); ++y) {
      const size_t at = dest.offset[p] + y * dest.stride[p];
      const uint8_t* want = source.planes[p].data + y * source.planes[p].stride;
      for (size_t x = 0; x < layout.row_bytes(p); ++x) {
        pixel[at + x] = true;
        if (dest_bytes[at + x] != want[x])
          return "plane " + std::to_string(p) + " (" + std::to_string(x) + "," + std::to_string(y) +
                 "): got " + std::to_string(dest_bytes[at + x]) + ", want " +
                 std::to_string(want[x]);
      }
    }
  for (size_t b = 0; b < dest_bytes.size(); ++b)
    if (!pixel[b] && dest_bytes[b] != sentinel)
      return "byte " + std::to_string(b) + " outside the pixels was written";
  return {};
}

std::vector<PlaneCopy> planes_of(const FrameLayout& layout, const ImageRef& source,
                                 const ImageRef& dest) {
  std::vector<PlaneCopy> planes(layout.n_planes());
  for (int p = 0; p < layout.n_planes(); ++p) {
    planes[p].dst = dest.planes[p].data;
    planes[p].dst_stride = dest.planes[p].stride;
    planes[p].src = source.planes[p].data;
    planes[p].src_stride = source.planes[p].stride;
    planes[p].row_bytes = layout.row_bytes(p);
    planes[p].rows = layout.rows(p);
  }
  return planes;
}

class ParallelCopyTest : public ::testing::TestWithParam<CopyCase> {};

TEST_P(ParallelCopyTest, EveryByteLandsAndNothingElseIsWrittenCopyAfterCopy) {
  const CopyCase& c = GetParam();
  const FrameLayout geometry = FrameLayout::packed(c.format, c.width, c.height);
  // Two sources with different contents and padded rows.
  HostFrame sources[2] = {HostFrame(geometry, 1), HostFrame(geometry, 2)};
  if (c.source_pad != 7) {
    for (int s = 0; s < 2; ++s) {
      sources[s].layout = padded_layout(geometry, c.source_pad);
      sources[s].bytes.assign(sources[s].layout.size, 0);
      sources[s].image = sources[s].layout.at(sources[s].bytes.data());
      fill_pattern(geometry, sources[s].image, static_cast<uint64_t>(s + 1));
    }
  }
  const FrameLayout dest = FrameLayout::packed(c.format, c.width, c.height, c.dest_align);
  std::vector<uint8_t> dest_bytes(dest.size + kGuard);
  const ImageRef dest_image = dest.at(dest_bytes.data());

  // Min band 0: every copy is split, however small, so that odd sizes with
  // more threads than rows are exercised too.
  ParallelCopy copier(c.threads, 0);
  ASSERT_EQ(copier.threads(), c.threads);
  for (int i = 0; i < c.copies; ++i) {
    const uint8_t sentinel = static_cast<uint8_t>(0x5B + 37 * i);
    std::fill(dest_bytes.begin(), dest_bytes.end(), sentinel);
    const ImageRef& source = sources[i % 2].image;
    const std::vector<PlaneCopy> planes = planes_of(geometry, source, dest_image);
    copier.copy(planes.data(), static_cast<int>(planes.size()));
    const std::string problem = check_copy(geometry, source, dest, dest_bytes, sentinel);
    ASSERT_TRUE(problem.empty()) << "copy " << i << ": " << problem;
  }
}

std::vector<CopyCase> copy_cases() {
  std::vector<CopyCase> cases;
  const PixelFormat formats[] = {PixelFormat::kRGBA, PixelFormat::kNV12, PixelFormat::kI420};
  const std::pair<int, int> sizes[] = {{1, 1}, {3, 5}, {641, 479}};
  for (PixelFormat format : formats)
    for (auto [w, h] : sizes)
      for (int threads : {1, 2, 3, 8})
        for (size_t pad : {size_t{0}, size_t{13}})
          for (size_t align : {size_t{1}, size_t{4}})
            cases.push_back(
                {format, w, h, pad, align, threads, w * h > 100000 ? (kSanitized ? 2 : 12) : 40});
  // A row of 4K: more threads than rows.
  for (int threads : {2, 8}) cases.push_back({PixelFormat::kRGBA, 3840, 1, 5, 1, threads, 40});
  // 4K: fewer copies, each 12 to 33 MB (under a sanitizer, one case).
  for (PixelFormat format : formats)
    for (int threads : {1, 3, 8})
      if (!kSanitized || (format == PixelFormat::kNV12 && threads == 3))
        cases.push_back({format, 3840, 2160, 7, 4, threads, kSanitized ? 2 : 4});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Copies, ParallelCopyTest, ::testing::ValuesIn(copy_cases()), case_name);

TEST(ParallelCopyPolicy, SmallFramesStayOnTheCallerAndLargeOnesUseEveryThread) {
  ParallelCopy copier(8);
  EXPECT_EQ(copier.bands(0), 1);
  EXPECT_EQ(copier.bands(255 * 1024), 1);  // under ~256 KiB: no wake-ups
  EXPECT_EQ(copier.bands(512 * 1024), 4);
  EXPECT_EQ(copier.bands(size_t{3840} * 2160 * 4), 8);
  ParallelCopy alone(1);
  EXPECT_EQ(alone.bands(size_t{3840} * 2160 * 4), 1);
  EXPECT_GE(ParallelCopy::automatic_threads(), 1);
  EXPECT_LE(ParallelCopy::automatic_threads(), ParallelCopy::kMaxAutomaticThreads);
  EXPECT_THROW(ParallelCopy(0), Error);
}

TEST(ParallelCopyPolicy, ADefaultPoolCopiesLargeAndSmallFramesExactly) {
  // The engine's own threshold: the large frame is split, the small one not.
  ParallelCopy copier(4);
  for (auto [w, h] : {std::pair{1920, 1080}, {64, 16}}) {
    const FrameLayout geometry = FrameLayout::packed(PixelFormat::kNV12, w, h);
    HostFrame source(geometry, 9);
    const FrameLayout dest = FrameLayout::packed(PixelFormat::kNV12, w, h);
    std::vector<uint8_t> dest_bytes(dest.size + kGuard);
    for (int i = 0; i < (kSanitized ? 4 : 20); ++i) {
      const uint8_t sentinel = static_cast<uint8_t>(0x11 * (i + 1));
      std::fill(dest_bytes.begin(), dest_bytes.end(), sentinel);
      const std::vector<PlaneCopy> planes =
          planes_of(geometry, source.image, dest.at(dest_bytes.data()));
      copier.copy(planes.data(), static_cast<int>(planes.size()));
      const std::string problem = check_copy(geometry, source.image, dest, dest_bytes, sentinel);
      ASSERT_TRUE(problem.empty()) << w << "x" << h << " copy " << i << ": " << problem;
    }
  }
}

// ---------------------------------------------------------------------------
// Through the engine

// Keeps what each frame should come out as, checks every delivered frame
// against it and releases the frame at once.
struct ReferenceConsumer {
  std::mutex mutex;
  std::condition_variable arrived;
  std::vector<std::vector<uint8_t>> references;  // packed, as config.output; read-only
  FrameLayout layout;
  size_t delivered = 0;               // guarded by mutex
  std::vector<std::string> problems;  // guarded by mutex
  std::vector<FrameTiming> timings;   // guarded by mutex

  EngineCallbacks callbacks() {
    EngineCallbacks cb;
    cb.on_frame = [this](OutputFrame frame) {
      const uint64_t id = frame_id(frame);
      const uint64_t sequence = frame.sequence();
      const std::vector<uint8_t>& want = references[id % references.size()];
      // Row by row: the padding at the end of each output row is not the
      // frame's and is never written.
      const ImageRef reference = layout.at(const_cast<uint8_t*>(want.data()));
      bool same = true;
      for (int p = 0; p < layout.n_planes(); ++p)
        for (size_t y = 0; y < layout.rows(p); ++y)
          same =
              same && std::memcmp(frame.image().planes[p].data + y * frame.image().planes[p].stride,
                                  reference.planes[p].data + y * reference.planes[p].stride,
                                  layout.row_bytes(p)) == 0;
      const FrameTiming timing = frame.timing();
      frame.release();
      std::lock_guard<std::mutex> lock(mutex);
      if (!same && problems.size() < 5)
        problems.push_back("frame " + std::to_string(id) + " differs from its input");
      if (sequence != id && problems.size() < 5)
        problems.push_back("frame " + std::to_string(id) + " came out as sequence " +
                           std::to_string(sequence));
      timings.push_back(timing);
      ++delivered;
      arrived.notify_all();
    };
    cb.on_error = [this](const std::string& message) {
      std::lock_guard<std::mutex> lock(mutex);
      problems.push_back(message);
      arrived.notify_all();
    };
    return cb;
  }
};

struct EngineCopyCase {
  PixelFormat format;
  int width, height;
};

class StagingThreadsTest : public ::testing::TestWithParam<EngineCopyCase> {};

TEST_P(StagingThreadsTest, PageableFramesComeOutAsTheyWentIn) {
  const EngineCopyCase& c = GetParam();
  constexpr int kFrames = 300;
  constexpr int kPatterns = 5;  // more than the ring, so a stale slot shows
  CO_DEVICE_OR_SKIP(device, BackendKind::kCpu, 4, 3);
  const FrameLayout layout = FrameLayout::packed(c.format, c.width, c.height);
  EngineConfig config;
  config.operation = make_operation("copy");
  config.ring_size = 3;
  config.input = layout;
  config.output = layout;
  config.staging_threads = 4;
  // Large enough that the staging copy is split over all four threads.
  ASSERT_EQ(ParallelCopy(4).bands(layout.size), 4);

  // Sources with padded rows; what comes out is the pattern, packed.
  std::vector<HostFrame> patterns;
  patterns.reserve(kPatterns);
  ReferenceConsumer consumer;
  consumer.layout = layout;
  for (int i = 0; i < kPatterns; ++i) {
    patterns.emplace_back(layout, 1000 + i);
    std::vector<uint8_t> packed(layout.size);
    fill_pattern(layout, layout.at(packed.data()), 1000 + i);
    consumer.references.push_back(std::move(packed));
  }
  HostFrame pageable(layout, 0);  // the producer's one buffer, rewritten per frame
  {
    Engine engine(device, config, consumer.callbacks());
    engine.start();
    for (uint64_t i = 0; i < kFrames; ++i) {
      const std::vector<uint8_t>& pattern = patterns[i % kPatterns].bytes;
      std::copy(pattern.begin(), pattern.end(), pageable.bytes.begin());
      InputFrame in;
      in.image = pageable.image;
      in.user = numbered(i);
      ASSERT_EQ(engine.submit(std::move(in)), Status::kOk) << engine.error();
      // Staging must have copied every band before submit() returned.
      std::fill(pageable.bytes.begin(), pageable.bytes.end(), uint8_t{0xA5});
    }
    ASSERT_EQ(engine.drain(), Status::kOk) << engine.error();
    engine.stop();
  }
  std::lock_guard<std::mutex> lock(consumer.mutex);
  EXPECT_EQ(consumer.delivered, static_cast<size_t>(kFrames));
  EXPECT_TRUE(consumer.problems.empty()) << consumer.problems.front();
  for (const FrameTiming& t : consumer.timings) ASSERT_TRUE(t.staging.valid());
}

INSTANTIATE_TEST_SUITE_P(Engine, StagingThreadsTest,
                         ::testing::Values(EngineCopyCase{PixelFormat::kRGBA, 641, 359},
                                           EngineCopyCase{PixelFormat::kNV12, 1281, 721},
                                           EngineCopyCase{PixelFormat::kI420, 1281, 721}),
                         [](const ::testing::TestParamInfo<EngineCopyCase>& info) {
                           return std::string(format_info(info.param.format).name) + "_" +
                                  std::to_string(info.param.width) + "x" +
                                  std::to_string(info.param.height);
                         });

TEST(StagingThreads, OutOfRangeIsRefused) {
  for (int threads : {-1, 65}) {
    CO_DEVICE_OR_SKIP(device, BackendKind::kCpu);
    EngineConfig config;
    config.operation = make_operation("copy");
    config.input = config.output = FrameLayout::packed(PixelFormat::kRGBA, 16, 4);
    config.staging_threads = threads;
    Engine engine(device, config, {});
    try {
      engine.start();
      ADD_FAILURE() << "staging_threads " << threads << " was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("staging-threads"), std::string::npos) << e.what();
    }
  }
}

#ifdef __linux__
// Names of this process's threads that start with `prefix`.
std::multiset<std::string> threads_named(const std::string& prefix) {
  std::multiset<std::string> names;
  DIR* dir = opendir("/proc/self/task");
  if (!dir) return names;
  while (dirent* entry = readdir(dir)) {
    if (entry->d_name[0] == '.') continue;
    std::ifstream comm(std::string("/proc/self/task/") + entry->d_name + "/comm");
    std::string name;
    if (std::getline(comm, name) && name.rfind(prefix, 0) == 0) names.insert(name);
  }
  closedir(dir);
  return names;
}

TEST(StagingThreads, WorkersAreNamedStartedOnceAndJoinedByStop) {
  CO_DEVICE_OR_SKIP(device, BackendKind::kCpu);
  ASSERT_TRUE(threads_named("co-stage-").empty());
  EngineConfig config;
  config.operation = make_operation("copy");
  config.input = config.output = FrameLayout::packed(PixelFormat::kRGBA, 16, 4);
  config.staging_threads = 4;
  Engine engine(device, config, {});
  engine.start();
  // Names are set by each worker as it starts.
  std::multiset<std::string> names;
  for (int i = 0; i < 200 && names.size() < 3; ++i) {
    names = threads_named("co-stage-");
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(names, (std::multiset<std::string>{"co-stage-1", "co-stage-2", "co-stage-3"}));
  engine.stop();
  EXPECT_TRUE(threads_named("co-stage-").empty());
}
#endif

}  // namespace
}  // namespace cudaoverlap::test
