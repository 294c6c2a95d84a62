// Authenticator: the one API-key check of every transport. The HTTP server asks it
// about the `Authorization` header, the gRPC server about the `authorization` metadata;
// both carry "Bearer <key>" (the OpenAI clients' form). The key is compared in constant
// time (no early exit on the first differing byte, so response timing does not reveal
// how much of a guess was right), and neither the key nor what a client sent appears in
// an error message or a log line. Immutable after construction; thread-safe.
#pragma once

#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace orca {

class Authenticator {
 public:
  // `api_key` empty: authentication is off and every request is let through.
  explicit Authenticator(std::string api_key) : key_(std::move(api_key)) {}

  // Whether a key is required.
  bool enabled() const { return !key_.empty(); }
  // Checks an Authorization value ("Bearer <key>"; the scheme is case-insensitive).
  // Returns OK when authentication is off or the key matches, Unauthenticated (with a
  // message naming neither key) when the value is missing, malformed or wrong.
  absl::Status Check(absl::string_view authorization) const;

 private:
  std::string key_;
};

// Returns whether `presented` equals `secret`, in time that depends only on the length of
// `presented` (which the caller already knows), never on where they differ nor on the
// secret's length.
bool ConstantTimeEquals(absl::string_view presented, absl::string_view secret);

}  // namespace orca
