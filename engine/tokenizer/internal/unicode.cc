#include "engine/tokenizer/internal/unicode.h"

#include <algorithm>
#include <cstdint>
#include <iterator>

namespace orca::tokenizer_internal {
namespace {

struct CodePointRange {
  char32_t lo;
  char32_t hi;
};

#include "engine/tokenizer/internal/unicode_tables.inc"

template <size_t N>
bool InRanges(const CodePointRange (&ranges)[N], char32_t cp) {
  const CodePointRange* it =
      std::upper_bound(std::begin(ranges), std::end(ranges), cp,
                       [](char32_t value, const CodePointRange& r) { return value < r.lo; });
  if (it == std::begin(ranges)) return false;
  --it;
  return cp <= it->hi;
}

bool IsContinuation(unsigned char b) { return (b & 0xC0) == 0x80; }

}  // namespace

Utf8Char DecodeUtf8(std::string_view text, size_t pos) {
  constexpr Utf8Char kInvalid{kReplacementChar, 1, false};
  const auto b0 = static_cast<unsigned char>(text[pos]);
  if (b0 < 0x80) return {b0, 1, true};
  int length;
  char32_t cp;
  // The allowed range of the second byte narrows for E0, ED, F0 and F4 so that overlong
  // forms, surrogates and values above U+10FFFF are rejected (Unicode table 3-7).
  unsigned char lo = 0x80, hi = 0xBF;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    length = 2;
    cp = b0 & 0x1F;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    length = 3;
    cp = b0 & 0x0F;
    if (b0 == 0xE0) lo = 0xA0;
    if (b0 == 0xED) hi = 0x9F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    length = 4;
    cp = b0 & 0x07;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;
  } else {
    return kInvalid;
  }
  if (pos + length > text.size()) return kInvalid;  // truncated sequence
  for (int i = 1; i < length; ++i) {
    const auto b = static_cast<unsigned char>(text[pos + i]);
    if (i == 1 ? (b < lo || b > hi) : !IsContinuation(b)) return kInvalid;
    cp = (cp << 6) | (b & 0x3F);
  }
  return {cp, length, true};
}

std::string ToValidUtf8(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  size_t pos = 0;
  while (pos < bytes.size()) {
    const Utf8Char c = DecodeUtf8(bytes, pos);
    if (c.valid) {
      out.append(bytes.substr(pos, c.length));
      pos += c.length;
      continue;
    }
    // A maximal ill-formed subsequence is the longest prefix of a well-formed sequence
    // that is present: a valid lead byte followed by valid continuation bytes.
    size_t end = pos + 1;
    const auto b0 = static_cast<unsigned char>(bytes[pos]);
    int need = b0 >= 0xC2 && b0 <= 0xDF   ? 1
               : b0 >= 0xE0 && b0 <= 0xEF ? 2
               : b0 >= 0xF0 && b0 <= 0xF4 ? 3
                                          : 0;
    for (int i = 0; i < need && end < bytes.size(); ++i, ++end) {
      const auto b = static_cast<unsigned char>(bytes[end]);
      unsigned char lo = 0x80, hi = 0xBF;
      if (i == 0) {
        if (b0 == 0xE0) lo = 0xA0;
        if (b0 == 0xED) hi = 0x9F;
        if (b0 == 0xF0) lo = 0x90;
        if (b0 == 0xF4) hi = 0x8F;
      }
      if (b < lo || b > hi) break;
    }
    AppendUtf8(kReplacementChar, &out);
    pos = end;
  }
  return out;
}

bool IsValidUtf8(std::string_view bytes) {
  size_t pos = 0;
  while (pos < bytes.size()) {
    const Utf8Char c = DecodeUtf8(bytes, pos);
    if (!c.valid) return false;
    pos += c.length;
  }
  return true;
}

bool IsLetter(char32_t cp) {
  if (cp < 0x80) return (cp | 0x20) >= 'a' && (cp | 0x20) <= 'z';
  return InRanges(kLetterRanges, cp);
}

bool IsNumber(char32_t cp) {
  if (cp < 0x80) return cp >= '0' && cp <= '9';
  return InRanges(kNumberRanges, cp);
}

bool IsWhitespace(char32_t cp) {
  switch (cp) {
    case 0x09:
    case 0x0A:
    case 0x0B:
    case 0x0C:
    case 0x0D:
    case 0x20:
    case 0x85:
    case 0xA0:
    case 0x1680:
    case 0x2028:
    case 0x2029:
    case 0x202F:
    case 0x205F:
    case 0x3000:
      return true;
    default:
      return cp >= 0x2000 && cp <= 0x200A;
  }
}

int ParseByteToken(std::string_view token) {
  if (token.size() != 6 || token.substr(0, 3) != "<0x" || token[5] != '>') return -1;
  int value = 0;
  for (char c : token.substr(3, 2)) {
    int digit;
    if (c >= '0' && c <= '9') {
      digit = c - '0';
    } else if (c >= 'A' && c <= 'F') {
      digit = c - 'A' + 10;
    } else {
      return -1;
    }
    value = value * 16 + digit;
  }
  return value;
}

}  // namespace orca::tokenizer_internal
