#include "engine/config/settings.h"

#include <charconv>
#include <cmath>
#include <optional>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace orca {
namespace {

// Spellings of the enums; the first of each value is canonical.
template <typename E>
struct Spelling {
  const char* name;
  E value;
};
constexpr Spelling<Device> kDevices[] = {
    {"cpu", Device::kCpu}, {"cuda", Device::kCuda}, {"gpu", Device::kCuda}};
constexpr Spelling<WeightDType> kDTypes[] = {
    {"auto", WeightDType::kAuto},       {"float32", WeightDType::kFloat32},
    {"float16", WeightDType::kFloat16}, {"bfloat16", WeightDType::kBFloat16},
    {"fp32", WeightDType::kFloat32},    {"fp16", WeightDType::kFloat16},
    {"bf16", WeightDType::kBFloat16}};
constexpr Spelling<KvPolicy> kKvPolicies[] = {{"paged", KvPolicy::kPaged},
                                              {"reserve", KvPolicy::kReserve}};
constexpr Spelling<SchedulingPolicy> kPolicies[] = {
    {"iteration", SchedulingPolicy::kIteration},
    {"request", SchedulingPolicy::kRequest},
    {"request-compact", SchedulingPolicy::kRequestCompact}};
constexpr Spelling<ToolCallParserChoice> kToolCallParsers[] = {
    {"auto", ToolCallParserChoice::kAuto},
    {"none", ToolCallParserChoice::kNone},
    {"hermes", ToolCallParserChoice::kHermes},
    {"llama3_json", ToolCallParserChoice::kLlama3Json},
    {"mistral", ToolCallParserChoice::kMistral}};

template <typename E, size_t N>
absl::string_view NameOf(const Spelling<E> (&table)[N], E v) {
  for (const auto& s : table) {
    if (s.value == v) return s.name;
  }
  return "?";
}
template <typename E, size_t N>
std::optional<E> ValueOf(const Spelling<E> (&table)[N], absl::string_view name) {
  for (const auto& s : table) {
    if (name == s.name) return s.value;
  }
  return std::nullopt;
}
template <typename E, size_t N>
std::vector<std::string> CanonicalNames(const Spelling<E> (&table)[N]) {
  std::vector<std::string> out;
  for (const auto& s : table) {
    if (NameOf(table, s.value) == s.name) out.emplace_back(s.name);
  }
  return out;
}

std::string DoubleText(double v) {
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof(buf), v);
  return std::string(buf, r.ptr);
}

Setting Row(std::string key, std::string flag, SettingType type, std::string help, RoleSet roles,
            double lo = 0, double hi = 0) {
  Setting s;
  s.key = std::move(key);
  s.flag = std::move(flag);
  s.type = type;
  s.help = std::move(help);
  s.roles = roles;
  s.min = lo;
  s.max = hi;
  return s;
}

// Builders of the table's rows from a section and a member of EngineConfig.
template <typename S, typename T>
Setting Int(std::string key, std::string flag, S EngineConfig::*section, T S::*field, int64_t lo,
            int64_t hi, RoleSet roles, std::string help) {
  Setting s = Row(std::move(key), std::move(flag), SettingType::kInt, std::move(help), roles,
                  static_cast<double>(lo), static_cast<double>(hi));
  s.get = [=](const EngineConfig& c) { return std::to_string((c.*section).*field); };
  s.set = [=, desc = s.Describe()](EngineConfig& c, absl::string_view text) -> absl::Status {
    int64_t v = 0;
    if (!absl::SimpleAtoi(text, &v) || v < lo || v > hi) {
      return absl::InvalidArgumentError(absl::StrCat("must be ", desc, ", got '", text, "'"));
    }
    (c.*section).*field = static_cast<T>(v);
    return absl::OkStatus();
  };
  return s;
}

template <typename S>
Setting Double(std::string key, std::string flag, S EngineConfig::*section, double S::*field,
               double lo, double hi, RoleSet roles, std::string help) {
  Setting s =
      Row(std::move(key), std::move(flag), SettingType::kDouble, std::move(help), roles, lo, hi);
  s.get = [=](const EngineConfig& c) { return DoubleText((c.*section).*field); };
  s.set = [=, desc = s.Describe()](EngineConfig& c, absl::string_view text) -> absl::Status {
    double v = 0;
    if (!absl::SimpleAtod(text, &v) || !std::isfinite(v) || v < lo || v > hi) {
      return absl::InvalidArgumentError(absl::StrCat("must be ", desc, ", got '", text, "'"));
    }
    (c.*section).*field = v;
    return absl::OkStatus();
  };
  return s;
}

template <typename S>
Setting Bool(std::string key, std::string flag, S EngineConfig::*section, bool S::*field,
             RoleSet roles, std::string help) {
  Setting s = Row(std::move(key), std::move(flag), SettingType::kBool, std::move(help), roles);
  s.get = [=](const EngineConfig& c) {
    return std::string((c.*section).*field ? "true" : "false");
  };
  s.set = [=](EngineConfig& c, absl::string_view text) -> absl::Status {
    if (text != "true" && text != "false") {
      return absl::InvalidArgumentError(absl::StrCat("must be true or false, got '", text, "'"));
    }
    (c.*section).*field = text == "true";
    return absl::OkStatus();
  };
  return s;
}

template <typename S>
Setting String(std::string key, std::string flag, S EngineConfig::*section, std::string S::*field,
               RoleSet roles, std::string help) {
  Setting s = Row(std::move(key), std::move(flag), SettingType::kString, std::move(help), roles);
  s.get = [=](const EngineConfig& c) { return (c.*section).*field; };
  s.set = [=](EngineConfig& c, absl::string_view text) -> absl::Status {
    (c.*section).*field = std::string(text);
    return absl::OkStatus();
  };
  return s;
}

template <typename S, typename E, size_t N>
Setting Enum(std::string key, std::string flag, S EngineConfig::*section, E S::*field,
             const Spelling<E> (&table)[N], RoleSet roles, std::string help) {
  Setting s = Row(std::move(key), std::move(flag), SettingType::kEnum, std::move(help), roles);
  s.choices = CanonicalNames(table);
  s.get = [=, &table](const EngineConfig& c) {
    return std::string(NameOf(table, (c.*section).*field));
  };
  s.set = [=, &table, desc = s.Describe()](EngineConfig& c,
                                           absl::string_view text) -> absl::Status {
    std::optional<E> v = ValueOf(table, text);
    if (!v) return absl::InvalidArgumentError(absl::StrCat("must be ", desc, ", got '", text, "'"));
    (c.*section).*field = *v;
    return absl::OkStatus();
  };
  return s;
}

constexpr RoleSet kServe = static_cast<RoleSet>(Role::kServe);
constexpr RoleSet kScheduler = static_cast<RoleSet>(Role::kScheduler);
constexpr RoleSet kWorker = static_cast<RoleSet>(Role::kWorker);
constexpr RoleSet kGenerate = static_cast<RoleSet>(Role::kGenerate);
constexpr RoleSet kServing = kServe | kScheduler;  // the roles with a scheduler and the API
constexpr RoleSet kCompute = kServe | kWorker | kGenerate;  // the roles that load weights
constexpr int64_t kMaxPort = 65535;

std::vector<Setting> BuildSettings() {
  using C = EngineConfig;
  std::vector<Setting> s;
  // model
  s.push_back(String("model.dir", "model", &C::model, &ModelOptions::dir,
                     kServing | kWorker | kGenerate,
                     "Hugging Face checkpoint directory (required; orca generate: the embedded "
                     "stories260K)"));
  s.push_back(String("model.name", "served-model-name", &C::model, &ModelOptions::served_name,
                     kServing, "model name clients use (default: the model directory's name)"));
  s.push_back(Enum("model.dtype", "dtype", &C::model, &ModelOptions::dtype, kDTypes, kCompute,
                   "weight dtype after loading: auto keeps the checkpoint's (both backends "
                   "store float32, float16 and bfloat16; the CPU widens 16-bit weights as it "
                   "reads them, so the arithmetic is float32's and a decode streams half the "
                   "bytes)"));
  s.push_back(Int("model.max_model_len", "max-model-len", &C::model, &ModelOptions::max_model_len,
                  0, 1 << 24, kServing | kGenerate, "context length (0 = the model's)"));
  // device
  s.push_back(Enum("device.type", "device", &C::device, &DeviceOptions::type, kDevices,
                   kServing | kWorker | kGenerate, "where the model runs (gpu means cuda)"));
  s.push_back(Int("device.index", "device-index", &C::device, &DeviceOptions::index, 0, 63,
                  kServe | kWorker | kGenerate,
                  "CUDA ordinal of this process's first rank (a worker's ranks take the next)"));
  s.push_back(Int("device.threads", "threads", &C::device, &DeviceOptions::threads, 0, 1024,
                  kCompute,
                  "CPU threads of this process (0 = its CPU limit: cgroup quota and "
                  "affinity)"));
  s.push_back(Double("device.memory_fraction", "gpu-memory-fraction", &C::device,
                     &DeviceOptions::memory_fraction, 0.05, 1, kCompute,
                     "CUDA: share of device memory for weights, KV cache and workspaces"));
  s.push_back(Bool("device.sample_on_device", "device-sampling", &C::device,
                   &DeviceOptions::sample_on_device, kCompute,
                   "CUDA: draw tokens on the GPU (every sampling option: truncation, "
                   "penalties, logit bias, guides, bans, up to 20 top logprobs), so only token "
                   "ids and asked logprobs cross to the host; false: every row is drawn on the "
                   "host"));
  s.push_back(Bool("device.cuda_graphs", "cuda-graphs", &C::device, &DeviceOptions::cuda_graphs,
                   kCompute,
                   "CUDA: replay decode-only iterations from CUDA graphs recorded per "
                   "batch-size bucket (1-256 sequences; a bucket's first iteration records "
                   "it), one launch instead of hundreds, in NCCL groups with the "
                   "all-reduces and pipeline sends inside; false: every iteration launches "
                   "its kernels one by one (eager)"));
  s.push_back(Bool("device.sixteen_bit_activations", "sixteen-bit-activations", &C::device,
                   &DeviceOptions::sixteen_bit_activations, kCompute,
                   "CUDA: with 16-bit weights, compute each layer in their type (norm "
                   "outputs, GEMM inputs and outputs, rotary embedding, attention's queries "
                   "and output; float32 accumulation), keeping the residual stream, the block "
                   "outputs added to it (all-reduced in float32) and the logits float32; "
                   "false: float32 activations, rounded to the weights' type before each "
                   "GEMM"));
  // kv_cache
  s.push_back(Int("kv_cache.block_size", "block-size", &C::kv_cache, &KvCacheOptions::block_size, 1,
                  1024, kServing | kGenerate, "KV cache block size in tokens"));
  s.push_back(Int("kv_cache.size_mib", "kv-cache-mib", &C::kv_cache, &KvCacheOptions::size_mib, 0,
                  1 << 20, kServing | kGenerate,
                  "KV cache size per rank in MiB; 0 = auto: on CUDA what gpu-memory-fraction "
                  "of the device leaves after the weights and the peak activations of a "
                  "profiling pass (a group: the smallest of its ranks'), on the CPU 1024 MiB"));
  s.push_back(Int("kv_cache.num_blocks", "num-kv-blocks", &C::kv_cache, &KvCacheOptions::num_blocks,
                  0, 1 << 26, kServing | kGenerate,
                  "KV cache size per rank in blocks (overrides kv-cache-mib; 0 = off)"));
  s.push_back(Enum("kv_cache.dtype", "kv-cache-dtype", &C::kv_cache, &KvCacheOptions::dtype,
                   kDTypes, kServing | kGenerate,
                   "element type of the KV cache: auto is float16 (twice the tokens of float32 "
                   "in the same memory, and half the bytes attention reads; on an H200 "
                   "decode at 256 sequences is 1.1x faster than over float32); fp32, fp16 "
                   "and bf16 are accepted spellings"));
  // scheduler
  s.push_back(Enum("scheduler.policy", "policy", &C::scheduler, &SchedulerOptions::policy,
                   kPolicies, kServing,
                   "iteration (ORCA), request (static batching as Triton + FasterTransformer) "
                   "or request-compact (static batching whose finished members stop computing)"));
  s.push_back(Enum("scheduler.kv_policy", "kv-policy", &C::scheduler, &SchedulerOptions::kv_policy,
                   kKvPolicies, kServing,
                   "KV admission: paged (preempt and recompute) or reserve (ORCA)"));
  s.push_back(Bool("scheduler.prefix_caching", "prefix-caching", &C::scheduler,
                   &SchedulerOptions::prefix_caching, kServing,
                   "share full KV blocks between requests with a common prefix (paged, "
                   "iteration-level only)"));
  s.push_back(Bool("scheduler.chunked_prefill", "chunked-prefill", &C::scheduler,
                   &SchedulerOptions::chunked_prefill, kServing,
                   "split long prompts across iterations so max-batched-tokens bounds each"));
  s.push_back(Int("scheduler.max_batch_size", "max-batch-size", &C::scheduler,
                  &SchedulerOptions::max_batch_size, 1, 4096, kServing, "sequences per iteration"));
  s.push_back(Int("scheduler.max_batched_tokens", "max-batched-tokens", &C::scheduler,
                  &SchedulerOptions::max_batched_tokens, 1, 1 << 20, kServing | kGenerate,
                  "tokens per iteration (orca generate: the prefill chunk)"));
  s.push_back(Double("scheduler.target_itl_ms", "target-itl-ms", &C::scheduler,
                     &SchedulerOptions::target_itl_ms, 0, 60000, kServing,
                     "target inter-token latency in ms (iteration policy, chunked prefill): "
                     "while requests are decoding, an iteration's prefill chunks stop where a "
                     "cost model learned from the measured iterations predicts it would take "
                     "longer, so a long prompt no longer stalls every running stream "
                     "(Sarathi-Serve's stall-free batching); each iteration still prefills at "
                     "least max-batched-tokens / 32 tokens. 0 = off: every iteration may take "
                     "max-batched-tokens"));
  s.push_back(Int("scheduler.max_waiting_requests", "max-waiting-requests", &C::scheduler,
                  &SchedulerOptions::max_waiting_requests, 1, 1 << 24, kServing,
                  "queued requests before answering 429"));
  s.push_back(Double("scheduler.queue_timeout_s", "queue-timeout", &C::scheduler,
                     &SchedulerOptions::queue_timeout_s, 0, 86400, kServing,
                     "seconds a request may wait for admission to a batch before it fails "
                     "with 503 + Retry-After (0 = no limit)"));
  // parallelism
  s.push_back(Int("parallelism.tensor", "tensor-parallel", &C::parallel, &ParallelOptions::tensor,
                  1, 64, kServing | kWorker,
                  "tensor-parallel ranks per pipeline stage (a worker checks gpus-per-pod "
                  "divides it)"));
  s.push_back(Int("parallelism.pipeline", "pipeline-parallel", &C::parallel,
                  &ParallelOptions::pipeline, 1, 64, kServing | kWorker, "pipeline stages"));
  s.push_back(String("parallelism.pipeline_layers", "pipeline-layers", &C::parallel,
                     &ParallelOptions::pipeline_layers, kServing,
                     "layers per pipeline stage, first to last, e.g. 7,5; auto (empty): the "
                     "split that balances the stages' work, the last stage's LM head counted at "
                     "half its parameters (it runs on sampled rows only); the scheduler sends "
                     "the split to every rank"));
  s.push_back(Int("parallelism.gpus_per_pod", "gpus-per-pod", &C::parallel,
                  &ParallelOptions::gpus_per_pod, 1, 64, kWorker,
                  "ranks one worker process hosts: tp ranks pod-index * N .. + N - 1"));
  s.push_back(Int("parallelism.control_port", "control-port", &C::parallel,
                  &ParallelOptions::control_port, 0, kMaxPort, kServing,
                  "control-plane port workers dial (0 = any free port)"));
  s.push_back(
      Double("parallelism.rank_deadline_s", "rank-deadline", &C::parallel,
             &ParallelOptions::rank_deadline_s, 0, 3600, kServing | kWorker,
             "seconds a rank may stay silent (no heartbeat) before the group breaks "
             "and, under orca serve, the worker is restarted; a worker whose plan runs longer "
             "reports itself unhealthy (0 = off)"));
  s.push_back(String("parallelism.control_token_file", "control-token-file", &C::parallel,
                     &ParallelOptions::control_token_file, kServing | kWorker,
                     "file holding the shared token every control-plane call (Join, the "
                     "rendezvous store) must carry; the scheduler refuses calls without it "
                     "(orca serve with local workers generates one when unset)"));
  // server
  s.push_back(String("server.host", "host", &C::server, &ServerOptions::host, kServing,
                     "address the HTTP and gRPC APIs listen on"));
  s.push_back(Int("server.port", "port", &C::server, &ServerOptions::port, 0, kMaxPort, kServing,
                  "HTTP port (0 = any free port)"));
  s.push_back(Int("server.grpc_port", "grpc-port", &C::server, &ServerOptions::grpc_port, -1,
                  kMaxPort, kServing,
                  "gRPC port for orca.v1.Inference (0 = any free port, -1 = off)"));
  s.push_back(String("server.api_key_file", "api-key-file", &C::server,
                     &ServerOptions::api_key_file, kServing,
                     "file holding the API key clients must send as a Bearer token"));
  s.push_back(String("server.tls_cert_file", "tls-cert-file", &C::server,
                     &ServerOptions::tls_cert_file, kServing,
                     "PEM certificate (chain) of the HTTP and gRPC APIs: with tls-key-file they "
                     "serve HTTPS and gRPC over TLS only"));
  s.push_back(String("server.tls_key_file", "tls-key-file", &C::server,
                     &ServerOptions::tls_key_file, kServing,
                     "PEM private key of tls-cert-file (both or neither)"));
  s.push_back(Int("server.max_concurrent_per_client", "max-concurrent-per-client", &C::server,
                  &ServerOptions::max_concurrent_per_client, 0, 1 << 20, kServing,
                  "open requests one client address may have on the HTTP and gRPC APIs "
                  "together; one more is answered 429 / RESOURCE_EXHAUSTED (0 = no limit; "
                  "behind a proxy every client shares its address)"));
  s.push_back(String("server.trace_file", "trace-file", &C::server, &ServerOptions::trace_file,
                     kServing,
                     "write a Chrome trace (chrome://tracing, ui.perfetto.dev) of every "
                     "iteration to this file: the scheduler's schedule, submit, wait and "
                     "update, and each rank's recv, layers, all-reduce, send, lm-head, masks "
                     "and sample, one track per rank (\"\" = off; stops after 2 million events)"));
  s.push_back(String("server.chat_template", "chat-template", &C::server,
                     &ServerOptions::chat_template, kServing,
                     "Jinja chat template file (default: the tokenizer's)"));
  s.push_back(Enum("server.tool_call_parser", "tool-call-parser", &C::server,
                   &ServerOptions::tool_call_parser, kToolCallParsers, kServing,
                   "how chat output with tools is parsed for tool calls: hermes "
                   "(<tool_call>{...}</tool_call>: Hermes, Qwen), llama3_json ({\"name\", "
                   "\"parameters\"}: Llama 3.x), mistral ([TOOL_CALLS]...), none (content "
                   "only), auto (the chat template's format)"));
  s.push_back(Int("server.max_body_bytes", "max-body-bytes", &C::server,
                  &ServerOptions::max_body_bytes, 1024, int64_t{1} << 30, kServing,
                  "largest request body accepted (413 beyond)"));
  s.push_back(Double("server.shutdown_timeout_s", "shutdown-timeout", &C::server,
                     &ServerOptions::shutdown_timeout_s, 1, 3600, kServing | kWorker,
                     "seconds the shutdown after SIGTERM may take (draining, closing) before "
                     "the process exits regardless; keep it under the pod's grace period (a worker "
                     "waits this plus 10 s for its scheduler to end the group)"));
  // worker (per pod: the command line's, except the metrics port)
  s.push_back(String("worker.scheduler", "scheduler", &C::worker, &WorkerPlacement::scheduler,
                     kWorker, "the scheduler's control-plane address HOST:PORT (required)"));
  s.push_back(Int("worker.stage", "stage", &C::worker, &WorkerPlacement::stage, 0, 63, kWorker,
                  "pipeline stage of this worker"));
  s.push_back(Int("worker.pod_index", "pod-index", &C::worker, &WorkerPlacement::pod_index, 0, 1023,
                  kWorker, "this worker's index within its stage (StatefulSet ordinal)"));
  s.push_back(Int("worker.tp_rank", "tp-rank", &C::worker, &WorkerPlacement::tp_rank, -1, 1023,
                  kWorker, "host exactly this tensor-parallel rank (-1 = from pod-index)"));
  s.push_back(String("worker.host", "host", &C::worker, &WorkerPlacement::host, kWorker,
                     "address peers reach this worker's data plane at (default: $ORCA_POD_IP "
                     "or the hostname)"));
  s.push_back(Int("worker.metrics_port", "metrics-port", &C::worker, &WorkerPlacement::metrics_port,
                  -1, kMaxPort, kWorker,
                  "port of the worker's /health, /ready and /metrics (-1 = off)"));
  s.push_back(Double("worker.join_timeout_s", "join-timeout", &C::worker,
                     &WorkerPlacement::join_timeout_s, 0, 86400, kWorker,
                     "seconds a worker may go without a group (at start or after its group "
                     "ends) before it exits non-zero so that Kubernetes restarts it "
                     "(0 = wait forever)"));
  return s;
}

}  // namespace

absl::string_view DeviceName(Device d) { return NameOf(kDevices, d); }
absl::string_view WeightDTypeName(WeightDType d) { return NameOf(kDTypes, d); }

absl::StatusOr<DType> ResolveKvCacheDType(WeightDType dtype, Device device) {
  switch (dtype) {
    case WeightDType::kAuto:
      (void)device;  // float16 on every backend since the CUDA kernels read it as fast
      return DType::kF16;
    case WeightDType::kFloat32:
      return DType::kF32;
    case WeightDType::kFloat16:
      return DType::kF16;
    case WeightDType::kBFloat16:
      return DType::kBF16;
  }
  return absl::InvalidArgumentError("unknown kv_cache.dtype");
}
absl::string_view KvPolicyName(KvPolicy p) { return NameOf(kKvPolicies, p); }
absl::string_view SchedulingPolicyName(SchedulingPolicy p) { return NameOf(kPolicies, p); }
std::optional<Device> ParseDevice(absl::string_view s) { return ValueOf(kDevices, s); }
std::optional<WeightDType> ParseWeightDType(absl::string_view s) { return ValueOf(kDTypes, s); }
std::optional<KvPolicy> ParseKvPolicy(absl::string_view s) { return ValueOf(kKvPolicies, s); }
std::optional<SchedulingPolicy> ParseSchedulingPolicy(absl::string_view s) {
  return ValueOf(kPolicies, s);
}

absl::string_view RoleName(Role r) {
  switch (r) {
    case Role::kServe:
      return "serve";
    case Role::kScheduler:
      return "scheduler";
    case Role::kWorker:
      return "worker";
    case Role::kGenerate:
      return "generate";
  }
  return "?";
}

EngineConfig DefaultConfig(Role role) {
  EngineConfig c;
  if (role == Role::kServe) c.parallel.control_port = 0;
  return c;
}

std::string Setting::DefaultText(Role role) const { return get(DefaultConfig(role)); }

std::string Setting::Describe() const {
  switch (type) {
    case SettingType::kInt:
      return absl::StrCat("an integer in [", static_cast<int64_t>(min), ", ",
                          static_cast<int64_t>(max), "]");
    case SettingType::kDouble:
      return absl::StrCat("a number in [", DoubleText(min), ", ", DoubleText(max), "]");
    case SettingType::kBool:
      return "true or false";
    case SettingType::kString:
      return "a string";
    case SettingType::kEnum:
      return absl::StrCat("one of: ", absl::StrJoin(choices, ", "));
  }
  return "";
}

absl::Span<const Setting> AllSettings() {
  static const std::vector<Setting>* settings = new std::vector<Setting>(BuildSettings());
  return *settings;
}

const Setting* FindSettingByKey(absl::string_view key) {
  for (const Setting& s : AllSettings()) {
    if (s.key == key) return &s;
  }
  return nullptr;
}

const Setting* FindSettingByFlag(absl::string_view flag, Role role) {
  for (const Setting& s : AllSettings()) {
    if (s.flag == flag && HasRole(s.roles, role)) return &s;
  }
  return nullptr;
}

std::string FlagFor(absl::string_view key) {
  const Setting* s = FindSettingByKey(key);
  return s == nullptr ? std::string() : absl::StrCat("--", s->flag);
}

}  // namespace orca
