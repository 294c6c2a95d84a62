#include "engine/model/random_checkpoint.h"

#include <sys/stat.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/common/file_util.h"
#include "engine/common/status_macros.h"
#include "engine/model/safetensors.h"
#include "engine/tokenizer/tokenizer.h"

namespace orca {
namespace {

ModelConfig Llama(int32_t hidden, int32_t inter, int32_t layers, int32_t heads, int32_t kv_heads,
                  int32_t vocab, int32_t ctx) {
  ModelConfig c;
  c.architecture = "LlamaForCausalLM";
  c.family = ModelFamily::kLlama;
  c.hidden_size = hidden;
  c.intermediate_size = inter;
  c.num_layers = layers;
  c.num_heads = heads;
  c.num_kv_heads = kv_heads;
  c.head_dim = hidden / heads;
  c.vocab_size = vocab;
  c.max_position_embeddings = ctx;
  c.norm_eps = 1e-5f;
  c.bos_token_id = 256;  // the synthetic tokenizer's <s>
  c.eos_token_ids = {257};
  return c;
}

ModelConfig Gpt2(int32_t hidden, int32_t layers, int32_t heads, int32_t vocab, int32_t ctx) {
  ModelConfig c;
  c.architecture = "GPT2LMHeadModel";
  c.family = ModelFamily::kGpt2;
  c.hidden_size = hidden;
  c.intermediate_size = 4 * hidden;
  c.num_layers = layers;
  c.num_heads = heads;
  c.num_kv_heads = heads;
  c.head_dim = hidden / heads;
  c.vocab_size = vocab;
  c.max_position_embeddings = ctx;
  c.tie_word_embeddings = true;
  c.qkv_bias = c.out_proj_bias = c.mlp_bias = true;
  c.hidden_act = "gelu_new";
  c.bos_token_id = 256;
  c.eos_token_ids = {257};
  return c;
}

// A fast seeded generator of approximately normal values (sum of uniforms).
class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(seed * 0x9e3779b97f4a7c15ull + 1) {}
  uint64_t Next() {
    s_ ^= s_ << 13;
    s_ ^= s_ >> 7;
    s_ ^= s_ << 17;
    return s_;
  }
  float Uniform() { return static_cast<float>(Next() >> 40) * (1.0f / 16777216.0f); }
  // Irwin-Hall with 4 terms: mean 0, variance 1 after scaling.
  float Normal() {
    float s = Uniform() + Uniform() + Uniform() + Uniform() - 2.0f;
    return s * 1.7320508f;
  }

 private:
  uint64_t s_;
};

}  // namespace

std::vector<std::string> PresetNames() {
  return {"tiny", "llama-110m", "llama-1b", "gpt2-tiny", "gpt2"};
}

absl::StatusOr<ModelConfig> PresetConfig(const std::string& preset) {
  if (preset == "tiny") return Llama(64, 172, 2, 4, 2, 512, 512);
  if (preset == "llama-110m") return Llama(768, 2048, 12, 12, 12, 32000, 1024);  // stories110M
  if (preset == "llama-1b") {                                                    // TinyLlama-1.1B
    ModelConfig c = Llama(2048, 5632, 22, 32, 4, 32000, 2048);
    c.dtype = DType::kBF16;
    return c;
  }
  if (preset == "gpt2-tiny") return Gpt2(64, 2, 4, 512, 256);
  if (preset == "gpt2") return Gpt2(768, 12, 12, 50257, 1024);
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown preset '", preset, "' (known: ", absl::StrJoin(PresetNames(), ", "), ")"));
}

absl::Status WriteRandomCheckpoint(const ModelConfig& c, const std::string& dir, uint64_t seed) {
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return absl::InvalidArgumentError(absl::StrCat(dir, ": cannot create directory"));
  }
  Rng rng(seed);
  SafetensorsWriter w;
  auto random = [&](const std::string& name, std::vector<int64_t> shape, float std) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    std::vector<float> v(static_cast<size_t>(n));
    for (float& x : v) x = rng.Normal() * std;
    w.AddF32(name, c.dtype, std::move(shape), v);
  };
  auto constant = [&](const std::string& name, int64_t n, float value) {
    w.AddF32(name, c.dtype, {n}, std::vector<float>(static_cast<size_t>(n), value));
  };
  const int64_t h = c.hidden_size, i = c.intermediate_size, v = c.vocab_size;
  const int64_t q = int64_t{c.num_heads} * c.head_dim, kv = int64_t{c.num_kv_heads} * c.head_dim;
  const float std = 0.02f;
  const float out_std = std / std::sqrt(2.0f * c.num_layers);  // GPT-2's residual scaling
  if (c.family == ModelFamily::kGpt2) {
    random("transformer.wte.weight", {v, h}, std);
    random("transformer.wpe.weight", {c.max_position_embeddings, h}, 0.01f);
    for (int32_t l = 0; l < c.num_layers; ++l) {
      std::string p = absl::StrCat("transformer.h.", l, ".");
      random(p + "ln_1.weight", {h}, 0.1f);
      random(p + "ln_1.bias", {h}, 0.02f);
      random(p + "attn.c_attn.weight", {h, 3 * h}, std);
      random(p + "attn.c_attn.bias", {3 * h}, 0.02f);
      random(p + "attn.c_proj.weight", {h, h}, out_std);
      random(p + "attn.c_proj.bias", {h}, 0.02f);
      random(p + "ln_2.weight", {h}, 0.1f);
      random(p + "ln_2.bias", {h}, 0.02f);
      random(p + "mlp.c_fc.weight", {h, i}, std);
      random(p + "mlp.c_fc.bias", {i}, 0.02f);
      random(p + "mlp.c_proj.weight", {i, h}, out_std);
      random(p + "mlp.c_proj.bias", {h}, 0.02f);
    }
    random("transformer.ln_f.weight", {h}, 0.1f);
    random("transformer.ln_f.bias", {h}, 0.02f);
  } else {
    random("model.embed_tokens.weight", {v, h}, std);
    for (int32_t l = 0; l < c.num_layers; ++l) {
      std::string p = absl::StrCat("model.layers.", l, ".");
      constant(p + "input_layernorm.weight", h, 1.0f);
      constant(p + "post_attention_layernorm.weight", h, 1.0f);
      random(p + "self_attn.q_proj.weight", {q, h}, std);
      random(p + "self_attn.k_proj.weight", {kv, h}, std);
      random(p + "self_attn.v_proj.weight", {kv, h}, std);
      if (c.qkv_bias) {
        random(p + "self_attn.q_proj.bias", {q}, std);
        random(p + "self_attn.k_proj.bias", {kv}, std);
        random(p + "self_attn.v_proj.bias", {kv}, std);
      }
      random(p + "self_attn.o_proj.weight", {h, q}, out_std);
      if (c.out_proj_bias) random(p + "self_attn.o_proj.bias", {h}, std);
      random(p + "mlp.gate_proj.weight", {i, h}, std);
      random(p + "mlp.up_proj.weight", {i, h}, std);
      random(p + "mlp.down_proj.weight", {h, i}, out_std);
    }
    constant("model.norm.weight", h, 1.0f);
    if (!c.tie_word_embeddings) random("lm_head.weight", {v, h}, std);
  }
  ORCA_RETURN_IF_ERROR(w.Write(JoinPath(dir, "model.safetensors")));
  ORCA_RETURN_IF_ERROR(WriteFile(JoinPath(dir, "config.json"), ModelConfigToJson(c)));
  nlohmann::json gen = {{"bos_token_id", c.bos_token_id}, {"eos_token_id", c.eos_token_ids}};
  ORCA_RETURN_IF_ERROR(WriteFile(JoinPath(dir, "generation_config.json"), gen.dump(2) + "\n"));
  return WriteSyntheticTokenizer(dir, c.vocab_size);
}

}  // namespace orca
