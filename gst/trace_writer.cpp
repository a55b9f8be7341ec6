// The Chrome/Perfetto trace writer; see trace_writer.h. The format is the
// "JSON Object Format" of the Trace Event Format document: complete events
// ("X") with ts/dur in microseconds, and metadata events ("M") naming the
// process and the lanes.
#include "trace_writer.h"

#include <limits.h>
#include <stdlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iterator>
#include <map>

namespace cudaoverlap {
namespace {

constexpr int kPid = 1;
// Lanes, in the order they are drawn (tid = index + 1).
// "chain": the frame's arrival to its work being enqueued (waiting for a
// slot and staging included), on the streaming thread; "worker wait": the
// engine's worker waiting for the download to complete, up to its wake-up.
constexpr const char* kLanes[] = {"chain",    "staging",     "upload", "compute",
                                  "download", "worker wait", "push"};
constexpr int kLaneCount = static_cast<int>(std::size(kLanes));
// Upload, compute, download and worker wait happen on a device's engine.
bool device_lane(int lane) { return lane >= 2 && lane <= 5; }
// tid of `lane` for `device`: device 0's lanes are 1..7 as with one device;
// another device's lanes come after, kLaneCount apart.
int lane_tid(int lane, int device) { return device * kLaneCount + lane + 1; }
// Drawing order: each stage's lanes together, device by device.
int lane_sort(int lane, int device, int devices) {
  return devices == 1 ? lane + 1 : lane * 64 + device + 1;
}

// JSON string contents: element names are plain, but escape what matters.
std::string json_escape(const std::string& text) {
  std::string out;
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}

// The files being written in this process, by canonical path, and by which
// element: two writers of one file (a copy-pasted launch line) would
// interleave two JSON documents into something neither tool can read.
// Lock order: a leaf.
std::mutex g_open_files_mutex;
std::map<std::string, std::string> g_open_files;  // guarded by g_open_files_mutex

// `path` with its folder resolved (symbolic links, "..", relative paths), so
// that two spellings of one file compare equal; as given when the folder
// does not exist (opening fails then anyway).
std::string canonical_path(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  const std::string folder = slash == std::string::npos ? "." : path.substr(0, slash + 1);
  const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  char resolved[PATH_MAX];
  if (realpath(folder.c_str(), resolved) == nullptr) return path;
  return std::string(resolved) + "/" + name;
}

}  // namespace

std::string TraceWriter::open(const std::string& path, const std::string& element_name,
                              const std::vector<std::string>& devices) {
  close();
  const std::string canonical = canonical_path(path);
  {
    std::lock_guard<std::mutex> lock(g_open_files_mutex);
    const auto taken = g_open_files.find(canonical);
    if (taken != g_open_files.end())
      return "the trace file '" + path + "' is already being written by " + taken->second +
             "; give each cudaoverlap element its own trace-file";
    g_open_files.emplace(canonical, "element '" + element_name + "'");
  }
  std::lock_guard<std::mutex> lock(mutex_);
  file_ = std::fopen(path.c_str(), "w");
  if (!file_) {
    const std::string problem = "cannot write the trace file '" + path +
                                "': " + std::strerror(errno) +
                                "; set trace-file to a writable path";
    std::lock_guard<std::mutex> files_lock(g_open_files_mutex);
    g_open_files.erase(canonical);
    return problem;
  }
  path_ = canonical;
  given_path_ = path;
  failed_ = false;
  failure_.clear();
  // One frame is about 1 kB of JSON; a large buffer keeps writes rare.
  std::setvbuf(file_, nullptr, _IOFBF, 1 << 20);
  origin_ns_ = host_now_ns();
  std::fprintf(file_,
               "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n"
               "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":0,"
               "\"args\":{\"name\":\"cudaoverlap %s\"}}",
               kPid, json_escape(element_name).c_str());
  devices_ = std::max<int>(1, static_cast<int>(devices.size()));
  for (int i = 0; i < kLaneCount; ++i)
    for (int d = 0; d < (device_lane(i) ? devices_ : 1); ++d) {
      std::string name = kLanes[i];
      if (devices_ > 1 && device_lane(i))
        name += ", device " + std::to_string(d) + " (" + json_escape(devices[d]) + ")";
      std::fprintf(file_,
                   ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,"
                   "\"args\":{\"name\":\"%s\"}},\n"
                   "{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,"
                   "\"args\":{\"sort_index\":%d}}",
                   kPid, lane_tid(i, d), name.c_str(), kPid, lane_tid(i, d),
                   lane_sort(i, d, devices_));
    }
  return {};
}

void TraceWriter::set_steps(const std::vector<std::string>& names) {
  std::lock_guard<std::mutex> lock(mutex_);
  steps_ = names;
}

void TraceWriter::slice(int lane, int device, uint64_t frame, const TimeSpan& span,
                        const char* part) {
  if (!span.valid()) return;
  const int tid = lane_tid(lane, device_lane(lane) && device < devices_ ? device : 0);
  // Integer microseconds with three decimals: nanosecond resolution, and no
  // rounding of large doubles.
  const int64_t ts = span.start_ns - origin_ns_;
  const int64_t dur = span.end_ns - span.start_ns;
  const std::string step = part != nullptr ? " " + json_escape(part) : std::string();
  std::fprintf(file_,
               ",\n{\"name\":\"frame %llu%s\",\"cat\":\"%s\",\"ph\":\"X\",\"pid\":%d,\"tid\":%d,"
               "\"ts\":%s%lld.%03lld,\"dur\":%lld.%03lld,\"args\":{\"frame\":%llu}}",
               static_cast<unsigned long long>(frame), step.c_str(),
               part != nullptr ? "compute step" : kLanes[lane], kPid, tid, ts < 0 ? "-" : "",
               static_cast<long long>((ts < 0 ? -ts : ts) / 1000),
               static_cast<long long>((ts < 0 ? -ts : ts) % 1000),
               static_cast<long long>(dur / 1000), static_cast<long long>(dur % 1000),
               static_cast<unsigned long long>(frame));
}

bool TraceWriter::is_open() {
  std::lock_guard<std::mutex> lock(mutex_);
  return file_ != nullptr;
}

void TraceWriter::fail(const char* what) {
  if (failed_) return;
  failed_ = true;
  failure_ = std::string("cannot ") + what + " the trace file '" + given_path_ +
             "': " + std::strerror(errno) + "; the trace stops here, the stream goes on";
}

std::string TraceWriter::take_failure() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::string failure;
  failure.swap(failure_);
  return failure;
}

void TraceWriter::write_frame(uint64_t frame, const FrameTiming& timing, const TimeSpan& push,
                              int device) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!file_ || failed_) return;
  slice(0, device, frame, TimeSpan{timing.arrived_ns, timing.enqueued_ns});
  slice(1, device, frame, timing.staging);
  slice(2, device, frame, timing.upload);
  slice(3, device, frame, timing.compute);
  if (timing.parts > 0 && static_cast<size_t>(timing.parts) == steps_.size())
    for (int k = 0; k < timing.parts; ++k)
      slice(3, device, frame, timing.part(k), steps_[static_cast<size_t>(k)].c_str());
  slice(4, device, frame, timing.download);
  slice(5, device, frame, timing.worker_wait);
  slice(6, device, frame, push);
  // Buffered: a full disk shows when the buffer is written out.
  if (std::ferror(file_)) fail("write");
}

void TraceWriter::close() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!file_) return;
  std::fputs("\n]}\n", file_);
  const bool written = !std::ferror(file_);
  const int closed = std::fclose(file_);
  file_ = nullptr;
  if (!written || closed != 0) fail("write");
  std::lock_guard<std::mutex> files_lock(g_open_files_mutex);
  g_open_files.erase(path_);
}

}  // namespace cudaoverlap
