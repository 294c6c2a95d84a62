// HttpClient: the HTTP(S) GETs of `orca model pull`, on libcurl (TLS with the system's
// CA store, HTTP/1.1 and HTTP/2, Range requests, timeouts on a stalled transfer).
// Redirects are followed here, not by libcurl, so that the bearer token goes only to
// the origin (scheme, host and port) it was given for: the hub redirects large files
// to a CDN on another host, which must never see it. The token is never logged.
// One client serves one thread at a time (not thread-safe); it reuses its connection.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace orca {

struct HttpClientOptions {
  std::string bearer_token;  // sent as "Authorization: Bearer ..." to token_origin only
  std::string token_origin;  // a URL whose scheme://host:port receives the token
  std::string ca_file;       // PEM bundle of trusted CAs; empty: the system's
  long connect_timeout_s = 30;
  // A transfer slower than 1 byte/s for this long is abandoned (and retried by callers).
  long stall_timeout_s = 60;
  int max_redirects = 10;
};

struct HttpResponse {
  long status = 0;
  std::string url;                             // after redirects
  std::map<std::string, std::string> headers;  // the final response's, names lowercase
  std::string body;                            // Get(): the body; Fetch(): only a non-2xx body
};

class HttpClient {
 public:
  // Receives the body of a 2xx answer. `Begin(offset)` is called once before the first
  // byte: the body starts at byte `offset` of the resource (the Range start on a 206,
  // 0 on a 200 whatever was asked). A non-OK status aborts the transfer.
  struct Sink {
    virtual ~Sink() = default;
    virtual absl::Status Begin(int64_t offset) = 0;
    virtual absl::Status Write(const char* data, size_t n) = 0;
  };

  // Creates a client. Fails with Internal when libcurl cannot be initialised.
  static absl::StatusOr<std::unique_ptr<HttpClient>> Create(const HttpClientOptions& options);
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // GETs `url` (following redirects) and returns the final answer whatever its status,
  // its body capped at `max_body` bytes (Failed precondition beyond). Fails with
  // Unavailable on a transport error (DNS, connect, reset, timeout), naming the URL, and
  // FailedPrecondition when the server's certificate is not trusted.
  absl::StatusOr<HttpResponse> Get(const std::string& url, size_t max_body = 64 << 20);

  // GETs `url` from byte `offset` (a Range request when offset > 0) into `sink`. Returns
  // the final answer (its body only when the status is not 2xx). Fails with Unavailable
  // on a transport error, including a connection dropped mid-body (the sink has the
  // bytes received so far), or with the sink's error.
  absl::StatusOr<HttpResponse> Fetch(const std::string& url, int64_t offset, Sink& sink);

 private:
  explicit HttpClient(const HttpClientOptions& options);
  absl::StatusOr<HttpResponse> Run(const std::string& url, int64_t offset, Sink* sink,
                                   size_t max_body);
  absl::StatusOr<HttpResponse> RunOnce(const std::string& url, int64_t offset, Sink* sink,
                                       size_t max_body, bool send_token);

  HttpClientOptions options_;
  std::string token_origin_;  // normalised scheme://host:port, "" when no token
  void* curl_ = nullptr;      // CURL*
};

// Returns `url` without its query and fragment, for messages: a CDN's pre-signed
// query is a short-lived credential.
std::string UrlForMessages(const std::string& url);

// Returns "scheme://host:port" of `url` (the default port filled in), or "" when it
// cannot be parsed.
std::string UrlOrigin(const std::string& url);

}  // namespace orca
