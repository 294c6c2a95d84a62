// The "pre_tokenizer" of tokenizer.json: splits normalized text into words that the BPE
// model encodes independently. Immutable and thread-safe.
//
// Supported: null (one word), Sequence, ByteLevel (add_prefix_space, use_regex with the
// GPT-2 pattern), Split (a Regex pattern that split_pattern.h recognises, behavior
// "Isolated", invert false) and Metaspace (replacement, prepend_scheme or the older
// add_prefix_space, split).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/tokenizer/internal/split_pattern.h"
#include "nlohmann/json.hpp"

namespace orca::tokenizer_internal {

class PreTokenizer {
 public:
  // Builds the pre-tokenizer from tokenizer.json's "pre_tokenizer" value (null = none).
  // Fails, naming `file`, on an unsupported type, an unknown regex or a malformed entry.
  static absl::StatusOr<PreTokenizer> FromJson(const nlohmann::json& config,
                                               const std::string& file);

  // Returns the words of `text`, in the model's alphabet (byte-level pre-tokenizers map
  // bytes to their characters). `at_text_start` says whether `text` begins the input,
  // which Metaspace's prepend_scheme "first" needs.
  std::vector<std::string> Apply(std::string_view text, bool at_text_start) const;

  // Returns true when a ByteLevel step maps bytes to characters.
  bool byte_level() const;

 private:
  struct Step {
    enum class Kind { kByteLevel, kSplit, kMetaspace } kind;
    bool add_prefix_space = false;               // kByteLevel
    bool use_regex = false;                      // kByteLevel
    SplitPattern pattern = SplitPattern::kGpt2;  // kSplit
    std::string replacement;                     // kMetaspace
    enum class Prepend { kAlways, kFirst, kNever } prepend = Prepend::kAlways;
    bool split = false;  // kMetaspace
  };
  static absl::Status Add(const nlohmann::json& config, const std::string& file,
                          std::vector<Step>* steps);

  std::vector<Step> steps_;
};

}  // namespace orca::tokenizer_internal
