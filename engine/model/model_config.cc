#include "engine/model/model_config.h"

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "engine/common/file_util.h"
#include "engine/common/status_macros.h"

namespace orca {
namespace {

using json = nlohmann::json;

// Reads an integer field; `fallback` < 0 means required. A value outside [1, max] fails
// naming the file and the key: sizes come from untrusted files, and everything the
// model allocates is derived from them.
absl::StatusOr<int64_t> GetSize(const json& j, const char* key, int64_t fallback, int64_t max,
                                const std::string& source) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) {
    if (fallback >= 0) return fallback;
    return absl::InvalidArgumentError(absl::StrCat(source, ": missing field '", key, "'"));
  }
  if (!it->is_number_integer()) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": field '", key, "' must be an integer"));
  }
  // (Integers beyond int64 parse as unsigned: out of range too.)
  const int64_t v = it->is_number_unsigned() && it->get<uint64_t>() > uint64_t{INT64_MAX}
                        ? INT64_MAX
                        : it->get<int64_t>();
  if (v < 1 || v > max) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": field '", key, "' is ", it->dump(),
                                                   "; it must be in [1, ", max, "]"));
  }
  return v;
}

// Returns `hidden` / `heads` (the head dimension), failing when it does not divide.
absl::StatusOr<int64_t> HeadDim(int64_t hidden, int64_t heads, const char* hidden_key,
                                const char* heads_key, const std::string& src) {
  if (hidden % heads != 0) {
    return absl::InvalidArgumentError(absl::StrCat(src, ": field '", hidden_key, "' (", hidden,
                                                   ") is not a multiple of '", heads_key, "' (",
                                                   heads, ")"));
  }
  return hidden / heads;
}

// Reads a real-valued field. A value outside [min, max] fails naming the file and the key:
// a norm epsilon of 1e206 parses as a double but is infinite as the float the kernels use.
absl::StatusOr<double> GetReal(const json& j, const char* key, double fallback, double min,
                               double max, const std::string& source) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  if (!it->is_number()) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": field '", key, "' must be a number"));
  }
  const double v = it->get<double>();
  if (!(v >= min && v <= max)) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": field '", key, "' is ", it->dump(),
                                                   "; it must be in [", min, ", ", max, "]"));
  }
  return v;
}

// Normalization epsilons: positive as a float, and at most 1 (checkpoints use 1e-5 or 1e-6).
constexpr double kMinNormEps = 1e-30;
constexpr double kMaxNormEps = 1.0;

bool GetBool(const json& j, const char* key, bool fallback) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_boolean()) return fallback;
  return it->get<bool>();
}

absl::StatusOr<std::vector<int32_t>> GetIdList(const json& j, const char* key,
                                               const std::string& source) {
  std::vector<int32_t> out;
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return out;
  auto one = [&](const json& v) -> absl::Status {
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > INT32_MAX) {
      return absl::InvalidArgumentError(absl::StrCat(source, ": '", key, "' must hold token ids"));
    }
    out.push_back(static_cast<int32_t>(v.get<int64_t>()));
    return absl::OkStatus();
  };
  if (it->is_array()) {
    for (const auto& v : *it) ORCA_RETURN_IF_ERROR(one(v));
  } else {
    ORCA_RETURN_IF_ERROR(one(*it));
  }
  return out;
}

absl::Status ParseLlama(const json& j, const std::string& src, ModelConfig& c) {
  const ModelConfigBounds b;
  ORCA_ASSIGN_OR_RETURN(int64_t hidden, GetSize(j, "hidden_size", -1, b.hidden_size, src));
  ORCA_ASSIGN_OR_RETURN(int64_t inter,
                        GetSize(j, "intermediate_size", -1, b.intermediate_size, src));
  ORCA_ASSIGN_OR_RETURN(int64_t layers, GetSize(j, "num_hidden_layers", -1, b.layers, src));
  ORCA_ASSIGN_OR_RETURN(int64_t heads, GetSize(j, "num_attention_heads", -1, b.heads, src));
  ORCA_ASSIGN_OR_RETURN(int64_t kv_heads, GetSize(j, "num_key_value_heads", heads, b.heads, src));
  ORCA_ASSIGN_OR_RETURN(int64_t vocab, GetSize(j, "vocab_size", -1, b.vocab_size, src));
  ORCA_ASSIGN_OR_RETURN(int64_t max_pos,
                        GetSize(j, "max_position_embeddings", 2048, b.positions, src));
  int64_t head_dim = 0;
  if (j.contains("head_dim") && !j["head_dim"].is_null()) {
    ORCA_ASSIGN_OR_RETURN(head_dim, GetSize(j, "head_dim", -1, b.head_dim, src));
  } else {
    ORCA_ASSIGN_OR_RETURN(head_dim,
                          HeadDim(hidden, heads, "hidden_size", "num_attention_heads", src));
  }
  ORCA_ASSIGN_OR_RETURN(double eps,
                        GetReal(j, "rms_norm_eps", 1e-6, kMinNormEps, kMaxNormEps, src));
  ORCA_ASSIGN_OR_RETURN(double theta, GetReal(j, "rope_theta", 10000.0, 1.0, 1e12, src));
  c.hidden_size = static_cast<int32_t>(hidden);
  c.intermediate_size = static_cast<int32_t>(inter);
  c.num_layers = static_cast<int32_t>(layers);
  c.num_heads = static_cast<int32_t>(heads);
  c.num_kv_heads = static_cast<int32_t>(kv_heads);
  c.vocab_size = static_cast<int32_t>(vocab);
  c.max_position_embeddings = static_cast<int32_t>(max_pos);
  c.head_dim = static_cast<int32_t>(head_dim);
  c.norm_eps = static_cast<float>(eps);
  c.rope_theta = theta;
  c.tie_word_embeddings = GetBool(j, "tie_word_embeddings", false);
  bool attention_bias = GetBool(j, "attention_bias", false);
  c.qkv_bias = attention_bias || c.architecture == "Qwen2ForCausalLM";
  c.out_proj_bias = attention_bias;
  c.mlp_bias = GetBool(j, "mlp_bias", false);
  if (j.contains("hidden_act") && j["hidden_act"].is_string()) c.hidden_act = j["hidden_act"];
  if (c.hidden_act != "silu") {
    return absl::InvalidArgumentError(absl::StrCat(src, ": hidden_act '", c.hidden_act,
                                                   "' is not supported for ", c.architecture));
  }
  auto rs = j.find("rope_scaling");
  if (rs != j.end() && !rs->is_null()) {
    return absl::UnimplementedError(
        absl::StrCat(src, ": rope_scaling ", rs->dump(), " is not supported yet"));
  }
  return absl::OkStatus();
}

absl::Status ParseGpt2(const json& j, const std::string& src, ModelConfig& c) {
  const ModelConfigBounds b;
  ORCA_ASSIGN_OR_RETURN(int64_t hidden, GetSize(j, "n_embd", -1, b.hidden_size, src));
  ORCA_ASSIGN_OR_RETURN(int64_t layers, GetSize(j, "n_layer", -1, b.layers, src));
  ORCA_ASSIGN_OR_RETURN(int64_t heads, GetSize(j, "n_head", -1, b.heads, src));
  ORCA_ASSIGN_OR_RETURN(int64_t vocab, GetSize(j, "vocab_size", -1, b.vocab_size, src));
  ORCA_ASSIGN_OR_RETURN(int64_t max_pos, GetSize(j, "n_positions", 1024, b.positions, src));
  ORCA_ASSIGN_OR_RETURN(int64_t inner, GetSize(j, "n_inner", 4 * hidden, b.intermediate_size, src));
  ORCA_ASSIGN_OR_RETURN(double eps,
                        GetReal(j, "layer_norm_epsilon", 1e-5, kMinNormEps, kMaxNormEps, src));
  ORCA_ASSIGN_OR_RETURN(int64_t head_dim, HeadDim(hidden, heads, "n_embd", "n_head", src));
  c.hidden_size = static_cast<int32_t>(hidden);
  c.num_layers = static_cast<int32_t>(layers);
  c.num_heads = static_cast<int32_t>(heads);
  c.num_kv_heads = c.num_heads;
  c.head_dim = static_cast<int32_t>(head_dim);
  c.vocab_size = static_cast<int32_t>(vocab);
  c.max_position_embeddings = static_cast<int32_t>(max_pos);
  c.intermediate_size = static_cast<int32_t>(inner);
  c.norm_eps = static_cast<float>(eps);
  c.tie_word_embeddings = true;
  c.qkv_bias = c.out_proj_bias = c.mlp_bias = true;
  c.hidden_act = "gelu_new";
  if (j.contains("activation_function") && j["activation_function"].is_string()) {
    c.hidden_act = j["activation_function"];
  }
  if (c.hidden_act != "gelu_new" && c.hidden_act != "gelu" && c.hidden_act != "gelu_pytorch_tanh") {
    return absl::InvalidArgumentError(
        absl::StrCat(src, ": activation_function '", c.hidden_act, "' is not supported"));
  }
  return absl::OkStatus();
}

absl::Status Validate(const ModelConfig& c, const std::string& src) {
  auto bad = [&](const std::string& what) {
    return absl::InvalidArgumentError(absl::StrCat(src, ": ", what));
  };
  if (c.hidden_size <= 0 || c.num_layers <= 0 || c.num_heads <= 0 || c.vocab_size <= 0 ||
      c.intermediate_size <= 0 || c.head_dim <= 0 || c.max_position_embeddings <= 0) {
    return bad("sizes must be positive");
  }
  if (c.num_kv_heads <= 0 || c.num_heads % c.num_kv_heads != 0) {
    return bad(absl::StrCat("num_attention_heads (", c.num_heads,
                            ") must be a multiple of num_key_value_heads (", c.num_kv_heads, ")"));
  }
  if (c.head_dim % 2 != 0) return bad("head_dim must be even");
  if (c.head_dim > 512) return bad("head_dim above 512 is not supported");
  if (!(c.norm_eps > 0) || !(c.rope_theta > 0)) return bad("eps and rope_theta must be positive");
  for (int32_t id : c.eos_token_ids) {
    if (id >= c.vocab_size) return bad(absl::StrCat("eos_token_id ", id, " >= vocab_size"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ModelConfig> ParseModelConfig(const std::string& json_text,
                                             const std::string& source) {
  json j = json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": not a JSON object"));
  }
  ModelConfig c;
  auto arch = j.find("architectures");
  if (arch != j.end() && arch->is_array() && !arch->empty() && (*arch)[0].is_string()) {
    c.architecture = (*arch)[0].get<std::string>();
  } else if (j.contains("model_type") && j["model_type"].is_string()) {
    std::string mt = j["model_type"];
    c.architecture = mt == "gpt2"    ? "GPT2LMHeadModel"
                     : mt == "qwen2" ? "Qwen2ForCausalLM"
                                     : "LlamaForCausalLM";
  } else {
    return absl::InvalidArgumentError(absl::StrCat(source, ": no 'architectures' field"));
  }
  if (c.architecture == "LlamaForCausalLM" || c.architecture == "MistralForCausalLM" ||
      c.architecture == "Qwen2ForCausalLM") {
    c.family = ModelFamily::kLlama;
    ORCA_RETURN_IF_ERROR(ParseLlama(j, source, c));
  } else if (c.architecture == "GPT2LMHeadModel") {
    c.family = ModelFamily::kGpt2;
    ORCA_RETURN_IF_ERROR(ParseGpt2(j, source, c));
  } else {
    return absl::UnimplementedError(absl::StrCat(
        source, ": architecture '", c.architecture,
        "' is not supported (supported: LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM, "
        "GPT2LMHeadModel)"));
  }
  if (j.contains("torch_dtype") && j["torch_dtype"].is_string()) {
    auto dt = ParseDType(j["torch_dtype"].get<std::string>());
    if (dt.ok()) c.dtype = *dt;
  }
  ORCA_ASSIGN_OR_RETURN(c.eos_token_ids, GetIdList(j, "eos_token_id", source));
  ORCA_ASSIGN_OR_RETURN(std::vector<int32_t> bos, GetIdList(j, "bos_token_id", source));
  if (!bos.empty()) c.bos_token_id = bos[0];
  ORCA_RETURN_IF_ERROR(Validate(c, source));
  return c;
}

absl::StatusOr<ModelConfig> LoadModelConfig(const std::string& dir) {
  std::string path = JoinPath(dir, "config.json");
  ORCA_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  ORCA_ASSIGN_OR_RETURN(ModelConfig c, ParseModelConfig(text, path));
  std::string gen_path = JoinPath(dir, "generation_config.json");
  if (FileExists(gen_path)) {
    ORCA_ASSIGN_OR_RETURN(std::string gen_text, ReadFile(gen_path));
    json g = json::parse(gen_text, nullptr, false);
    if (g.is_discarded() || !g.is_object()) {
      return absl::InvalidArgumentError(absl::StrCat(gen_path, ": not a JSON object"));
    }
    ORCA_ASSIGN_OR_RETURN(std::vector<int32_t> eos, GetIdList(g, "eos_token_id", gen_path));
    if (!eos.empty()) c.eos_token_ids = eos;
    ORCA_ASSIGN_OR_RETURN(std::vector<int32_t> bos, GetIdList(g, "bos_token_id", gen_path));
    if (!bos.empty()) c.bos_token_id = bos[0];
    ORCA_RETURN_IF_ERROR(Validate(c, gen_path));
  }
  return c;
}

std::string ModelConfigToJson(const ModelConfig& c) {
  json j;
  j["architectures"] = {c.architecture};
  j["vocab_size"] = c.vocab_size;
  j["torch_dtype"] = c.dtype == DType::kF32   ? "float32"
                     : c.dtype == DType::kF16 ? "float16"
                                              : "bfloat16";
  if (!c.eos_token_ids.empty()) {
    j["eos_token_id"] =
        c.eos_token_ids.size() == 1 ? json(c.eos_token_ids[0]) : json(c.eos_token_ids);
  }
  if (c.bos_token_id >= 0) j["bos_token_id"] = c.bos_token_id;
  if (c.family == ModelFamily::kGpt2) {
    j["model_type"] = "gpt2";
    j["n_embd"] = c.hidden_size;
    j["n_layer"] = c.num_layers;
    j["n_head"] = c.num_heads;
    j["n_positions"] = c.max_position_embeddings;
    j["n_inner"] = c.intermediate_size;
    j["layer_norm_epsilon"] = c.norm_eps;
    j["activation_function"] = c.hidden_act;
  } else {
    j["model_type"] = c.architecture == "Qwen2ForCausalLM" ? "qwen2" : "llama";
    j["hidden_size"] = c.hidden_size;
    j["intermediate_size"] = c.intermediate_size;
    j["num_hidden_layers"] = c.num_layers;
    j["num_attention_heads"] = c.num_heads;
    j["num_key_value_heads"] = c.num_kv_heads;
    j["head_dim"] = c.head_dim;
    j["max_position_embeddings"] = c.max_position_embeddings;
    j["rms_norm_eps"] = c.norm_eps;
    j["rope_theta"] = c.rope_theta;
    j["tie_word_embeddings"] = c.tie_word_embeddings;
    j["attention_bias"] = c.out_proj_bias;
    j["hidden_act"] = c.hidden_act;
  }
  return j.dump(2) + "\n";
}

int64_t CountLayerParameters(const ModelConfig& c) {
  const int64_t h = c.hidden_size, i = c.intermediate_size, d = c.head_dim;
  const int64_t q = c.num_heads * d, kv = c.num_kv_heads * d;
  if (c.family == ModelFamily::kGpt2) {
    return 4 * h + h * 3 * h + 3 * h + h * h + h + h * i + i + i * h + h;
  }
  int64_t per_layer = 2 * h + h * (q + 2 * kv) + q * h + 3 * h * i;
  if (c.qkv_bias) per_layer += q + 2 * kv;
  if (c.out_proj_bias) per_layer += h;
  return per_layer;
}

int64_t CountParameters(const ModelConfig& c) {
  const int64_t h = c.hidden_size, v = c.vocab_size;
  const int64_t layers = c.num_layers * CountLayerParameters(c);
  if (c.family == ModelFamily::kGpt2) {
    return v * h + int64_t{c.max_position_embeddings} * h + layers + 2 * h;
  }
  return v * h * (c.tie_word_embeddings ? 1 : 2) + layers + h;
}

}  // namespace orca
