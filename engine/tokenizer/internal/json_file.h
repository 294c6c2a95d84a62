// Reading JSON files into nlohmann::json without letting exceptions escape.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace orca::tokenizer_internal {

// Reads and parses the JSON file at `path`. Fails with NotFound when the file is
// missing and InvalidArgument (naming the path, line and column) when it is not JSON.
absl::StatusOr<nlohmann::json> ReadJsonFile(const std::string& path);

}  // namespace orca::tokenizer_internal
