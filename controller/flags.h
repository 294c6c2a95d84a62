// Command-line parsing of orca-controller: `--name=value`, `--name value` and bare
// boolean `--name`. Pure; not thread-safe (used once at startup).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace orca::controller {

class Flags {
 public:
  // Parses argv[first..]; `known` lists accepted names (without "--") and whether
  // each is boolean. InvalidArgument on unknown flags or missing values.
  static absl::StatusOr<Flags> Parse(int argc, char** argv, int first,
                                     const std::map<std::string, bool>& known);

  bool Has(const std::string& name) const { return values_.count(name) > 0; }
  std::string String(const std::string& name, const std::string& def) const;
  absl::StatusOr<int> Int(const std::string& name, int def) const;
  absl::StatusOr<bool> Bool(const std::string& name, bool def) const;
  // Durations as "30s", "10m", "500ms".
  absl::StatusOr<absl::Duration> Duration(const std::string& name, absl::Duration def) const;
  const std::vector<std::string>& positional() const { return positional_; }

 private:
  std::map<std::string, std::string> values_;
  std::vector<std::string> positional_;
};

}  // namespace orca::controller
