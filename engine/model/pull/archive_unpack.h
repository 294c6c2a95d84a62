// UnpackTarArchive: a model archive (.tar, .tar.gz, .tgz; ustar, pax or GNU tar) into a
// directory, with libarchive. Every entry is checked before anything is written: only
// regular files, directories, and links whose target stays inside the directory; no
// absolute paths, no ".." components. libarchive's own secure-extraction flags (no
// "..", no absolute paths, never write through a symlink) stay on as a second guard.
// Ownership and permissions beyond the umask are not restored. Thread-compatible.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace orca {

// Unpacks `archive_path` into the existing directory `dir`. Fails with InvalidArgument
// naming the archive and the entry when an entry is unsafe or of an unsupported type
// (device, FIFO), and with DataLoss when the archive is truncated or corrupt; what was
// written so far is left for the caller (a staging directory) to delete.
absl::Status UnpackTarArchive(const std::string& archive_path, const std::string& dir);

}  // namespace orca
