// `orca serve`: one model behind the OpenAI-compatible HTTP API, with metrics.
#include <signal.h>
#include <stdlib.h>
#include <sys/random.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>
#include <thread>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "engine/backend/registry.h"
#include "engine/chat/chat_template.h"
#include "engine/chat/tool_calls.h"
#include "engine/cli/commands.h"
#include "engine/cli/worker_supervisor.h"
#include "engine/common/cpu_limit.h"
#include "engine/common/file_util.h"
#include "engine/common/log.h"
#include "engine/common/status_macros.h"
#include "engine/common/trace.h"
#include "engine/config/config_loader.h"
#include "engine/group/group_executor.h"
#include "engine/server/authenticator.h"
#include "engine/server/client_limiter.h"
#include "engine/server/grpc_server.h"
#include "engine/server/http_server.h"
#include "engine/server/serving_metrics.h"
#include "engine/server/tls_credentials.h"

namespace orca {
namespace {

// The tool-call format of the served model: the setting's, or for auto the one its chat
// template writes (logged: a template with tools in no known format serves content only).
ToolCallFormat ChooseToolCallFormat(ToolCallParserChoice setting,
                                    const std::string& template_source) {
  ToolCallFormat format = ToolCallFormat::kNone;
  switch (setting) {
    case ToolCallParserChoice::kAuto:
      format = DetectToolCallFormat(template_source);
      if (format == ToolCallFormat::kNone && template_source.find("tools") != std::string::npos) {
        ORCA_LOG(WARNING) << "the chat template renders tools in a format orca does not parse: "
                             "tool calls come back as content unless tool_choice forces one "
                             "(choose a format with --tool-call-parser)";
      }
      break;
    case ToolCallParserChoice::kNone:
      break;
    case ToolCallParserChoice::kHermes:
      format = ToolCallFormat::kHermes;
      break;
    case ToolCallParserChoice::kLlama3Json:
      format = ToolCallFormat::kLlama3Json;
      break;
    case ToolCallParserChoice::kMistral:
      format = ToolCallFormat::kMistral;
      break;
  }
  ORCA_LOG(INFO) << "tool calls: parsed as " << ToolCallFormatName(format);
  return format;
}

// Used when neither --chat-template nor the tokenizer provides one: a plain,
// role-tagged transcript.
constexpr char kFallbackChatTemplate[] =
    "{% for message in messages %}{{ message['role'] }}: {{ message['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}assistant:{% endif %}";

std::atomic<bool> g_stop{false};

// The first signal asks for a shutdown; a second one, while it runs, exits at once.
void OnSignal(int) {
  if (g_stop.exchange(true)) _exit(1);
}

// Returns whether SIGTERM or SIGINT has been sent to this process and no thread has
// taken it yet: the kernel keeps a process-directed signal in the shared pending set
// (/proc/self/status, ShdPnd) from kill(2) until a thread runs its handler, which may be
// milliseconds later on a busy machine. Admission checks this too, so a request that
// arrives the instant after the signal was sent is refused like every later one.
bool StopSignalPending() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("ShdPnd:", 0) != 0) continue;
    const uint64_t pending = std::strtoull(line.c_str() + 7, nullptr, 16);
    return (pending & ((uint64_t{1} << (SIGTERM - 1)) | (uint64_t{1} << (SIGINT - 1)))) != 0;
  }
  return false;
}

bool StopRequested() { return g_stop.load() || StopSignalPending(); }

// Set once Shutdown has drained and closed everything: what remains is tearing the
// process down (destructors, freeing the KV cache; seconds for a large GPU cache, and
// slower under sanitizers).
std::atomic<bool> g_shut_down{false};

// Exits the process if it is still running `deadline` from now: the last resort when a
// part does not stop (an executor waiting on a hung worker, a connection that never
// ends; status 1, logged), or when the teardown after a complete shutdown outlasts it
// (status 0: every request was answered). Workers die with this process
// (PR_SET_PDEATHSIG).
void ExitIfStillRunningAfter(absl::Duration deadline) {
  std::thread([deadline] {
    absl::SleepFor(deadline);
    if (g_shut_down.load()) {
      ORCA_LOG(WARNING) << "shut down, but the teardown did not finish within "
                        << absl::FormatDuration(deadline) << "; exiting without it";
      std::_Exit(0);
    }
    ORCA_LOG(ERROR) << "shutdown did not finish within " << absl::FormatDuration(deadline)
                    << "; exiting without waiting any longer";
    std::_Exit(1);
  }).detach();
}

// The share of server.shutdown_timeout_s kept for closing after the drain (stopping the
// engine, failing what is left, closing the transports): a quarter, 0.5 to 3 s.
absl::Duration CloseReserve(absl::Duration timeout) {
  return std::clamp(timeout / 4, absl::Milliseconds(500), absl::Seconds(3));
}

// Drains and shuts serving down (docs/serving.md, "Shutdown and drain"), in the order
// that lets every part finish:
//   1. stop admitting on every transport: /ready answers 503 so the Service stops routing
//      here, new requests get 503 + Retry-After (gRPC UNAVAILABLE), the listeners stay
//      open so clients see that rather than a refused connection;
//   2. let the admitted requests (streamed or not) run to completion, until `timeout`
//      less a closing reserve;
//   3. stop the engine, which fails what is left with Unavailable (HTTP 503, an SSE error
//      event, gRPC UNAVAILABLE: retriable), so that their handlers return;
//   4. close the transports (which wait for their handlers).
// Closing the transports before stopping the engine would wait for every open request
// to generate to its end. The process exits (status 1) if all this outlasts `timeout`,
// server.shutdown_timeout_s, which the pod's grace period must exceed.
void Shutdown(Engine& engine, HttpServer& http, GrpcServer* grpc, absl::Duration timeout) {
  const absl::Time start = absl::Now();
  ExitIfStillRunningAfter(timeout);
  http.BeginShutdown();
  if (grpc != nullptr) grpc->BeginShutdown();
  auto open = [&] { return http.open_requests() + (grpc != nullptr ? grpc->open_requests() : 0); };
  const absl::Time drain_deadline = start + timeout - CloseReserve(timeout);
  ORCA_LOG(INFO) << "draining: /ready answers 503 and new requests are refused (503, "
                    "retriable); "
                 << open() << " open request(s) may finish within "
                 << absl::FormatDuration(drain_deadline - start) << " (server.shutdown_timeout_s "
                 << absl::FormatDuration(timeout) << ")";
  absl::Time next_report = start + absl::Seconds(2);
  while (open() > 0 && absl::Now() < drain_deadline) {
    absl::SleepFor(absl::Milliseconds(20));
    if (absl::Now() >= next_report) {
      next_report += absl::Seconds(2);
      ORCA_LOG(INFO) << "draining: " << open() << " open request(s), "
                     << absl::FormatDuration(
                            absl::Trunc(drain_deadline - absl::Now(), absl::Milliseconds(100)))
                     << " left";
    }
  }
  if (const int left = open(); left == 0) {
    ORCA_LOG(INFO) << "drained: every admitted request finished, in "
                   << absl::FormatDuration(absl::Now() - start);
  } else {
    ORCA_LOG(WARNING) << "drain deadline reached with " << left
                      << " open request(s); failing them (retriable: 503, an SSE error event, "
                         "gRPC UNAVAILABLE)";
  }
  engine.Stop();
  if (grpc != nullptr) grpc->Stop();
  http.Stop();
  ORCA_LOG(INFO) << "shut down in " << absl::FormatDuration(absl::Now() - start);
  g_shut_down.store(true);
}

// The control-plane token `orca serve` makes for its local workers when
// parallelism.control_token_file is not set: 32 random bytes (getrandom(2), the kernel's
// CSPRNG) as 64 hex digits, in a file of $TMPDIR (or /tmp) that only this user can read
// (mkstemp creates it 0600). The workers get its path with --control-token-file (they
// read it at every start: the supervisor restarts them), and it is removed when serving
// ends. A token on the command line or in the environment would be readable by other
// users in /proc.
class GeneratedTokenFile {
 public:
  static absl::StatusOr<std::unique_ptr<GeneratedTokenFile>> Create() {
    unsigned char bytes[32];
    size_t got = 0;
    while (got < sizeof(bytes)) {
      const ssize_t n = getrandom(bytes + got, sizeof(bytes) - got, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        return absl::InternalError(
            absl::StrCat("cannot draw the control-plane token: getrandom: ", std::strerror(errno)));
      }
      got += static_cast<size_t>(n);
    }
    auto f = std::unique_ptr<GeneratedTokenFile>(new GeneratedTokenFile());
    f->token_ = absl::BytesToHexString(
        absl::string_view(reinterpret_cast<const char*>(bytes), sizeof(bytes)));
    const char* tmp = std::getenv("TMPDIR");
    std::string path = absl::StrCat(tmp != nullptr && *tmp ? tmp : "/tmp", "/orca-control-XXXXXX");
    const int fd = mkstemp(path.data());
    if (fd < 0) {
      return absl::InternalError(absl::StrCat("cannot create the control-plane token file ", path,
                                              ": ", std::strerror(errno)));
    }
    f->path_ = path;
    const std::string line = f->token_ + "\n";
    const bool written = write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
    close(fd);
    if (!written) return absl::InternalError(absl::StrCat("cannot write ", path));
    return f;
  }
  ~GeneratedTokenFile() {
    if (!path_.empty()) unlink(path_.c_str());
  }
  const std::string& path() const { return path_; }
  const std::string& token() const { return token_; }

 private:
  GeneratedTokenFile() = default;
  std::string path_;
  std::string token_;
};

// `orca serve` (Role::kServe) runs the engine in-process, or with --tensor-parallel /
// --pipeline-parallel a local group whose workers it spawns; `orca scheduler`
// (Role::kScheduler) always serves a group whose workers dial in (Kubernetes runs them
// as pods).

struct Group {
  std::shared_ptr<TraceWriter> trace;              // server.trace_file; null = off
  std::unique_ptr<GeneratedTokenFile> token_file;  // outlives the workers that read it
  std::unique_ptr<Executor> executor;              // null: in-process
  std::unique_ptr<WorkerSupervisor> workers;
};

absl::StatusOr<Group> StartGroup(const EngineConfig& config, Role role) {
  const ParallelOptions& p = config.parallel;
  Group g;
  if (!config.server.trace_file.empty()) {
    ORCA_ASSIGN_OR_RETURN(g.trace, TraceWriter::Open(config.server.trace_file));
    ORCA_LOG(INFO) << "writing a per-iteration trace to " << config.server.trace_file;
  }
  if (role == Role::kServe && p.pipeline * p.tensor == 1) return g;
  if (role == Role::kServe) {
    // The local workers' devices, before anything starts: a worker without one would
    // only fail and be restarted.
    absl::Status devices = CheckDevicesAvailable(config.device, p.pipeline * p.tensor);
    if (!devices.ok()) {
      return absl::FailedPreconditionError(absl::StrCat("--tensor-parallel ", p.tensor,
                                                        " x --pipeline-parallel ", p.pipeline, ": ",
                                                        devices.message()));
    }
  }
  GroupExecutorOptions go;
  go.model_dir = config.model.dir;
  go.parallel = p;
  go.device = config.device.type;
  go.listen = absl::StrCat(role == Role::kServe ? "127.0.0.1" : "0.0.0.0", ":", p.control_port);
  go.kv_cache = config.kv_cache;
  go.scheduler = config.scheduler;
  go.max_model_len = config.model.max_model_len;
  go.rank_deadline_s = p.rank_deadline_s;
  go.trace = g.trace;
  // The control plane is authenticated: by the configured token, or (orca serve) by one
  // made for the local workers.
  std::string token_file = p.control_token_file;
  if (token_file.empty() && role == Role::kServe) {
    ORCA_ASSIGN_OR_RETURN(g.token_file, GeneratedTokenFile::Create());
    token_file = g.token_file->path();
  }
  if (!token_file.empty()) {
    ORCA_ASSIGN_OR_RETURN(go.control_token,
                          ReadSecretFile(token_file, "parallelism.control_token_file"));
  }
  ORCA_ASSIGN_OR_RETURN(auto executor, GroupExecutor::Create(go));
  if (role == Role::kServe) {
    // Local workers: this binary again, configured from this configuration (ToFlags), each
    // hosting one rank on an equal share of the CPUs (CUDA: device index + its rank).
    const int32_t world = p.pipeline * p.tensor;
    const int32_t cpus = config.device.threads > 0 ? config.device.threads : AvailableCpus();
    std::vector<WorkerSupervisor::Worker> workers;
    for (int32_t stage = 0; stage < p.pipeline; ++stage) {
      for (int32_t tp = 0; tp < p.tensor; ++tp) {
        EngineConfig w = config;
        w.worker.scheduler = absl::StrCat("127.0.0.1:", executor->port());
        w.worker.stage = stage;
        w.worker.tp_rank = tp;
        w.worker.host = "127.0.0.1";
        w.worker.metrics_port = -1;
        w.parallel.control_token_file = token_file;
        w.device.threads = std::max<int32_t>(1, cpus / world);
        w.device.index = config.device.index + stage * p.tensor + tp;
        std::vector<std::string> args = {"worker"};
        for (std::string& f : ToFlags(w, Role::kWorker)) args.push_back(std::move(f));
        workers.push_back(
            WorkerSupervisor::Worker{absl::StrCat("worker stage ", stage, " tp ", tp), args});
      }
    }
    ORCA_ASSIGN_OR_RETURN(g.workers, WorkerSupervisor::Start(std::move(workers)));
    // A worker that stops answering (stopped, hung) never exits by itself: the executor
    // names its rank (the supervisor's worker index: stage-major, as built above), and
    // killing it makes the supervisor restart it. The executor (here, then in Serve's
    // engine) is destroyed before the supervisor, so the pointer outlives its use.
    executor->SetUnresponsiveRankHandler(
        [workers = g.workers.get()](int32_t rank, const std::string& reason) {
          workers->Kill(static_cast<size_t>(rank), reason);
        });
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

absl::Status Serve(const EngineConfig& config, Role role) {
  signal(SIGINT, OnSignal);
  signal(SIGTERM, OnSignal);
  ORCA_ASSIGN_OR_RETURN(Group group, StartGroup(config, role));
  EngineOptions eo = EngineOptions::From(config);
  eo.trace = group.trace;
  ORCA_ASSIGN_OR_RETURN(auto engine, Engine::Create(eo, std::move(group.executor)));
  HttpServerOptions so;
  so.host = config.server.host;
  so.port = config.server.port;
  so.served_model_name = config.model.served_name;
  if (so.served_model_name.empty()) {
    std::string dir = config.model.dir;
    while (!dir.empty() && dir.back() == '/') dir.pop_back();
    so.served_model_name = dir.substr(dir.find_last_of('/') + 1);
  }
  if (!config.server.api_key_file.empty()) {
    ORCA_ASSIGN_OR_RETURN(so.api_key,
                          ReadSecretFile(config.server.api_key_file, "server.api_key_file"));
  }
  ORCA_ASSIGN_OR_RETURN(
      so.tls, LoadTlsCredentials(config.server.tls_cert_file, config.server.tls_key_file));
  if (config.server.max_concurrent_per_client > 0) {
    so.client_limiter = std::make_shared<ClientLimiter>(config.server.max_concurrent_per_client);
  }
  std::string template_source = engine->tokenizer().chat_template();
  if (!config.server.chat_template.empty()) {
    ORCA_ASSIGN_OR_RETURN(template_source, ReadFile(config.server.chat_template));
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
  so.tool_call_format = ChooseToolCallFormat(config.server.tool_call_parser, template_source);
  so.max_body_bytes = static_cast<size_t>(config.server.max_body_bytes);
  const SchedulerOptions& sched = config.scheduler;
  KvCacheInfo cache;
  cache.block_size = engine->kv_block_size();
  cache.num_blocks = engine->num_kv_blocks();
  // Resolved as the executors resolved it (Validate accepted it).
  const DType kv_dtype =
      ResolveKvCacheDType(config.kv_cache.dtype, config.device.type).value_or(DType::kF32);
  cache.dtype = kv_dtype == DType::kF32   ? "float32"
                : kv_dtype == DType::kF16 ? "float16"
                                          : "bfloat16";
  cache.prefix_caching =
      sched.prefix_caching && sched.kv_policy == KvPolicy::kPaged && !IsRequestLevel(sched.policy);
  auto metrics = std::make_shared<ServingMetrics>(so.served_model_name, cache);
  engine->SetObserver(metrics.get());
  Engine* e = engine.get();
  so.metrics_text = [metrics, e] { return metrics->Scrape(*e, e->ready()); };
  so.ready = [e] { return e->ready(); };
  // Admission stops the moment a signal is sent, not at the next poll below.
  so.draining = [] { return StopRequested(); };
  ORCA_ASSIGN_OR_RETURN(auto http, HttpServer::Create(e, so));
  engine->Start();
  ORCA_RETURN_IF_ERROR(http->Start());
  std::unique_ptr<GrpcServer> grpc;
  if (config.server.grpc_port >= 0) {
    GrpcServerOptions go;
    go.address = absl::StrCat(so.host, ":", config.server.grpc_port);
    go.served_model_name = so.served_model_name;
    go.ready = so.ready;
    go.draining = so.draining;
    go.api_key = so.api_key;  // one key, one check (Authenticator) for every transport
    go.tls = so.tls;
    go.client_limiter = so.client_limiter;  // one budget per client across both transports
    ORCA_ASSIGN_OR_RETURN(grpc, GrpcServer::Start(e, go));
    std::cout << "orca: gRPC on " << so.host << ":" << grpc->port() << (so.tls ? " (TLS)" : "")
              << std::endl;
  }
  // A line tests and supervisors can wait for.
  std::cout << "orca: serving " << so.served_model_name << " on "
            << (so.tls ? "https://" : "http://") << so.host << ":" << http->port() << std::endl;
  while (!g_stop) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  Shutdown(*engine, *http, grpc.get(), absl::Seconds(config.server.shutdown_timeout_s));
  return absl::OkStatus();
}

int Run(int argc, char** argv, Role role) {
  const std::string name = absl::StrCat("orca ", RoleName(role));
  Flags flags;
  AddConfigFlags(role, flags);
  auto fail = [&name](int code, const absl::Status& s) {
    std::cerr << name << ": " << s.message() << "\n";
    return code;
  };
  if (auto s = flags.Parse(argc, argv, 0); !s.ok()) return fail(2, s);
  if (flags.GetBool("help")) {
    std::cout << "usage: " << name << " --model DIR [flags]\n\n"
              << flags.Help() << SettingsHelp(role);
    return 0;
  }
  auto config = ResolveConfig(role, flags);
  if (!config.ok()) return fail(2, config.status());
  if (auto s = Serve(*config, role); !s.ok()) return fail(1, s);
  return 0;
}

}  // namespace

int RunServeCommand(int argc, char** argv) { return Run(argc, argv, Role::kServe); }
int RunSchedulerCommand(int argc, char** argv) { return Run(argc, argv, Role::kScheduler); }

}  // namespace orca
