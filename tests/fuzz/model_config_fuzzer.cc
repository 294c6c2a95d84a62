// Fuzzes config.json (engine/model/model_config.h: ParseModelConfig).
//
// A configuration the parser accepts must survive its own writer: ModelConfigToJson's
// output parses again to the same configuration (the checkpoint inspector and
// `orca model random` rely on the round trip). CountParameters must not overflow
// (UBSan) for any accepted configuration.

#include <cstddef>
#include <cstdint>
#include <cstdio>

#include "engine/model/model_config.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

bool SameConfig(const orca::ModelConfig& a, const orca::ModelConfig& b) {
  return a.architecture == b.architecture && a.family == b.family && a.vocab_size == b.vocab_size &&
         a.hidden_size == b.hidden_size && a.intermediate_size == b.intermediate_size &&
         a.num_layers == b.num_layers && a.num_heads == b.num_heads &&
         a.num_kv_heads == b.num_kv_heads && a.head_dim == b.head_dim &&
         a.max_position_embeddings == b.max_position_embeddings && a.norm_eps == b.norm_eps &&
         a.rope_theta == b.rope_theta && a.tie_word_embeddings == b.tie_word_embeddings &&
         a.qkv_bias == b.qkv_bias && a.out_proj_bias == b.out_proj_bias &&
         a.mlp_bias == b.mlp_bias && a.hidden_act == b.hidden_act && a.dtype == b.dtype &&
         a.eos_token_ids == b.eos_token_ids && a.bos_token_id == b.bos_token_id;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto config = orca::ParseModelConfig(orca::fuzz::AsString(data, size), "config.json");
  if (!config.ok()) return 0;
  (void)orca::CountParameters(*config);
  const std::string written = orca::ModelConfigToJson(*config);
  auto again = orca::ParseModelConfig(written, "written config.json");
  if (!again.ok() || !SameConfig(*config, *again)) {
    std::fprintf(stderr, "config.json does not round-trip: %s\nwritten:\n%s\n",
                 again.ok() ? "fields differ" : std::string(again.status().message()).c_str(),
                 written.c_str());
    __builtin_trap();
  }
  return 0;
}
