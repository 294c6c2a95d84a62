#include "engine/config/config_loader.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <exception>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/common/file_util.h"
#include "engine/common/status_macros.h"
#include "engine/common/utf8.h"
#include "engine/config/pipeline_layers.h"

namespace orca {
namespace {

absl::string_view SectionOf(const Setting& s) {
  return absl::string_view(s.key).substr(0, s.key.find('.'));
}
absl::string_view NameOf(const Setting& s) {
  return absl::string_view(s.key).substr(s.key.find('.') + 1);
}

absl::Status InFile(const std::string& source, const std::string& key, const absl::Status& s) {
  return absl::InvalidArgumentError(absl::StrCat(source, ": ", key, " ", s.message()));
}

// The sections of the table, in order.
std::vector<std::string> Sections() {
  std::vector<std::string> out;
  for (const Setting& s : AllSettings()) {
    if (out.empty() || out.back() != SectionOf(s)) out.emplace_back(SectionOf(s));
  }
  return out;
}

std::string YamlScalar(const Setting& s, const std::string& value) {
  if (s.type != SettingType::kString) return value;
  // A YAML double-quoted string. Bytes that are not UTF-8 (a flag can carry them) become
  // U+FFFD rather than an exception; JSON escapes the C0 controls, and what JSON leaves
  // raw but YAML may not hold (DEL, the C1 controls, NEL included, which a YAML reader
  // would fold as a line break, U+FFFE, U+FFFF) is escaped here (found by
  // tests/fuzz/engine_yaml_fuzzer: a model.dir holding U+0080 did not read back).
  const std::string json =
      nlohmann::json(value).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  const std::string_view text(json);
  std::string out;
  char32_t cp = 0;
  for (size_t i = 0; i < text.size();) {
    const size_t length = DecodeUtf8At(text, i, &cp);  // json's output is well-formed
    if (cp == 0x7F || (cp >= 0x80 && cp <= 0x9F) || cp == 0xFFFE || cp == 0xFFFF) {
      absl::StrAppend(&out, "\\u", absl::Hex(static_cast<uint32_t>(cp), absl::kZeroPad4));
    } else {
      out.append(text.substr(i, length));
    }
    i += length > 0 ? length : 1;
  }
  return out;
}

// Fails when `text` is not what YAML allows: UTF-8 without control characters. yaml-cpp
// lets other bytes through (and mangles NUL) into strings that nothing downstream can
// write out (tests/fuzz/engine_yaml_fuzzer).
absl::Status CheckYamlText(absl::string_view text, const std::string& source) {
  const size_t bad = FindNonPrintableYaml(std::string_view(text.data(), text.size()));
  if (bad == std::string_view::npos) return absl::OkStatus();
  const size_t line = 1 + std::count(text.begin(), text.begin() + bad, '\n');
  return absl::InvalidArgumentError(
      absl::StrCat(source, ": line ", line, ": not UTF-8 or a control character (byte ", bad,
                   "); YAML text is UTF-8 and spells control characters as escapes"));
}

}  // namespace

void AddConfigFlags(Role role, Flags& flags) {
  for (const Setting& s : AllSettings()) {
    if (!HasRole(s.roles, role)) continue;
    // Empty help: listed by SettingsHelp, not by Flags::Help.
    flags.Add(s.flag, "", "", s.type == SettingType::kBool);
    if (s.type == SettingType::kBool) flags.Add("no-" + s.flag, "", "", true);
  }
  flags.Add("config", "", "engine configuration file (engine.yaml); flags override it")
      .Add("help", "", "show this help", true);
}

absl::StatusOr<EngineConfig> ResolveConfig(Role role, const Flags& flags) {
  EngineConfig c = DefaultConfig(role);
  if (const std::string path = flags.GetString("config"); !path.empty()) {
    ORCA_RETURN_IF_ERROR(ApplyEngineYamlFile(path, c));
  }
  for (const Setting& s : AllSettings()) {
    if (!HasRole(s.roles, role)) continue;
    const bool set = flags.IsSet(s.flag);
    const bool negated = s.type == SettingType::kBool && flags.IsSet("no-" + s.flag);
    if (set && negated) {
      return absl::InvalidArgumentError(
          absl::StrCat("--", s.flag, " and --no-", s.flag, " contradict each other"));
    }
    if (!set && !negated) continue;
    const std::string text = negated ? "false" : flags.GetString(s.flag);
    if (absl::Status st = s.set(c, text); !st.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("--", s.flag, " ", st.message()));
    }
  }
  ORCA_RETURN_IF_ERROR(Validate(c, role));
  return c;
}

absl::StatusOr<EngineConfig> ParseCommandLine(Role role, const std::vector<std::string>& args) {
  Flags flags;
  AddConfigFlags(role, flags);
  ORCA_RETURN_IF_ERROR(flags.Parse(args));
  if (!flags.positional().empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("unexpected argument '", flags.positional().front(), "'"));
  }
  return ResolveConfig(role, flags);
}

absl::Status ApplyEngineYaml(absl::string_view text, const std::string& source,
                             EngineConfig& config) {
  ORCA_RETURN_IF_ERROR(CheckYamlText(text, source));
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": not valid YAML: ", e.what()));
  }
  if (root.IsNull()) return absl::OkStatus();  // an empty file
  if (!root.IsMap()) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": must be a mapping of sections"));
  }
  const std::vector<std::string> sections = Sections();
  for (const auto& section : root) {
    const std::string name = section.first.Scalar();
    if (std::find(sections.begin(), sections.end(), name) == sections.end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          source, ": unknown section '", name, "' (known: ", absl::StrJoin(sections, ", "), ")"));
    }
    if (section.second.IsNull()) continue;
    if (!section.second.IsMap()) {
      return absl::InvalidArgumentError(absl::StrCat(source, ": ", name, " must be a mapping"));
    }
    for (const auto& entry : section.second) {
      const std::string key = absl::StrCat(name, ".", entry.first.Scalar());
      const Setting* s = FindSettingByKey(key);
      if (s == nullptr) {
        return absl::InvalidArgumentError(absl::StrCat(source, ": unknown key '", key, "'"));
      }
      const YAML::Node& v = entry.second;
      if (!v.IsScalar()) {
        return InFile(source, key,
                      absl::InvalidArgumentError(absl::StrCat("must be ", s->Describe())));
      }
      // A quoted scalar is a string: `max_batch_size: "64"` is a type error.
      if (s->type != SettingType::kString && v.Tag() == "!") {
        return InFile(source, key,
                      absl::InvalidArgumentError(absl::StrCat(
                          "must be ", s->Describe(), ", not the string \"", v.Scalar(), "\"")));
      }
      if (absl::Status st = s->set(config, v.Scalar()); !st.ok()) return InFile(source, key, st);
    }
  }
  return absl::OkStatus();
}

absl::Status ApplyEngineYamlFile(const std::string& path, EngineConfig& config) {
  ORCA_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  return ApplyEngineYaml(text, path, config);
}

absl::StatusOr<std::string> ToEngineYaml(const EngineConfig& config,
                                         absl::Span<const std::string> keys,
                                         absl::string_view header) {
  std::set<std::string> wanted(keys.begin(), keys.end());
  for (const std::string& k : wanted) {
    if (FindSettingByKey(k) == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("no setting has the key '", k, "'"));
    }
  }
  std::string out(header);
  absl::string_view open_section;
  for (const Setting& s : AllSettings()) {
    if (!wanted.empty() && wanted.count(s.key) == 0) continue;
    if (SectionOf(s) != open_section) {
      open_section = SectionOf(s);
      absl::StrAppend(&out, open_section, ":\n");
    }
    absl::StrAppend(&out, "  ", NameOf(s), ": ", YamlScalar(s, s.get(config)), "\n");
  }
  return out;
}

std::vector<std::string> ToFlags(const EngineConfig& config, Role role) {
  std::vector<std::string> out;
  for (const Setting& s : AllSettings()) {
    if (!HasRole(s.roles, role)) continue;
    const std::string value = s.get(config);
    if (value == s.DefaultText(role)) continue;
    if (s.type == SettingType::kBool) {
      out.push_back(absl::StrCat(value == "true" ? "--" : "--no-", s.flag));
    } else {
      out.push_back(absl::StrCat("--", s.flag, "=", value));
    }
  }
  return out;
}

absl::Status Validate(const EngineConfig& c, Role role) {
  if (role != Role::kGenerate && c.model.dir.empty()) {
    return absl::InvalidArgumentError("--model DIR (engine.yaml model.dir) is required");
  }
  if (role != Role::kWorker) {  // a worker's KV dtype comes from its scheduler
    if (auto kv = ResolveKvCacheDType(c.kv_cache.dtype, c.device.type); !kv.ok()) {
      return kv.status();
    }
  }
  if (role == Role::kServe || role == Role::kScheduler) {  // the one that splits the layers
    ORCA_RETURN_IF_ERROR(CheckStageLayers(c.parallel.pipeline_layers, c.parallel.pipeline));
  }
  if (role == Role::kWorker) {
    if (c.worker.scheduler.empty()) {
      return absl::InvalidArgumentError("--scheduler HOST:PORT is required");
    }
    if (c.parallel.tensor % c.parallel.gpus_per_pod != 0) {
      return absl::InvalidArgumentError(absl::StrCat("parallelism.tensor (", c.parallel.tensor,
                                                     ") must be a multiple of gpus_per_pod (",
                                                     c.parallel.gpus_per_pod, ")"));
    }
  }
  return absl::OkStatus();
}

std::string SettingsHelp(Role role) {
  std::string out;
  for (const Setting& s : AllSettings()) {
    if (!HasRole(s.roles, role)) continue;
    std::string lhs = absl::StrCat("  --", s.flag, s.type == SettingType::kBool ? "" : " VALUE");
    if (lhs.size() < 28) lhs.resize(28, ' ');
    absl::StrAppend(&out, lhs, " ", s.help, " (");
    if (s.type == SettingType::kBool) absl::StrAppend(&out, "--no-", s.flag, " turns it off; ");
    if (s.type == SettingType::kEnum) absl::StrAppend(&out, s.Describe(), "; ");
    const std::string def = s.DefaultText(role);
    absl::StrAppend(&out, "default: ", def.empty() ? "none" : def, "; engine.yaml: ", s.key, ")\n");
  }
  return out;
}

std::string SettingsMarkdownTable() {
  std::string out =
      "| engine.yaml key | flag | value | default | roles | what it sets |\n"
      "|---|---|---|---|---|---|\n";
  for (const Setting& s : AllSettings()) {
    std::vector<std::string> roles;
    for (Role r : {Role::kServe, Role::kScheduler, Role::kWorker, Role::kGenerate}) {
      if (HasRole(s.roles, r)) roles.emplace_back(RoleName(r));
    }
    const std::string def = s.DefaultText(Role::kScheduler);
    absl::StrAppend(&out, "| `", s.key, "` | `--", s.flag, "` | ", s.Describe(), " | ",
                    def.empty() ? "" : absl::StrCat("`", def, "`"), " | ",
                    absl::StrJoin(roles, ", "), " | ", s.help, " |\n");
  }
  return out;
}

}  // namespace orca
