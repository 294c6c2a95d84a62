// The parts of a checkpoint's tokenizer_config.json that orca uses.
#pragma once

#include <optional>
#include <string>

#include "absl/status/statusor.h"

namespace orca::tokenizer_internal {

struct TokenizerConfig {
  // Unset when the file does not say; the tokenizer then follows tokenizer.json's
  // post-processor (or, for tokenizer.model, SentencePiece's Llama convention).
  std::optional<bool> add_bos_token;
  std::optional<bool> add_eos_token;
  std::optional<std::string> bos_token;
  std::optional<std::string> eos_token;
  std::string chat_template;  // "" when absent
};

// Loads `dir`/tokenizer_config.json. A missing file yields an empty config. The chat
// template comes from "chat_template" (a string, or a list of {name, template} of which
// "default" is taken), else from chat_template.jinja or chat_template.json beside it.
// Fails with a Status naming the file when it is not JSON or a field has the wrong type.
absl::StatusOr<TokenizerConfig> LoadTokenizerConfig(const std::string& dir);

}  // namespace orca::tokenizer_internal
