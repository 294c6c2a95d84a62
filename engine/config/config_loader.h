// Reading and writing EngineConfig, all derived from the settings table (settings.h):
//
//   defaults (DefaultConfig) < engine.yaml (--config FILE) < flags on the command line
//
// engine.yaml is strict: an unknown section or key, a value of the wrong type (a quoted
// number, `yes` for a boolean) or out of range is an InvalidArgument naming the file and
// the key. orca-controller writes it with ToEngineYaml; `orca config check` reads it
// with the same code the processes use. Pure functions; thread-safe.
#pragma once

#include <string>
#include <vector>
#include "absl/strings/string_view.h"

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "engine/config/engine_config.h"
#include "engine/config/flags.h"
#include "engine/config/settings.h"

namespace orca {

// Declares on `flags` the flag of every setting `role` takes (booleans also as
// --no-<flag>), plus --config FILE and --help.
void AddConfigFlags(Role role, Flags& flags);

// Returns the configuration of `role` from parsed `flags` (declared by AddConfigFlags):
// defaults, then the --config file, then every flag the command line set; then Validate.
absl::StatusOr<EngineConfig> ResolveConfig(Role role, const Flags& flags);

// Parses the arguments after `orca <role>` (AddConfigFlags + ResolveConfig), as the
// commands do. InvalidArgument for unknown flags, bad values, a bad file.
absl::StatusOr<EngineConfig> ParseCommandLine(Role role, const std::vector<std::string>& args);

// Applies engine.yaml text (from `source`, named in errors) to `config`, strictly.
absl::Status ApplyEngineYaml(absl::string_view text, const std::string& source,
                             EngineConfig& config);
// Reads the file `path` and applies it (NotFound when it cannot be read).
absl::Status ApplyEngineYamlFile(const std::string& path, EngineConfig& config);

// Returns engine.yaml for `config`: the settings with keys `keys`, or all when empty,
// grouped by section in the table's order, after `header` (comment lines, may be empty).
// Fails (InvalidArgument) on a key the table does not have.
absl::StatusOr<std::string> ToEngineYaml(const EngineConfig& config,
                                         absl::Span<const std::string> keys = {},
                                         absl::string_view header = "");

// Returns the flags that give `role` the values of `config` that differ from its
// defaults, as `--flag=value` (booleans `--flag` / `--no-flag`).
std::vector<std::string> ToFlags(const EngineConfig& config, Role role);

// Checks what no single setting can: required values of `role` and combinations.
absl::Status Validate(const EngineConfig& config, Role role);

// Returns the --help lines of the settings `role` takes.
std::string SettingsHelp(Role role);
// Returns the Markdown table of every setting (docs/configuration.md embeds it).
std::string SettingsMarkdownTable();

}  // namespace orca
