#include "engine/runner/model_shard.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/common/status_macros.h"

namespace orca {

absl::Status ValidateModelShard(const ModelConfig& c, const ModelShard& s) {
  if (s.pipeline < 1 || s.tensor < 1) {
    return absl::InvalidArgumentError(absl::StrCat("pipeline (", s.pipeline, ") and tensor (",
                                                   s.tensor, ") parallel sizes must be >= 1"));
  }
  if (s.stage < 0 || s.stage >= s.pipeline || s.tp_rank < 0 || s.tp_rank >= s.tensor) {
    return absl::InvalidArgumentError(absl::StrCat("stage ", s.stage, " / tp rank ", s.tp_rank,
                                                   " outside a group of ", s.pipeline, " stages x ",
                                                   s.tensor, " ranks"));
  }
  if (s.pipeline > c.num_layers) {
    return absl::InvalidArgumentError(
        absl::StrCat(s.pipeline, " pipeline stages for a model of ", c.num_layers, " layers"));
  }
  if (!s.stage_layers.empty()) {
    const std::string split = absl::StrJoin(s.stage_layers, ",");
    if (static_cast<int32_t>(s.stage_layers.size()) != s.pipeline) {
      return absl::InvalidArgumentError(absl::StrCat(
          "pipeline layers ", split, " give ", s.stage_layers.size(), " stages, not ", s.pipeline));
    }
    int64_t sum = 0;
    for (int32_t n : s.stage_layers) {
      if (n < 1) {
        return absl::InvalidArgumentError(
            absl::StrCat("pipeline layers ", split, ": every stage needs at least one layer"));
      }
      sum += n;
    }
    if (sum != c.num_layers) {
      return absl::InvalidArgumentError(absl::StrCat("pipeline layers ", split, " sum to ", sum,
                                                     "; the model has ", c.num_layers));
    }
  }
  const std::pair<const char*, int32_t> dims[] = {{"attention heads", c.num_heads},
                                                  {"key/value heads", c.num_kv_heads},
                                                  {"intermediate_size", c.intermediate_size}};
  for (const auto& [what, n] : dims) {
    if (n % s.tensor != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "tensor parallel size ", s.tensor, " does not divide the model's ", n, " ", what));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<int32_t>> PipelineStageLayers(const ModelConfig& c, int32_t pipeline,
                                                         absl::Span<const int32_t> requested) {
  ModelShard shard{pipeline, 1, 0, 0};
  if (!requested.empty()) {
    shard.stage_layers.assign(requested.begin(), requested.end());
    ORCA_RETURN_IF_ERROR(ValidateModelShard(c, shard));
    return shard.stage_layers;
  }
  ORCA_RETURN_IF_ERROR(ValidateModelShard(c, shard));
  const int32_t layers = c.num_layers;
  if (pipeline == 1) return std::vector<int32_t>{layers};
  // In units of half a parameter: a layer weighs 2 x its parameters, the LM head its
  // parameters (half its weight, see the header).
  const int64_t layer = 2 * CountLayerParameters(c);
  const int64_t lm_head = int64_t{c.vocab_size} * c.hidden_size;
  // The last stage takes `last` layers; the heaviest of the others holds
  // ceil(rest / (pipeline - 1)). From the most layers on the last stage down, so that of
  // equal splits the one nearest even wins (the head only ever moves layers off it).
  int32_t best = 0;
  int64_t best_cost = std::numeric_limits<int64_t>::max();
  for (int32_t last = layers - (pipeline - 1); last >= 1; --last) {
    const int32_t rest = layers - last, others = pipeline - 1;
    const int64_t heaviest_other = int64_t{(rest + others - 1) / others} * layer;
    const int64_t cost = std::max(heaviest_other, last * layer + lm_head);
    if (cost < best_cost) {
      best = last;
      best_cost = cost;
    }
  }
  const int32_t rest = layers - best, others = pipeline - 1;
  std::vector<int32_t> split(static_cast<size_t>(pipeline));
  for (int32_t s = 0; s < others; ++s) {
    split[static_cast<size_t>(s)] = rest / others + (s < rest % others ? 1 : 0);
  }
  split.back() = best;
  return split;
}

}  // namespace orca
