// ModelConfig: the architecture hyper-parameters of a Hugging Face checkpoint, read
// from config.json (and generation_config.json). Plain value type.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/common/dtype.h"

namespace orca {

enum class ModelFamily { kLlama, kGpt2 };

struct ModelConfig {
  std::string architecture;  // as written in config.json, e.g. "LlamaForCausalLM"
  ModelFamily family = ModelFamily::kLlama;
  int32_t vocab_size = 0;
  int32_t hidden_size = 0;
  int32_t intermediate_size = 0;
  int32_t num_layers = 0;
  int32_t num_heads = 0;
  int32_t num_kv_heads = 0;
  int32_t head_dim = 0;
  int32_t max_position_embeddings = 0;
  float norm_eps = 1e-5f;
  double rope_theta = 10000.0;
  bool tie_word_embeddings = false;
  bool qkv_bias = false;            // Qwen2, GPT-2, Llama with attention_bias
  bool out_proj_bias = false;       // GPT-2, Llama with attention_bias
  bool mlp_bias = false;            // GPT-2, Llama with mlp_bias
  std::string hidden_act = "silu";  // silu | gelu_new | gelu | gelu_pytorch_tanh
  DType dtype = DType::kF32;        // torch_dtype
  std::vector<int32_t> eos_token_ids;
  int32_t bos_token_id = -1;
};

// The largest values config.json may give, far beyond any published checkpoint. They
// keep every size derived from a configuration (products of these) within int64 before
// the checkpoint's tensors are compared with it (checkpoint_layout.h): a corrupt value
// fails naming the file and the key instead of in an allocation.
struct ModelConfigBounds {
  int64_t layers = 1024;
  int64_t hidden_size = int64_t{1} << 17;
  int64_t intermediate_size = int64_t{1} << 20;
  int64_t heads = 1024;  // attention heads, and key/value heads
  int64_t head_dim = 512;
  int64_t vocab_size = int64_t{1} << 24;
  int64_t positions = int64_t{1} << 24;  // max_position_embeddings / n_positions
};

// Parses config.json text. `source` names the file in errors, with the key at fault:
// a missing or non-integer size, one outside [1, ModelConfigBounds], a hidden size that
// the head count does not divide (without an explicit head_dim), etc.
absl::StatusOr<ModelConfig> ParseModelConfig(const std::string& json_text,
                                             const std::string& source);

// Reads DIR/config.json and, when present, DIR/generation_config.json (whose
// eos_token_id, int or list, overrides config.json's). Reads no weights: that the
// checkpoint's tensors match is Checkpoint::Open's check.
absl::StatusOr<ModelConfig> LoadModelConfig(const std::string& dir);

// Serialises `config` as a Hugging Face config.json (inverse of ParseModelConfig).
std::string ModelConfigToJson(const ModelConfig& config);

// Returns the number of parameters the architecture implies.
int64_t CountParameters(const ModelConfig& config);
// The parameters of one transformer layer (norms, attention, MLP; every layer has as
// many).
int64_t CountLayerParameters(const ModelConfig& config);

}  // namespace orca
