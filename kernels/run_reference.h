// The whole CPU path of an operation in one call, for tests and tools:
// nothing in the element or the engine uses it.
#pragma once

#include "kernels/operation.h"

namespace cudaoverlap {

// Checks, prepares and runs `op`'s CPU reference on host images, with a
// workspace of its own: the whole CPU path in one call, for tests and tools.
// Throws Error with the check's sentence when `op` cannot do `in` -> `out`.
void run_reference(const Operation& op, const ImageRef& in, const ImageRef& out);

}  // namespace cudaoverlap
