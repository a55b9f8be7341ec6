// CPU reference of the `synthetic` kernel: its output is a copy.
#include "copy.h"
#include "synthetic.h"

namespace cudaoverlap {

void synthetic_reference(const ImageRef& in, const ImageRef& out) { copy_reference(in, out); }

}  // namespace cudaoverlap
