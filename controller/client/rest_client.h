// KubeClient over HTTP(S) with cpp-httplib and OpenSSL: the controller's only way to
// the API server.
//
// Requests carry the bearer token or client certificate of the RestConfig, time out
// after config.timeout, and are retried with jittered backoff (config.max_attempts)
// when they fail in a retryable way (connection/TLS errors, 5xx, 429). A 401 makes
// the client re-read config.token_file once and retry. Watches stream
// newline-delimited events over a dedicated connection.
//
// Thread-safe: any number of threads may call it at once (idle connections are pooled).
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "controller/client/kube_client.h"
#include "controller/client/kube_config.h"

namespace httplib {
class ClientImpl;
}

namespace orca::controller {

class RestClient final : public KubeClient {
 public:
  // Creates a client for `config`. InvalidArgument when the server URL, CA or client
  // certificate cannot be parsed. Makes no request. (It fills in the guarded token
  // before any other thread can see the client, hence no lock and no analysis.)
  static absl::StatusOr<std::unique_ptr<RestClient>> Create(RestConfig config)
      ABSL_NO_THREAD_SAFETY_ANALYSIS;
  ~RestClient() override;

  absl::StatusOr<Json> Get(const ResourceType& type, const std::string& ns,
                           const std::string& name) override;
  absl::StatusOr<ObjectList> List(const ResourceType& type, const std::string& ns,
                                  const ListOptions& options) override;
  absl::Status Watch(const ResourceType& type, const std::string& ns, const WatchOptions& options,
                     const std::function<bool(const WatchEvent&)>& on_event) override;
  absl::StatusOr<Json> Apply(const ResourceType& type, const Json& object, bool force) override;
  absl::StatusOr<Json> Create(const ResourceType& type, const Json& object) override;
  absl::StatusOr<Json> Update(const ResourceType& type, const Json& object) override;
  absl::StatusOr<Json> UpdateStatus(const ResourceType& type, const Json& object) override;
  absl::Status Delete(const ResourceType& type, const std::string& ns, const std::string& name,
                      Propagation propagation) override;

  // Aborts running watches and makes every later call fail with Cancelled.
  void Shutdown();

  const RestConfig& config() const { return config_; }

 private:
  struct TlsMaterial;
  explicit RestClient(RestConfig config);

  // Sends one request, with retries; returns the body of a 2xx answer.
  absl::StatusOr<std::string> Send(const std::string& method, const std::string& path,
                                   const std::string& body, const std::string& content_type,
                                   const std::string& what);
  absl::StatusOr<std::string> SendOnce(const std::string& method, const std::string& path,
                                       const std::string& body, const std::string& content_type,
                                       const std::string& what);
  absl::StatusOr<std::unique_ptr<httplib::ClientImpl>> NewConnection(absl::Duration read_timeout);
  std::unique_ptr<httplib::ClientImpl> Acquire();
  void Release(std::unique_ptr<httplib::ClientImpl> client);
  std::vector<std::pair<std::string, std::string>> AuthHeaders();
  bool ReloadToken();

  const RestConfig config_;
  bool tls_ = false;
  std::string host_;
  int port_ = 0;
  std::unique_ptr<TlsMaterial> tls_material_;
  std::atomic<bool> shutdown_{false};

  absl::Mutex mu_;
  std::string token_ ABSL_GUARDED_BY(mu_);
  std::vector<std::unique_ptr<httplib::ClientImpl>> idle_ ABSL_GUARDED_BY(mu_);
  std::vector<httplib::ClientImpl*> watches_ ABSL_GUARDED_BY(mu_);
};

// Returns `s` percent-encoded for a URL query value.
std::string UrlEncode(const std::string& s);

}  // namespace orca::controller
