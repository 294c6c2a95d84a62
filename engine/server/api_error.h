// ApiError: an OpenAI-style error answer, {"error": {"message", "type", "param",
// "code"}}, with its HTTP status. Built from an absl::Status at the HTTP edge, where
// codes map one-to-one to HTTP statuses.
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
// ResourceExhausted 429, Unavailable 503, anything else 500.
ApiError FromStatus(const absl::Status& status, const std::string& param = "");

}  // namespace orca
