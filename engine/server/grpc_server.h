// GrpcServer: orca.v1.Inference/Generate (proto/orca/v1/inference.proto) with the
// semantics of the HTTP API: a GenerateRequest is validated by the same parser as a
// /v1/completions body, and each engine event becomes one streamed GenerateResponse.
// A cancelled call aborts its request. With an api_key every call must carry the metadata
// `authorization: Bearer <key>` (the HTTP API's Authenticator decides, one check for
// both transports); otherwise it fails UNAUTHENTICATED before anything is parsed. With a
// client_limiter (shared with the HTTP server) a call then takes one of its client's
// places (keyed by the peer address) until it ends; a client with none left fails
// RESOURCE_EXHAUSTED. With `tls` the port speaks TLS only (grpc::SslServerCredentials,
// no client certificates).
// Shutdown as HttpServer's: BeginShutdown() (new calls UNAVAILABLE, open ones go on),
// wait for open_requests() to reach 0 (the drain), stop the engine (what is left fails
// UNAVAILABLE, retriable), then Stop().
// Thread-safe; Start() returns once bound.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "engine/core/engine.h"
#include "engine/server/client_limiter.h"
#include "engine/server/tls_credentials.h"

namespace grpc {
class Server;
}

namespace orca {

struct GrpcServerOptions {
  std::string address = "0.0.0.0:8001";  // port 0 picks a free port
  std::string served_model_name;
  std::function<bool()> ready;
  std::string api_key;                // empty: no authentication
  std::optional<TlsCredentials> tls;  // TLS with these (LoadTlsCredentials); none: plaintext
  // Open calls per client (shared with the HTTP server); null: no limit.
  std::shared_ptr<ClientLimiter> client_limiter;
  // Returns true once the server drains: new calls fail as after BeginShutdown().
  std::function<bool()> draining;
};

class GrpcServer {
 public:
  static absl::StatusOr<std::unique_ptr<GrpcServer>> Start(Engine* engine,
                                                           GrpcServerOptions options);
  ~GrpcServer();
  // Fails every call that starts from now on with UNAVAILABLE (retriable); calls already
  // admitted go on. Does not wait.
  void BeginShutdown();
  // Returns how many admitted calls have not ended yet.
  int open_requests() const;
  // Stops serving: waits up to 2 s for open calls, then cancels them.
  void Stop();
  int port() const { return port_; }

 private:
  class Service;
  GrpcServer() = default;
  std::unique_ptr<Service> service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
};

}  // namespace orca
