// KvCacheBlocks: the one function that sizes the KV cache, for a single process (a
// group of 1 x 1) and for every rank of a serving group alike. Pure; thread-safe.
#pragma once

#include <cstdint>

#include "absl/status/statusor.h"
#include "engine/config/engine_config.h"
#include "engine/model/model_config.h"

namespace orca {

// Returns how many KV blocks each rank of a group of `pipeline` stages x `tensor` ranks
// allocates: `kv.num_blocks` when set, else the budget `kv.size_mib` divided by the
// largest block any rank holds (ranks of a stage with more layers hold larger blocks;
// every rank gets the same count, so one block id means the same tokens everywhere).
// InvalidArgument for a block size out of [1, 1024] or a layout the model cannot be
// split into; ResourceExhausted when the budget holds no block.
absl::StatusOr<int32_t> KvCacheBlocks(const ModelConfig& config, int32_t pipeline, int32_t tensor,
                                      const KvCacheOptions& kv);

}  // namespace orca
