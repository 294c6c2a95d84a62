// The "normalizer" of tokenizer.json: a sequence of text rewrites applied to each piece
// of input between added tokens. Immutable and thread-safe.
//
// Supported: Sequence, Prepend, Replace (String pattern), Strip, and NFC, which orca
// applies as the identity (input is assumed to be NFC already, as nearly all text is).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace orca::tokenizer_internal {

class Normalizer {
 public:
  // Builds the normalizer from tokenizer.json's "normalizer" value (null = none).
  // Fails, naming `file`, on an unsupported or malformed normalizer.
  static absl::StatusOr<Normalizer> FromJson(const nlohmann::json& config, const std::string& file);

  // Returns the normalized `text`.
  std::string Apply(std::string_view text) const;

 private:
  struct Step {
    enum class Kind { kPrepend, kReplace, kStrip } kind;
    std::string from;                  // kReplace: the pattern
    std::string to;                    // kPrepend: the prefix; kReplace: the replacement
    bool left = false, right = false;  // kStrip
  };
  static absl::Status Add(const nlohmann::json& config, const std::string& file,
                          std::vector<Step>* steps);

  std::vector<Step> steps_;
};

}  // namespace orca::tokenizer_internal
