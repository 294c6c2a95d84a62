#include "engine/model/pull/http_client.h"

#include <curl/curl.h>

#include <algorithm>
#include <mutex>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace orca {

namespace {

// One request's state, shared with libcurl's callbacks.
struct Transfer {
  HttpClient::Sink* sink = nullptr;
  size_t max_body = 0;
  long status = 0;
  bool began = false;
  std::map<std::string, std::string> headers;
  std::string body;
  absl::Status error;
};

void GlobalInit() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

// "bytes 100-999/1000" -> 100; -1 when malformed.
int64_t ContentRangeStart(const std::string& v) {
  absl::string_view s = v;
  if (!absl::ConsumePrefix(&s, "bytes ")) return -1;
  int64_t start = -1;
  if (!absl::SimpleAtoi(s.substr(0, s.find('-')), &start)) return -1;
  return start;
}

size_t OnHeader(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  absl::string_view line(data, size * n);
  line = absl::StripTrailingAsciiWhitespace(line);
  if (absl::StartsWith(line, "HTTP/")) {  // a new answer (after a 100 or a redirect)
    t->headers.clear();
    size_t sp = line.find(' ');
    long status = 0;
    if (sp != absl::string_view::npos) {
      int parsed = 0;
      if (absl::SimpleAtoi(line.substr(sp + 1, 3), &parsed)) status = parsed;
    }
    t->status = status;
  } else if (size_t colon = line.find(':'); colon != absl::string_view::npos) {
    t->headers[absl::AsciiStrToLower(line.substr(0, colon))] =
        std::string(absl::StripAsciiWhitespace(line.substr(colon + 1)));
  }
  return size * n;
}

size_t OnBody(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  size_t bytes = size * n;
  if (t->sink != nullptr && t->status >= 200 && t->status < 300) {
    if (!t->began) {
      int64_t start = 0;
      if (t->status == 206) {
        start = ContentRangeStart(t->headers["content-range"]);
        if (start < 0) {
          t->error = absl::UnavailableError("a 206 answer without a valid Content-Range");
          return 0;
        }
      }
      t->began = true;
      t->error = t->sink->Begin(start);
      if (!t->error.ok()) return 0;
    }
    t->error = t->sink->Write(data, bytes);
    return t->error.ok() ? bytes : 0;
  }
  if (t->sink != nullptr) {  // an error page (or a redirect's body): its start is enough
    t->body.append(data, std::min(bytes, t->max_body - std::min(t->max_body, t->body.size())));
    return bytes;
  }
  if (t->body.size() + bytes > t->max_body) {
    t->error = absl::FailedPreconditionError(
        absl::StrCat("the answer is larger than ", t->max_body, " bytes"));
    return 0;
  }
  t->body.append(data, bytes);
  return bytes;
}

}  // namespace

std::string UrlForMessages(const std::string& url) {
  size_t q = url.find_first_of("?#");
  return q == std::string::npos ? url : url.substr(0, q) + "?...";
}

std::string UrlOrigin(const std::string& url) {
  CURLU* h = curl_url();
  if (h == nullptr) return "";
  std::string origin;
  if (curl_url_set(h, CURLUPART_URL, url.c_str(), 0) == CURLUE_OK) {
    char *scheme = nullptr, *host = nullptr, *port = nullptr;
    if (curl_url_get(h, CURLUPART_SCHEME, &scheme, 0) == CURLUE_OK &&
        curl_url_get(h, CURLUPART_HOST, &host, 0) == CURLUE_OK &&
        curl_url_get(h, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) == CURLUE_OK) {
      origin = absl::StrCat(absl::AsciiStrToLower(scheme), "://", absl::AsciiStrToLower(host), ":",
                            port);
    }
    curl_free(scheme);
    curl_free(host);
    curl_free(port);
  }
  curl_url_cleanup(h);
  return origin;
}

HttpClient::HttpClient(const HttpClientOptions& options) : options_(options) {}

HttpClient::~HttpClient() {
  if (curl_ != nullptr) curl_easy_cleanup(static_cast<CURL*>(curl_));
}

absl::StatusOr<std::unique_ptr<HttpClient>> HttpClient::Create(const HttpClientOptions& options) {
  GlobalInit();
  std::unique_ptr<HttpClient> c(new HttpClient(options));
  c->curl_ = curl_easy_init();
  if (c->curl_ == nullptr) return absl::InternalError("curl_easy_init failed");
  if (!options.bearer_token.empty()) {
    c->token_origin_ = UrlOrigin(options.token_origin);
    if (c->token_origin_.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("cannot parse the hub endpoint '", options.token_origin, "'"));
    }
  }
  return c;
}

absl::StatusOr<HttpResponse> HttpClient::Get(const std::string& url, size_t max_body) {
  return Run(url, 0, nullptr, max_body);
}

absl::StatusOr<HttpResponse> HttpClient::Fetch(const std::string& url, int64_t offset, Sink& sink) {
  return Run(url, offset, &sink, 64 << 10);
}

absl::StatusOr<HttpResponse> HttpClient::Run(const std::string& url, int64_t offset, Sink* sink,
                                             size_t max_body) {
  std::string current = url;
  for (int hop = 0; hop <= options_.max_redirects; ++hop) {
    bool send_token = !token_origin_.empty() && UrlOrigin(current) == token_origin_;
    auto r = RunOnce(current, offset, sink, max_body, send_token);
    if (!r.ok()) return r.status();
    if (r->status != 301 && r->status != 302 && r->status != 303 && r->status != 307 &&
        r->status != 308) {
      return r;
    }
    char* next = nullptr;
    curl_easy_getinfo(static_cast<CURL*>(curl_), CURLINFO_REDIRECT_URL, &next);
    if (next == nullptr) {
      return absl::UnavailableError(absl::StrCat("GET ", UrlForMessages(current), ": HTTP ",
                                                 r->status, " without a Location"));
    }
    std::string target = next;
    if (!absl::StartsWith(target, "https://") && !absl::StartsWith(target, "http://")) {
      return absl::UnavailableError(absl::StrCat("GET ", UrlForMessages(current),
                                                 ": redirected to a non-HTTP URL '",
                                                 UrlForMessages(target), "'"));
    }
    current = target;
  }
  return absl::UnavailableError(absl::StrCat("GET ", UrlForMessages(url), ": more than ",
                                             options_.max_redirects, " redirects"));
}

absl::StatusOr<HttpResponse> HttpClient::RunOnce(const std::string& url, int64_t offset, Sink* sink,
                                                 size_t max_body, bool send_token) {
  CURL* c = static_cast<CURL*>(curl_);
  curl_easy_reset(c);
  Transfer t;
  t.sink = sink;
  t.max_body = max_body;
  curl_slist* headers = nullptr;
  std::string auth;
  if (send_token) {
    auth = absl::StrCat("Authorization: Bearer ", options_.bearer_token);
    headers = curl_slist_append(headers, auth.c_str());
  }
  std::string range = absl::StrCat(offset, "-");
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_USERAGENT, "orca-model-pull/1");
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, options_.connect_timeout_s);
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, options_.stall_timeout_s);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, &OnHeader);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &t);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, &OnBody);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &t);
  if (headers != nullptr) curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
  if (!options_.ca_file.empty()) curl_easy_setopt(c, CURLOPT_CAINFO, options_.ca_file.c_str());
  if (offset > 0) curl_easy_setopt(c, CURLOPT_RANGE, range.c_str());
  CURLcode rc = curl_easy_perform(c);
  curl_slist_free_all(headers);
  if (!t.error.ok()) {
    if (rc == CURLE_WRITE_ERROR) return t.error;
  }
  if (rc == CURLE_PEER_FAILED_VERIFICATION || rc == CURLE_SSL_CACERT_BADFILE ||
      rc == CURLE_SSL_CERTPROBLEM || rc == CURLE_UNSUPPORTED_PROTOCOL) {
    // Not transient: retrying cannot help.
    return absl::FailedPreconditionError(
        absl::StrCat("GET ", UrlForMessages(url), ": ", curl_easy_strerror(rc),
                     rc == CURLE_PEER_FAILED_VERIFICATION
                         ? " (a private CA? set CURL_CA_BUNDLE or SSL_CERT_FILE to its PEM file)"
                         : ""));
  }
  if (rc != CURLE_OK) {
    return absl::UnavailableError(
        absl::StrCat("GET ", UrlForMessages(url), ": ", curl_easy_strerror(rc)));
  }
  long status = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  HttpResponse r;
  r.status = status;
  r.url = url;
  r.headers = std::move(t.headers);
  r.body = std::move(t.body);
  return r;
}

}  // namespace orca
