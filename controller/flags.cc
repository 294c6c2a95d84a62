#include "controller/flags.h"

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace orca::controller {

absl::StatusOr<Flags> Flags::Parse(int argc, char** argv, int first,
                                   const std::map<std::string, bool>& known) {
  Flags f;
  for (int i = first; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("--", 0) != 0 && !(arg.size() == 2 && arg[0] == '-')) {
      f.positional_.push_back(arg);
      continue;
    }
    std::string name = arg.substr(arg[1] == '-' ? 2 : 1);
    std::string value;
    bool has_value = false;
    if (size_t eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      has_value = true;
    }
    auto it = known.find(name);
    if (it == known.end()) return absl::InvalidArgumentError(absl::StrCat("unknown flag --", name));
    if (!has_value) {
      if (it->second) {
        value = "true";
      } else if (i + 1 < argc) {
        value = argv[++i];
      } else {
        return absl::InvalidArgumentError(absl::StrCat("flag --", name, " needs a value"));
      }
    }
    f.values_[name] = value;
  }
  return f;
}

std::string Flags::String(const std::string& name, const std::string& def) const {
  auto it = values_.find(name);
  return it == values_.end() ? def : it->second;
}

absl::StatusOr<int> Flags::Int(const std::string& name, int def) const {
  auto it = values_.find(name);
  if (it == values_.end()) return def;
  int v;
  if (!absl::SimpleAtoi(it->second, &v)) {
    return absl::InvalidArgumentError(absl::StrCat("--", name, ": not an integer: ", it->second));
  }
  return v;
}

absl::StatusOr<bool> Flags::Bool(const std::string& name, bool def) const {
  auto it = values_.find(name);
  if (it == values_.end()) return def;
  bool v;
  if (!absl::SimpleAtob(it->second, &v)) {
    return absl::InvalidArgumentError(absl::StrCat("--", name, ": not a boolean: ", it->second));
  }
  return v;
}

absl::StatusOr<absl::Duration> Flags::Duration(const std::string& name, absl::Duration def) const {
  auto it = values_.find(name);
  if (it == values_.end()) return def;
  absl::Duration d;
  if (!absl::ParseDuration(it->second, &d) || d < absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", name, ": not a duration (e.g. 30s, 10m): ", it->second));
  }
  return d;
}

}  // namespace orca::controller
