// ModelUri: where `orca model pull` fetches a model from, parsed from the text a user
// (or the controller, from InferenceDeployment's model.uri) gives:
//   hf://ORG/NAME             a Hugging Face Hub repository at revision "main"
//   hf://ORG/NAME@REVISION    ... at a branch, tag, commit or "refs/pr/N"
//   https://HOST/PATH.tar     a tar archive (also .tar.gz / .tgz; http:// is accepted
//                             for loopback stand-ins and in-cluster mirrors)
// Pure functions; thread-safe.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace orca {

struct ModelUri {
  enum class Kind { kHub, kArchive };
  Kind kind = Kind::kHub;
  std::string text;      // the URI as given
  std::string repo;      // kHub: "ORG/NAME"
  std::string revision;  // kHub: "main" unless given
  std::string url;       // kArchive: the archive's URL, as given
};

// Parses `text`. Fails with InvalidArgument naming the text and what is wrong: an
// unknown scheme, a repository name that is not ORG/NAME of [A-Za-z0-9._-] (no "..",
// no "--", at most 96 characters per part), an empty or malformed revision, an archive
// URL without a host or whose path does not end in .tar, .tar.gz or .tgz, or any
// whitespace or control character.
absl::StatusOr<ModelUri> ParseModelUri(absl::string_view text);

// Returns `s` percent-encoded for one URL path segment (RFC 3986 unreserved characters
// kept; '/' encoded), as the hub expects a revision like "refs/pr/1" in its API paths.
std::string EncodePathSegment(absl::string_view s);

}  // namespace orca
