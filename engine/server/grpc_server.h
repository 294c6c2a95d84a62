// GrpcServer: orca.v1.Inference/Generate (proto/orca/v1/inference.proto) with the
// semantics of the HTTP API: a GenerateRequest is validated by the same parser as a
// /v1/completions body, and each engine event becomes one streamed GenerateResponse.
// A cancelled call aborts its request. With an api_key every call must carry the metadata
// `authorization: Bearer <key>` (the HTTP API's Authenticator decides, one check for
// both transports); otherwise it fails UNAUTHENTICATED before anything is parsed.
// Shutdown as HttpServer's: BeginShutdown() (new calls UNAVAILABLE, open ones go on),
// wait for open_requests() to reach 0 (the drain), stop the engine (what is left fails
// UNAVAILABLE, retriable), then Stop().
// Thread-safe; Start() returns once bound.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "engine/core/engine.h"

namespace grpc {
class Server;
}

namespace orca {

struct GrpcServerOptions {
  std::string address = "0.0.0.0:8001";  // port 0 picks a free port
  std::string served_model_name;
  std::function<bool()> ready;
  std::string api_key;  // empty: no authentication
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
