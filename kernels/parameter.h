// An operation's parameters as it declares them (name, type, range,
// default, blurb, whether they may change while playing) and the values
// they are given. The element installs one property per declared name and
// hands the values over in a ParamValues; the registry fills in defaults,
// and two operations of one kind are the same when their values are.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace cudaoverlap {

// One value of an enumerated parameter.
struct ParamChoice {
  int value;
  const char* nick;         // as gst-launch-1.0 spells it
  const char* description;  // one line, for gst-inspect-1.0
};

struct ParamSpec {
  enum class Type { kDouble, kInt, kUInt, kBool, kEnum };
  const char* name;   // the property's name: "sigma", "video-direction"
  const char* nick;   // "Sigma"
  const char* blurb;  // what it does, in a sentence or two
  Type type = Type::kDouble;
  double min = 0;
  double max = 0;
  double default_value = 0;
  // kEnum: the values taken, and the name of the GStreamer enum type that
  // carries them (e.g. "GstVideoOrientationMethod").
  std::vector<ParamChoice> choices = {};
  const char* gst_enum = nullptr;
  // True when the value is only a kernel argument: it may change while
  // playing and takes effect from the next frame.
  bool while_playing = true;

  // Whether `value` is one this parameter takes.
  bool takes(double value) const;
};

// Values of declared parameters, by name. Every type's values fit a double
// exactly (integers to 2^53, enums, booleans as 0 and 1).
class ParamValues {
 public:
  ParamValues& set(const std::string& name, double value) {
    values_[name] = value;
    return *this;
  }
  bool has(const std::string& name) const { return values_.count(name) != 0; }
  // The value of `name`; throws Error when it has none.
  double number(const std::string& name) const;
  int integer(const std::string& name) const { return static_cast<int>(number(name)); }
  template <typename Enum>
  Enum choice(const std::string& name) const {
    return static_cast<Enum>(integer(name));
  }

  // `specs`' values: those set here where they are taken, the defaults for
  // the others; names not in `specs` are left out. Throws Error naming the
  // parameter and its range for a value out of range.
  ParamValues resolve(const std::vector<ParamSpec>& specs) const;

  const std::map<std::string, double>& values() const { return values_; }
  bool operator==(const ParamValues& o) const { return values_ == o.values_; }
  bool operator!=(const ParamValues& o) const { return !(*this == o); }

 private:
  std::map<std::string, double> values_;
};

}  // namespace cudaoverlap
