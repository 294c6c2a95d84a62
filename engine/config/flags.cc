#include "engine/config/flags.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace orca {

Flags& Flags::Add(const std::string& name, const std::string& default_value,
                  const std::string& help, bool is_bool) {
  flags_[name] = Flag{default_value, help, is_bool, false};
  order_.push_back(name);
  return *this;
}

absl::Status Flags::Parse(int argc, char** argv, int first) {
  return Parse(std::vector<std::string>(argv + first, argv + argc));
}

absl::Status Flags::Parse(const std::vector<std::string>& args) {
  const int argc = static_cast<int>(args.size());
  for (int i = 0; i < argc; ++i) {
    std::string arg = args[i];
    if (arg.rfind("--", 0) != 0 || arg == "--") {
      positional_.push_back(arg);
      continue;
    }
    std::string name = arg.substr(2), value;
    bool has_value = false;
    if (auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      has_value = true;
    }
    auto it = flags_.find(name);
    if (it == flags_.end())
      return absl::InvalidArgumentError(absl::StrCat("unknown flag --", name));
    Flag& f = it->second;
    if (f.is_bool) {
      if (has_value && value != "true" && value != "false") {
        return absl::InvalidArgumentError(absl::StrCat("--", name, " takes true or false"));
      }
      f.value = has_value ? value : "true";
    } else if (has_value) {
      f.value = value;
    } else {
      if (i + 1 >= argc)
        return absl::InvalidArgumentError(absl::StrCat("--", name, " needs a value"));
      f.value = args[++i];
    }
    f.set = true;
  }
  return absl::OkStatus();
}

std::string Flags::GetString(const std::string& name) const { return flags_.at(name).value; }

absl::StatusOr<int64_t> Flags::GetInt(const std::string& name) const {
  int64_t v;
  if (!absl::SimpleAtoi(flags_.at(name).value, &v)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", name, " must be an integer, got '", flags_.at(name).value, "'"));
  }
  return v;
}

absl::StatusOr<double> Flags::GetDouble(const std::string& name) const {
  double v;
  if (!absl::SimpleAtod(flags_.at(name).value, &v)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", name, " must be a number, got '", flags_.at(name).value, "'"));
  }
  return v;
}

bool Flags::GetBool(const std::string& name) const { return flags_.at(name).value == "true"; }

bool Flags::IsSet(const std::string& name) const { return flags_.at(name).set; }

void Flags::SetIfUnset(const std::string& name, const std::string& value) {
  Flag& f = flags_.at(name);
  if (!f.set) f.value = value;
}

std::string Flags::Help() const {
  std::string out;
  for (const auto& name : order_) {
    const Flag& f = flags_.at(name);
    if (f.help.empty()) continue;  // described elsewhere (the engine settings)
    std::string lhs = absl::StrCat("  --", name, f.is_bool ? "" : " VALUE");
    if (lhs.size() < 28) lhs.resize(28, ' ');
    absl::StrAppend(&out, lhs, " ", f.help);
    if (!f.value.empty() && !f.is_bool) absl::StrAppend(&out, " (default: ", f.value, ")");
    absl::StrAppend(&out, "\n");
  }
  return out;
}

}  // namespace orca
