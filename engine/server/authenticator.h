// Authenticator: the one shared-secret check of every transport. The public APIs ask it
// about the API key (the HTTP server about the `Authorization` header, the gRPC server
// about the `authorization` metadata); the scheduler's control plane asks its own
// instance about the control-plane token (engine/group/control_plane_guard.h). All carry
// "Bearer <secret>" (the OpenAI clients' form). The secret is compared in constant time
// (no early exit on the first differing byte, so response timing does not reveal how
// much of a guess was right), and neither the secret nor what a client sent appears in
// an error message or a log line. Immutable after construction; thread-safe.
#pragma once

#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace orca {

class Authenticator {
 public:
  // `secret` empty: authentication is off and every request is let through. `what` names
  // the secret in error messages ("API key", "control-plane token").
  explicit Authenticator(std::string secret, std::string what = "API key")
      : key_(std::move(secret)), what_(std::move(what)) {}

  // Whether a secret is required.
  bool enabled() const { return !key_.empty(); }
  // Checks an Authorization value ("Bearer <secret>"; the scheme is case-insensitive).
  // Returns OK when authentication is off or the secret matches, Unauthenticated (with a
  // message naming neither secret) when the value is missing, malformed or wrong.
  absl::Status Check(absl::string_view authorization) const;

 private:
  std::string key_;
  std::string what_;
};

// Returns whether `presented` equals `secret`, in time that depends only on the length of
// `presented` (which the caller already knows), never on where they differ nor on the
// secret's length.
bool ConstantTimeEquals(absl::string_view presented, absl::string_view secret);

// Returns the secret held in the file `path`, without surrounding whitespace (the newline
// an editor or `echo` adds). Errors name the file and `setting` (e.g.
// "parallelism.control_token_file"), never the content: NotFound or InvalidArgument when
// the file cannot be read, InvalidArgument when it holds only whitespace.
absl::StatusOr<std::string> ReadSecretFile(const std::string& path, absl::string_view setting);

}  // namespace orca
