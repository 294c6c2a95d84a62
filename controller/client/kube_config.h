// How to reach and authenticate to the API server: from a kubeconfig file or from
// the in-cluster service account. Plain values; loading functions are thread-safe.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "controller/client/backoff.h"

namespace orca::controller {

struct RestConfig {
  std::string server;  // "https://host:port" or "http://host:port"
  std::string ca_pem;  // trusted CAs; empty = system default store
  bool insecure_skip_tls_verify = false;
  std::string client_cert_pem;
  std::string client_key_pem;
  std::string bearer_token;
  std::string token_file;  // re-read when the server answers 401 (bound tokens rotate)
  std::string user_agent = "orca-controller";
  absl::Duration timeout = absl::Seconds(30);  // per request (watches: their own timeout)
  int max_attempts = 4;                        // retries of retryable failures
  BackoffPolicy retry_backoff{absl::Milliseconds(100), absl::Seconds(5), 2.0, 0.2};
};

// Loads the config of `context` (empty: current-context) from the kubeconfig at
// `path`. Supports certificate-authority(-data), client-certificate(-data),
// client-key(-data), token, tokenFile and insecure-skip-tls-verify. Returns
// InvalidArgument naming the file and the problem when it is unusable.
absl::StatusOr<RestConfig> LoadKubeconfig(const std::string& path, const std::string& context = "");

// Loads the in-cluster config from KUBERNETES_SERVICE_HOST/PORT and the service
// account under `sa_dir` (token, ca.crt). FailedPrecondition when not in a cluster.
absl::StatusOr<RestConfig> LoadInClusterConfig(
    const std::string& sa_dir = "/var/run/secrets/kubernetes.io/serviceaccount");

// Picks the config as kubectl does: `kubeconfig` if given, else $KUBECONFIG, else
// in-cluster, else ~/.kube/config.
absl::StatusOr<RestConfig> LoadDefaultConfig(const std::string& kubeconfig);

// Returns the namespace this pod runs in (service account namespace file or
// $POD_NAMESPACE), or `fallback`.
std::string InClusterNamespace(const std::string& fallback);

}  // namespace orca::controller
