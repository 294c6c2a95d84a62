// CheckpointLayout: the tensors a model configuration requires of its checkpoint, with
// the config.json keys that size each dimension, and the check that a checkpoint holds
// exactly that model: the layers num_hidden_layers counts and no others, every required
// tensor present, floating point and shaped as config.json says. Checkpoint::Open runs
// the check, so `orca serve` refuses a configuration its files cannot back before it
// allocates anything for the model, and `orca model inspect` refuses the same
// directories with the same message. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "engine/model/checkpoint.h"
#include "engine/model/model_config.h"

namespace orca {

// One dimension of an expected tensor and what in config.json sizes it.
struct TensorDim {
  int64_t size = 0;
  std::string keys;  // e.g. "hidden_size" or "num_attention_heads * head_dim"
};

struct ExpectedTensor {
  std::string name;
  std::vector<TensorDim> dims;
  bool required = true;  // false: checked only when present (a tied LM head)
};

// Returns the tensors of the whole (unsharded) model `config` describes, in the names
// and shapes its checkpoint stores them (linear weights [out, in]; GPT-2's Conv1D ones
// [in, out], under `gpt2_prefix`: "transformer." or "").
std::vector<ExpectedTensor> ExpectedTensors(const ModelConfig& config,
                                            const std::string& gpt2_prefix);

// Returns OK when `checkpoint` can back `config` (read from `config_path`). Fails with
// InvalidArgument naming config_path, the key and the tensor file when the layers
// present are not those num_hidden_layers (n_layer) counts or a tensor is shaped other
// than the keys say; NotFound when a required tensor is missing.
absl::Status CheckCheckpointLayout(const ModelConfig& config, const std::string& config_path,
                                   const Checkpoint& checkpoint);

}  // namespace orca
