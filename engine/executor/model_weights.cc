#include "engine/executor/model_weights.h"

#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"
#include "engine/common/status_macros.h"

namespace orca {
namespace {

// Stages host tensors into backend memory, fusing and transposing as asked.
class WeightUploader {
 public:
  WeightUploader(const Checkpoint& ckpt, Backend& backend, ModelWeights& out)
      : ckpt_(ckpt), backend_(backend), out_(out) {}

  // Concatenates `parts` (each [rows_i, cols]) by rows into one [sum rows, cols] tensor.
  // With `transpose`, each part is stored in the file as [cols, rows_i] (Conv1D).
  absl::StatusOr<Tensor> Rows(const std::vector<std::pair<std::string, int64_t>>& parts,
                              int64_t cols, bool transpose = false) {
    std::vector<const HostTensorView*> views;
    int64_t rows = 0;
    for (const auto& [name, r] : parts) {
      std::vector<int64_t> shape =
          transpose ? std::vector<int64_t>{cols, r} : std::vector<int64_t>{r, cols};
      ORCA_ASSIGN_OR_RETURN(const HostTensorView* v, ckpt_.Get(name, shape));
      views.push_back(v);
      rows += r;
    }
    DType src = views[0]->dtype;
    bool same = true;
    for (auto* v : views) same = same && v->dtype == src;
    DType dst = (same && backend_.SupportsWeightDType(src)) ? src : DType::kF32;
    const size_t es = DTypeSize(dst);
    std::vector<char> host(static_cast<size_t>(rows * cols) * es);
    int64_t row0 = 0;
    std::vector<float> tmp;
    for (size_t p = 0; p < views.size(); ++p) {
      const HostTensorView* v = views[p];
      const int64_t r = parts[p].second;
      const void* src_data = v->data;
      if (dst != v->dtype) {  // convert to F32 first
        tmp.resize(static_cast<size_t>(v->num_elements()));
        ConvertToF32(v->data, v->dtype, tmp.size(), tmp.data());
        src_data = tmp.data();
      }
      char* dst_data = host.data() + static_cast<size_t>(row0 * cols) * es;
      if (!transpose) {
        std::memcpy(dst_data, src_data, static_cast<size_t>(r * cols) * es);
      } else {
        const char* s = static_cast<const char*>(src_data);
        for (int64_t i = 0; i < cols; ++i) {
          for (int64_t j = 0; j < r; ++j) {
            std::memcpy(dst_data + static_cast<size_t>(j * cols + i) * es,
                        s + static_cast<size_t>(i * r + j) * es, es);
          }
        }
      }
      row0 += r;
    }
    return Upload(host.data(), dst, rows, cols);
  }

  absl::StatusOr<Tensor> One(const std::string& name, int64_t rows, int64_t cols) {
    return Rows({{name, rows}}, cols);
  }

  // A 1-D tensor of length n stored as [1, n]; always F32 (norm weights and biases).
  absl::StatusOr<Tensor> Vector(const std::string& name, int64_t n) {
    ORCA_ASSIGN_OR_RETURN(const HostTensorView* v, ckpt_.Get(name, {n}));
    std::vector<float> f(static_cast<size_t>(n));
    ConvertToF32(v->data, v->dtype, f.size(), f.data());
    return Upload(f.data(), DType::kF32, 1, n);
  }

  // Concatenates 1-D tensors (fused biases).
  absl::StatusOr<Tensor> Vectors(const std::vector<std::pair<std::string, int64_t>>& parts) {
    std::vector<float> f;
    for (const auto& [name, n] : parts) {
      ORCA_ASSIGN_OR_RETURN(const HostTensorView* v, ckpt_.Get(name, {n}));
      size_t at = f.size();
      f.resize(at + static_cast<size_t>(n));
      ConvertToF32(v->data, v->dtype, static_cast<size_t>(n), f.data() + at);
    }
    return Upload(f.data(), DType::kF32, 1, static_cast<int64_t>(f.size()));
  }

 private:
  absl::StatusOr<Tensor> Upload(const void* data, DType dtype, int64_t rows, int64_t cols) {
    size_t bytes = static_cast<size_t>(rows * cols) * DTypeSize(dtype);
    ORCA_ASSIGN_OR_RETURN(auto buf, backend_.Allocate(bytes));
    ORCA_RETURN_IF_ERROR(backend_.CopyToDevice(buf->data(), data, bytes));
    Tensor t{buf->data(), dtype, rows, cols, 0};
    out_.bytes += bytes;
    out_.storage.push_back(std::move(buf));
    return t;
  }

  const Checkpoint& ckpt_;
  Backend& backend_;
  ModelWeights& out_;
};

absl::Status LoadLlama(const ModelConfig& c, const Checkpoint& ckpt, WeightUploader& up,
                       ModelWeights& w) {
  const int64_t h = c.hidden_size, i = c.intermediate_size;
  const int64_t q = int64_t{c.num_heads} * c.head_dim, kv = int64_t{c.num_kv_heads} * c.head_dim;
  ORCA_ASSIGN_OR_RETURN(w.embed, up.One("model.embed_tokens.weight", c.vocab_size, h));
  ORCA_ASSIGN_OR_RETURN(w.final_norm, up.Vector("model.norm.weight", h));
  if (c.tie_word_embeddings && !ckpt.Has("lm_head.weight")) {
    w.lm_head = w.embed;
  } else {
    ORCA_ASSIGN_OR_RETURN(w.lm_head, up.One("lm_head.weight", c.vocab_size, h));
  }
  for (int32_t l = 0; l < c.num_layers; ++l) {
    const std::string p = absl::StrCat("model.layers.", l, ".");
    LayerWeights& L = w.layers[l];
    ORCA_ASSIGN_OR_RETURN(L.attn_norm, up.Vector(p + "input_layernorm.weight", h));
    ORCA_ASSIGN_OR_RETURN(L.mlp_norm, up.Vector(p + "post_attention_layernorm.weight", h));
    ORCA_ASSIGN_OR_RETURN(L.qkv, up.Rows({{p + "self_attn.q_proj.weight", q},
                                          {p + "self_attn.k_proj.weight", kv},
                                          {p + "self_attn.v_proj.weight", kv}},
                                         h));
    if (c.qkv_bias) {
      ORCA_ASSIGN_OR_RETURN(L.qkv_bias, up.Vectors({{p + "self_attn.q_proj.bias", q},
                                                    {p + "self_attn.k_proj.bias", kv},
                                                    {p + "self_attn.v_proj.bias", kv}}));
    }
    ORCA_ASSIGN_OR_RETURN(L.out_proj, up.One(p + "self_attn.o_proj.weight", h, q));
    if (c.out_proj_bias) {
      ORCA_ASSIGN_OR_RETURN(L.out_proj_bias, up.Vector(p + "self_attn.o_proj.bias", h));
    }
    ORCA_ASSIGN_OR_RETURN(
        L.up, up.Rows({{p + "mlp.gate_proj.weight", i}, {p + "mlp.up_proj.weight", i}}, h));
    ORCA_ASSIGN_OR_RETURN(L.down, up.One(p + "mlp.down_proj.weight", h, i));
    if (c.mlp_bias) {
      ORCA_ASSIGN_OR_RETURN(
          L.up_bias, up.Vectors({{p + "mlp.gate_proj.bias", i}, {p + "mlp.up_proj.bias", i}}));
      ORCA_ASSIGN_OR_RETURN(L.down_bias, up.Vector(p + "mlp.down_proj.bias", h));
    }
  }
  return absl::OkStatus();
}

absl::Status LoadGpt2(const ModelConfig& c, const Checkpoint& ckpt, WeightUploader& up,
                      ModelWeights& w) {
  const int64_t h = c.hidden_size, i = c.intermediate_size;
  // Hugging Face GPT-2 checkpoints name tensors with or without the "transformer." prefix.
  const std::string t = ckpt.Has("transformer.wte.weight") ? "transformer." : "";
  ORCA_ASSIGN_OR_RETURN(w.embed, up.One(t + "wte.weight", c.vocab_size, h));
  ORCA_ASSIGN_OR_RETURN(w.pos_embed, up.One(t + "wpe.weight", c.max_position_embeddings, h));
  ORCA_ASSIGN_OR_RETURN(w.final_norm, up.Vector(t + "ln_f.weight", h));
  ORCA_ASSIGN_OR_RETURN(w.final_norm_bias, up.Vector(t + "ln_f.bias", h));
  if (ckpt.Has("lm_head.weight")) {
    ORCA_ASSIGN_OR_RETURN(w.lm_head, up.One("lm_head.weight", c.vocab_size, h));
  } else {
    w.lm_head = w.embed;
  }
  for (int32_t l = 0; l < c.num_layers; ++l) {
    const std::string p = absl::StrCat(t, "h.", l, ".");
    LayerWeights& L = w.layers[l];
    ORCA_ASSIGN_OR_RETURN(L.attn_norm, up.Vector(p + "ln_1.weight", h));
    ORCA_ASSIGN_OR_RETURN(L.attn_norm_bias, up.Vector(p + "ln_1.bias", h));
    ORCA_ASSIGN_OR_RETURN(L.qkv,
                          up.Rows({{p + "attn.c_attn.weight", 3 * h}}, h, /*transpose=*/true));
    ORCA_ASSIGN_OR_RETURN(L.qkv_bias, up.Vector(p + "attn.c_attn.bias", 3 * h));
    ORCA_ASSIGN_OR_RETURN(L.out_proj, up.Rows({{p + "attn.c_proj.weight", h}}, h, true));
    ORCA_ASSIGN_OR_RETURN(L.out_proj_bias, up.Vector(p + "attn.c_proj.bias", h));
    ORCA_ASSIGN_OR_RETURN(L.mlp_norm, up.Vector(p + "ln_2.weight", h));
    ORCA_ASSIGN_OR_RETURN(L.mlp_norm_bias, up.Vector(p + "ln_2.bias", h));
    ORCA_ASSIGN_OR_RETURN(L.up, up.Rows({{p + "mlp.c_fc.weight", i}}, h, true));
    ORCA_ASSIGN_OR_RETURN(L.up_bias, up.Vector(p + "mlp.c_fc.bias", i));
    ORCA_ASSIGN_OR_RETURN(L.down, up.Rows({{p + "mlp.c_proj.weight", h}}, i, true));
    ORCA_ASSIGN_OR_RETURN(L.down_bias, up.Vector(p + "mlp.c_proj.bias", h));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<ModelWeights>> ModelWeights::Load(const ModelConfig& config,
                                                                 const Checkpoint& checkpoint,
                                                                 Backend& backend) {
  auto w = std::make_unique<ModelWeights>();
  w->layers.resize(config.num_layers);
  WeightUploader up(checkpoint, backend, *w);
  if (config.family == ModelFamily::kGpt2) {
    ORCA_RETURN_IF_ERROR(LoadGpt2(config, checkpoint, up, *w));
  } else {
    ORCA_RETURN_IF_ERROR(LoadLlama(config, checkpoint, up, *w));
  }
  return w;
}

}  // namespace orca
