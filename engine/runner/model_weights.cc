#include "engine/runner/model_weights.h"

#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"
#include "engine/common/status_macros.h"

namespace orca {
namespace {

// A slice of a checkpoint tensor seen as a logical [rows, cols] matrix (a linear
// weight [out, in]): rows [row0, row0 + num_rows) of a tensor with `rows` rows.
struct Part {
  std::string name;
  int64_t rows = 0;
  int64_t row0 = 0;
  int64_t num_rows = -1;  // -1: all rows from row0
  int64_t count() const { return num_rows < 0 ? rows - row0 : num_rows; }
};

// Stages host tensors into backend memory, fusing, slicing and transposing as asked.
class WeightUploader {
 public:
  // `dtype`: kAuto keeps a tensor's checkpoint dtype where the backend stores it (F32
  // otherwise); the others convert every matrix to that dtype.
  WeightUploader(const Checkpoint& ckpt, Backend& backend, DType dtype, bool keep,
                 ModelWeights& out)
      : ckpt_(ckpt), backend_(backend), dtype_(dtype), keep_(keep), out_(out) {}

  // A linear weight: concatenates the row slices `parts` (each of a [rows_i, cols]
  // tensor) into one tensor of [sum of slice rows, num_cols] keeping columns
  // [col0, col0 + num_cols) (num_cols -1: all), stored as the backend's Linear reads it
  // (Backend::UploadLinearWeight). With `transpose`, each tensor is stored in the file as
  // [cols, rows_i] (Conv1D).
  absl::StatusOr<Tensor> Rows(const std::vector<Part>& parts, int64_t cols, bool transpose = false,
                              int64_t col0 = 0, int64_t num_cols = -1) {
    return Matrix(parts, cols, transpose, col0, num_cols, /*linear=*/true);
  }

  // One whole tensor [rows, cols]: a linear weight (the LM head) or, with !linear, a
  // row-major table (embeddings).
  absl::StatusOr<Tensor> One(const std::string& name, int64_t rows, int64_t cols,
                             bool linear = false) {
    return Matrix({{name, rows}}, cols, false, 0, -1, linear);
  }

  // A 1-D tensor of length n stored as [1, n]; always F32 (norm weights and biases).
  absl::StatusOr<Tensor> Vector(const std::string& name, int64_t n) { return Vectors({{name, n}}); }

  // Concatenates slices of 1-D tensors (fused and tensor-parallel biases).
  absl::StatusOr<Tensor> Vectors(const std::vector<Part>& parts) {
    std::vector<float> f;
    for (const Part& part : parts) {
      ORCA_ASSIGN_OR_RETURN(const HostTensorView* v, ckpt_.Get(part.name, {part.rows}));
      std::vector<float> all(static_cast<size_t>(part.rows));
      ConvertToF32(v->data, v->dtype, all.size(), all.data());
      f.insert(f.end(), all.begin() + part.row0, all.begin() + part.row0 + part.count());
    }
    return Upload(f.data(), DType::kF32, 1, static_cast<int64_t>(f.size()), /*linear=*/false);
  }

 private:
  absl::StatusOr<Tensor> Matrix(const std::vector<Part>& parts, int64_t cols, bool transpose,
                                int64_t col0, int64_t num_cols, bool linear) {
    if (num_cols < 0) num_cols = cols - col0;
    std::vector<const HostTensorView*> views;
    int64_t rows = 0;
    for (const Part& part : parts) {
      std::vector<int64_t> shape =
          transpose ? std::vector<int64_t>{cols, part.rows} : std::vector<int64_t>{part.rows, cols};
      ORCA_ASSIGN_OR_RETURN(const HostTensorView* v, ckpt_.Get(part.name, shape));
      views.push_back(v);
      rows += part.count();
    }
    DType src = views[0]->dtype;
    bool same = true;
    for (auto* v : views) same = same && v->dtype == src;
    DType dst = !keep_ ? dtype_ : (same && backend_.SupportsWeightDType(src)) ? src : DType::kF32;
    const size_t es = DTypeSize(dst);
    std::vector<char> host(static_cast<size_t>(rows * num_cols) * es);
    int64_t out_row = 0;
    std::vector<float> tmp;
    std::vector<char> converted;
    for (size_t p = 0; p < views.size(); ++p) {
      const HostTensorView* v = views[p];
      const Part& part = parts[p];
      const void* src_data = v->data;
      if (dst != v->dtype) {  // through F32
        tmp.resize(static_cast<size_t>(v->num_elements()));
        ConvertToF32(v->data, v->dtype, tmp.size(), tmp.data());
        src_data = tmp.data();
        if (dst != DType::kF32) {
          converted.resize(tmp.size() * es);
          ConvertFromF32(tmp.data(), tmp.size(), dst, converted.data());
          src_data = converted.data();
        }
      }
      const char* s = static_cast<const char*>(src_data);
      for (int64_t j = 0; j < part.count(); ++j, ++out_row) {
        const int64_t r = part.row0 + j;  // logical row in the file's tensor
        char* d = host.data() + static_cast<size_t>(out_row * num_cols) * es;
        if (!transpose) {
          std::memcpy(d, s + static_cast<size_t>(r * cols + col0) * es,
                      static_cast<size_t>(num_cols) * es);
        } else {
          for (int64_t i = 0; i < num_cols; ++i) {
            std::memcpy(d + static_cast<size_t>(i) * es,
                        s + static_cast<size_t>((col0 + i) * part.rows + r) * es, es);
          }
        }
      }
    }
    return Upload(host.data(), dst, rows, num_cols, linear);
  }

  absl::StatusOr<Tensor> Upload(const void* data, DType dtype, int64_t rows, int64_t cols,
                                bool linear) {
    std::unique_ptr<DeviceBuffer> buf;
    Tensor t;
    if (linear) {
      ORCA_ASSIGN_OR_RETURN(t, backend_.UploadLinearWeight(data, dtype, rows, cols, &buf));
    } else {
      const size_t bytes = static_cast<size_t>(rows * cols) * DTypeSize(dtype);
      ORCA_ASSIGN_OR_RETURN(buf, backend_.Allocate(bytes));
      ORCA_RETURN_IF_ERROR(backend_.CopyToDevice(buf->data(), data, bytes));
      t = Tensor{buf->data(), dtype, rows, cols};
    }
    out_.bytes += buf->size();
    out_.storage.push_back(std::move(buf));
    return t;
  }

  const Checkpoint& ckpt_;
  Backend& backend_;
  DType dtype_;
  bool keep_;
  ModelWeights& out_;
};

// The slice of `n` rows (or one of `n` bias entries) that tp rank `shard.tp_rank` holds.
Part Slice(const std::string& name, int64_t n, const ModelShard& shard, int64_t offset = 0,
           int64_t total = -1) {
  const int64_t per = n / shard.tensor;
  return Part{name, total < 0 ? n : total, offset + shard.tp_rank * per, per};
}

// The embedding on the first stage; the LM head where the shard samples (`tied`: the
// embedding serves as LM head when the checkpoint has none).
absl::Status LoadEnds(const ModelShard& shard, const std::string& embed_name,
                      const std::string& lm_head_name, bool tied, int64_t vocab, int64_t h,
                      const Checkpoint& ckpt, WeightUploader& up, ModelWeights& w) {
  const bool tied_here = tied && !ckpt.Has(lm_head_name);
  if (shard.first_stage()) {
    // A table that is also this stage's LM head is stored as a linear weight (Embedding
    // reads every layout UploadLinearWeight makes).
    ORCA_ASSIGN_OR_RETURN(w.embed,
                          up.One(embed_name, vocab, h, /*linear=*/tied_here && shard.samples()));
  }
  if (!shard.samples()) return absl::OkStatus();
  if (!tied_here) {
    ORCA_ASSIGN_OR_RETURN(w.lm_head, up.One(lm_head_name, vocab, h, /*linear=*/true));
  } else if (w.embed.data != nullptr) {
    w.lm_head = w.embed;  // tied
  } else {                // tied, on a later stage
    ORCA_ASSIGN_OR_RETURN(w.lm_head, up.One(embed_name, vocab, h, /*linear=*/true));
  }
  return absl::OkStatus();
}

absl::Status LoadLlama(const ModelConfig& c, const ModelShard& shard, const Checkpoint& ckpt,
                       WeightUploader& up, ModelWeights& w) {
  const int64_t h = c.hidden_size, i = c.intermediate_size;
  const int64_t q = int64_t{c.num_heads} * c.head_dim, kv = int64_t{c.num_kv_heads} * c.head_dim;
  const int64_t q_local = q / shard.tensor, i_local = i / shard.tensor;
  const bool bias_rank = shard.tp_rank == 0;  // row-parallel biases are added once
  ORCA_RETURN_IF_ERROR(LoadEnds(shard, "model.embed_tokens.weight", "lm_head.weight",
                                c.tie_word_embeddings, c.vocab_size, h, ckpt, up, w));
  if (shard.samples()) {
    ORCA_ASSIGN_OR_RETURN(w.final_norm, up.Vector("model.norm.weight", h));
  }
  const auto [first, end] = shard.Layers(c.num_layers);
  for (int32_t l = first; l < end; ++l) {
    const std::string p = absl::StrCat("model.layers.", l, ".");
    LayerWeights& L = w.layers[l - first];
    ORCA_ASSIGN_OR_RETURN(L.attn_norm, up.Vector(p + "input_layernorm.weight", h));
    ORCA_ASSIGN_OR_RETURN(L.mlp_norm, up.Vector(p + "post_attention_layernorm.weight", h));
    ORCA_ASSIGN_OR_RETURN(L.qkv, up.Rows({Slice(p + "self_attn.q_proj.weight", q, shard),
                                          Slice(p + "self_attn.k_proj.weight", kv, shard),
                                          Slice(p + "self_attn.v_proj.weight", kv, shard)},
                                         h));
    if (c.qkv_bias) {
      ORCA_ASSIGN_OR_RETURN(L.qkv_bias,
                            up.Vectors({Slice(p + "self_attn.q_proj.bias", q, shard),
                                        Slice(p + "self_attn.k_proj.bias", kv, shard),
                                        Slice(p + "self_attn.v_proj.bias", kv, shard)}));
    }
    ORCA_ASSIGN_OR_RETURN(L.out_proj, up.Rows({{p + "self_attn.o_proj.weight", h}}, q, false,
                                              shard.tp_rank * q_local, q_local));
    if (c.out_proj_bias && bias_rank) {
      ORCA_ASSIGN_OR_RETURN(L.out_proj_bias, up.Vector(p + "self_attn.o_proj.bias", h));
    }
    ORCA_ASSIGN_OR_RETURN(L.up, up.Rows({Slice(p + "mlp.gate_proj.weight", i, shard),
                                         Slice(p + "mlp.up_proj.weight", i, shard)},
                                        h));
    ORCA_ASSIGN_OR_RETURN(L.down, up.Rows({{p + "mlp.down_proj.weight", h}}, i, false,
                                          shard.tp_rank * i_local, i_local));
    if (c.mlp_bias) {
      ORCA_ASSIGN_OR_RETURN(L.up_bias, up.Vectors({Slice(p + "mlp.gate_proj.bias", i, shard),
                                                   Slice(p + "mlp.up_proj.bias", i, shard)}));
      if (bias_rank) {
        ORCA_ASSIGN_OR_RETURN(L.down_bias, up.Vector(p + "mlp.down_proj.bias", h));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status LoadGpt2(const ModelConfig& c, const ModelShard& shard, const Checkpoint& ckpt,
                      WeightUploader& up, ModelWeights& w) {
  const int64_t h = c.hidden_size, i = c.intermediate_size;
  const int64_t h_local = h / shard.tensor, i_local = i / shard.tensor;
  // Hugging Face GPT-2 checkpoints name tensors with or without the "transformer." prefix.
  const std::string t = ckpt.Has("transformer.wte.weight") ? "transformer." : "";
  ORCA_RETURN_IF_ERROR(LoadEnds(shard, t + "wte.weight", "lm_head.weight", /*tied=*/true,
                                c.vocab_size, h, ckpt, up, w));
  if (shard.first_stage()) {
    ORCA_ASSIGN_OR_RETURN(w.pos_embed, up.One(t + "wpe.weight", c.max_position_embeddings, h));
  }
  if (shard.samples()) {
    ORCA_ASSIGN_OR_RETURN(w.final_norm, up.Vector(t + "ln_f.weight", h));
    ORCA_ASSIGN_OR_RETURN(w.final_norm_bias, up.Vector(t + "ln_f.bias", h));
  }
  const auto [first, end] = shard.Layers(c.num_layers);
  for (int32_t l = first; l < end; ++l) {
    const std::string p = absl::StrCat(t, "h.", l, ".");
    LayerWeights& L = w.layers[l - first];
    ORCA_ASSIGN_OR_RETURN(L.attn_norm, up.Vector(p + "ln_1.weight", h));
    ORCA_ASSIGN_OR_RETURN(L.attn_norm_bias, up.Vector(p + "ln_1.bias", h));
    // c_attn is one [3h, h] weight (q | k | v rows); each rank takes its heads of all three.
    const std::string qkv = p + "attn.c_attn.weight", qkv_bias = p + "attn.c_attn.bias";
    ORCA_ASSIGN_OR_RETURN(L.qkv,
                          up.Rows({Slice(qkv, h, shard, 0, 3 * h), Slice(qkv, h, shard, h, 3 * h),
                                   Slice(qkv, h, shard, 2 * h, 3 * h)},
                                  h, /*transpose=*/true));
    ORCA_ASSIGN_OR_RETURN(L.qkv_bias, up.Vectors({Slice(qkv_bias, h, shard, 0, 3 * h),
                                                  Slice(qkv_bias, h, shard, h, 3 * h),
                                                  Slice(qkv_bias, h, shard, 2 * h, 3 * h)}));
    ORCA_ASSIGN_OR_RETURN(L.out_proj, up.Rows({{p + "attn.c_proj.weight", h}}, h, true,
                                              shard.tp_rank * h_local, h_local));
    if (shard.tp_rank == 0) {
      ORCA_ASSIGN_OR_RETURN(L.out_proj_bias, up.Vector(p + "attn.c_proj.bias", h));
    }
    ORCA_ASSIGN_OR_RETURN(L.mlp_norm, up.Vector(p + "ln_2.weight", h));
    ORCA_ASSIGN_OR_RETURN(L.mlp_norm_bias, up.Vector(p + "ln_2.bias", h));
    ORCA_ASSIGN_OR_RETURN(L.up, up.Rows({Slice(p + "mlp.c_fc.weight", i, shard)}, h, true));
    ORCA_ASSIGN_OR_RETURN(L.up_bias, up.Vectors({Slice(p + "mlp.c_fc.bias", i, shard)}));
    ORCA_ASSIGN_OR_RETURN(
        L.down, up.Rows({{p + "mlp.c_proj.weight", h}}, i, true, shard.tp_rank * i_local, i_local));
    if (shard.tp_rank == 0) {
      ORCA_ASSIGN_OR_RETURN(L.down_bias, up.Vector(p + "mlp.c_proj.bias", h));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<ModelWeights>> ModelWeights::Load(const ModelConfig& config,
                                                                 const ModelShard& shard,
                                                                 const Checkpoint& checkpoint,
                                                                 Backend& backend,
                                                                 WeightDType dtype) {
  ORCA_RETURN_IF_ERROR(ValidateModelShard(config, shard));
  DType target = DType::kF32;
  if (dtype == WeightDType::kFloat16) target = DType::kF16;
  if (dtype == WeightDType::kBFloat16) target = DType::kBF16;
  if (!backend.SupportsWeightDType(target)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "dtype ", WeightDTypeName(dtype), ": this backend stores weights in float32 ",
        "(and the checkpoint's 16-bit dtype where it supports it); use auto or float32"));
  }
  auto w = std::make_unique<ModelWeights>();
  const auto [first, end] = shard.Layers(config.num_layers);
  w->layers.resize(static_cast<size_t>(end - first));
  WeightUploader up(checkpoint, backend, target, dtype == WeightDType::kAuto, *w);
  if (config.family == ModelFamily::kGpt2) {
    ORCA_RETURN_IF_ERROR(LoadGpt2(config, shard, checkpoint, up, *w));
  } else {
    ORCA_RETURN_IF_ERROR(LoadLlama(config, shard, checkpoint, up, *w));
  }
  return w;
}

}  // namespace orca
