// The built-in operations by name: what the element's kernel= offers and
// what benchmarks and tests make operations from.
//
// Adding an operation is one line in operation_registry.cpp's table (see
// docs/adding-a-kernel.md); the element's kernel enum, its documentation in
// gst-inspect-1.0 and every name lookup come from the table.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kernel_params.h"
#include "operation.h"

namespace cudaoverlap {

struct OperationEntry {
  const char* name;         // kernel=<name>
  const char* description;  // one sentence, for gst-inspect-1.0
  bool offered;             // false: benchmarks and tests only, not the element
  std::shared_ptr<const Operation> (*make)(const KernelParams& params);
  // Runs the user's code (custom): nothing to run with default parameters,
  // so suites that go through every operation leave it to its own.
  bool user_code = false;
};

// Every built-in operation, in the order the element lists them.
const std::vector<OperationEntry>& operation_registry();

// The operation called `name`, made with the fields of `params` it takes.
// Throws Error naming the known ones when there is none.
std::shared_ptr<const Operation> make_operation(const std::string& name,
                                                const KernelParams& params = {});

// Both null, or the same operation with the same parameters.
bool same_operation(const std::shared_ptr<const Operation>& a,
                    const std::shared_ptr<const Operation>& b);

}  // namespace cudaoverlap
