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
#include "engine/cli/engine_config.h"
#include "engine/cli/engine_flags.h"
#include "engine/cli/flags.h"
#include "engine/cli/worker_supervisor.h"
#include "engine/common/file_util.h"
#include "engine/common/log.h"
#include "engine/common/status_macros.h"
#include "engine/group/group_executor.h"
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

// `orca serve` runs the engine in-process, or with --tensor-parallel/--pipeline-parallel
// a local group whose workers it spawns; `orca scheduler` always serves a group whose
// workers dial in (Kubernetes runs them as pods).
enum class Role { kServe, kScheduler };

struct Group {
  std::unique_ptr<Executor> executor;  // null: in-process
  std::unique_ptr<WorkerSupervisor> workers;
};

absl::StatusOr<Group> StartGroup(const Flags& flags, const EngineOptions& eo, Role role) {
  ORCA_ASSIGN_OR_RETURN(int64_t pipeline, flags.GetInt("pipeline-parallel"));
  ORCA_ASSIGN_OR_RETURN(int64_t tensor, flags.GetInt("tensor-parallel"));
  if (pipeline < 1 || pipeline > 64 || tensor < 1 || tensor > 64) {
    return absl::InvalidArgumentError(
        "--pipeline-parallel and --tensor-parallel must be in [1, 64]");
  }
  Group g;
  if (role == Role::kServe && pipeline * tensor == 1) return g;
  ORCA_ASSIGN_OR_RETURN(int64_t control_port, flags.GetInt("control-port"));
  GroupOptions go;
  go.model_dir = eo.model_dir;
  go.pipeline = static_cast<int32_t>(pipeline);
  go.tensor = static_cast<int32_t>(tensor);
  go.device = eo.device;
  go.listen = absl::StrCat(role == Role::kServe ? "127.0.0.1" : "0.0.0.0", ":", control_port);
  go.block_size = eo.block_size;
  go.num_kv_blocks = eo.num_kv_blocks;
  go.kv_cache_bytes = eo.kv_cache_bytes;
  ORCA_ASSIGN_OR_RETURN(auto executor, GroupExecutor::Create(go));
  if (role == Role::kServe) {
    const int32_t world = go.pipeline * go.tensor;
    int32_t threads = eo.num_threads;
    if (threads == 0) {
      threads =
          std::max<int32_t>(1, static_cast<int32_t>(std::thread::hardware_concurrency()) / world);
    }
    std::vector<WorkerSupervisor::Worker> workers;
    for (int32_t stage = 0; stage < go.pipeline; ++stage) {
      for (int32_t tp = 0; tp < go.tensor; ++tp) {
        workers.push_back(WorkerSupervisor::Worker{
            absl::StrCat("worker stage ", stage, " tp ", tp),
            {"worker", "--scheduler", absl::StrCat("127.0.0.1:", executor->port()), "--model",
             eo.model_dir, "--stage", std::to_string(stage), "--tp-rank", std::to_string(tp),
             "--device", eo.device, "--threads", std::to_string(threads), "--host", "127.0.0.1",
             "--metrics-port", "-1"}});
      }
    }
    ORCA_ASSIGN_OR_RETURN(g.workers, WorkerSupervisor::Start(std::move(workers)));
    ORCA_LOG(INFO) << "waiting for the " << world << " local workers to load their shards";
    const absl::Time deadline = absl::Now() + absl::Minutes(10);
    while (!executor->WaitReady(absl::Seconds(1))) {
      if (g_stop) return absl::CancelledError("interrupted while the group was forming");
      if (g.workers->exits() >= 3) {
        return absl::FailedPreconditionError(
            absl::StrCat("local workers exited ", g.workers->exits(),
                         " times before the group formed; their errors are above"));
      }
      if (absl::Now() > deadline) {
        return absl::DeadlineExceededError("the local serving group did not form in 10 minutes");
      }
    }
  }
  g.executor = std::move(executor);
  return g;
}

absl::Status Serve(const Flags& flags, Role role) {
  signal(SIGINT, OnSignal);
  signal(SIGTERM, OnSignal);
  ORCA_ASSIGN_OR_RETURN(EngineOptions eo, EngineOptionsFromFlags(flags));
  ORCA_ASSIGN_OR_RETURN(Group group, StartGroup(flags, eo, role));
  ORCA_ASSIGN_OR_RETURN(auto engine, Engine::Create(eo, std::move(group.executor)));
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
  so.render_chat = [tmpl](const nlohmann::ordered_json& ctx) { return tmpl->Render(ctx); };
  ORCA_ASSIGN_OR_RETURN(int64_t max_body, flags.GetInt("max-body-bytes"));
  so.max_body_bytes = static_cast<size_t>(max_body);
  auto metrics = std::make_shared<ServingMetrics>(so.served_model_name);
  engine->SetObserver(metrics.get());
  Engine* e = engine.get();
  so.metrics_text = [metrics, e] { return metrics->Scrape(*e, e->ready()); };
  so.ready = [e] { return e->ready(); };
  ORCA_ASSIGN_OR_RETURN(auto http, HttpServer::Create(e, so));
  engine->Start();
  ORCA_RETURN_IF_ERROR(http->Start());
  std::unique_ptr<GrpcServer> grpc;
  ORCA_ASSIGN_OR_RETURN(int64_t grpc_port, flags.GetInt("grpc-port"));
  if (grpc_port >= 0) {
    GrpcServerOptions go;
    go.address = absl::StrCat(so.host, ":", grpc_port);
    go.served_model_name = so.served_model_name;
    go.ready = so.ready;
    ORCA_ASSIGN_OR_RETURN(grpc, GrpcServer::Start(e, go));
    std::cout << "orca: gRPC on " << so.host << ":" << grpc->port() << std::endl;
  }
  // A line tests and supervisors can wait for.
  std::cout << "orca: serving " << so.served_model_name << " on http://" << so.host << ":"
            << http->port() << std::endl;
  while (!g_stop) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ORCA_LOG(INFO) << "shutting down";
  if (grpc) grpc->Stop();
  http->Stop();
  engine->Stop();
  return absl::OkStatus();
}

int Run(int argc, char** argv, Role role) {
  const char* name = role == Role::kServe ? "orca serve" : "orca scheduler";
  Flags flags;
  AddEngineFlags(flags);
  flags.Add("host", "0.0.0.0", "address to listen on")
      .Add("port", "8000", "HTTP port (0 = any free port)")
      .Add("grpc-port", "8001", "gRPC port for orca.v1.Inference (0 = any free port, -1 = off)")
      .Add("served-model-name", "", "model name clients use (default: the model directory's name)")
      .Add("api-key-file", "", "file holding the API key clients must send as a Bearer token")
      .Add("chat-template", "", "Jinja chat template file (default: the tokenizer's)")
      .Add("max-body-bytes", "8388608", "largest request body accepted (413 beyond)")
      .Add("tensor-parallel", "1", "tensor-parallel ranks per pipeline stage")
      .Add("pipeline-parallel", "1", "pipeline stages")
      .Add("control-port", role == Role::kServe ? "0" : "8002",
           "control-plane port workers dial (0 = any free port)")
      .Add("config", "", "engine configuration file (orca-controller's engine.yaml) for defaults")
      .Add("help", "", "show this help", true);
  if (role == Role::kScheduler) {
    flags.Add("model-dir", "", "same as --model")
        .Add("http-port", "", "same as --port")
        .Add("metrics-port", "", "where /metrics is served: the HTTP port (others are refused)")
        .Add("gpus-per-pod", "1", "ranks per worker pod (read from --config; informational)");
  }
  auto fail = [name](int code, const absl::Status& s) {
    std::cerr << name << ": " << s.message() << "\n";
    return code;
  };
  if (auto s = flags.Parse(argc, argv, 0); !s.ok()) return fail(2, s);
  if (flags.GetBool("help")) {
    std::cout << "usage: " << name << " --model DIR [flags]\n\n" << flags.Help();
    return 0;
  }
  if (!flags.GetString("config").empty()) {
    if (auto s = ApplyEngineConfig(flags.GetString("config"), flags); !s.ok()) return fail(2, s);
  }
  if (role == Role::kScheduler) {
    if (!flags.GetString("model-dir").empty())
      flags.SetIfUnset("model", flags.GetString("model-dir"));
    if (!flags.GetString("http-port").empty())
      flags.SetIfUnset("port", flags.GetString("http-port"));
    const std::string metrics = flags.GetString("metrics-port");
    if (!metrics.empty() && metrics != flags.GetString("port")) {
      return fail(2, absl::InvalidArgumentError(
                         "--metrics-port must equal the HTTP port: /metrics is served there"));
    }
  }
  if (auto s = Serve(flags, role); !s.ok()) return fail(1, s);
  return 0;
}

}  // namespace

int RunServeCommand(int argc, char** argv) { return Run(argc, argv, Role::kServe); }
int RunSchedulerCommand(int argc, char** argv) { return Run(argc, argv, Role::kScheduler); }

}  // namespace orca
