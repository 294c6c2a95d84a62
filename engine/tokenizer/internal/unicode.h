// UTF-8 and Unicode-category helpers for the tokenizer. Pure functions, thread-safe.
//
// Text handed to the tokenizer is arbitrary bytes; these helpers never fail on invalid
// UTF-8: a byte that does not start a well-formed sequence is reported as a one-byte
// "invalid" character.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "engine/common/utf8.h"

namespace orca::tokenizer_internal {

inline constexpr char32_t kReplacementChar = 0xFFFD;

struct Utf8Char {
  char32_t code_point;  // kReplacementChar when !valid
  int length;           // bytes consumed, >= 1 (1 for an invalid byte)
  bool valid;
};

// Decodes the UTF-8 character starting at `text[pos]` (pos < text.size()). Overlong
// forms, surrogates and code points above U+10FFFF are invalid.
Utf8Char DecodeUtf8(std::string_view text, size_t pos);

using ::orca::AppendUtf8;  // engine/common/utf8.h

// Returns the byte of a byte-fallback token "<0xNN>" (upper-case hex, as both
// libsentencepiece and tokenizer.json write it), or -1 for any other string.
int ParseByteToken(std::string_view token);

// Returns `bytes` with every maximal ill-formed subsequence replaced by U+FFFD (the
// policy of Rust's String::from_utf8_lossy and Python's errors="replace").
std::string ToValidUtf8(std::string_view bytes);

// Returns true when `bytes` is well-formed UTF-8.
bool IsValidUtf8(std::string_view bytes);

// Unicode general category L* (\p{L}).
bool IsLetter(char32_t code_point);
// Unicode general category N* (\p{N}).
bool IsNumber(char32_t code_point);
// Unicode White_Space property (\s of Oniguruma and Rust regex).
bool IsWhitespace(char32_t code_point);

}  // namespace orca::tokenizer_internal
