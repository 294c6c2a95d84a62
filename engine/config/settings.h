// The one description of every engine setting (docs/configuration.md): its engine.yaml
// key, command-line flag, type, default, range or choices, help, and the roles that
// take it on their command line. Everything else — flag parsing, the strict
// engine.yaml reader, the writer orca-controller uses, `--help`, `orca config check`
// and the docs table — is derived from AllSettings(). Immutable; thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>
#include "absl/strings/string_view.h"

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "engine/config/engine_config.h"

namespace orca {

// The processes that read settings.
enum class Role : uint32_t {
  kServe = 1u << 0,      // orca serve
  kScheduler = 1u << 1,  // orca scheduler
  kWorker = 1u << 2,     // orca worker
  kGenerate = 1u << 3,   // orca generate
};
using RoleSet = uint32_t;
inline constexpr RoleSet operator|(Role a, Role b) {
  return static_cast<RoleSet>(a) | static_cast<RoleSet>(b);
}
inline constexpr RoleSet operator|(RoleSet a, Role b) { return a | static_cast<RoleSet>(b); }
inline constexpr bool HasRole(RoleSet set, Role r) { return (set & static_cast<RoleSet>(r)) != 0; }
// Returns "serve", "scheduler", "worker" or "generate".
absl::string_view RoleName(Role r);

enum class SettingType { kInt, kDouble, kBool, kString, kEnum };

struct Setting {
  // engine.yaml key as "section.name". The `worker` section's placement (scheduler,
  // stage, pod_index, tp_rank, host) is per pod and belongs on the command line.
  std::string key;
  // Command-line flag without dashes. Booleans also take --no-<flag>.
  std::string flag;
  SettingType type = SettingType::kInt;
  std::string help;
  RoleSet roles = 0;                 // roles that accept the flag (and list it in --help)
  double min = 0, max = 0;           // kInt, kDouble: inclusive bounds
  std::vector<std::string> choices;  // kEnum: canonical spellings
  // Returns the value in `c` as text (canonical spelling; what Set accepts).
  std::function<std::string(const EngineConfig& c)> get;
  // Parses `text` into `c`. InvalidArgument naming the range or choices otherwise; the
  // caller adds where the text came from.
  std::function<absl::Status(EngineConfig& c, absl::string_view text)> set;

  // Returns the default value for `role` as text (see DefaultConfig).
  std::string DefaultText(Role role) const;
  // Returns "an integer in [1, 4096]", "one of: paged, reserve", ... for messages.
  std::string Describe() const;
};

// Returns every setting, in documentation order.
absl::Span<const Setting> AllSettings();
// Returns the setting with engine.yaml key `key`, or nullptr.
const Setting* FindSettingByKey(absl::string_view key);
// Returns the setting `role` takes as --`flag`, or nullptr. (`--host` is the API's
// address for serve and scheduler, the data-plane address for a worker.)
const Setting* FindSettingByFlag(absl::string_view flag, Role role);
// Returns "--" + the flag of the setting with engine.yaml key `key` (which must exist):
// how orca-controller spells the command lines it renders.
std::string FlagFor(absl::string_view key);

// Returns the defaults of `role`: EngineConfig{}, except that `orca serve` picks any free
// control-plane port (its workers are local).
EngineConfig DefaultConfig(Role role);

}  // namespace orca
