// The "decoder" of tokenizer.json: turns the token strings of a sequence of ids back
// into text. Immutable and thread-safe.
//
// Supported: null (tokens joined with spaces, as Hugging Face does), Sequence,
// ByteLevel, Replace (String pattern), ByteFallback, Fuse, Strip and Metaspace.
// Unlike Hugging Face, which turns every byte of an invalid byte-fallback run into
// U+FFFD, the steps keep raw bytes and Decode() repairs the final text once, replacing
// each maximal ill-formed subsequence. The result then depends only on the bytes, which
// lets a streaming detokenizer cut the id sequence anywhere.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace orca::tokenizer_internal {

class Decoder {
 public:
  // Builds the decoder from tokenizer.json's "decoder" value. Fails, naming `file`, on an
  // unsupported or malformed decoder.
  static absl::StatusOr<Decoder> FromJson(const nlohmann::json& config, const std::string& file);

  // Returns the valid UTF-8 text of `tokens` (vocabulary strings or added-token text).
  // With `repair` false the raw bytes come back, invalid UTF-8 included.
  std::string Decode(std::vector<std::string> tokens, bool repair = true) const;

 private:
  struct Step {
    enum class Kind { kByteLevel, kReplace, kByteFallback, kFuse, kStrip, kMetaspace } kind;
    std::string from, to;        // kReplace; kMetaspace: from = replacement
    std::string content;         // kStrip: the character stripped
    size_t start = 0, stop = 0;  // kStrip
    bool prepend = false;        // kMetaspace: drop the first token's replacements
  };
  static absl::Status Add(const nlohmann::json& config, const std::string& file,
                          std::vector<Step>* steps);

  bool has_decoder_ = false;
  std::vector<Step> steps_;
};

}  // namespace orca::tokenizer_internal
