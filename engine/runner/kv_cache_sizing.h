// How big the KV cache is: KvCacheBlocks for a fixed budget (a single process, a group
// of 1 x 1, and every rank of a serving group alike), and KvBlocksFromMemory for a
// cache sized by what a device's memory leaves (a CUDA process, or each rank of a CUDA
// group, which then allocates the smallest of its ranks' counts). Pure and thread-safe,
// except MeasureKvCapacity, which runs a profiling pass on a runner.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "engine/config/engine_config.h"
#include "engine/model/model_config.h"

namespace orca {

// The budget `kv.size_mib` = 0 (auto) stands for where the device's memory does not
// size the cache (the CPU, serving groups).
constexpr int32_t kDefaultKvCacheMib = 1024;

// Returns how many KV blocks of `kv_dtype` elements each rank of a group of
// stage_layers.size() stages (holding those layers: PipelineStageLayers) x `tensor` ranks
// allocates: `kv.num_blocks` when set, else the budget `kv.size_mib` (0:
// the default above) divided by the largest block any rank holds (ranks of a stage with more layers
// hold larger blocks; every rank gets the same count, so one block id means the same
// tokens everywhere). InvalidArgument for a block size out of [1, 1024] or a layout the
// model cannot be split into; ResourceExhausted when the budget holds no block.
absl::StatusOr<int32_t> KvCacheBlocks(const ModelConfig& config,
                                      absl::Span<const int32_t> stage_layers, int32_t tensor,
                                      const KvCacheOptions& kv, DType kv_dtype);

// Whether `kv` asks for a cache sized by device memory on `device` (every rank of a group
// alike).
bool KvCacheSizedByMemory(const KvCacheOptions& kv, Device device);

// The fewest blocks a memory-sized cache may have: one sequence of `max_model_len` tokens
// plus a block for a partial last one (KvBlocksFromMemory fails below it).
int32_t MinKvBlocks(int64_t max_model_len, int32_t block_size);

// The probe cache a runner holds while it profiles: enough blocks for the profiling pass
// at `profile_tokens` tokens over `profile_seqs` sequences (ModelRunner::RunProfilingPass).
int32_t ProbeKvBlocks(int64_t profile_tokens, int32_t profile_seqs, int32_t block_size);

// The arithmetic of a memory-sized KV cache, measured after the weights are loaded and a
// profiling pass at the largest iteration has run with a small probe cache:
//   budget      = what the backend may hold (memory_fraction x the device's memory)
//   activations = in use - weights - probe cache  (the profiling pass's peak workspaces)
//   reserve     = 2% of the budget (fragmentation, library workspaces)
//   kv          = budget - weights - activations - reserve
struct KvMemoryPlan {
  size_t budget_bytes = 0;
  size_t weight_bytes = 0;
  size_t activation_bytes = 0;
  size_t reserve_bytes = 0;
  size_t kv_bytes = 0;
  int32_t num_blocks = 0;
  int64_t tokens = 0;  // num_blocks x block size
  // One line: the arithmetic above with its figures, for the log.
  std::string Describe() const;
};

struct MemoryMeasurement {
  size_t budget_bytes = 0;  // Backend::GetMemoryInfo().total_bytes
  size_t free_bytes = 0;    // Backend::GetMemoryInfo().free_bytes after the profiling pass
  size_t weight_bytes = 0;
  size_t probe_kv_bytes = 0;  // the probe cache, still allocated when measured
};

// Sizes the cache from `m`. ResourceExhausted, with the arithmetic, when the cache would
// not hold one sequence of `max_model_len` tokens (plus a block for a partial last
// one); InvalidArgument for a block size or bytes per block of 0.
absl::StatusOr<KvMemoryPlan> KvBlocksFromMemory(const MemoryMeasurement& m, size_t bytes_per_block,
                                                int32_t block_size, int64_t max_model_len);

class Backend;
class ModelRunner;

// Runs `runner`'s profiling pass at `profile_tokens` x `profile_seqs` (the runner holds
// a probe cache of ProbeKvBlocks), reads `backend`'s memory and returns the plan of
// KvBlocksFromMemory; `max_model_len` <= 0 or beyond the model means the model's
// maximum. The runner keeps its probe cache: the caller resizes it (ResizeKvCache).
// In a group every rank must call it at once (the pass runs the group's collectives).
absl::StatusOr<KvMemoryPlan> MeasureKvCapacity(ModelRunner& runner, Backend& backend,
                                               int64_t profile_tokens, int32_t profile_seqs,
                                               int64_t max_model_len);

}  // namespace orca
