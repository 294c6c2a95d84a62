// SentencePiece's text normalizer, as libsentencepiece applies a model's NormalizerSpec
// before encoding: the precompiled character map (a Darts double-array trie of rewrite
// rules, e.g. nmt_nfkc), remove_extra_whitespaces, add_dummy_prefix and whitespace
// escaping to U+2581. Immutable after Create() and thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "engine/tokenizer/internal/sentencepiece_model_proto.h"

namespace orca::tokenizer_internal {

inline constexpr std::string_view kSpaceSymbol = "\xE2\x96\x81";  // U+2581

// Longest-prefix matching over a set of strings (SentencePiece's user-defined pieces,
// which are neither normalized nor split). Immutable and thread-safe.
class PieceMatcher {
 public:
  PieceMatcher() = default;
  explicit PieceMatcher(const std::vector<std::string_view>& pieces);

  // Returns the length of the longest string of the set that `text` starts with, or 0.
  size_t LongestPrefix(std::string_view text) const;

 private:
  static uint64_t Key(uint32_t node, uint8_t byte) { return (uint64_t{node} << 8) | byte; }

  absl::flat_hash_map<uint64_t, uint32_t> children_;  // trie edges; node 0 is the root
  std::vector<bool> terminal_{false};                 // per node: a string ends here
};

class SentencePieceNormalizer {
 public:
  // A normalizer with NormalizerSpec's defaults and no character map.
  SentencePieceNormalizer() = default;

  // Builds the normalizer of `spec`. `treat_whitespace_as_suffix` (TrainerSpec) moves the
  // dummy space to the end. Fails with InvalidArgument naming `file` and `spec_name` when
  // the precompiled character map is malformed.
  static absl::StatusOr<SentencePieceNormalizer> Create(
      const SentencePieceModelProto::NormalizerSpec& spec, bool treat_whitespace_as_suffix,
      const std::string& file, std::string_view spec_name);

  // Returns the normalized `input`. Strings of `user_defined` (may be null) are copied
  // unchanged but for whitespace escaping; bytes that are not valid UTF-8 become U+FFFD,
  // one per byte, as libsentencepiece does.
  std::string Normalize(std::string_view input, const PieceMatcher* user_defined) const;

 private:
  // A Darts-clone double array: the trie of the character map.
  struct CharsMap {
    std::vector<uint32_t> units;
    std::string replacements;  // NUL-terminated strings the units' values point into
  };

  // Returns the rewrite of the longest rule prefix of `input` and the bytes it consumes
  // (>= 1 for a non-empty input).
  std::pair<std::string_view, size_t> NormalizePrefix(std::string_view input,
                                                      const PieceMatcher* user_defined) const;
  // Returns the replacement of the longest rule `input` starts with and sets `*length`,
  // or sets `*length` to 0.
  std::string_view LongestRule(std::string_view input, size_t* length) const;

  CharsMap chars_map_;
  bool add_dummy_prefix_ = true;
  bool remove_extra_whitespaces_ = true;
  bool escape_whitespaces_ = true;
  bool treat_whitespace_as_suffix_ = false;
};

}  // namespace orca::tokenizer_internal
