#include "controller/client/kube_errors.h"

#include "absl/strings/str_cat.h"

namespace orca::controller {

absl::Status StatusFromHttp(int http_status, const std::string& body, const std::string& what) {
  if (http_status >= 200 && http_status < 300) return absl::OkStatus();
  std::string message;
  std::string reason;
  nlohmann::json parsed = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_object()) {
    if (parsed.contains("message") && parsed["message"].is_string()) {
      message = parsed["message"].get<std::string>();
    }
    if (parsed.contains("reason") && parsed["reason"].is_string()) {
      reason = parsed["reason"].get<std::string>();
    }
  }
  if (message.empty()) message = body.substr(0, 200);
  std::string text = absl::StrCat(what, ": HTTP ", http_status, reason.empty() ? "" : " ", reason,
                                  message.empty() ? "" : ": ", message);
  switch (http_status) {
    case 400:
    case 422:
      return absl::InvalidArgumentError(text);
    case 401:
      return absl::UnauthenticatedError(absl::StrCat(
          text,
          " (the API server rejected the credentials: the token may have expired or the "
          "client certificate is not trusted)"));
    case 403:
      return absl::PermissionDeniedError(text);
    case 404:
      return absl::NotFoundError(text);
    case 409:
      return reason == "AlreadyExists" ? absl::AlreadyExistsError(text) : absl::AbortedError(text);
    case 410:
      return absl::OutOfRangeError(text);
    case 429:
      return absl::ResourceExhaustedError(text);
    case 504:
      return absl::DeadlineExceededError(text);
    default:
      if (http_status >= 500) return absl::UnavailableError(text);
      return absl::UnknownError(text);
  }
}

int HttpStatusFromStatus(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kOk:
      return 200;
    case absl::StatusCode::kInvalidArgument:
      return 422;
    case absl::StatusCode::kUnauthenticated:
      return 401;
    case absl::StatusCode::kPermissionDenied:
      return 403;
    case absl::StatusCode::kNotFound:
      return 404;
    case absl::StatusCode::kAborted:
    case absl::StatusCode::kAlreadyExists:
      return 409;
    case absl::StatusCode::kOutOfRange:
      return 410;
    case absl::StatusCode::kResourceExhausted:
      return 429;
    case absl::StatusCode::kUnavailable:
      return 503;
    case absl::StatusCode::kDeadlineExceeded:
      return 504;
    default:
      return 500;
  }
}

nlohmann::json StatusObject(const absl::Status& status) {
  const char* reason = "InternalError";
  switch (status.code()) {
    case absl::StatusCode::kInvalidArgument:
      reason = "Invalid";
      break;
    case absl::StatusCode::kUnauthenticated:
      reason = "Unauthorized";
      break;
    case absl::StatusCode::kPermissionDenied:
      reason = "Forbidden";
      break;
    case absl::StatusCode::kNotFound:
      reason = "NotFound";
      break;
    case absl::StatusCode::kAborted:
      reason = "Conflict";
      break;
    case absl::StatusCode::kAlreadyExists:
      reason = "AlreadyExists";
      break;
    case absl::StatusCode::kOutOfRange:
      reason = "Expired";
      break;
    case absl::StatusCode::kResourceExhausted:
      reason = "TooManyRequests";
      break;
    case absl::StatusCode::kUnavailable:
      reason = "ServiceUnavailable";
      break;
    case absl::StatusCode::kDeadlineExceeded:
      reason = "Timeout";
      break;
    default:
      break;
  }
  return {{"kind", "Status"},    {"apiVersion", "v1"},
          {"status", "Failure"}, {"message", std::string(status.message())},
          {"reason", reason},    {"code", HttpStatusFromStatus(status)}};
}

bool IsRetryable(const absl::Status& s) {
  return absl::IsUnavailable(s) || absl::IsResourceExhausted(s) || absl::IsDeadlineExceeded(s) ||
         absl::IsInternal(s) || absl::IsUnknown(s);
}

}  // namespace orca::controller
