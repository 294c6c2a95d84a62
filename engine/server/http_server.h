// HttpServer: the OpenAI-compatible HTTP API of one served model (DESIGN.md section 6)
// on cpp-httplib. Handlers are thin: validate, convert, submit to the Engine, stream
// back. Every malformed request is answered at once with an OpenAI error object and a
// 4xx status; it never reaches the engine. A streaming client that goes away aborts
// its request at the next token.
//
// Endpoints: POST /v1/completions, /v1/chat/completions, /tokenize, /detokenize;
// GET /v1/models, /health, /ready, /metrics, /version.
//
// Connections: slow and idle clients hold no thread; a request header has
// header_timeout to arrive, a keep-alive connection idle_timeout between requests; over
// max_connections open connections, a new one is answered 503 (internal/http_listener.h).
// A non-streamed request whose client closes its connection is aborted within ~100 ms
// (its KV blocks freed), as a stream is at its next token.
//
// Limits, whatever the transfer encoding: a request body over max_body_bytes is
// answered 413 as soon as it passes the limit (its connection is then closed, the rest
// is never read); JSON nested deeper than kMaxJsonDepth is a 400. With an api_key, every
// endpoint but the probes (/health, /ready, /metrics, /version) asks the Authenticator
// (engine/server/authenticator.h) and answers 401 without the key.
//
// Shutdown (the drain on SIGTERM, docs/serving.md): BeginShutdown() answers /ready and
// every new request 503 (retriable, Retry-After) while the listener stays open and the
// admitted requests go on; open_requests() tells when they are done. Then the engine is
// stopped (which fails what is left, retriably, so the handlers return); then Stop()
// closes the listener and joins the connection threads.
// Thread-safe; Start() returns once the socket is bound.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/core/engine.h"
#include "engine/server/authenticator.h"
#include "engine/server/client_limiter.h"
#include "engine/server/generation_service.h"
#include "engine/server/tls_credentials.h"

namespace orca {

class HttpListener;

inline constexpr int kDefaultMaxConnections = 4096;

struct HttpServerOptions {
  std::string host = "0.0.0.0";
  int port = 8000;  // 0 = pick a free port
  std::string served_model_name;
  std::string api_key;                // empty: no authentication
  std::optional<TlsCredentials> tls;  // HTTPS with these (LoadTlsCredentials); none: HTTP
  // Open requests per client (shared with the gRPC server); null: no limit.
  std::shared_ptr<ClientLimiter> client_limiter;
  size_t max_body_bytes = 8 << 20;  // larger bodies get 413 (chunked ones too)
  int num_threads = 512;  // requests served at once (a stream holds one; idle clients none)
  // Open connections at most (lowered to what RLIMIT_NOFILE allows); one more is
  // answered 503 with Retry-After and closed.
  int max_connections = kDefaultMaxConnections;
  // A request header must be complete within this of its first byte, else the
  // connection is closed (slow clients); keep-alive connections idle longer are closed.
  std::chrono::milliseconds header_timeout{10000};
  // Longer than the idle timeout of the proxies in front (ingress-nginx's upstream
  // keep-alive and AWS ALB: 60 s), so a proxy never sends a request into a connection
  // the server is closing (a 502 for its client); idle connections cost a descriptor.
  std::chrono::milliseconds idle_timeout{75000};
  // Renders a chat-template context ({"messages", "add_generation_prompt", "bos_token",
  // "eos_token", ...}) to the prompt text; errors become 400s. Objects keep the key order
  // of the request body, as transformers' Python dicts do.
  std::function<absl::StatusOr<std::string>(const nlohmann::ordered_json&)> render_chat;
  // How the model writes tool calls (GenerationService::Options::tool_call_format).
  ToolCallFormat tool_call_format = ToolCallFormat::kNone;
  // Returns the Prometheus exposition for /metrics ("" when metrics are off).
  std::function<std::string()> metrics_text;
  // Returns whether the serving group is ready (DESIGN section 4); default: always.
  std::function<bool()> ready;
  // Returns true once the server drains (e.g. a flag the SIGTERM handler sets): from then
  // on the server answers as after BeginShutdown(), at once. Default: never.
  std::function<bool()> draining;
};

class HttpServer {
 public:
  // `engine` must outlive the server.
  static absl::StatusOr<std::unique_ptr<HttpServer>> Create(Engine* engine,
                                                            HttpServerOptions options);
  ~HttpServer();

  // Binds and starts serving on a background thread.
  absl::Status Start();
  // Stops admitting requests: from now on a request answers 503 (retriable,
  // Retry-After, an OpenAI error object) and /ready 503; connections are still accepted.
  // Requests already admitted go on until they finish or the engine fails them. Does not
  // wait.
  void BeginShutdown();
  // Returns how many admitted requests have not been answered to the end yet.
  int open_requests() const;
  // Stops accepting and waits for the listener and every connection thread to finish
  // (a request being generated finishes first: stop the engine before, see above).
  void Stop();
  int port() const { return port_; }
  // Returns the connection cap in force (after Start(): as lowered to RLIMIT_NOFILE).
  int max_connections() const;

 private:
  HttpServer() = default;
  void Routes();

  Engine* engine_ = nullptr;
  HttpServerOptions options_;
  Authenticator authenticator_{""};
  bool stopped_ = false;  // Stop() closed the listener
  std::unique_ptr<GenerationService> service_;
  std::unique_ptr<HttpListener> server_;
  std::thread thread_;
  int port_ = 0;
};

}  // namespace orca
