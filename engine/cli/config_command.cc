// `orca config`: check an engine.yaml with the code the processes read it with, and print
// the settings table.
//
//   orca config check FILE [--role scheduler|worker|serve]   validate, print the effective
//                                                            configuration; exit 1 on error
//   orca config docs                                         the Markdown table of settings
#include <iostream>
#include <string>

#include "absl/strings/str_cat.h"
#include "engine/cli/commands.h"
#include "engine/config/config_loader.h"

namespace orca {
namespace {

constexpr char kUsage[] =
    "usage: orca config check FILE [--role scheduler|worker|serve]\n"
    "       orca config docs\n\n"
    "check: reads FILE as the role does (strictly: unknown keys, wrong types and values out\n"
    "of range are errors), prints the effective configuration as engine.yaml and exits 0,\n"
    "or prints the error and exits 1.\n"
    "docs:  prints the table of every setting (engine.yaml key, flag, values, default).\n";

absl::StatusOr<Role> RoleNamed(const std::string& name) {
  for (Role r : {Role::kServe, Role::kScheduler, Role::kWorker, Role::kGenerate}) {
    if (name == RoleName(r)) return r;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("--role must be serve, scheduler, worker or generate, got '", name, "'"));
}

int Check(int argc, char** argv) {
  Flags flags;
  flags.Add("role", "scheduler", "the role whose checks apply");
  auto fail = [](int code, const absl::Status& s) {
    std::cerr << "orca config check: " << s.message() << "\n";
    return code;
  };
  if (auto s = flags.Parse(argc, argv, 0); !s.ok()) return fail(2, s);
  if (flags.positional().size() != 1) {
    std::cerr << kUsage;
    return 2;
  }
  auto role = RoleNamed(flags.GetString("role"));
  if (!role.ok()) return fail(2, role.status());
  EngineConfig config = DefaultConfig(*role);
  const std::string& path = flags.positional()[0];
  if (auto s = ApplyEngineYamlFile(path, config); !s.ok()) return fail(1, s);
  if (*role == Role::kWorker && config.worker.scheduler.empty()) {
    config.worker.scheduler = "(from --scheduler)";  // per pod: the command line's
  }
  if (auto s = Validate(config, *role); !s.ok()) {
    return fail(1, absl::InvalidArgumentError(absl::StrCat(path, ": ", s.message())));
  }
  auto yaml = ToEngineYaml(
      config, {},
      absl::StrCat("# effective configuration of orca ", RoleName(*role), " from ", path, "\n"));
  if (!yaml.ok()) return fail(1, yaml.status());
  std::cout << *yaml;
  return 0;
}

}  // namespace

int RunConfigCommand(int argc, char** argv) {
  const std::string sub = argc > 0 ? argv[0] : "";
  if (sub == "check") return Check(argc - 1, argv + 1);
  if (sub == "docs") {
    std::cout << SettingsMarkdownTable();
    return 0;
  }
  if (sub == "--help" || sub == "help") {
    std::cout << kUsage;
    return 0;
  }
  std::cerr << kUsage;
  return 2;
}

}  // namespace orca
