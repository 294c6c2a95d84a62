#include "engine/model/pull/hub_client.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "engine/model/pull/file_download.h"
#include "engine/model/pull/model_uri.h"

namespace orca {
namespace {

constexpr int kMaxPages = 1000;

std::string EncodePath(const std::string& path) {
  std::vector<std::string> parts;
  for (absl::string_view p : absl::StrSplit(path, '/')) parts.push_back(EncodePathSegment(p));
  return absl::StrJoin(parts, "/");
}

}  // namespace

std::string NextPageLink(const std::string& link_header) {
  // <https://host/api/...?cursor=...>; rel="next", <...>; rel="prev"
  for (absl::string_view part : absl::StrSplit(link_header, ',')) {
    size_t lt = part.find('<'), gt = part.find('>');
    if (lt == absl::string_view::npos || gt == absl::string_view::npos || gt < lt) continue;
    absl::string_view params = part.substr(gt + 1);
    if (params.find("rel=\"next\"") != absl::string_view::npos ||
        params.find("rel=next") != absl::string_view::npos) {
      return std::string(part.substr(lt + 1, gt - lt - 1));
    }
  }
  return "";
}

HubClient::HubClient(HttpClient* client, std::string endpoint)
    : client_(client), endpoint_(std::move(endpoint)) {}

absl::StatusOr<std::string> HubClient::ResolveCommit(const std::string& repo,
                                                     const std::string& revision) {
  std::string url =
      absl::StrCat(endpoint_, "/api/models/", repo, "/revision/", EncodePathSegment(revision));
  auto r = client_->Get(url, 16 << 20);
  if (!r.ok()) return r.status();
  std::string what = absl::StrCat("hf://", repo, "@", revision);
  if (r->status == 404) {
    return absl::NotFoundError(absl::StrCat(what, ": the hub has no repository '", repo,
                                            "' or no revision '", revision,
                                            "' in it (HTTP 404 from ", url, ")"));
  }
  if (r->status != 200) return HttpError(r->status, absl::StrCat("listing ", what), r->body);
  auto sha = ParseHubRevision(r->body);
  if (!sha.ok())
    return absl::InvalidArgumentError(absl::StrCat(what, ": ", sha.status().message()));
  return sha;
}

absl::StatusOr<std::vector<HubFile>> HubClient::ListFiles(const std::string& repo,
                                                          const std::string& commit) {
  std::string url =
      absl::StrCat(endpoint_, "/api/models/", repo, "/tree/", commit, "?recursive=true");
  std::vector<HubFile> all;
  for (int page = 0; !url.empty(); ++page) {
    if (page == kMaxPages) {
      return absl::FailedPreconditionError(
          absl::StrCat("hf://", repo, ": more than ", kMaxPages, " pages of files"));
    }
    auto r = client_->Get(url, 64 << 20);
    if (!r.ok()) return r.status();
    std::string what = absl::StrCat("listing the files of hf://", repo, "@", commit);
    if (r->status == 404) {
      return absl::NotFoundError(absl::StrCat(what, ": HTTP 404 from ", url));
    }
    if (r->status != 200) return HttpError(r->status, what, r->body);
    auto files = ParseHubTree(r->body);
    if (!files.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": ", files.status().message()));
    }
    all.insert(all.end(), files->begin(), files->end());
    auto link = r->headers.find("link");
    url = link == r->headers.end() ? "" : NextPageLink(link->second);
  }
  return all;
}

std::string HubClient::FileUrl(const std::string& repo, const std::string& commit,
                               const std::string& path) const {
  return absl::StrCat(endpoint_, "/", repo, "/resolve/", commit, "/", EncodePath(path));
}

}  // namespace orca
