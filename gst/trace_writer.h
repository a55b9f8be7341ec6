// The `trace-file` of the element: a timeline of every frame in the
// Chrome/Perfetto JSON trace format ({"traceEvents": [...]}), which opens in
// ui.perfetto.dev and chrome://tracing, and which scripts/trace-to-png.py
// draws. One lane (thread) per stage: chain (arrival to enqueued), staging,
// upload, compute, download, worker wait (the engine's worker waiting for
// the download), push; one complete slice ("ph": "X") per frame and lane, named
// "frame N", and within a compute slice one per part of the operation (a
// chain's launches: "frame N step 2 (blur)") where they were measured. All
// times are on the host's steady clock (the engine places GPU times on
// it), in microseconds since the file was opened, so overlapping stages of
// consecutive frames show as overlapping slices.
#pragma once

#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>
#include <vector>

#include "engine.h"

namespace cudaoverlap {

class TraceWriter {
 public:
  TraceWriter() = default;
  ~TraceWriter() { close(); }
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  // Owner thread. Creates (truncates) `path` and writes the header; returns
  // an error sentence, or empty. A file another writer of this process has
  // open is refused (two JSON documents in one file are neither). With
  // several `devices` (their names), the device lanes (upload, compute,
  // download, worker wait) are drawn once per device, named after it
  // ("upload, device 1"); chain, staging and push stay one lane each.
  std::string open(const std::string& path, const std::string& element_name,
                   const std::vector<std::string>& devices = {});
  // Streaming thread: the names of the operation's parts (Operation::parts)
  // for the slices inside compute; empty: none.
  void set_steps(const std::vector<std::string>& names);
  // Src pad task: the slices of frame `frame`, computed by `device`. Does
  // nothing when not open, or once a write failed.
  void write_frame(uint64_t frame, const FrameTiming& timing, const TimeSpan& push, int device = 0);
  // Owner thread: ends the JSON and closes the file. Twice is fine.
  void close();
  // Any thread: the first failed write or close since open(), as a sentence
  // naming the file, handed out once; empty otherwise. Writing stops at the
  // first failure (the rest of a document with a hole in it is no use).
  std::string take_failure();
  // Any thread: a file is open (between open() and close()).
  bool is_open();

 private:
  // `part`: the name of a part of the compute stage, or null.
  void slice(int lane, int device, uint64_t frame, const TimeSpan& span,
             const char* part = nullptr);
  // With mutex_ held: notes a failure (errno's) unless one was noted.
  void fail(const char* what);

  // Lock order: a leaf. Held while writing one frame (a buffered fwrite).
  std::mutex mutex_;
  std::FILE* file_ = nullptr;       // guarded by mutex_
  int64_t origin_ns_ = 0;           // guarded by mutex_
  std::string path_;                // guarded by mutex_: canonical, while open
  int devices_ = 1;                 // guarded by mutex_: lanes drawn per device
  std::vector<std::string> steps_;  // guarded by mutex_
  std::string given_path_;          // guarded by mutex_: as the user gave it
  bool failed_ = false;             // guarded by mutex_: a write or close failed
  std::string failure_;             // guarded by mutex_: not yet taken
};

}  // namespace cudaoverlap
