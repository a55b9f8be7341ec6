// One built-in operation as the registry lists it: its name, what it does,
// the parameters it declares and how it is made. Each operation defines its
// own entry next to its class; operation_registry.cpp lists them.
#pragma once

#include <memory>
#include <vector>

#include "kernels/kernel_params.h"
#include "kernels/operation.h"
#include "kernels/parameter.h"

namespace cudaoverlap {

struct OperationEntry {
  const char* name;         // kernel=<name>
  const char* description;  // one sentence, for gst-inspect-1.0
  bool offered;             // false: benchmarks and tests only, not the element
  // Its parameters: one element property each (where offered).
  std::vector<ParamSpec> params;
  // Made from `params`, whose values are resolved against the declaration
  // (every declared name present and in range).
  std::shared_ptr<const Operation> (*make)(const KernelParams& params);
  // Runs the user's code (custom): nothing to run with default parameters,
  // so suites that go through every operation leave it to its own.
  bool user_code = false;
};

}  // namespace cudaoverlap
