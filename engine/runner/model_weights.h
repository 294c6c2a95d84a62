// ModelWeights: a checkpoint's tensors resident in backend memory, in the layout the
// model runner computes with: Q/K/V fused into one [q + 2kv, hidden] matrix, gate and
// up fused into one [2 * intermediate, hidden] matrix, every linear weight stored as
// [out, in] (GPT-2's Conv1D weights are transposed on load) and handed to the backend's
// UploadLinearWeight, which may lay it out for its Linear (the CPU packs float32 ones). A shard
// (model_shard.h) loads only its stage's layers, its tensor-parallel slices and the ends it needs.
// Weights keep their checkpoint dtype where the backend supports it and are converted to F32
// otherwise. Immutable after Load().
#pragma once

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/backend/backend.h"
#include "engine/config/engine_config.h"
#include "engine/model/checkpoint.h"
#include "engine/model/model_config.h"
#include "engine/runner/model_shard.h"

namespace orca {

struct LayerWeights {
  Tensor attn_norm, attn_norm_bias;  // bias: GPT-2 LayerNorm only
  Tensor qkv, qkv_bias;              // bias when config.qkv_bias
  Tensor out_proj, out_proj_bias;
  Tensor mlp_norm, mlp_norm_bias;
  Tensor up, up_bias;  // Llama: fused gate|up [2I, H]; GPT-2: c_fc [I, H]
  Tensor down, down_bias;
};

struct ModelWeights {
  Tensor embed;      // [vocab, hidden]; first stage only
  Tensor pos_embed;  // GPT-2 only: [max_positions, hidden]
  Tensor final_norm, final_norm_bias;
  // [vocab, hidden], a linear weight (Backend::UploadLinearWeight); aliases embed when
  // tied (embed is then stored as a linear weight too); final norm too: sampling rank
  // only.
  Tensor lm_head;
  std::vector<LayerWeights> layers;  // the shard's layers, first to last
  std::vector<std::unique_ptr<DeviceBuffer>> storage;
  size_t bytes = 0;

  // Loads every tensor `shard` of `config` requires from `checkpoint` into `backend`,
  // its matrices in `dtype` (kAuto: the checkpoint's where the backend stores it, else
  // F32); norms and biases are F32. Fails with InvalidArgument when the shard cannot
  // split the model, FailedPrecondition when the backend does not store `dtype`.
  static absl::StatusOr<std::unique_ptr<ModelWeights>> Load(const ModelConfig& config,
                                                            const ModelShard& shard,
                                                            const Checkpoint& checkpoint,
                                                            Backend& backend,
                                                            WeightDType dtype = WeightDType::kAuto);
};

}  // namespace orca
