#include "engine/tokenizer/internal/sentencepiece_normalizer.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/tokenizer/internal/absl_compat.h"
#include "engine/tokenizer/internal/unicode.h"

namespace orca::tokenizer_internal {
namespace {

constexpr std::string_view kReplacementUtf8 = "\xEF\xBF\xBD";

// Darts-clone's unit layout (darts.h, DoubleArrayUnit).
bool HasLeaf(uint32_t unit) { return ((unit >> 8) & 1) == 1; }
uint32_t Value(uint32_t unit) { return unit & ((1U << 31) - 1); }
uint32_t Label(uint32_t unit) { return unit & ((1U << 31) | 0xFF); }
uint32_t Offset(uint32_t unit) { return (unit >> 10) << ((unit & (1U << 9)) >> 6); }

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

}  // namespace

PieceMatcher::PieceMatcher(const std::vector<std::string_view>& pieces) {
  for (std::string_view piece : pieces) {
    if (piece.empty()) continue;
    uint32_t node = 0;
    for (char c : piece) {
      auto [it, inserted] =
          children_.try_emplace(Key(node, static_cast<uint8_t>(c)), terminal_.size());
      if (inserted) terminal_.push_back(false);
      node = it->second;
    }
    terminal_[node] = true;
  }
}

size_t PieceMatcher::LongestPrefix(std::string_view text) const {
  if (children_.empty()) return 0;
  size_t longest = 0;
  uint32_t node = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    auto it = children_.find(Key(node, static_cast<uint8_t>(text[i])));
    if (it == children_.end()) break;
    node = it->second;
    if (terminal_[node]) longest = i + 1;
  }
  return longest;
}

absl::StatusOr<SentencePieceNormalizer> SentencePieceNormalizer::Create(
    const SentencePieceModelProto::NormalizerSpec& spec, bool treat_whitespace_as_suffix,
    const std::string& file, std::string_view spec_name) {
  SentencePieceNormalizer n;
  n.add_dummy_prefix_ = spec.add_dummy_prefix;
  n.remove_extra_whitespaces_ = spec.remove_extra_whitespaces;
  n.escape_whitespaces_ = spec.escape_whitespaces;
  n.treat_whitespace_as_suffix_ = treat_whitespace_as_suffix;
  const std::string_view blob = spec.precompiled_charsmap;
  if (blob.empty()) return n;
  // <trie size: uint32 little-endian><double array: trie size bytes><NUL-terminated rewrites>
  auto broken = [&](absl::string_view what) {
    return absl::InvalidArgumentError(
        absl::StrCat(file, ": not a valid SentencePiece model: ", ToAbsl(spec_name),
                     ".precompiled_charsmap: ", what));
  };
  if (blob.size() <= 4) return broken("shorter than its header");
  uint32_t trie_size = 0;
  for (int i = 0; i < 4; ++i) trie_size |= uint32_t{static_cast<uint8_t>(blob[i])} << (8 * i);
  if (trie_size > blob.size() - 4) {
    return broken(absl::StrCat("trie of ", trie_size, " bytes in a blob of ", blob.size()));
  }
  if (trie_size % 4 != 0 || trie_size == 0) {
    return broken(absl::StrCat("trie size ", trie_size, " is not a positive multiple of 4"));
  }
  n.chars_map_.units.resize(trie_size / 4);
  for (size_t u = 0; u < n.chars_map_.units.size(); ++u) {
    uint32_t unit = 0;
    for (int i = 0; i < 4; ++i) {
      unit |= uint32_t{static_cast<uint8_t>(blob[4 + 4 * u + i])} << (8 * i);
    }
    n.chars_map_.units[u] = unit;
  }
  n.chars_map_.replacements = std::string(blob.substr(4 + trie_size));
  return n;
}

std::string_view SentencePieceNormalizer::LongestRule(std::string_view input,
                                                      size_t* length) const {
  // Darts-clone's commonPrefixSearch, with every index checked: the units come from the
  // file.
  *length = 0;
  std::string_view replacement;
  const std::vector<uint32_t>& units = chars_map_.units;
  if (units.empty()) return replacement;
  uint32_t pos = Offset(units[0]);
  for (size_t i = 0; i < input.size(); ++i) {
    const auto c = static_cast<uint8_t>(input[i]);
    pos ^= c;
    if (pos >= units.size()) break;
    const uint32_t unit = units[pos];
    if (Label(unit) != c) break;
    pos ^= Offset(unit);
    if (HasLeaf(unit)) {
      if (pos >= units.size()) break;
      const uint32_t value = Value(units[pos]);
      // A value outside the rewrites is ignored rather than read out of bounds.
      if (value < chars_map_.replacements.size()) {
        std::string_view rest = std::string_view(chars_map_.replacements).substr(value);
        replacement = rest.substr(0, rest.find('\0'));
        *length = i + 1;
      }
    }
  }
  return replacement;
}

std::pair<std::string_view, size_t> SentencePieceNormalizer::NormalizePrefix(
    std::string_view input, const PieceMatcher* user_defined) const {
  if (user_defined != nullptr) {
    if (const size_t length = user_defined->LongestPrefix(input); length > 0) {
      return {input.substr(0, length), length};
    }
  }
  size_t length = 0;
  std::string_view replacement = LongestRule(input, &length);
  if (length > 0) return {replacement, length};
  const Utf8Char c = DecodeUtf8(input, 0);
  if (!c.valid) return {kReplacementUtf8, 1};
  return {input.substr(0, c.length), static_cast<size_t>(c.length)};
}

// Follows libsentencepiece's Normalizer::Normalize, without the offset mapping.
std::string SentencePieceNormalizer::Normalize(std::string_view input,
                                               const PieceMatcher* user_defined) const {
  std::string normalized;
  if (remove_extra_whitespaces_) {
    while (!input.empty()) {
      const auto [rewrite, consumed] = NormalizePrefix(input, user_defined);
      if (rewrite != " ") break;
      input.remove_prefix(consumed);
    }
  }
  if (input.empty()) return normalized;
  normalized.reserve(input.size() * 3);
  const std::string_view space = escape_whitespaces_ ? kSpaceSymbol : " ";
  if (!treat_whitespace_as_suffix_ && add_dummy_prefix_) normalized += space;
  bool is_prev_space = remove_extra_whitespaces_;
  while (!input.empty()) {
    auto [rewrite, consumed] = NormalizePrefix(input, user_defined);
    // Drops the rewrite's leading spaces after a space.
    while (is_prev_space && !rewrite.empty() && rewrite.front() == ' ') rewrite.remove_prefix(1);
    if (!rewrite.empty()) {
      for (char c : rewrite) {
        if (escape_whitespaces_ && c == ' ') {
          normalized += kSpaceSymbol;
        } else {
          normalized.push_back(c);
        }
      }
      is_prev_space = rewrite.back() == ' ';
    }
    input.remove_prefix(consumed);
    if (!remove_extra_whitespaces_) is_prev_space = false;
  }
  if (remove_extra_whitespaces_) {
    while (EndsWith(normalized, space)) normalized.resize(normalized.size() - space.size());
  }
  if (treat_whitespace_as_suffix_ && add_dummy_prefix_) normalized += space;
  return normalized;
}

}  // namespace orca::tokenizer_internal
