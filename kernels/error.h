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

}  // namespace cudaoverlap
