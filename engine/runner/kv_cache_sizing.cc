#include "engine/runner/kv_cache_sizing.h"

#include <algorithm>
#include <climits>

#include "absl/strings/str_cat.h"
#include "engine/common/status_macros.h"
#include "engine/runner/model_runner.h"

namespace orca {

absl::StatusOr<int32_t> KvCacheBlocks(const ModelConfig& config,
                                      absl::Span<const int32_t> stage_layers, int32_t tensor,
                                      const KvCacheOptions& kv, DType kv_dtype) {
  const auto pipeline = static_cast<int32_t>(stage_layers.size());
  if (pipeline < 1) return absl::InvalidArgumentError("a group of no pipeline stages");
  if (kv.block_size <= 0 || kv.block_size > 1024) {
    return absl::InvalidArgumentError(
        absl::StrCat("block size ", kv.block_size, " out of range [1, 1024]"));
  }
  size_t per_block = 0;
  for (int32_t stage = 0; stage < pipeline; ++stage) {
    const ModelShard shard{pipeline, tensor, stage, 0, {stage_layers.begin(), stage_layers.end()}};
    ORCA_RETURN_IF_ERROR(ValidateModelShard(config, shard));
    per_block =
        std::max(per_block, ModelRunner::KvBytesPerBlock(config, shard, kv.block_size, kv_dtype));
  }
  int64_t blocks = kv.num_blocks;
  if (blocks <= 0) {
    const size_t budget = static_cast<size_t>(kv.size_mib > 0 ? kv.size_mib : kDefaultKvCacheMib)
                          << 20;
    blocks = static_cast<int64_t>(budget / per_block);
    if (blocks <= 0) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "a KV cache of ", budget >> 20, " MiB per rank holds no block of ", per_block, " bytes"));
    }
  }
  return static_cast<int32_t>(std::min<int64_t>(blocks, INT32_MAX / kv.block_size));
}

bool KvCacheSizedByMemory(const KvCacheOptions& kv, Device device) {
  return device == Device::kCuda && kv.num_blocks <= 0 && kv.size_mib <= 0;
}

int32_t MinKvBlocks(int64_t max_model_len, int32_t block_size) {
  return static_cast<int32_t>((max_model_len + block_size - 1) / block_size + 1);
}

int32_t ProbeKvBlocks(int64_t profile_tokens, int32_t profile_seqs, int32_t block_size) {
  const int64_t seqs = std::min<int64_t>(profile_seqs, profile_tokens);
  return static_cast<int32_t>((profile_tokens + block_size - 1) / block_size + seqs);
}

namespace {
std::string Mib(size_t bytes) { return absl::StrCat(bytes >> 20, " MiB"); }
}  // namespace

std::string KvMemoryPlan::Describe() const {
  return absl::StrCat("KV cache ", Mib(kv_bytes), " = budget ", Mib(budget_bytes), " - weights ",
                      Mib(weight_bytes), " - peak activations ", Mib(activation_bytes),
                      " - reserve ", Mib(reserve_bytes), ": ", num_blocks, " blocks, ", tokens,
                      " tokens");
}

absl::StatusOr<KvMemoryPlan> KvBlocksFromMemory(const MemoryMeasurement& m, size_t bytes_per_block,
                                                int32_t block_size, int64_t max_model_len) {
  if (bytes_per_block == 0 || block_size <= 0) {
    return absl::InvalidArgumentError("a KV block of 0 bytes or tokens cannot be sized");
  }
  KvMemoryPlan p;
  p.budget_bytes = m.budget_bytes;
  p.weight_bytes = m.weight_bytes;
  const size_t in_use = m.budget_bytes - std::min(m.free_bytes, m.budget_bytes);
  const size_t fixed = m.weight_bytes + m.probe_kv_bytes;
  p.activation_bytes = in_use > fixed ? in_use - fixed : 0;
  p.reserve_bytes = m.budget_bytes / 50;
  const size_t taken = p.weight_bytes + p.activation_bytes + p.reserve_bytes;
  p.kv_bytes = m.budget_bytes > taken ? m.budget_bytes - taken : 0;
  const int64_t blocks =
      std::min<int64_t>(static_cast<int64_t>(p.kv_bytes / bytes_per_block), INT32_MAX / block_size);
  p.num_blocks = static_cast<int32_t>(blocks);
  p.tokens = blocks * block_size;
  const int64_t needed = MinKvBlocks(max_model_len, block_size);
  if (blocks < needed) {
    return absl::ResourceExhaustedError(
        absl::StrCat(p.Describe(), ": not even one sequence of ", max_model_len, " tokens fits (",
                     needed, " blocks of ", bytes_per_block,
                     " bytes); lower --max-model-len, raise --gpu-memory-fraction, shard the model "
                     "(--tensor-parallel) or use a device with more memory"));
  }
  return p;
}

absl::StatusOr<KvMemoryPlan> MeasureKvCapacity(ModelRunner& runner, Backend& backend,
                                               int64_t profile_tokens, int32_t profile_seqs,
                                               int64_t max_model_len) {
  ORCA_RETURN_IF_ERROR(runner.RunProfilingPass(profile_tokens, profile_seqs));
  const MemoryInfo info = backend.GetMemoryInfo();
  MemoryMeasurement m;
  m.budget_bytes = info.total_bytes;
  m.free_bytes = info.free_bytes;
  m.weight_bytes = runner.weight_bytes();
  m.probe_kv_bytes = runner.kv_cache_bytes();
  if (max_model_len <= 0 || max_model_len > runner.config().max_position_embeddings) {
    max_model_len = runner.config().max_position_embeddings;
  }
  return KvBlocksFromMemory(m, runner.KvBytesFor(1), runner.block_size(), max_model_len);
}

}  // namespace orca
