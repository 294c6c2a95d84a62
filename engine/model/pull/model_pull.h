// PullModel: `orca model pull URI DIR`, the model delivery of an init container.
//   hf://ORG/NAME[@REV]  resolve REV to a commit, list its files, fetch the checkpoint's
//                        (hub_listing.h's selection), each resumable and verified
//                        against the hub's size and SHA-256 (lfs.oid)
//   https://...tar[.gz]  fetch the archive (checked against --sha256 when given) and
//                        unpack it safely (archive_unpack.h); an archive holding one
//                        top-level folder is unpacked from inside it
// Everything is assembled in DIR.partial and checked (options.check: the checks
// `orca serve` runs) before it is renamed to DIR with a marker recording URI and
// commit (pull_staging.h). When DIR already holds a complete pull of the same URI,
// PullModel returns at once without the network. Not thread-safe; concurrent pulls of
// one DIR in several processes wait for each other (PullLock).
#pragma once

#include <cstdint>
#include <functional>
#include <ostream>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/model/pull/file_download.h"
#include "engine/model/pull/hub_listing.h"

namespace orca {

struct PullOptions {
  std::string uri;
  std::string dir;
  std::string sha256;                               // archives only: expected digest
  std::string endpoint = "https://huggingface.co";  // the hub (HF_ENDPOINT)
  std::string token;                                // HF_TOKEN; sent to `endpoint` only
  std::string ca_file;  // trusted CAs (PEM) for https; empty: the system's
  FileFilter filter;    // hub only
  RetryPolicy retry;
  // Checks the staged tree before it is installed (e.g. `orca model inspect`'s checks);
  // its failure fails the pull and leaves DIR untouched.
  std::function<absl::Status(const std::string& dir)> check;
  std::ostream* log = nullptr;  // progress and notes; nullptr: silent
};

struct PullResult {
  bool already_present = false;  // DIR held a complete pull of the URI
  std::string commit;            // hub: the commit; archive: its SHA-256
  int files = 0;
  int64_t bytes = 0;
};

// Pulls `options.uri` into `options.dir` (see above). Fails with InvalidArgument for a
// malformed URI or flag, Unauthenticated/PermissionDenied when the hub refuses the
// token, NotFound for an unknown repository, revision or archive, DataLoss when a file's
// size or SHA-256 is wrong (the file is named and deleted), an archive is unsafe or
// corrupt, or `check` refuses the checkpoint (its message kept), Unavailable when the
// network fails past the retries (partial files are kept for the next run).
absl::StatusOr<PullResult> PullModel(const PullOptions& options);

}  // namespace orca
