// The built-in operations by name: what the element's kernel= offers and
// what benchmarks and tests make operations from.
//
// Adding an operation is one line in operation_registry.cpp's table (see
// docs/adding-a-kernel.md); the element's kernel enum, its parameters'
// properties, their documentation in gst-inspect-1.0 and every name lookup
// come from the table.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kernels/kernel_params.h"
#include "kernels/operation.h"
#include "kernels/operation_entry.h"

namespace cudaoverlap {

// Every built-in operation, in the order the element lists them.
const std::vector<OperationEntry>& operation_registry();

// The entry called `name`. Throws Error naming the known ones when there is
// none.
const OperationEntry& operation_entry(const std::string& name);

// The operation called `name`, made with the values of `params` it
// declares (the defaults for those not given) and the other fields it
// takes. Throws Error naming the known ones when there is none, or the
// parameter whose value is out of range.
std::shared_ptr<const Operation> make_operation(const std::string& name,
                                                const KernelParams& params = {});

// The parameters of the offered operations, each name once (the first
// declaration of a name stands for all): the element's kernel properties.
std::vector<const ParamSpec*> declared_parameters();

}  // namespace cudaoverlap
