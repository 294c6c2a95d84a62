#include "engine/server/authenticator.h"

#include <cstdint>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "engine/common/file_util.h"

namespace orca {

bool ConstantTimeEquals(absl::string_view presented, absl::string_view secret) {
  // Every byte of `presented` is compared (against the secret repeated), and the length
  // difference is folded in, so the loop never exits early. volatile keeps the compiler
  // from turning the accumulation into a short-circuiting comparison.
  volatile uint8_t diff = presented.size() != secret.size() ? 1 : 0;
  if (secret.empty()) return presented.empty();
  for (size_t i = 0; i < presented.size(); ++i) {
    diff = diff | static_cast<uint8_t>(presented[i] ^ secret[i % secret.size()]);
  }
  return diff == 0;
}

absl::Status Authenticator::Check(absl::string_view authorization) const {
  if (key_.empty()) return absl::OkStatus();
  constexpr absl::string_view kScheme = "bearer ";
  if (authorization.empty()) {
    return absl::UnauthenticatedError(
        absl::StrCat("Missing ", what_, ": send it as 'Authorization: Bearer <", what_, ">'."));
  }
  if (authorization.size() < kScheme.size() ||
      !absl::EqualsIgnoreCase(authorization.substr(0, kScheme.size()), kScheme)) {
    return absl::UnauthenticatedError(
        absl::StrCat("Malformed Authorization: expected 'Authorization: Bearer <", what_, ">'."));
  }
  const absl::string_view presented =
      absl::StripAsciiWhitespace(authorization.substr(kScheme.size()));
  if (!ConstantTimeEquals(presented, key_)) {
    return absl::UnauthenticatedError(absl::StrCat("Incorrect ", what_, " provided."));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadSecretFile(const std::string& path, absl::string_view setting) {
  absl::StatusOr<std::string> text = ReadFile(path);
  if (!text.ok()) {
    return absl::Status(text.status().code(), absl::StrCat(setting, ": ", text.status().message()));
  }
  std::string secret(absl::StripAsciiWhitespace(*text));
  if (secret.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(setting, ": ", path, " is empty"));
  }
  return secret;
}

}  // namespace orca
