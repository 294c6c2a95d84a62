#include "engine/tokenizer/internal/split_pattern.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "engine/tokenizer/internal/unicode.h"

namespace orca::tokenizer_internal {
namespace {

constexpr std::string_view kGpt2Regex =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
constexpr std::string_view kLlama3Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kQwen2Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

enum class CharClass : uint8_t { kLetter, kNumber, kSpace, kOther };

struct Char {
  char32_t cp;
  size_t pos;  // byte offset in the text
  CharClass cls;
};

// The text as characters, with accessors that answer "no" past the end.
class CharText {
 public:
  explicit CharText(std::string_view text) : size_bytes_(text.size()) {
    chars_.reserve(text.size());
    size_t pos = 0;
    while (pos < text.size()) {
      const Utf8Char c = DecodeUtf8(text, pos);
      CharClass cls = CharClass::kOther;
      if (c.valid) {
        if (IsLetter(c.code_point)) {
          cls = CharClass::kLetter;
        } else if (IsNumber(c.code_point)) {
          cls = CharClass::kNumber;
        } else if (IsWhitespace(c.code_point)) {
          cls = CharClass::kSpace;
        }
      }
      // An invalid byte keeps its own value outside the code point range, so that it
      // never compares equal to an ASCII character.
      chars_.push_back({c.valid ? c.code_point : 0x110000u, pos, cls});
      pos += c.length;
    }
  }

  size_t size() const { return chars_.size(); }
  size_t ByteOffset(size_t i) const { return i < chars_.size() ? chars_[i].pos : size_bytes_; }
  char32_t Cp(size_t i) const { return i < chars_.size() ? chars_[i].cp : 0xFFFFFFFFu; }
  bool Is(size_t i, CharClass cls) const { return i < chars_.size() && chars_[i].cls == cls; }
  bool IsCrLf(size_t i) const { return Cp(i) == '\r' || Cp(i) == '\n'; }

  // Returns the end of the run of class `cls` starting at `i`.
  size_t RunEnd(size_t i, CharClass cls) const {
    while (Is(i, cls)) ++i;
    return i;
  }
  size_t CrLfRunEnd(size_t i) const {
    while (IsCrLf(i)) ++i;
    return i;
  }

 private:
  std::vector<Char> chars_;
  size_t size_bytes_;
};

char32_t AsciiLower(char32_t c) { return c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c; }

// Matches 's|'t|'re|'ve|'m|'ll|'d at `i`; returns the match length in characters or 0.
size_t MatchContraction(const CharText& t, size_t i, bool ignore_case) {
  if (t.Cp(i) != '\'') return 0;
  auto at = [&](size_t k) { return ignore_case ? AsciiLower(t.Cp(k)) : t.Cp(k); };
  const char32_t a = at(i + 1);
  if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
  const char32_t b = at(i + 2);
  if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
  return 0;
}

// The tail shared by all three patterns: \s+(?!\S)|\s+ at a whitespace character `i`.
size_t MatchTrailingWhitespace(const CharText& t, size_t i) {
  const size_t end = t.RunEnd(i, CharClass::kSpace);
  // \s+ is greedy; (?!\S) fails when a non-space follows, so the regex backs off one
  // character (which is whitespace, satisfying the lookahead) if it can.
  if (end == t.size() || end - i < 2) return end - i;
  return end - i - 1;
}

size_t MatchGpt2(const CharText& t, size_t i) {
  if (size_t n = MatchContraction(t, i, /*ignore_case=*/false)) return n;
  const size_t j = t.Cp(i) == ' ' ? i + 1 : i;
  for (CharClass cls : {CharClass::kLetter, CharClass::kNumber, CharClass::kOther}) {
    if (t.Is(j, cls)) return t.RunEnd(j, cls) - i;
  }
  return MatchTrailingWhitespace(t, i);
}

size_t MatchLlama3(const CharText& t, size_t i, size_t max_digits) {
  if (size_t n = MatchContraction(t, i, /*ignore_case=*/true)) return n;
  // [^\r\n\p{L}\p{N}]?\p{L}+
  if (!t.Is(i, CharClass::kLetter) && !t.Is(i, CharClass::kNumber) && !t.IsCrLf(i) &&
      t.Is(i + 1, CharClass::kLetter)) {
    return t.RunEnd(i + 1, CharClass::kLetter) - i;
  }
  if (t.Is(i, CharClass::kLetter)) return t.RunEnd(i, CharClass::kLetter) - i;
  // \p{N}{1,max_digits}
  if (t.Is(i, CharClass::kNumber)) {
    return std::min(t.RunEnd(i, CharClass::kNumber) - i, max_digits);
  }
  // ` ?[^\s\p{L}\p{N}]+[\r\n]*`
  const size_t j = t.Cp(i) == ' ' ? i + 1 : i;
  if (t.Is(j, CharClass::kOther)) return t.CrLfRunEnd(t.RunEnd(j, CharClass::kOther)) - i;
  // Only whitespace is left. \s*[\r\n]+: \s* backs off to the last CR/LF of the run.
  const size_t end = t.RunEnd(i, CharClass::kSpace);
  for (size_t k = end; k > i; --k) {
    if (t.IsCrLf(k - 1)) return k - i;
  }
  return MatchTrailingWhitespace(t, i);
}

}  // namespace

std::optional<SplitPattern> RecognizeSplitPattern(std::string_view regex) {
  for (SplitPattern p : {SplitPattern::kGpt2, SplitPattern::kLlama3, SplitPattern::kQwen2}) {
    if (regex == SplitPatternRegex(p)) return p;
  }
  return std::nullopt;
}

std::string_view SplitPatternRegex(SplitPattern pattern) {
  switch (pattern) {
    case SplitPattern::kGpt2:
      return kGpt2Regex;
    case SplitPattern::kLlama3:
      return kLlama3Regex;
    case SplitPattern::kQwen2:
      return kQwen2Regex;
  }
  return {};
}

std::vector<std::string_view> SplitByPattern(SplitPattern pattern, std::string_view text) {
  const CharText t(text);
  std::vector<std::string_view> pieces;
  size_t i = 0;
  while (i < t.size()) {
    size_t n = 0;
    switch (pattern) {
      case SplitPattern::kGpt2:
        n = MatchGpt2(t, i);
        break;
      case SplitPattern::kLlama3:
        n = MatchLlama3(t, i, 3);
        break;
      case SplitPattern::kQwen2:
        n = MatchLlama3(t, i, 1);
        break;
    }
    n = std::max<size_t>(n, 1);  // defensive: the patterns match every character
    const size_t begin = t.ByteOffset(i);
    pieces.push_back(text.substr(begin, t.ByteOffset(i + n) - begin));
    i += n;
  }
  return pieces;
}

}  // namespace orca::tokenizer_internal
