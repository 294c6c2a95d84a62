// YAML <-> JSON conversion for manifests (yaml-cpp underneath). Stateless; thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace orca::controller {

// Parses every document of a YAML stream into JSON, with YAML 1.2 core-schema
// scalars (plain true/false/null/numbers are typed; quoted scalars stay strings).
// Empty documents are skipped. Returns InvalidArgument naming `source` and the
// line on malformed YAML.
absl::StatusOr<std::vector<nlohmann::json>> ParseYamlDocuments(std::string_view text,
                                                               std::string_view source);

// Reads and parses a YAML file. Returns NotFound when it cannot be read.
absl::StatusOr<std::vector<nlohmann::json>> ReadYamlFile(const std::string& path);

// Returns `value` as block-style YAML (keys in JSON order, multi-line strings as
// literal blocks, strings quoted whenever a plain scalar would change type).
std::string ToYaml(const nlohmann::json& value);

// Returns the documents joined with "---" separators.
std::string ToYamlDocuments(const std::vector<nlohmann::json>& docs);

}  // namespace orca::controller
