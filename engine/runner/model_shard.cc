#include "engine/runner/model_shard.h"

#include "absl/strings/str_cat.h"

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

}  // namespace orca
