#include "engine/runner/kv_cache_sizing.h"

#include <algorithm>
#include <climits>

#include "absl/strings/str_cat.h"
#include "engine/common/status_macros.h"
#include "engine/runner/model_runner.h"

namespace orca {

absl::StatusOr<int32_t> KvCacheBlocks(const ModelConfig& config, int32_t pipeline, int32_t tensor,
                                      const KvCacheOptions& kv) {
  if (kv.block_size <= 0 || kv.block_size > 1024) {
    return absl::InvalidArgumentError(
        absl::StrCat("block size ", kv.block_size, " out of range [1, 1024]"));
  }
  size_t per_block = 0;
  for (int32_t stage = 0; stage < pipeline; ++stage) {
    const ModelShard shard{pipeline, tensor, stage, 0};
    ORCA_RETURN_IF_ERROR(ValidateModelShard(config, shard));
    per_block = std::max(per_block, ModelRunner::KvBytesPerBlock(config, shard, kv.block_size));
  }
  int64_t blocks = kv.num_blocks;
  if (blocks <= 0) {
    const size_t budget = static_cast<size_t>(kv.size_mib) << 20;
    blocks = static_cast<int64_t>(budget / per_block);
    if (blocks <= 0) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "a KV cache of ", kv.size_mib, " MiB per rank holds no block of ", per_block, " bytes"));
    }
  }
  return static_cast<int32_t>(std::min<int64_t>(blocks, INT32_MAX / kv.block_size));
}

}  // namespace orca
