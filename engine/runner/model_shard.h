// ModelShard: the part of a model one rank of a serving group holds (DESIGN.md section
// 4). A group has `pipeline` stages × `tensor` ranks; global rank = stage × tensor +
// tp_rank. Stage s holds a contiguous slice of layers (`stage_layers[s]` of them, the
// group's split: PipelineStageLayers), stage 0 also the embedding, the last stage the
// final norm and LM head. Inside a stage weights are split Megatron-style: QKV and MLP
// gate/up by output rows (attention heads and KV heads divided among the ranks),
// attention-out and MLP down by input columns, each followed by one all-reduce. The LM
// head is not split: the last stage's tp rank 0 alone computes logits and samples.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "engine/model/model_config.h"

namespace orca {

struct ModelShard {
  ModelShard() = default;
  ModelShard(int32_t pipeline_size, int32_t tensor_size, int32_t stage_index, int32_t tp_index,
             std::vector<int32_t> layers_per_stage = {})
      : pipeline(pipeline_size),
        tensor(tensor_size),
        stage(stage_index),
        tp_rank(tp_index),
        stage_layers(std::move(layers_per_stage)) {}

  int32_t pipeline = 1;
  int32_t tensor = 1;
  int32_t stage = 0;
  int32_t tp_rank = 0;
  // Layers held by each stage, first to last (PipelineStageLayers); empty: as even as
  // they divide, earlier stages taking the extra ones.
  std::vector<int32_t> stage_layers;

  int32_t world_size() const { return pipeline * tensor; }
  int32_t rank() const { return stage * tensor + tp_rank; }
  bool first_stage() const { return stage == 0; }
  bool last_stage() const { return stage == pipeline - 1; }
  // The rank that computes logits and samples.
  bool samples() const { return last_stage() && tp_rank == 0; }
  // The same tp position in the previous / next stage (activations travel between them).
  int32_t prev_rank() const { return rank() - tensor; }
  int32_t next_rank() const { return rank() + tensor; }

  // This stage's layers [first, end) of a model with `num_layers` layers (ValidateModelShard
  // checks that stage_layers sum to it).
  std::pair<int32_t, int32_t> Layers(int32_t num_layers) const {
    if (!stage_layers.empty()) {
      int32_t first = 0;
      for (int32_t s = 0; s < stage; ++s) first += stage_layers[static_cast<size_t>(s)];
      return {first, first + stage_layers[static_cast<size_t>(stage)]};
    }
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
// stage (stage_layers, when given: one count per stage, each >= 1, summing to the
// model's layers), and heads, KV heads and the MLP width divisible by the tensor-parallel size.
// The message names the dimension that does not divide.
absl::Status ValidateModelShard(const ModelConfig& config, const ModelShard& shard);

// The layers each of `pipeline` stages holds, first to last, for every rank of a group
// (the scheduler decides and sends them in GroupInit.stage_layers).
// `requested` (--pipeline-layers): exactly those counts, checked as ValidateModelShard
// does. Empty: the split that balances the stages' work, a pipeline running at its
// busiest stage's pace. Every token of an iteration passes through every layer, so a
// layer weighs its parameters (CountLayerParameters); the last stage's LM head (vocabulary
// x hidden) runs on the sampled rows only, one per decode and one per prompt, so it
// weighs half its parameters: a request whose prompt is as long as its output samples
// one row per two tokens. (Measured on PP=2 llama-110m, whose LM head is 3.5 layers'
// parameters: the even split 6 + 6 left stage 0 idle a third of the time, 8 + 4 (the head
// at full weight) stage 1 a quarter, 7 + 5 (this rule) balanced both at 79-84 % busy;
// docs/benchmarks.md section 26.) The last stage takes k layers and the others share the
// rest as evenly as they divide (earlier stages one more), k minimising the heaviest
// stage; of equal splits, the one whose last stage holds the most layers (nearest even).
absl::StatusOr<std::vector<int32_t>> PipelineStageLayers(const ModelConfig& config,
                                                         int32_t pipeline,
                                                         absl::Span<const int32_t> requested);

}  // namespace orca
