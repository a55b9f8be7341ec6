// The one exception type of the project's C++ layers.
//
// Engine, backends and kernels throw cudaoverlap::Error with a message a
// user can act on; the engine catches it and moves to its error state, and
// gst/ turns that into GST_ELEMENT_ERROR. No exception crosses into
// GStreamer.
#pragma once

#include <stdexcept>
#include <string>

namespace cudaoverlap {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

// A failure of the operation itself, not of the device it ran on (an
// application's handler that did not process the frame): any device would
// fail the same way, so over several devices it ends the stream instead of
// taking one device out (multi_engine.h). The cpu backend carries the kind
// through its asynchronous errors as CUDA carries a sticky error code.
class OperationError : public Error {
 public:
  explicit OperationError(const std::string& what) : Error(what) {}
};

}  // namespace cudaoverlap
