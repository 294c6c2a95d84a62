#include "engine/model/pull/pull_staging.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "engine/common/file_util.h"
#include "nlohmann/json.hpp"

namespace orca {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string Errno() { return std::strerror(errno); }

absl::StatusOr<std::optional<PullMarker>> ReadMarkerFile(const std::string& path) {
  if (!FileExists(path)) return std::optional<PullMarker>();
  auto text = ReadFile(path);
  if (!text.ok()) return text.status();
  json j = json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object() || !j.contains("uri") || !j["uri"].is_string() ||
      !j.contains("commit") || !j["commit"].is_string()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": not a pull record ({\"uri\": ..., \"commit\": ...})"));
  }
  return std::optional<PullMarker>(
      PullMarker{j["uri"].get<std::string>(), j["commit"].get<std::string>()});
}

absl::Status WriteMarkerFile(const std::string& path, const PullMarker& m) {
  json j = {{"uri", m.uri}, {"commit", m.commit}};
  return WriteFile(path, j.dump() + "\n");
}

}  // namespace

std::string TrimTrailingSlashes(std::string dir) {
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  return dir;
}

absl::StatusOr<std::optional<PullMarker>> ReadPullMarker(const std::string& dir) {
  return ReadMarkerFile(JoinPath(dir, kPullMarkerName));
}

absl::StatusOr<PullLock> PullLock::Acquire(const std::string& dir) {
  std::string path = TrimTrailingSlashes(dir) + ".pull.lock";
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0)
    return absl::FailedPreconditionError(absl::StrCat("cannot open ", path, ": ", Errno()));
  while (::flock(fd, LOCK_EX) != 0) {
    if (errno != EINTR) {
      std::string e = Errno();
      ::close(fd);
      return absl::FailedPreconditionError(absl::StrCat("cannot lock ", path, ": ", e));
    }
  }
  return PullLock(fd);
}

PullLock::PullLock(PullLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }

PullLock::~PullLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the flock
}

absl::StatusOr<PullStaging> PullStaging::Open(const std::string& dir_in, const std::string& uri,
                                              const std::string& commit) {
  std::string dir = TrimTrailingSlashes(dir_in);
  std::string root = dir + ".partial";
  std::string state = root + "/state.json";
  auto staged = ReadMarkerFile(state);
  bool keep =
      staged.ok() && staged->has_value() && (*staged)->uri == uri && (*staged)->commit == commit;
  std::error_code ec;
  if (!keep) {
    fs::remove_all(root, ec);
    if (ec) {
      return absl::FailedPreconditionError(
          absl::StrCat("cannot clear the staging directory ", root, ": ", ec.message()));
    }
  }
  for (const std::string& d : {root + "/files", root + "/download"}) {
    fs::create_directories(d, ec);
    if (ec) {
      return absl::FailedPreconditionError(absl::StrCat("cannot create ", d, ": ", ec.message()));
    }
  }
  if (!keep) {
    if (auto s = WriteMarkerFile(state, PullMarker{uri, commit}); !s.ok()) return s;
  }
  return PullStaging(dir, root);
}

absl::Status PullStaging::Install(const PullMarker& marker) {
  std::string files = files_dir();
  if (auto s = WriteMarkerFile(JoinPath(files, kPullMarkerName), marker); !s.ok()) return s;
  std::error_code ec;
  bool exists = fs::exists(dir_, ec);
  if (!exists) {
    if (::rename(files.c_str(), dir_.c_str()) != 0) {
      return absl::FailedPreconditionError(
          absl::StrCat("cannot rename ", files, " to ", dir_, ": ", Errno()));
    }
  } else if (::renameat2(AT_FDCWD, files.c_str(), AT_FDCWD, dir_.c_str(), RENAME_EXCHANGE) != 0) {
    // File systems without RENAME_EXCHANGE: move the old tree aside first.
    std::string old = root_ + "/replaced";
    if (::rename(dir_.c_str(), old.c_str()) != 0 || ::rename(files.c_str(), dir_.c_str()) != 0) {
      return absl::FailedPreconditionError(
          absl::StrCat("cannot replace ", dir_, " with the pulled model (", Errno(),
                       "); DIR must be a directory inside a volume, not its mount point"));
    }
  }
  fs::remove_all(root_, ec);  // the old tree (exchanged into files/) and the downloads
  return absl::OkStatus();
}

}  // namespace orca
