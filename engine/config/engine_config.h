// EngineConfig: every setting of the orca processes (`orca serve`, `orca scheduler`,
// `orca worker`, `orca generate`) as typed values, grouped into the sub-structs each
// component takes by value. Their names, defaults, ranges, help, engine.yaml keys and
// command-line flags are described once, in engine/config/settings.h; the flag parser,
// the engine.yaml reader and writer, `--help`, `orca config` and the docs table all
// derive from that description (docs/configuration.md). Plain values; thread-compatible.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/common/dtype.h"

namespace orca {

// Where the model runs. engine.yaml and flags spell it `cpu` or `cuda`; `gpu` (the
// InferenceDeployment's spelling) is accepted for `cuda`.
enum class Device { kCpu, kCuda };
// The weights' dtype after loading: `auto` keeps the checkpoint's (where the backend
// stores it), the others convert. The KV cache's dtype takes the same values: `auto` is
// the backend's preference (ResolveKvCacheDType, kv_cache_sizing.h).
enum class WeightDType { kAuto, kFloat32, kFloat16, kBFloat16 };
// KV admission: `paged` allocates as tokens arrive and preempts when blocks run out;
// `reserve` (ORCA) reserves prompt + max_tokens at admission and never preempts.
enum class KvPolicy { kPaged, kReserve };
// `iteration`: ORCA's iteration-level scheduling; `request`: static batching as
// Triton + FasterTransformer run it; `request-compact`: static batching whose finished
// members stop computing.
enum class SchedulingPolicy { kIteration, kRequest, kRequestCompact };

// How chat output is parsed for tool calls (engine/chat/tool_calls.h): auto follows the
// chat template's format.
enum class ToolCallParserChoice { kAuto, kNone, kHermes, kLlama3Json, kMistral };

// Returns the canonical spelling of each enum value ("cuda", "bfloat16", ...).
absl::string_view DeviceName(Device d);
absl::string_view WeightDTypeName(WeightDType d);
absl::string_view KvPolicyName(KvPolicy p);
absl::string_view SchedulingPolicyName(SchedulingPolicy p);
// Returns the value a spelling names (aliases included), or nullopt.
std::optional<Device> ParseDevice(absl::string_view s);
std::optional<WeightDType> ParseWeightDType(absl::string_view s);
std::optional<KvPolicy> ParseKvPolicy(absl::string_view s);
std::optional<SchedulingPolicy> ParseSchedulingPolicy(absl::string_view s);

// The KV cache's element type on `device` for the requested `dtype`: `auto` is F16 on
// both backends (their attention reads 16-bit directly: half of F32's bytes, twice the
// tokens; docs/cuda.md has the GPU's figures). Never fails today; a StatusOr for the
// types a device may not take.
absl::StatusOr<DType> ResolveKvCacheDType(WeightDType dtype, Device device);

// Whether `p` is one of the request-level (static batching) baselines.
inline bool IsRequestLevel(SchedulingPolicy p) { return p != SchedulingPolicy::kIteration; }

struct ModelOptions {
  std::string dir;          // Hugging Face checkpoint directory
  std::string served_name;  // "" = the directory's last component
  WeightDType dtype = WeightDType::kAuto;
  int32_t max_model_len = 0;  // context length; 0 = the model's
};

struct DeviceOptions {
  Device type = Device::kCpu;
  int32_t index = 0;             // CUDA ordinal of the first rank of this process
  int32_t threads = 0;           // CPU threads of this process; 0 = the CPU limit
  double memory_fraction = 0.9;  // CUDA: share of device memory for weights + KV + work
  bool sample_on_device = true;  // CUDA: draw tokens on the GPU where the request allows
  bool cuda_graphs = true;       // CUDA: decode-only iterations from graphs
  // CUDA: layers compute in the 16-bit type of their weights (residual stream F32).
  bool sixteen_bit_activations = true;
};

// How much KV cache each rank allocates (engine/runner/kv_cache_sizing.h sizes it).
struct KvCacheOptions {
  int32_t block_size = 16;                 // tokens per block
  int32_t num_blocks = 0;                  // 0 = from size_mib
  int32_t size_mib = 0;                    // budget per rank; 0 = auto (kv_cache_sizing.h)
  WeightDType dtype = WeightDType::kAuto;  // element type of K and V
};

struct SchedulerOptions {
  SchedulingPolicy policy = SchedulingPolicy::kIteration;
  KvPolicy kv_policy = KvPolicy::kPaged;
  bool prefix_caching = true;  // paged + iteration only
  bool chunked_prefill = true;
  int32_t max_batch_size = 64;          // sequences per iteration
  int32_t max_batched_tokens = 512;     // tokens per iteration
  int32_t max_waiting_requests = 1024;  // beyond: 429
  double queue_timeout_s = 60;          // waiting for admission; beyond: 503 (0 = none)
  // Iteration-level, chunked prefill: prefill chunks are cut so that iterations with
  // running decodes are predicted to take at most this long (batch_budget.h); 0 = off.
  double target_itl_ms = 0;
};

// The shape of a serving group (DESIGN.md section 4).
struct ParallelOptions {
  int32_t tensor = 1;
  int32_t pipeline = 1;
  // Layers per stage, "7,5" (pipeline_layers.h); "" or "auto": the split that
  // balances the stages' work, the LM head counted (PipelineStageLayers).
  std::string pipeline_layers;
  int32_t gpus_per_pod = 1;     // ranks one `orca worker` process hosts
  int32_t control_port = 8002;  // the scheduler's control plane (orca serve: 0 = any)
  double rank_deadline_s = 10;  // a rank silent this long breaks the group (0 = off)
  // File holding the shared token every control-plane call carries ("" = none; orca
  // serve then generates one for its local workers).
  std::string control_token_file;
};

// The public endpoints of `orca serve` / `orca scheduler`.
struct ServerOptions {
  std::string host = "0.0.0.0";
  int32_t port = 8000;        // HTTP (0 = any free port)
  int32_t grpc_port = 8001;   // gRPC (0 = any free port, -1 = off)
  std::string api_key_file;   // "" = no authentication
  std::string chat_template;  // file; "" = the tokenizer's
  ToolCallParserChoice tool_call_parser = ToolCallParserChoice::kAuto;
  int64_t max_body_bytes = 8 << 20;
  double shutdown_timeout_s = 20;         // after SIGTERM, then exit regardless
  std::string tls_cert_file;              // PEM; with tls_key_file: HTTPS and gRPC over TLS
  std::string tls_key_file;               // PEM private key of tls_cert_file
  int32_t max_concurrent_per_client = 0;  // open requests per client address (0 = no limit)
  std::string trace_file;                 // per-iteration Chrome trace; "" = off
};

// Where one `orca worker` process sits in its group; the command line's, per pod.
struct WorkerPlacement {
  std::string scheduler;  // HOST:PORT of the scheduler's control plane
  int32_t stage = 0;
  int32_t pod_index = 0;  // hosts tp ranks pod_index * gpus_per_pod ...
  int32_t tp_rank = -1;   // >= 0: host exactly this rank instead
  std::string host;       // address peers reach the data plane at; "" = $ORCA_POD_IP or hostname
  int32_t metrics_port = 9400;  // /health, /ready, /metrics; -1 = off
  double join_timeout_s = 300;  // not in a group this long: exit non-zero (0 = wait forever)
};

struct EngineConfig {
  ModelOptions model;
  DeviceOptions device;
  KvCacheOptions kv_cache;
  SchedulerOptions scheduler;
  ParallelOptions parallel;
  ServerOptions server;
  WorkerPlacement worker;
};

}  // namespace orca
