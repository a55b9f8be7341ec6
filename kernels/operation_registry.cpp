// The table of built-in operations (see operation_registry.h).
#include "operation_registry.h"

#include "application.h"
#include "balance.h"
#include "blur.h"
#include "convert.h"
#include "copy.h"
#include "custom.h"
#include "edge.h"
#include "error.h"
#include "flip.h"
#include "invert.h"
#include "synthetic.h"

namespace cudaoverlap {

const std::vector<OperationEntry>& operation_registry() {
  static const std::vector<OperationEntry> entries = {
      copy_entry(), invert_entry(),  flip_entry(),   balance_entry(),     blur_entry(),
      edge_entry(), convert_entry(), custom_entry(), application_entry(), synthetic_entry(),
  };
  return entries;
}

const OperationEntry& operation_entry(const std::string& name) {
  std::string known;
  for (const OperationEntry& entry : operation_registry()) {
    if (name == entry.name) return entry;
    known += known.empty() ? "" : ", ";
    known += entry.name;
  }
  throw Error("there is no kernel '" + name + "': the kernels are " + known);
}

std::shared_ptr<const Operation> make_operation(const std::string& name,
                                                const KernelParams& params) {
  const OperationEntry& entry = operation_entry(name);
  KernelParams resolved = params;
  resolved.values = params.values.resolve(entry.params);
  return entry.make(resolved);
}

bool same_operation(const std::shared_ptr<const Operation>& a,
                    const std::shared_ptr<const Operation>& b) {
  if (!a || !b) return !a && !b;
  return a->same_as(*b);
}

std::vector<const ParamSpec*> declared_parameters() {
  std::vector<const ParamSpec*> specs;
  for (const OperationEntry& entry : operation_registry()) {
    if (!entry.offered) continue;
    for (const ParamSpec& spec : entry.params) {
      bool seen = false;
      for (const ParamSpec* s : specs) seen = seen || std::string(s->name) == spec.name;
      if (!seen) specs.push_back(&spec);
    }
  }
  return specs;
}

}  // namespace cudaoverlap
