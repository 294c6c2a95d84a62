// DownloadFile: one file of a pull, resumable and verified. Bytes land in
// `dest` + ".part"; a later call (a restarted init container) resumes that file with an
// HTTP Range request. Transport failures (a dropped connection, a stall, a 5xx or 429)
// are retried with exponential backoff a bounded number of times, each retry resuming
// where the last stopped. When the body is complete its size and SHA-256 (when known)
// are checked and the file renamed to `dest`; a mismatch deletes it. Not thread-safe
// (uses one HttpClient).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "engine/model/pull/http_client.h"
#include "engine/model/pull/progress.h"
#include "engine/model/pull/retry.h"

namespace orca {

struct DownloadSpec {
  std::string url;
  std::string dest;    // the final path; its parent directory must exist
  std::string name;    // for messages, e.g. "model.safetensors"
  int64_t size = -1;   // expected bytes; < 0: unknown
  std::string sha256;  // expected lowercase hex; empty: not checked
};

// Downloads `spec` (see above). Returns OK at once when `dest` already exists with the
// expected size (it was verified before it got that name). Fails with
// PermissionDenied/Unauthenticated on 401/403, NotFound on 404, DataLoss naming the file
// and both values when the size or SHA-256 does not match (the file is deleted), or
// Unavailable naming the file and the last error when the retries are spent.
absl::Status DownloadFile(HttpClient& client, const DownloadSpec& spec, const RetryPolicy& retry,
                          PullProgress* progress);

// Maps an HTTP error status of a GET of `what` to a Status: 401 Unauthenticated and
// 403 PermissionDenied (both naming HF_TOKEN), 404 NotFound, 429/5xx Unavailable,
// others FailedPrecondition. `body` (a server message) is quoted, shortened.
absl::Status HttpError(long status, const std::string& what, const std::string& body);

}  // namespace orca
