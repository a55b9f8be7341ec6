// Declared parameters and their values (see parameter.h).
#include "kernels/parameter.h"

#include <cmath>
#include <sstream>

#include "kernels/error.h"

namespace cudaoverlap {

namespace {

std::string number_text(double value) {
  std::ostringstream text;
  text << value;
  return text.str();
}

// "0.5 to 20", or the nicks of an enumeration: for messages.
std::string range_text(const ParamSpec& spec) {
  if (spec.type == ParamSpec::Type::kBool) return "true or false";
  if (spec.type != ParamSpec::Type::kEnum)
    return number_text(spec.min) + " to " + number_text(spec.max);
  std::string nicks;
  for (size_t i = 0; i < spec.choices.size(); ++i)
    nicks += std::string(i == 0                         ? ""
                         : i + 1 == spec.choices.size() ? " or "
                                                        : ", ") +
             spec.choices[i].nick;
  return nicks;
}

}  // namespace

bool ParamSpec::takes(double value) const {
  switch (type) {
    case Type::kDouble:
      return value >= min && value <= max;
    case Type::kInt:
    case Type::kUInt:
      return value == std::floor(value) && value >= min && value <= max;
    case Type::kBool:
      return value == 0 || value == 1;
    case Type::kEnum:
      for (const ParamChoice& choice : choices)
        if (value == choice.value) return true;
      return false;
  }
  return false;
}

double ParamValues::number(const std::string& name) const {
  const auto found = values_.find(name);
  if (found == values_.end()) throw Error("no value for the parameter '" + name + "'");
  return found->second;
}

ParamValues ParamValues::resolve(const std::vector<ParamSpec>& specs) const {
  ParamValues resolved;
  for (const ParamSpec& spec : specs) {
    const auto found = values_.find(spec.name);
    const double value = found != values_.end() ? found->second : spec.default_value;
    if (!spec.takes(value))
      throw Error(std::string(spec.name) + " takes " + range_text(spec) + ", not " +
                  number_text(value));
    resolved.set(spec.name, value);
  }
  return resolved;
}

}  // namespace cudaoverlap
