#include "engine/model/checkpoint_layout.h"

#include <set>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/common/status_macros.h"

namespace orca {
namespace {

bool IsGpt2(const ModelConfig& c) { return c.family == ModelFamily::kGpt2; }

// The prefix of every tensor of layer N: "model.layers.N." / "[transformer.]h.N.".
std::string LayerPrefix(const ModelConfig& c, const std::string& gpt2_prefix) {
  return IsGpt2(c) ? gpt2_prefix + "h." : "model.layers.";
}

std::vector<ExpectedTensor> Llama(const ModelConfig& c) {
  const TensorDim v{c.vocab_size, "vocab_size"}, h{c.hidden_size, "hidden_size"},
      i{c.intermediate_size, "intermediate_size"},
      q{int64_t{c.num_heads} * c.head_dim, "num_attention_heads * head_dim"},
      kv{int64_t{c.num_kv_heads} * c.head_dim, "num_key_value_heads * head_dim"};
  std::vector<ExpectedTensor> t = {{"model.embed_tokens.weight", {v, h}},
                                   {"lm_head.weight", {v, h}, !c.tie_word_embeddings},
                                   {"model.norm.weight", {h}}};
  for (int32_t l = 0; l < c.num_layers; ++l) {
    const std::string p = absl::StrCat("model.layers.", l, ".");
    t.push_back({p + "input_layernorm.weight", {h}});
    t.push_back({p + "post_attention_layernorm.weight", {h}});
    t.push_back({p + "self_attn.q_proj.weight", {q, h}});
    t.push_back({p + "self_attn.k_proj.weight", {kv, h}});
    t.push_back({p + "self_attn.v_proj.weight", {kv, h}});
    if (c.qkv_bias) {
      t.push_back({p + "self_attn.q_proj.bias", {q}});
      t.push_back({p + "self_attn.k_proj.bias", {kv}});
      t.push_back({p + "self_attn.v_proj.bias", {kv}});
    }
    t.push_back({p + "self_attn.o_proj.weight", {h, q}});
    if (c.out_proj_bias) t.push_back({p + "self_attn.o_proj.bias", {h}});
    t.push_back({p + "mlp.gate_proj.weight", {i, h}});
    t.push_back({p + "mlp.up_proj.weight", {i, h}});
    t.push_back({p + "mlp.down_proj.weight", {h, i}});
    if (c.mlp_bias) {
      t.push_back({p + "mlp.gate_proj.bias", {i}});
      t.push_back({p + "mlp.up_proj.bias", {i}});
      t.push_back({p + "mlp.down_proj.bias", {h}});
    }
  }
  return t;
}

std::vector<ExpectedTensor> Gpt2(const ModelConfig& c, const std::string& pre) {
  const TensorDim v{c.vocab_size, "vocab_size"}, h{c.hidden_size, "n_embd"},
      h3{3 * int64_t{c.hidden_size}, "3 * n_embd"}, i{c.intermediate_size, "n_inner"},
      pos{c.max_position_embeddings, "n_positions"};
  std::vector<ExpectedTensor> t = {{pre + "wte.weight", {v, h}},
                                   {"lm_head.weight", {v, h}, /*required=*/false},
                                   {pre + "wpe.weight", {pos, h}},
                                   {pre + "ln_f.weight", {h}},
                                   {pre + "ln_f.bias", {h}}};
  for (int32_t l = 0; l < c.num_layers; ++l) {
    const std::string p = absl::StrCat(pre, "h.", l, ".");
    for (const char* norm : {"ln_1", "ln_2"}) {
      t.push_back({absl::StrCat(p, norm, ".weight"), {h}});
      t.push_back({absl::StrCat(p, norm, ".bias"), {h}});
    }
    t.push_back({p + "attn.c_attn.weight", {h, h3}});  // Conv1D: [in, out]
    t.push_back({p + "attn.c_attn.bias", {h3}});
    t.push_back({p + "attn.c_proj.weight", {h, h}});
    t.push_back({p + "attn.c_proj.bias", {h}});
    t.push_back({p + "mlp.c_fc.weight", {h, i}});
    t.push_back({p + "mlp.c_fc.bias", {i}});
    t.push_back({p + "mlp.c_proj.weight", {i, h}});
    t.push_back({p + "mlp.c_proj.bias", {h}});
  }
  return t;
}

// Returns the layer indices that tensor names under `prefix` carry ("PREFIX<N>.").
std::set<int64_t> LayersPresent(const Checkpoint& ckpt, const std::string& prefix) {
  std::set<int64_t> layers;
  for (const auto& [name, view] : ckpt.tensors()) {
    if (name.compare(0, prefix.size(), prefix) != 0) continue;
    const size_t dot = name.find('.', prefix.size());
    int64_t n = 0;
    if (dot == std::string::npos || dot == prefix.size() || dot - prefix.size() > 9 ||
        !absl::SimpleAtoi(name.substr(prefix.size(), dot - prefix.size()), &n) || n < 0) {
      continue;
    }
    layers.insert(n);
  }
  return layers;
}

absl::Status CheckLayerCount(const ModelConfig& c, const std::string& config_path,
                             const Checkpoint& ckpt, const std::string& prefix) {
  const std::set<int64_t> present = LayersPresent(ckpt, prefix);
  const int64_t expected = c.num_layers;
  if (static_cast<int64_t>(present.size()) == expected &&
      (present.empty() || *present.rbegin() == expected - 1)) {
    return absl::OkStatus();
  }
  const std::string held = present.empty()
                               ? absl::StrCat("no layer weights ('", prefix, "N.*')")
                               : absl::StrCat("weights for ", present.size(), " layer(s), ", prefix,
                                              *present.begin(), " to ", prefix, *present.rbegin());
  return absl::InvalidArgumentError(
      absl::StrCat(config_path, ": field '", IsGpt2(c) ? "n_layer" : "num_hidden_layers", "' is ",
                   expected, " but the checkpoint (", ckpt.Describe(), ") holds ", held));
}

std::string ShapeString(const std::vector<int64_t>& shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ","), "]");
}

absl::Status CheckTensor(const ExpectedTensor& e, const std::string& config_path,
                         const Checkpoint& ckpt) {
  const HostTensorView* t = ckpt.Find(e.name);
  if (t == nullptr) {
    if (!e.required) return absl::OkStatus();
    return absl::NotFoundError(absl::StrCat(ckpt.Describe(), ": missing tensor '", e.name,
                                            "', which ", config_path, " requires"));
  }
  const std::string file = ckpt.FileOf(e.name);
  if (!t->float_dtype) {
    return absl::InvalidArgumentError(absl::StrCat(file, ": tensor '", e.name, "' has dtype ",
                                                   t->dtype_name,
                                                   "; weights must be F32, F16 or BF16"));
  }
  std::vector<int64_t> expected;
  for (const TensorDim& d : e.dims) expected.push_back(d.size);
  if (t->shape == expected) return absl::OkStatus();
  // Name the keys of the dimensions that differ (all of them when the rank does).
  std::vector<std::string> keys;
  for (size_t k = 0; k < e.dims.size(); ++k) {
    if (t->shape.size() != e.dims.size() || t->shape[k] != e.dims[k].size) {
      keys.push_back(absl::StrCat(e.dims[k].keys, " = ", e.dims[k].size));
    }
  }
  return absl::InvalidArgumentError(absl::StrCat(
      file, ": tensor '", e.name, "' has shape ", ShapeString(t->shape), ", expected ",
      ShapeString(expected), " from ", absl::StrJoin(keys, ", "), " in ", config_path));
}

}  // namespace

std::vector<ExpectedTensor> ExpectedTensors(const ModelConfig& config,
                                            const std::string& gpt2_prefix) {
  return IsGpt2(config) ? Gpt2(config, gpt2_prefix) : Llama(config);
}

absl::Status CheckCheckpointLayout(const ModelConfig& config, const std::string& config_path,
                                   const Checkpoint& checkpoint) {
  // Hugging Face GPT-2 checkpoints name tensors with or without "transformer.".
  const std::string gpt2_prefix = checkpoint.Has("transformer.wte.weight") ? "transformer." : "";
  // The layer count first: it bounds the list of tensors built below.
  ORCA_RETURN_IF_ERROR(
      CheckLayerCount(config, config_path, checkpoint, LayerPrefix(config, gpt2_prefix)));
  for (const ExpectedTensor& e : ExpectedTensors(config, gpt2_prefix)) {
    ORCA_RETURN_IF_ERROR(CheckTensor(e, config_path, checkpoint));
  }
  return absl::OkStatus();
}

}  // namespace orca
