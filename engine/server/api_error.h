// ApiError: an OpenAI-style error answer, {"error": {"message", "type", "param",
// "code"}}, with its HTTP status. The one place an absl::Status becomes what a client
// sees: an HTTP status and OpenAI error type (FromStatus) or a gRPC code (GrpcCode).
#pragma once

#include <string>

#include "absl/status/status.h"

namespace orca {

struct ApiError {
  int http_status = 400;
  std::string message;
  std::string type = "invalid_request_error";
  std::string param;  // empty -> null
  std::string code;   // empty -> null

  std::string ToJson() const;
};

ApiError InvalidRequest(const std::string& message, const std::string& param = "");
// Maps a Status to an error: InvalidArgument 400, Unauthenticated 401, NotFound 404,
// ResourceExhausted 429 (rate_limit_error), Unavailable 503 (service_unavailable_error:
// retriable, answered with Retry-After), anything else 500 (internal_error).
ApiError FromStatus(const absl::Status& status, const std::string& param = "");

// Returns the gRPC status code of `status` (absl's codes are gRPC's, one to one).
int GrpcCode(const absl::Status& status);

}  // namespace orca
