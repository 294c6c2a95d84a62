// The pre-tokenizer regexes of byte-level BPE tokenizers, as hand-written matchers.
//
// Rather than embedding a general regex engine, orca recognises the few patterns that
// tokenizer.json files use and matches them with code that mirrors the regex's
// leftmost-alternative, greedy-with-backtracking semantics. \p{L}, \p{N} and \s use the
// Unicode tables of unicode.h. Bytes that are not valid UTF-8 count as one character
// outside \p{L}, \p{N} and \s. Pure functions, thread-safe.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

namespace orca::tokenizer_internal {

enum class SplitPattern {
  // 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
  kGpt2,
  // (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
  //   ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
  kLlama3,
  // As kLlama3 with \p{N} instead of \p{N}{1,3}.
  kQwen2,
};

// Returns the pattern whose regex source is exactly `regex`, or nullopt when orca has
// no matcher for it.
std::optional<SplitPattern> RecognizeSplitPattern(std::string_view regex);

// Returns the regex source of `pattern`.
std::string_view SplitPatternRegex(SplitPattern pattern);

// Splits `text` into the consecutive matches of `pattern`. Every character of `text`
// is matched by one of the patterns' alternatives, so the pieces cover `text` exactly
// and none is empty.
std::vector<std::string_view> SplitByPattern(SplitPattern pattern, std::string_view text);

}  // namespace orca::tokenizer_internal
