#include "engine/model/pull/model_pull.h"

#include <filesystem>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "engine/common/file_util.h"
#include "engine/common/status_macros.h"
#include "engine/model/pull/archive_unpack.h"
#include "engine/model/pull/http_client.h"
#include "engine/model/pull/hub_client.h"
#include "engine/model/pull/model_uri.h"
#include "engine/model/pull/pull_staging.h"
#include "engine/model/pull/retry.h"
#include "engine/model/pull/sha256.h"

namespace orca {
namespace {

namespace fs = std::filesystem;

void Note(const PullOptions& o, const std::string& line) {
  if (o.log != nullptr) *o.log << "orca model pull: " << line << "\n" << std::flush;
}

absl::Status Check(const PullOptions& o, const std::string& staged) {
  if (!o.check) return absl::OkStatus();
  absl::Status s = o.check(staged);
  if (s.ok()) return s;
  return absl::DataLossError(absl::StrCat("the pulled model cannot be served (", o.uri,
                                          "; nothing was installed at ", o.dir,
                                          "): ", s.message()));
}

// Removes from `root` every regular file that is not in `keep` (relative paths): the
// .part files and deselected files of earlier attempts.
void RemoveStrays(const std::string& root, const std::set<std::string>& keep) {
  std::error_code ec;
  std::vector<fs::path> stray;
  for (auto it = fs::recursive_directory_iterator(root, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (!it->is_regular_file(ec)) continue;
    if (!keep.count(fs::relative(it->path(), root, ec).string())) stray.push_back(it->path());
  }
  for (const auto& p : stray) fs::remove(p, ec);
}

absl::StatusOr<PullResult> PullFromHub(const PullOptions& o, const ModelUri& uri) {
  if (!o.sha256.empty()) {
    return absl::InvalidArgumentError(
        "--sha256 applies to archives; the hub publishes each file's SHA-256 itself");
  }
  ORCA_ASSIGN_OR_RETURN(
      auto client, HttpClient::Create(HttpClientOptions{
                       .bearer_token = o.token, .token_origin = o.endpoint, .ca_file = o.ca_file}));
  HubClient hub(client.get(), o.endpoint);
  std::string commit;
  std::vector<HubFile> listed;
  ORCA_RETURN_IF_ERROR(RetryUnavailable(
      o.retry,
      [&]() -> absl::Status {
        ORCA_ASSIGN_OR_RETURN(commit, hub.ResolveCommit(uri.repo, uri.revision));
        ORCA_ASSIGN_OR_RETURN(listed, hub.ListFiles(uri.repo, commit));
        return absl::OkStatus();
      },
      [&](const absl::Status& error, std::chrono::milliseconds pause) {
        Note(o, absl::StrCat(error.message(), "; retrying in ", pause.count(), " ms"));
      }));
  std::vector<HubFile> files = SelectCheckpointFiles(listed, o.filter);
  if (files.empty()) {
    return absl::NotFoundError(absl::StrCat(
        uri.text, " (commit ", commit, "): none of its ", listed.size(),
        " files is a checkpoint file (config, tokenizer, *.safetensors); choose files with "
        "--include GLOB[,GLOB...]"));
  }
  PullResult result;
  result.commit = commit;
  result.files = static_cast<int>(files.size());
  for (const auto& f : files) result.bytes += f.size;
  Note(o, absl::StrCat(uri.text, " -> commit ", commit, ": ", files.size(), " of ", listed.size(),
                       " files, ", PullProgress::Bytes(result.bytes)));
  ORCA_ASSIGN_OR_RETURN(PullStaging staging, PullStaging::Open(o.dir, uri.text, commit));
  PullProgress progress(o.log, result.bytes, result.files);
  std::set<std::string> keep;
  for (const auto& f : files) {
    std::string dest = JoinPath(staging.files_dir(), f.path);
    std::error_code ec;
    fs::create_directories(fs::path(dest).parent_path(), ec);
    if (ec) return absl::InternalError(absl::StrCat("cannot create the folder of ", dest));
    DownloadSpec spec{.url = hub.FileUrl(uri.repo, commit, f.path),
                      .dest = dest,
                      .name = f.path,
                      .size = f.size,
                      .sha256 = f.sha256};
    ORCA_RETURN_IF_ERROR(DownloadFile(*client, spec, o.retry, &progress));
    keep.insert(f.path);
  }
  RemoveStrays(staging.files_dir(), keep);
  ORCA_RETURN_IF_ERROR(Check(o, staging.files_dir()));
  ORCA_RETURN_IF_ERROR(staging.Install(PullMarker{uri.text, commit}));
  return result;
}

// Unpacks an archive whose only top-level entry is a folder from inside that folder.
absl::Status HoistSingleFolder(const PullStaging& staging) {
  std::error_code ec;
  std::vector<fs::path> top;
  for (const auto& e : fs::directory_iterator(staging.files_dir(), ec)) top.push_back(e.path());
  if (ec || top.size() != 1 || !fs::is_directory(fs::symlink_status(top[0]))) {
    return absl::OkStatus();
  }
  std::string lifted = staging.root() + "/lifted";
  fs::rename(top[0], lifted, ec);
  if (!ec) fs::remove(staging.files_dir(), ec);
  if (!ec) fs::rename(lifted, staging.files_dir(), ec);
  if (ec)
    return absl::InternalError(absl::StrCat("cannot lift ", top[0].string(), ": ", ec.message()));
  return absl::OkStatus();
}

absl::StatusOr<PullResult> PullArchive(const PullOptions& o, const ModelUri& uri) {
  if (!o.filter.include.empty() || !o.filter.exclude.empty()) {
    return absl::InvalidArgumentError("--include and --exclude apply to hf:// repositories");
  }
  std::string want = absl::AsciiStrToLower(o.sha256);
  if (!want.empty() && !IsSha256Hex(want)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--sha256 '", o.sha256, "' is not 64 hexadecimal digits"));
  }
  if (want.empty()) Note(o, "no --sha256 given: the archive's integrity is not verified");
  HttpClientOptions http;
  http.ca_file = o.ca_file;
  ORCA_ASSIGN_OR_RETURN(auto client, HttpClient::Create(http));
  ORCA_ASSIGN_OR_RETURN(PullStaging staging, PullStaging::Open(o.dir, uri.text, want));
  std::string name = uri.url.substr(0, uri.url.find_first_of("?#"));
  name = name.substr(name.rfind('/') + 1);
  std::string archive = JoinPath(staging.download_dir(), "archive");
  PullProgress progress(o.log, -1, 1);
  DownloadSpec spec{.url = uri.url, .dest = archive, .name = name, .size = -1, .sha256 = want};
  ORCA_RETURN_IF_ERROR(DownloadFile(*client, spec, o.retry, &progress));
  ORCA_ASSIGN_OR_RETURN(std::string digest, Sha256OfFile(archive));
  // Unpack afresh each time: a half-unpacked tree from an interrupted run is not trusted.
  std::error_code ec;
  fs::remove_all(staging.files_dir(), ec);
  fs::create_directories(staging.files_dir(), ec);
  if (ec) return absl::InternalError(absl::StrCat("cannot create ", staging.files_dir()));
  if (absl::Status s = UnpackTarArchive(archive, staging.files_dir()); !s.ok()) {
    // A refused or corrupt archive is a verification failure, like a wrong digest.
    if (absl::IsInternal(s)) return s;
    return absl::DataLossError(s.message());
  }
  ORCA_RETURN_IF_ERROR(HoistSingleFolder(staging));
  PullResult result;
  result.commit = digest;
  result.bytes = static_cast<int64_t>(fs::file_size(archive, ec));
  for (auto it = fs::recursive_directory_iterator(staging.files_dir(), ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_regular_file(ec)) ++result.files;
  }
  ORCA_RETURN_IF_ERROR(Check(o, staging.files_dir()));
  ORCA_RETURN_IF_ERROR(staging.Install(PullMarker{uri.text, digest}));
  return result;
}

}  // namespace

absl::StatusOr<PullResult> PullModel(const PullOptions& options) {
  PullOptions o = options;
  o.dir = TrimTrailingSlashes(o.dir);
  while (absl::EndsWith(o.endpoint, "/")) o.endpoint.pop_back();
  if (o.dir.empty()) return absl::InvalidArgumentError("the destination DIR is empty");
  ORCA_ASSIGN_OR_RETURN(ModelUri uri, ParseModelUri(o.uri));
  if (uri.kind == ModelUri::Kind::kHub && !absl::StartsWith(o.endpoint, "https://") &&
      !absl::StartsWith(o.endpoint, "http://")) {
    return absl::InvalidArgumentError(
        absl::StrCat("HF_ENDPOINT '", o.endpoint, "' must start with https:// or http://"));
  }
  auto done = [&]() -> absl::StatusOr<std::optional<PullResult>> {
    ORCA_ASSIGN_OR_RETURN(std::optional<PullMarker> marker, ReadPullMarker(o.dir));
    if (!marker.has_value() || marker->uri != uri.text) return std::optional<PullResult>();
    PullResult r;
    r.already_present = true;
    r.commit = marker->commit;
    return std::optional<PullResult>(r);
  };
  ORCA_ASSIGN_OR_RETURN(std::optional<PullResult> present, done());
  if (present.has_value()) return *present;
  ORCA_ASSIGN_OR_RETURN(PullLock lock, PullLock::Acquire(o.dir));
  ORCA_ASSIGN_OR_RETURN(present, done());  // another process may have finished meanwhile
  if (present.has_value()) return *present;
  std::error_code ec;
  if (fs::exists(o.dir, ec) && !fs::is_empty(o.dir, ec) &&
      !FileExists(JoinPath(o.dir, kPullMarkerName))) {
    return absl::FailedPreconditionError(
        absl::StrCat(o.dir, " exists and holds files no pull wrote (no ", kPullMarkerName,
                     "); remove it or choose another DIR"));
  }
  return uri.kind == ModelUri::Kind::kHub ? PullFromHub(o, uri) : PullArchive(o, uri);
}

}  // namespace orca
