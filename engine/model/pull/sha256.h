// SHA-256 of files and strings through OpenSSL's EVP interface (no hand-written crypto).
// Thread-safe.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace orca {

// Returns the lowercase hex SHA-256 of the file at `path`. Fails with NotFound or
// Internal naming the path when it cannot be read.
absl::StatusOr<std::string> Sha256OfFile(const std::string& path);

// Returns the lowercase hex SHA-256 of `data`.
std::string Sha256OfString(absl::string_view data);

// Returns true when `hex` is 64 hex digits (either case).
bool IsSha256Hex(absl::string_view hex);

}  // namespace orca
