// PullStaging: where a pull into DIR is assembled, and its atomic installation.
//   DIR.partial/files/     the tree that becomes DIR (files land as NAME.part first)
//   DIR.partial/download/  an archive being fetched
//   DIR.partial/state.json {"uri": ..., "commit": ...}: what the staged bytes belong to
// A later run for the same URI and commit resumes the staged files; any other state is
// wiped. Install() writes DIR.partial/files/.orca-pull.json (the marker: URI, commit)
// and renames the tree to DIR in one step (an atomic exchange when DIR exists), so DIR
// is never a half-downloaded model. DIR must not be a mount point itself: staging sits
// beside it, on the same file system. Not thread-safe; PullLock keeps other processes
// out.
#pragma once

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace orca {

constexpr char kPullMarkerName[] = ".orca-pull.json";

struct PullMarker {
  std::string uri;
  std::string commit;  // hub: the resolved commit; archive: its SHA-256
};

// Returns the marker of a completed pull in `dir`, nullopt when there is none (no such
// directory or no marker). Fails with InvalidArgument naming the file when the marker
// is unreadable JSON.
absl::StatusOr<std::optional<PullMarker>> ReadPullMarker(const std::string& dir);

// An exclusive advisory lock (flock) on DIR.pull.lock, held while it lives.
class PullLock {
 public:
  // Takes the lock, waiting for another pull of the same DIR to finish.
  static absl::StatusOr<PullLock> Acquire(const std::string& dir);
  PullLock(PullLock&& other) noexcept;
  PullLock& operator=(PullLock&&) = delete;
  ~PullLock();

 private:
  explicit PullLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

class PullStaging {
 public:
  // Opens DIR.partial for `uri` at `commit` (empty: not known yet), wiping it first when
  // it was staged for anything else, and creates its files/ and download/ folders.
  static absl::StatusOr<PullStaging> Open(const std::string& dir, const std::string& uri,
                                          const std::string& commit);

  const std::string& root() const { return root_; }
  std::string files_dir() const { return root_ + "/files"; }
  std::string download_dir() const { return root_ + "/download"; }

  // Writes the marker into files/ and installs files/ as DIR, then removes DIR.partial
  // and whatever DIR held before. Fails with FailedPrecondition when DIR cannot be
  // replaced (e.g. it is a mount point).
  absl::Status Install(const PullMarker& marker);

 private:
  PullStaging(std::string dir, std::string root) : dir_(std::move(dir)), root_(std::move(root)) {}
  std::string dir_;
  std::string root_;
};

// Returns `dir` without trailing slashes ("/" stays "/").
std::string TrimTrailingSlashes(std::string dir);

}  // namespace orca
