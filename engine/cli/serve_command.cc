// `orca serve`: one model behind the OpenAI-compatible HTTP API, with metrics.
#include <signal.h>

#include <atomic>
#include <chrono>
#include <iostream>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "engine/chat/chat_template.h"
#include "engine/cli/commands.h"
#include "engine/cli/engine_flags.h"
#include "engine/cli/flags.h"
#include "engine/common/file_util.h"
#include "engine/common/log.h"
#include "engine/common/status_macros.h"
#include "engine/server/grpc_server.h"
#include "engine/server/http_server.h"
#include "engine/server/serving_metrics.h"

namespace orca {
namespace {

// Used when neither --chat-template nor the tokenizer provides one: a plain,
// role-tagged transcript.
constexpr char kFallbackChatTemplate[] =
    "{% for message in messages %}{{ message['role'] }}: {{ message['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}assistant:{% endif %}";

std::atomic<bool> g_stop{false};

void OnSignal(int) { g_stop = true; }

absl::Status Serve(const Flags& flags) {
  ORCA_ASSIGN_OR_RETURN(EngineOptions eo, EngineOptionsFromFlags(flags));
  ORCA_ASSIGN_OR_RETURN(auto engine, Engine::Create(eo));
  HttpServerOptions so;
  so.host = flags.GetString("host");
  ORCA_ASSIGN_OR_RETURN(int64_t port, flags.GetInt("port"));
  so.port = static_cast<int>(port);
  so.served_model_name = flags.GetString("served-model-name");
  if (so.served_model_name.empty()) {
    std::string dir = eo.model_dir;
    while (!dir.empty() && dir.back() == '/') dir.pop_back();
    so.served_model_name = dir.substr(dir.find_last_of('/') + 1);
  }
  if (!flags.GetString("api-key-file").empty()) {
    ORCA_ASSIGN_OR_RETURN(std::string key, ReadFile(flags.GetString("api-key-file")));
    so.api_key = std::string(absl::StripAsciiWhitespace(key));
    if (so.api_key.empty()) return absl::InvalidArgumentError("--api-key-file is empty");
  }
  std::string template_source = engine->tokenizer().chat_template();
  if (!flags.GetString("chat-template").empty()) {
    ORCA_ASSIGN_OR_RETURN(template_source, ReadFile(flags.GetString("chat-template")));
  }
  if (template_source.empty()) {
    ORCA_LOG(WARNING) << "the model has no chat template; /v1/chat/completions uses a plain "
                         "'role: content' transcript (choose one with --chat-template)";
    template_source = kFallbackChatTemplate;
  }
  auto chat_template = ChatTemplate::Parse(template_source);
  if (!chat_template.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("chat template: ", chat_template.status().message()));
  }
  std::shared_ptr<ChatTemplate> tmpl = std::move(*chat_template);
  so.render_chat = [tmpl](const nlohmann::json& ctx) { return tmpl->Render(ctx); };
  ORCA_ASSIGN_OR_RETURN(int64_t max_body, flags.GetInt("max-body-bytes"));
  so.max_body_bytes = static_cast<size_t>(max_body);
  auto metrics = std::make_shared<ServingMetrics>(so.served_model_name);
  engine->SetObserver(metrics.get());
  Engine* e = engine.get();
  so.metrics_text = [metrics, e] { return metrics->Scrape(*e, true); };
  ORCA_ASSIGN_OR_RETURN(auto http, HttpServer::Create(e, so));
  engine->Start();
  ORCA_RETURN_IF_ERROR(http->Start());
  std::unique_ptr<GrpcServer> grpc;
  ORCA_ASSIGN_OR_RETURN(int64_t grpc_port, flags.GetInt("grpc-port"));
  if (grpc_port >= 0) {
    GrpcServerOptions go;
    go.address = absl::StrCat(so.host, ":", grpc_port);
    go.served_model_name = so.served_model_name;
    ORCA_ASSIGN_OR_RETURN(grpc, GrpcServer::Start(e, go));
    std::cout << "orca: gRPC on " << so.host << ":" << grpc->port() << std::endl;
  }
  // A line tests and supervisors can wait for.
  std::cout << "orca: serving " << so.served_model_name << " on http://" << so.host << ":"
            << http->port() << std::endl;
  signal(SIGINT, OnSignal);
  signal(SIGTERM, OnSignal);
  while (!g_stop) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ORCA_LOG(INFO) << "shutting down";
  if (grpc) grpc->Stop();
  http->Stop();
  engine->Stop();
  return absl::OkStatus();
}

}  // namespace

int RunServeCommand(int argc, char** argv) {
  Flags flags;
  AddEngineFlags(flags);
  flags.Add("host", "0.0.0.0", "address to listen on")
      .Add("port", "8000", "HTTP port (0 = any free port)")
      .Add("grpc-port", "8001", "gRPC port for orca.v1.Inference (0 = any free port, -1 = off)")
      .Add("served-model-name", "", "model name clients use (default: the model directory's name)")
      .Add("api-key-file", "", "file holding the API key clients must send as a Bearer token")
      .Add("chat-template", "", "Jinja chat template file (default: the tokenizer's)")
      .Add("max-body-bytes", "8388608", "largest request body accepted (413 beyond)")
      .Add("help", "", "show this help", true);
  if (auto s = flags.Parse(argc, argv, 0); !s.ok()) {
    std::cerr << "orca serve: " << s.message() << "\n";
    return 2;
  }
  if (flags.GetBool("help")) {
    std::cout << "usage: orca serve --model DIR [flags]\n\n" << flags.Help();
    return 0;
  }
  if (auto s = Serve(flags); !s.ok()) {
    std::cerr << "orca serve: " << s.message() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace orca
