// Typed API errors: the mapping between HTTP statuses of the Kubernetes API and
// absl::Status codes, and predicates the controller branches on. Pure functions.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "nlohmann/json.hpp"

namespace orca::controller {

// Returns the Status for an HTTP response of the API server. `body` may hold a
// metav1.Status whose message and reason are used; OK for 2xx.
absl::Status StatusFromHttp(int http_status, const std::string& body, const std::string& what);

// Returns the HTTP status and metav1.Status body for `status` (used by the fake server).
int HttpStatusFromStatus(const absl::Status& status);
nlohmann::json StatusObject(const absl::Status& status);

inline bool IsConflict(const absl::Status& s) { return absl::IsAborted(s); }
inline bool IsGone(const absl::Status& s) { return absl::IsOutOfRange(s); }
inline bool IsForbidden(const absl::Status& s) { return absl::IsPermissionDenied(s); }
inline bool IsUnauthorized(const absl::Status& s) { return absl::IsUnauthenticated(s); }

// Returns true for failures worth retrying unchanged: 5xx, 429, timeouts, connection errors.
bool IsRetryable(const absl::Status& s);

}  // namespace orca::controller
