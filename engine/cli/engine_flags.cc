#include "engine/cli/engine_flags.h"

#include "absl/strings/str_cat.h"
#include "engine/common/status_macros.h"

namespace orca {

void AddEngineFlags(Flags& f) {
  f.Add("model", "", "Hugging Face checkpoint directory (required)")
      .Add("policy", "iteration",
           "scheduling: iteration (ORCA), request (static batching as Triton + "
           "FasterTransformer) or request-compact (static batching whose finished "
           "members stop computing)")
      .Add("max-batch-size", "64", "sequences per iteration")
      .Add("max-batched-tokens", "512", "tokens per iteration")
      .Add("no-chunked-prefill", "", "schedule each prompt's prefill in one iteration", true)
      .Add("kv-policy", "paged", "KV admission: paged (preempt and recompute) or reserve (ORCA)")
      .Add("no-prefix-caching", "", "disable prefix caching of full KV blocks", true)
      .Add("block-size", "16", "KV cache block size in tokens")
      .Add("kv-cache-mib", "1024", "KV cache size in MiB")
      .Add("num-kv-blocks", "0", "KV cache size in blocks (overrides --kv-cache-mib)")
      .Add("max-model-len", "0", "context length (0 = the model's)")
      .Add("max-waiting-requests", "1024", "queued requests before answering 429")
      .Add("threads", "0", "CPU threads (0 = all cores)")
      .Add("device", "cpu", "cpu or cuda")
      .Add("device-index", "0", "CUDA device ordinal")
      .Add("gpu-memory-fraction", "0.9", "CUDA: share of device memory for weights and KV cache");
}

absl::StatusOr<EngineOptions> EngineOptionsFromFlags(const Flags& f) {
  EngineOptions o;
  o.model_dir = f.GetString("model");
  if (o.model_dir.empty()) return absl::InvalidArgumentError("--model DIR is required");
  const std::string policy = f.GetString("policy");
  if (policy == "iteration") {
    o.scheduler.policy = SchedulingPolicy::kIteration;
  } else if (policy == "request") {
    o.scheduler.policy = SchedulingPolicy::kRequest;
  } else if (policy == "request-compact") {
    o.scheduler.policy = SchedulingPolicy::kRequestCompact;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("--policy must be iteration, request or request-compact, got '", policy, "'"));
  }
  const std::string kv = f.GetString("kv-policy");
  if (kv == "paged") {
    o.scheduler.kv_policy = KvPolicy::kPaged;
  } else if (kv == "reserve") {
    o.scheduler.kv_policy = KvPolicy::kReserve;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("--kv-policy must be paged or reserve, got '", kv, "'"));
  }
  auto positive = [&](const char* name, int64_t lo, int64_t hi) -> absl::StatusOr<int32_t> {
    ORCA_ASSIGN_OR_RETURN(int64_t v, f.GetInt(name));
    if (v < lo || v > hi)
      return absl::InvalidArgumentError(
          absl::StrCat("--", name, " must be in [", lo, ", ", hi, "]"));
    return static_cast<int32_t>(v);
  };
  ORCA_ASSIGN_OR_RETURN(o.scheduler.max_batch_size, positive("max-batch-size", 1, 4096));
  ORCA_ASSIGN_OR_RETURN(o.scheduler.max_batched_tokens, positive("max-batched-tokens", 1, 1 << 20));
  o.scheduler.chunked_prefill = !f.GetBool("no-chunked-prefill");
  o.scheduler.prefix_caching = !f.GetBool("no-prefix-caching");
  ORCA_ASSIGN_OR_RETURN(o.block_size, positive("block-size", 1, 1024));
  ORCA_ASSIGN_OR_RETURN(int32_t mib, positive("kv-cache-mib", 1, 1 << 20));
  o.kv_cache_bytes = static_cast<size_t>(mib) << 20;
  ORCA_ASSIGN_OR_RETURN(o.num_kv_blocks, positive("num-kv-blocks", 0, 1 << 26));
  ORCA_ASSIGN_OR_RETURN(o.scheduler.max_model_len, positive("max-model-len", 0, 1 << 24));
  ORCA_ASSIGN_OR_RETURN(o.max_waiting_requests, positive("max-waiting-requests", 1, 1 << 24));
  ORCA_ASSIGN_OR_RETURN(o.num_threads, positive("threads", 0, 1024));
  o.device = f.GetString("device");
  if (o.device != "cpu" && o.device != "cuda") {
    return absl::InvalidArgumentError(
        absl::StrCat("--device must be cpu or cuda, got '", o.device, "'"));
  }
  ORCA_ASSIGN_OR_RETURN(o.device_index, positive("device-index", 0, 64));
  ORCA_ASSIGN_OR_RETURN(o.memory_fraction, f.GetDouble("gpu-memory-fraction"));
  if (!(o.memory_fraction > 0 && o.memory_fraction <= 1)) {
    return absl::InvalidArgumentError("--gpu-memory-fraction must be in (0, 1]");
  }
  return o;
}

}  // namespace orca
