// A small command-line flag parser for the orca subcommands: `--name value`,
// `--name=value` and bare boolean `--name`. Every flag must be declared; unknown
// flags, missing values and malformed numbers are errors that name the flag. The engine
// settings' flags are declared from their one description (settings.h,
// AddConfigFlags); commands declare their own few beside them. Not thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace orca {

class Flags {
 public:
  // Declares a flag with a default (empty string for none) and a help line.
  Flags& Add(const std::string& name, const std::string& default_value, const std::string& help,
             bool is_bool = false);

  // Parses argv[first..argc); non-flag arguments are collected in positional().
  absl::Status Parse(int argc, char** argv, int first);
  absl::Status Parse(const std::vector<std::string>& args);

  std::string GetString(const std::string& name) const;
  absl::StatusOr<int64_t> GetInt(const std::string& name) const;
  absl::StatusOr<double> GetDouble(const std::string& name) const;
  bool GetBool(const std::string& name) const;
  bool IsSet(const std::string& name) const;
  bool Has(const std::string& name) const { return flags_.count(name) > 0; }
  // Gives a declared flag `value` unless the command line set it (config files supply
  // defaults; the command line wins).
  void SetIfUnset(const std::string& name, const std::string& value);
  const std::vector<std::string>& positional() const { return positional_; }
  // Returns the help text of the flags declared with a help line.
  std::string Help() const;

 private:
  struct Flag {
    std::string value;
    std::string help;
    bool is_bool = false;
    bool set = false;
  };
  std::map<std::string, Flag> flags_;
  std::vector<std::string> order_;
  std::vector<std::string> positional_;
};

}  // namespace orca
