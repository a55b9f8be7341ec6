// The table of built-in operations (see operation_registry.h).
#include "kernels/operation_registry.h"

#include "kernels/error.h"
#include "operation_list.h"

namespace cudaoverlap {

// Each operation's entry, defined in its own folder (kernels/NAME/NAME.cpp).
#define CUDAOVERLAP_DECLARE_ENTRY(name) const OperationEntry& name##_entry();
CUDAOVERLAP_OPERATIONS(CUDAOVERLAP_DECLARE_ENTRY)
#undef CUDAOVERLAP_DECLARE_ENTRY

const std::vector<OperationEntry>& operation_registry() {
#define CUDAOVERLAP_LIST_ENTRY(name) name##_entry(),
  static const std::vector<OperationEntry> entries = {
      CUDAOVERLAP_OPERATIONS(CUDAOVERLAP_LIST_ENTRY)};
#undef CUDAOVERLAP_LIST_ENTRY
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
