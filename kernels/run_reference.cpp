// See run_reference.h.
#include "kernels/run_reference.h"

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/error.h"

namespace cudaoverlap {

void run_reference(const Operation& op, const ImageRef& in, const ImageRef& out) {
  const std::string problem = op.check(in, out);
  if (!problem.empty()) throw Error(problem);
  std::vector<uint8_t> memory(op.workspace_bytes());
  const Workspace workspace{memory.data(), memory.size()};
  op.prepare_reference(workspace);
  op.run_reference(in, out, workspace);
}

}  // namespace cudaoverlap
