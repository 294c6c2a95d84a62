#include "engine/tokenizer/internal/tokenizer_config.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/common/file_util.h"
#include "engine/common/status_macros.h"
#include "engine/tokenizer/internal/json_file.h"

namespace orca::tokenizer_internal {
namespace {

using nlohmann::json;

// A special token is written either as its text or as an AddedToken object.
absl::StatusOr<std::optional<std::string>> TokenText(const json& config, const char* key,
                                                     const std::string& path) {
  if (!config.contains(key) || config[key].is_null()) return std::nullopt;
  const json& v = config[key];
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v["content"].is_string()) {
    return v["content"].get<std::string>();
  }
  return absl::InvalidArgumentError(
      absl::StrCat(path, ": \"", key, "\" is neither a string nor {\"content\": ...}"));
}

absl::StatusOr<std::optional<bool>> OptionalBool(const json& config, const char* key,
                                                 const std::string& path) {
  if (!config.contains(key) || config[key].is_null()) return std::nullopt;
  if (!config[key].is_boolean()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": \"", key, "\" is not a bool"));
  }
  return config[key].get<bool>();
}

absl::StatusOr<std::string> ChatTemplate(const json& value, const std::string& path) {
  if (value.is_null()) return std::string();
  if (value.is_string()) return value.get<std::string>();
  if (value.is_array()) {
    for (const json& entry : value) {
      if (entry.is_object() && entry.contains("name") && entry["name"] == "default" &&
          entry.contains("template") && entry["template"].is_string()) {
        return entry["template"].get<std::string>();
      }
    }
    return std::string();
  }
  return absl::InvalidArgumentError(
      absl::StrCat(path, ": \"chat_template\" is neither a string nor a list of templates"));
}

}  // namespace

absl::StatusOr<TokenizerConfig> LoadTokenizerConfig(const std::string& dir) {
  TokenizerConfig config;
  const std::string path = JoinPath(dir, "tokenizer_config.json");
  if (FileExists(path)) {
    ORCA_ASSIGN_OR_RETURN(json j, ReadJsonFile(path));
    if (!j.is_object()) return absl::InvalidArgumentError(absl::StrCat(path, ": not an object"));
    ORCA_ASSIGN_OR_RETURN(config.add_bos_token, OptionalBool(j, "add_bos_token", path));
    ORCA_ASSIGN_OR_RETURN(config.add_eos_token, OptionalBool(j, "add_eos_token", path));
    ORCA_ASSIGN_OR_RETURN(config.bos_token, TokenText(j, "bos_token", path));
    ORCA_ASSIGN_OR_RETURN(config.eos_token, TokenText(j, "eos_token", path));
    if (j.contains("chat_template")) {
      ORCA_ASSIGN_OR_RETURN(config.chat_template, ChatTemplate(j["chat_template"], path));
    }
  }
  if (config.chat_template.empty()) {
    const std::string jinja_path = JoinPath(dir, "chat_template.jinja");
    const std::string json_path = JoinPath(dir, "chat_template.json");
    if (FileExists(jinja_path)) {
      ORCA_ASSIGN_OR_RETURN(config.chat_template, ReadFile(jinja_path));
    } else if (FileExists(json_path)) {
      ORCA_ASSIGN_OR_RETURN(json j, ReadJsonFile(json_path));
      if (j.is_object() && j.contains("chat_template")) {
        ORCA_ASSIGN_OR_RETURN(config.chat_template, ChatTemplate(j["chat_template"], json_path));
      }
    }
  }
  return config;
}

}  // namespace orca::tokenizer_internal
