#include "controller/client/rest_client.h"

#include <httplib.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include "absl/cleanup/cleanup.h"
#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "controller/builders/layout.h"
#include "controller/client/kube_errors.h"
#include "controller/client/watch_event.h"
#include "engine/common/log.h"

namespace orca::controller {
namespace {

constexpr size_t kMaxIdleConnections = 16;

struct X509Deleter {
  void operator()(X509* x) const { X509_free(x); }
};
struct PkeyDeleter {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
struct BioDeleter {
  void operator()(BIO* b) const { BIO_free(b); }
};

absl::Status ErrorFromHttplib(httplib::Error error, const std::string& server,
                              const std::string& what) {
  std::string detail;
  switch (error) {
    case httplib::Error::Connection:
      return absl::UnavailableError(absl::StrCat(what, ": cannot connect to API server ", server,
                                                 " (connection refused or unreachable)"));
    case httplib::Error::ConnectionTimeout:
      return absl::DeadlineExceededError(
          absl::StrCat(what, ": timed out connecting to API server ", server));
    case httplib::Error::SSLConnection:
      return absl::UnavailableError(
          absl::StrCat(what, ": TLS handshake with API server ", server,
                       " failed (is it serving TLS? does it accept the client certificate?)"));
    case httplib::Error::SSLServerVerification:
      return absl::UnavailableError(
          absl::StrCat(what, ": TLS verification of API server ", server,
                       " failed: its certificate is not signed by the configured certificate "
                       "authority or does not match the host"));
    case httplib::Error::SSLLoadingCerts:
      return absl::UnavailableError(
          absl::StrCat(what, ": cannot load the TLS certificates for ", server));
    case httplib::Error::Read:
      return absl::UnavailableError(
          absl::StrCat(what, ": connection to ", server, " broke or timed out while reading"));
    case httplib::Error::Write:
      return absl::UnavailableError(
          absl::StrCat(what, ": connection to ", server, " broke while writing"));
    case httplib::Error::Canceled:
      return absl::CancelledError(absl::StrCat(what, ": cancelled"));
    default:
      return absl::UnavailableError(
          absl::StrCat(what, ": request to ", server, " failed: ", httplib::to_string(error)));
  }
}

Json ParseBody(const std::string& body, const std::string& what, absl::Status* error) {
  Json j = Json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) *error = absl::InternalError(absl::StrCat(what, ": response is not JSON"));
  return j;
}

std::string Describe(const ResourceType& type, const std::string& ns, const std::string& name) {
  return absl::StrCat(type.kind, " ", ns.empty() ? "" : ns + "/", name);
}

std::string ObjectNamespace(const Json& o) {
  return o.contains("metadata") ? o["metadata"].value("namespace", "") : "";
}
std::string ObjectName(const Json& o) {
  return o.contains("metadata") ? o["metadata"].value("name", "") : "";
}

}  // namespace

struct RestClient::TlsMaterial {
  std::unique_ptr<X509, X509Deleter> client_cert;
  std::unique_ptr<EVP_PKEY, PkeyDeleter> client_key;
  std::vector<std::unique_ptr<X509, X509Deleter>> cas;
};

std::string UrlEncode(const std::string& s) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(hex[c >> 4]);
      out.push_back(hex[c & 15]);
    }
  }
  return out;
}

RestClient::RestClient(RestConfig config) : config_(std::move(config)) {}

RestClient::~RestClient() { Shutdown(); }

absl::StatusOr<std::unique_ptr<RestClient>> RestClient::Create(RestConfig config) {
  static const std::regex url(R"(^(https?)://(\[[0-9a-fA-F:.]+\]|[^:/\[\]]+)(:([0-9]+))?/?$)");
  std::smatch m;
  // (The length bound keeps libstdc++'s recursive regex matcher within the stack.)
  if (config.server.size() > 2048 || !std::regex_match(config.server, m, url)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "API server URL \"", config.server.substr(0, 256), "\" is not scheme://host[:port]"));
  }
  std::unique_ptr<RestClient> c(new RestClient(config));
  c->tls_ = m[1] == "https";
  c->host_ = m[2];
  if (c->host_.front() == '[') c->host_ = c->host_.substr(1, c->host_.size() - 2);
  c->port_ = c->tls_ ? 443 : 80;
  // Not std::stoi, which throws beyond int (tests/fuzz/kubeconfig_fuzzer).
  if (m[4].matched &&
      (!absl::SimpleAtoi(m[4].str(), &c->port_) || c->port_ < 1 || c->port_ > 65535)) {
    return absl::InvalidArgumentError(absl::StrCat("API server URL \"", config.server, "\": port ",
                                                   m[4].str(), " is not in [1, 65535]"));
  }
  c->token_ = config.bearer_token;
  c->tls_material_ = std::make_unique<TlsMaterial>();
  if (c->tls_) {
    if (!config.ca_pem.empty()) {
      std::unique_ptr<BIO, BioDeleter> bio(
          BIO_new_mem_buf(config.ca_pem.data(), static_cast<int>(config.ca_pem.size())));
      while (X509* x = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) {
        c->tls_material_->cas.emplace_back(x);
      }
      if (c->tls_material_->cas.empty()) {
        return absl::InvalidArgumentError("certificate authority data holds no PEM certificate");
      }
    }
    if (!config.client_cert_pem.empty()) {
      std::unique_ptr<BIO, BioDeleter> cert_bio(BIO_new_mem_buf(
          config.client_cert_pem.data(), static_cast<int>(config.client_cert_pem.size())));
      c->tls_material_->client_cert.reset(
          PEM_read_bio_X509(cert_bio.get(), nullptr, nullptr, nullptr));
      std::unique_ptr<BIO, BioDeleter> key_bio(BIO_new_mem_buf(
          config.client_key_pem.data(), static_cast<int>(config.client_key_pem.size())));
      c->tls_material_->client_key.reset(
          PEM_read_bio_PrivateKey(key_bio.get(), nullptr, nullptr, nullptr));
      if (!c->tls_material_->client_cert || !c->tls_material_->client_key) {
        return absl::InvalidArgumentError("client certificate or key is not valid PEM");
      }
    }
  }
  return c;
}

absl::StatusOr<std::unique_ptr<httplib::ClientImpl>> RestClient::NewConnection(
    absl::Duration read_timeout) {
  std::unique_ptr<httplib::ClientImpl> client;
  if (tls_) {
    std::unique_ptr<httplib::SSLClient> ssl;
    if (tls_material_->client_cert) {
      ssl = std::make_unique<httplib::SSLClient>(host_, port_, tls_material_->client_cert.get(),
                                                 tls_material_->client_key.get());
    } else {
      ssl = std::make_unique<httplib::SSLClient>(host_, port_);
    }
    if (!ssl->is_valid()) {
      return absl::InvalidArgumentError("cannot set up TLS with the configured client certificate");
    }
    if (!tls_material_->cas.empty()) {
      X509_STORE* store = X509_STORE_new();  // owned by the SSL context from here on
      for (const auto& ca : tls_material_->cas) X509_STORE_add_cert(store, ca.get());
      ssl->set_ca_cert_store(store);
    }
    ssl->enable_server_certificate_verification(!config_.insecure_skip_tls_verify);
    client = std::move(ssl);
  } else {
    client = std::make_unique<httplib::ClientImpl>(host_, port_);
  }
  auto secs = [](absl::Duration d) {
    int64_t us = absl::ToInt64Microseconds(d);
    return std::pair<time_t, time_t>(us / 1000000, us % 1000000);
  };
  auto [cs, cus] = secs(config_.timeout);
  auto [rs, rus] = secs(read_timeout);
  client->set_connection_timeout(cs, cus);
  client->set_write_timeout(cs, cus);
  client->set_read_timeout(rs, rus);
  client->set_keep_alive(true);
  // Keep-alive requests must not wait for delayed ACKs (Nagle): ~40 ms each otherwise.
  client->set_tcp_nodelay(true);
  return client;
}

std::unique_ptr<httplib::ClientImpl> RestClient::Acquire() {
  absl::MutexLock lock(&mu_);
  if (idle_.empty()) return nullptr;
  auto c = std::move(idle_.back());
  idle_.pop_back();
  return c;
}

void RestClient::Release(std::unique_ptr<httplib::ClientImpl> client) {
  absl::MutexLock lock(&mu_);
  if (idle_.size() < kMaxIdleConnections && !shutdown_) idle_.push_back(std::move(client));
}

std::vector<std::pair<std::string, std::string>> RestClient::AuthHeaders() {
  std::vector<std::pair<std::string, std::string>> h = {{"Accept", "application/json"},
                                                        {"User-Agent", config_.user_agent}};
  absl::MutexLock lock(&mu_);
  if (!token_.empty()) h.emplace_back("Authorization", absl::StrCat("Bearer ", token_));
  return h;
}

bool RestClient::ReloadToken() {
  if (config_.token_file.empty()) return false;
  std::ifstream in(config_.token_file);
  if (!in) return false;
  std::stringstream buf;
  buf << in.rdbuf();
  std::string token(absl::StripAsciiWhitespace(buf.str()));
  absl::MutexLock lock(&mu_);
  if (token.empty() || token == token_) return false;
  token_ = token;
  return true;
}

absl::StatusOr<std::string> RestClient::SendOnce(const std::string& method, const std::string& path,
                                                 const std::string& body,
                                                 const std::string& content_type,
                                                 const std::string& what) {
  if (shutdown_) return absl::CancelledError(absl::StrCat(what, ": client shut down"));
  std::unique_ptr<httplib::ClientImpl> client = Acquire();
  if (!client) {
    auto fresh = NewConnection(config_.timeout);
    if (!fresh.ok()) return fresh.status();
    client = std::move(*fresh);
  }
  httplib::Headers headers;
  for (auto& [k, v] : AuthHeaders()) headers.emplace(k, v);
  auto send = [&]() -> httplib::Result {
    if (method == "GET") return client->Get(path.c_str(), headers);
    if (method == "POST") return client->Post(path.c_str(), headers, body, content_type.c_str());
    if (method == "PUT") return client->Put(path.c_str(), headers, body, content_type.c_str());
    if (method == "PATCH") return client->Patch(path.c_str(), headers, body, content_type.c_str());
    return client->Delete(path.c_str(), headers, body, content_type.c_str());
  };
  httplib::Result res = send();
  if (!res) return ErrorFromHttplib(res.error(), config_.server, what);
  int status = res->status;
  std::string response = std::move(res->body);
  Release(std::move(client));
  if (status >= 200 && status < 300) return response;
  return StatusFromHttp(status, response, what);
}

absl::StatusOr<std::string> RestClient::Send(const std::string& method, const std::string& path,
                                             const std::string& body,
                                             const std::string& content_type,
                                             const std::string& what) {
  Backoff backoff(config_.retry_backoff);
  bool reloaded = false;
  for (int attempt = 1;; ++attempt) {
    absl::StatusOr<std::string> r = SendOnce(method, path, body, content_type, what);
    if (r.ok()) return r;
    if (IsUnauthorized(r.status()) && !reloaded && ReloadToken()) {
      reloaded = true;
      ORCA_LOG(INFO) << what << ": API server answered 401; re-read the token file and retrying";
      continue;
    }
    if (!IsRetryable(r.status()) || attempt >= config_.max_attempts || shutdown_) {
      return r.status();
    }
    absl::Duration delay = backoff.Next();
    ORCA_LOG(DEBUG) << r.status().message() << "; retry " << attempt << " in " << delay;
    std::this_thread::sleep_for(absl::ToChronoMicroseconds(delay));
  }
}

absl::StatusOr<Json> RestClient::Get(const ResourceType& type, const std::string& ns,
                                     const std::string& name) {
  std::string what = absl::StrCat("get ", Describe(type, ns, name));
  auto body = Send("GET", ResourcePath(type, ns, name), "", "", what);
  if (!body.ok()) return body.status();
  absl::Status error;
  Json j = ParseBody(*body, what, &error);
  if (!error.ok()) return error;
  return j;
}

absl::StatusOr<ObjectList> RestClient::List(const ResourceType& type, const std::string& ns,
                                            const ListOptions& options) {
  std::string path = ResourcePath(type, ns);
  std::string sep = "?";
  if (!options.label_selector.empty()) {
    absl::StrAppend(&path, sep, "labelSelector=", UrlEncode(options.label_selector));
    sep = "&";
  }
  if (!options.resource_version.empty()) {
    absl::StrAppend(&path, sep, "resourceVersion=", UrlEncode(options.resource_version));
  }
  std::string what = absl::StrCat("list ", type.plural, ns.empty() ? "" : " in " + ns);
  auto body = Send("GET", path, "", "", what);
  if (!body.ok()) return body.status();
  absl::Status error;
  Json j = ParseBody(*body, what, &error);
  if (!error.ok()) return error;
  ObjectList list;
  if (j.contains("metadata") && j["metadata"].is_object()) {
    list.resource_version = j["metadata"].value("resourceVersion", "");
  }
  if (j.contains("items") && j["items"].is_array()) {
    for (Json& item : j["items"]) {
      // The API server leaves apiVersion and kind out of list items.
      item["apiVersion"] = type.api_version;
      item["kind"] = type.kind;
      list.items.push_back(std::move(item));
    }
  }
  return list;
}

absl::Status RestClient::Watch(const ResourceType& type, const std::string& ns,
                               const WatchOptions& options,
                               const std::function<bool(const WatchEvent&)>& on_event) {
  if (shutdown_) return absl::CancelledError("watch: client shut down");
  std::string what = absl::StrCat("watch ", type.plural, ns.empty() ? "" : " in " + ns);
  std::string path =
      absl::StrCat(ResourcePath(type, ns), "?watch=true&timeoutSeconds=", options.timeout_seconds);
  if (options.allow_bookmarks) absl::StrAppend(&path, "&allowWatchBookmarks=true");
  if (!options.resource_version.empty()) {
    absl::StrAppend(&path, "&resourceVersion=", UrlEncode(options.resource_version));
  }
  if (!options.label_selector.empty()) {
    absl::StrAppend(&path, "&labelSelector=", UrlEncode(options.label_selector));
  }
  auto conn = NewConnection(absl::Seconds(options.timeout_seconds + 30));
  if (!conn.ok()) return conn.status();
  httplib::ClientImpl* client = conn->get();
  {
    absl::MutexLock lock(&mu_);
    watches_.push_back(client);
  }
  absl::Cleanup unregister = [this, client] {
    absl::MutexLock lock(&mu_);
    watches_.erase(std::remove(watches_.begin(), watches_.end(), client), watches_.end());
  };
  if (shutdown_) return absl::CancelledError("watch: client shut down");

  httplib::Headers headers;
  for (auto& [k, v] : AuthHeaders()) headers.emplace(k, v);
  int http_status = 0;
  std::string buffer;
  std::string error_body;
  absl::Status event_error;
  bool stopped_by_handler = false;
  httplib::Result res = client->Get(
      path.c_str(), headers,
      [&](const httplib::Response& r) {
        http_status = r.status;
        return true;
      },
      [&](const char* data, size_t len) {
        if (http_status != 200) {
          error_body.append(data, len);
          return true;
        }
        buffer.append(data, len);
        size_t pos;
        while ((pos = buffer.find('\n')) != std::string::npos) {
          std::string line = buffer.substr(0, pos);
          buffer.erase(0, pos + 1);
          absl::StatusOr<std::optional<WatchEvent>> we = DecodeWatchEventLine(line, what);
          if (!we.ok()) {
            event_error = we.status();
            return false;
          }
          if (!we->has_value()) continue;
          if (!on_event(**we)) {
            stopped_by_handler = true;
            return false;
          }
        }
        return !shutdown_.load();
      });
  if (!event_error.ok()) return event_error;
  if (stopped_by_handler) return absl::OkStatus();
  if (shutdown_) return absl::CancelledError(absl::StrCat(what, ": client shut down"));
  if (http_status != 0 && http_status != 200) {
    return StatusFromHttp(http_status, error_body.empty() && res ? res->body : error_body, what);
  }
  if (!res) return ErrorFromHttplib(res.error(), config_.server, what);
  return absl::OkStatus();
}

absl::StatusOr<Json> RestClient::Apply(const ResourceType& type, const Json& object, bool force) {
  std::string ns = ObjectNamespace(object);
  std::string name = ObjectName(object);
  std::string what = absl::StrCat("apply ", Describe(type, ns, name));
  std::string path = absl::StrCat(ResourcePath(type, ns, name), "?fieldManager=", kFieldManager,
                                  force ? "&force=true" : "");
  // JSON is YAML: the API server accepts it as an apply patch.
  auto body = Send("PATCH", path, object.dump(), "application/apply-patch+yaml", what);
  if (!body.ok()) return body.status();
  absl::Status error;
  Json j = ParseBody(*body, what, &error);
  if (!error.ok()) return error;
  return j;
}

absl::StatusOr<Json> RestClient::Create(const ResourceType& type, const Json& object) {
  std::string ns = ObjectNamespace(object);
  std::string what = absl::StrCat("create ", Describe(type, ns, ObjectName(object)));
  auto body = Send("POST", ResourcePath(type, ns), object.dump(), "application/json", what);
  if (!body.ok()) return body.status();
  absl::Status error;
  Json j = ParseBody(*body, what, &error);
  if (!error.ok()) return error;
  return j;
}

absl::StatusOr<Json> RestClient::Update(const ResourceType& type, const Json& object) {
  std::string ns = ObjectNamespace(object);
  std::string name = ObjectName(object);
  std::string what = absl::StrCat("update ", Describe(type, ns, name));
  auto body = Send("PUT", ResourcePath(type, ns, name), object.dump(), "application/json", what);
  if (!body.ok()) return body.status();
  absl::Status error;
  Json j = ParseBody(*body, what, &error);
  if (!error.ok()) return error;
  return j;
}

absl::StatusOr<Json> RestClient::UpdateStatus(const ResourceType& type, const Json& object) {
  std::string ns = ObjectNamespace(object);
  std::string name = ObjectName(object);
  std::string what = absl::StrCat("update status of ", Describe(type, ns, name));
  auto body = Send("PUT", ResourcePath(type, ns, name) + "/status", object.dump(),
                   "application/json", what);
  if (!body.ok()) return body.status();
  absl::Status error;
  Json j = ParseBody(*body, what, &error);
  if (!error.ok()) return error;
  return j;
}

absl::Status RestClient::Delete(const ResourceType& type, const std::string& ns,
                                const std::string& name, Propagation propagation) {
  const char* policy = propagation == Propagation::kForeground ? "Foreground"
                       : propagation == Propagation::kOrphan   ? "Orphan"
                                                               : "Background";
  Json options = {{"apiVersion", "v1"}, {"kind", "DeleteOptions"}, {"propagationPolicy", policy}};
  std::string what = absl::StrCat("delete ", Describe(type, ns, name));
  return Send("DELETE", ResourcePath(type, ns, name), options.dump(), "application/json", what)
      .status();
}

void RestClient::Shutdown() {
  shutdown_ = true;
  absl::MutexLock lock(&mu_);
  for (httplib::ClientImpl* c : watches_) c->stop();
  idle_.clear();
}

}  // namespace orca::controller
