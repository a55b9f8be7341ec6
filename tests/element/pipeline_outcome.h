// Runs a whole pipeline to its end and keeps what came out: the frames an
// appsink named `out` received, and what the element named `o` negotiated
// and counted. Shared by the suites that compare two pipelines' frames
// byte for byte (CUDA memory against system memory, a chain against its
// steps as elements of their own).
#pragma once

#include <gst/gst.h>

#include <cstdint>
#include <string>
#include <vector>

namespace cudaoverlap_test {

// What a pipeline ending in `appsink name=out` made: each frame's pixels
// (rows without padding, plane after plane), the caps the element named
// `o` took on its sink pad and sent from its src pad, the bytes its stats
// say went to the device and back, and the first error posted (or why the
// pipeline could not be made).
struct PipelineOutcome {
  std::vector<std::vector<uint8_t>> frames;
  std::string sink_caps;
  std::string src_caps;
  guint64 uploaded = 0;
  guint64 downloaded = 0;
  std::string error;
};

// Runs `description` to EOS or an error (20 s without a frame ends it).
PipelineOutcome run_to_frames(const std::string& description);

}  // namespace cudaoverlap_test
