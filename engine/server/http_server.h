// HttpServer: the OpenAI-compatible HTTP API of one served model (DESIGN.md section 6)
// on cpp-httplib. Handlers are thin: validate, convert, submit to the Engine, stream
// back. Every malformed request is answered at once with an OpenAI error object and a
// 4xx status; it never reaches the engine. A streaming client that goes away aborts
// its request at the next token.
//
// Endpoints: POST /v1/completions, /v1/chat/completions, /tokenize, /detokenize;
// GET /v1/models, /health, /ready, /metrics, /version.
// Thread-safe; Start() returns once the socket is bound.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/core/engine.h"
#include "engine/server/generation_service.h"

namespace httplib {
class Server;
}

namespace orca {

struct HttpServerOptions {
  std::string host = "0.0.0.0";
  int port = 8000;  // 0 = pick a free port
  std::string served_model_name;
  std::string api_key;              // empty: no authentication
  size_t max_body_bytes = 8 << 20;  // larger bodies get 413
  int num_threads = 512;            // concurrent connections (each stream holds one)
  // Renders a chat-template context ({"messages", "add_generation_prompt", "bos_token",
  // "eos_token", ...}) to the prompt text; errors become 400s. Objects keep the key order
  // of the request body, as transformers' Python dicts do.
  std::function<absl::StatusOr<std::string>(const nlohmann::ordered_json&)> render_chat;
  // Returns the Prometheus exposition for /metrics ("" when metrics are off).
  std::function<std::string()> metrics_text;
  // Returns whether the serving group is ready (DESIGN section 4); default: always.
  std::function<bool()> ready;
};

class HttpServer {
 public:
  // `engine` must outlive the server.
  static absl::StatusOr<std::unique_ptr<HttpServer>> Create(Engine* engine,
                                                            HttpServerOptions options);
  ~HttpServer();

  // Binds and starts serving on a background thread.
  absl::Status Start();
  // Stops accepting and waits for the listener to finish.
  void Stop();
  int port() const { return port_; }

 private:
  HttpServer() = default;
  void Routes();

  Engine* engine_ = nullptr;
  HttpServerOptions options_;
  std::unique_ptr<GenerationService> service_;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  int port_ = 0;
};

}  // namespace orca
