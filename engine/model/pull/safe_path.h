// Checks on relative paths that come from outside (a hub's file listing, an archive's
// entries) before anything is written under a destination directory. Pure functions;
// thread-safe.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace orca {

// Returns OK when `path` is a non-empty relative path whose every '/'-separated
// component is a plain name: not absolute, no "." or ".." component, no empty
// component, no NUL or backslash, at most 4096 bytes. Fails with InvalidArgument
// naming the path and the reason.
absl::Status CheckRelativePath(absl::string_view path);

// Returns OK when a symbolic link stored at relative path `link_path` with target
// `target` resolves (lexically) to a location inside the directory that holds
// `link_path`'s root: the target is relative and its ".." components never climb above
// that root. Fails with InvalidArgument naming both.
absl::Status CheckLinkTarget(absl::string_view link_path, absl::string_view target);

}  // namespace orca
