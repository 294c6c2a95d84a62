// ModelShard: the part of a model one rank of a serving group holds (DESIGN.md section
// 4). A group has `pipeline` stages × `tensor` ranks; global rank = stage × tensor +
// tp_rank. Stage s holds a contiguous slice of layers (earlier stages take one more
// when the layers do not divide evenly), stage 0 also the embedding, the last stage the
// final norm and LM head. Inside a stage weights are split Megatron-style: QKV and MLP
// gate/up by output rows (attention heads and KV heads divided among the ranks),
// attention-out and MLP down by input columns, each followed by one all-reduce. The LM
// head is not split: the last stage's tp rank 0 alone computes logits and samples.
#pragma once

#include <cstdint>
#include <utility>

#include "absl/status/status.h"
#include "engine/model/model_config.h"

namespace orca {

struct ModelShard {
  int32_t pipeline = 1;
  int32_t tensor = 1;
  int32_t stage = 0;
  int32_t tp_rank = 0;

  int32_t world_size() const { return pipeline * tensor; }
  int32_t rank() const { return stage * tensor + tp_rank; }
  bool first_stage() const { return stage == 0; }
  bool last_stage() const { return stage == pipeline - 1; }
  // The rank that computes logits and samples.
  bool samples() const { return last_stage() && tp_rank == 0; }
  // The same tp position in the previous / next stage (activations travel between them).
  int32_t prev_rank() const { return rank() - tensor; }
  int32_t next_rank() const { return rank() + tensor; }

  // This stage's layers [first, end) of a model with `num_layers` layers.
  std::pair<int32_t, int32_t> Layers(int32_t num_layers) const {
    const int32_t base = num_layers / pipeline, extra = num_layers % pipeline;
    const int32_t first = stage * base + (stage < extra ? stage : extra);
    return {first, first + base + (stage < extra ? 1 : 0)};
  }
  // Per-rank widths of the split dimensions.
  int32_t local_heads(const ModelConfig& c) const { return c.num_heads / tensor; }
  int32_t local_kv_heads(const ModelConfig& c) const { return c.num_kv_heads / tensor; }
  int32_t local_intermediate(const ModelConfig& c) const { return c.intermediate_size / tensor; }
};

// Checks that `shard` can split `config`: ranks in range, at least one layer per
// stage, and heads, KV heads and the MLP width divisible by the tensor-parallel size.
// The message names the dimension that does not divide.
absl::Status ValidateModelShard(const ModelConfig& config, const ModelShard& shard);

}  // namespace orca
