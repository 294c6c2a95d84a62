// HubClient: the few Hugging Face Hub HTTP API calls a pull makes, against an endpoint
// (https://huggingface.co, a mirror, or a loopback stand-in in tests):
//   GET {endpoint}/api/models/{repo}/revision/{revision}      -> the commit
//   GET {endpoint}/api/models/{repo}/tree/{commit}?recursive=true (pages: Link rel=next)
//   GET {endpoint}/{repo}/resolve/{commit}/{path}             -> the file (often a 302 to
//                                                                a CDN)
// Errors name the repository and revision: 401/403 name HF_TOKEN, 404 says which of
// repository or revision was not found. Not thread-safe (shares the HttpClient).
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/model/pull/http_client.h"
#include "engine/model/pull/hub_listing.h"

namespace orca {

class HubClient {
 public:
  // `client` must outlive this object. `endpoint` has no trailing slash.
  HubClient(HttpClient* client, std::string endpoint);

  // Returns the commit `revision` of `repo` points to.
  absl::StatusOr<std::string> ResolveCommit(const std::string& repo, const std::string& revision);
  // Returns every file of `repo` at `commit` (all pages).
  absl::StatusOr<std::vector<HubFile>> ListFiles(const std::string& repo,
                                                 const std::string& commit);
  // Returns the download URL of `path` in `repo` at `commit`.
  std::string FileUrl(const std::string& repo, const std::string& commit,
                      const std::string& path) const;

 private:
  HttpClient* client_;
  std::string endpoint_;
};

// Returns the URL of the rel="next" link in a Link header value, or "".
std::string NextPageLink(const std::string& link_header);

}  // namespace orca
