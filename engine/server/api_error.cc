#include "engine/server/api_error.h"

#include <nlohmann/json.hpp>

namespace orca {

std::string ApiError::ToJson() const {
  nlohmann::json e = {{"message", message},
                      {"type", type},
                      {"param", param.empty() ? nlohmann::json(nullptr) : nlohmann::json(param)},
                      {"code", code.empty() ? nlohmann::json(nullptr) : nlohmann::json(code)}};
  return nlohmann::json{{"error", e}}.dump(-1, ' ', false,
                                           nlohmann::json::error_handler_t::replace);
}

ApiError InvalidRequest(const std::string& message, const std::string& param) {
  ApiError e;
  e.http_status = 400;
  e.message = message;
  e.param = param;
  return e;
}

ApiError FromStatus(const absl::Status& status, const std::string& param) {
  ApiError e;
  e.message = std::string(status.message());
  e.param = param;
  switch (status.code()) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kOutOfRange:
    case absl::StatusCode::kFailedPrecondition:
      e.http_status = 400;
      break;
    case absl::StatusCode::kUnauthenticated:
      e.http_status = 401;
      e.type = "authentication_error";
      e.code = "invalid_api_key";
      break;
    case absl::StatusCode::kPermissionDenied:
      e.http_status = 403;
      e.type = "permission_error";
      break;
    case absl::StatusCode::kNotFound:
      e.http_status = 404;
      e.type = "not_found_error";
      e.code = "model_not_found";
      break;
    case absl::StatusCode::kResourceExhausted:
      e.http_status = 429;
      e.type = "rate_limit_error";
      e.code = "rate_limit_exceeded";
      break;
    case absl::StatusCode::kUnavailable:
      e.http_status = 503;
      e.type = "service_unavailable_error";
      break;
    default:
      e.http_status = 500;
      e.type = "internal_error";
      break;
  }
  return e;
}

int GrpcCode(const absl::Status& status) { return static_cast<int>(status.code()); }

}  // namespace orca
