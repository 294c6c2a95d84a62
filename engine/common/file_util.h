// Small file helpers returning Status values that name the path.
#pragma once

#include <string>

#include "absl/status/statusor.h"

namespace orca {

// Reads the whole file at `path`.
absl::StatusOr<std::string> ReadFile(const std::string& path);
// Writes `data` to `path` (truncating), via a temporary file and rename.
absl::Status WriteFile(const std::string& path, const std::string& data);
bool FileExists(const std::string& path);
// Joins two path components with one '/'.
std::string JoinPath(const std::string& a, const std::string& b);

}  // namespace orca
