// UTF-8 encoding and validation shared by the tokenizer, the chat-template interpreter
// and the YAML readers. Pure.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace orca {

// Appends the UTF-8 encoding of code point `cp` (<= U+10FFFF) to `out`.
inline void AppendUtf8(char32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

// What a UTF-8 sequence's first byte says: its length (1 to 4; 0 when no well-formed
// sequence starts with it) and the range its second byte must fall in (Unicode Table
// 3-7: no overlong forms, surrogates or code points above U+10FFFF); later bytes are
// 0x80-0xBF.
struct Utf8Lead {
  size_t length = 0;
  unsigned char lo = 0x80, hi = 0xBF;
};
inline Utf8Lead Utf8LeadByte(unsigned char b0) {
  Utf8Lead lead;
  if (b0 < 0x80) {
    lead.length = 1;
  } else if (b0 >= 0xC2 && b0 <= 0xDF) {
    lead.length = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    lead.length = 3;
    if (b0 == 0xE0) lead.lo = 0xA0;
    if (b0 == 0xED) lead.hi = 0x9F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    lead.length = 4;
    if (b0 == 0xF0) lead.lo = 0x90;
    if (b0 == 0xF4) lead.hi = 0x8F;
  }
  return lead;
}

// Returns the length (1 to 4) of the well-formed UTF-8 sequence at `bytes[i]` and its
// code point in `*cp`, or 0 when none starts there (Unicode Table 3-7: no overlong forms,
// surrogates or code points above U+10FFFF, no truncated sequences).
inline size_t DecodeUtf8At(std::string_view bytes, size_t i, char32_t* cp) {
  const auto b0 = static_cast<unsigned char>(bytes[i]);
  if (b0 < 0x80) {
    *cp = b0;
    return 1;
  }
  const auto [length, lo, hi] = Utf8LeadByte(b0);
  if (length == 0 || bytes.size() - i < length) return 0;
  char32_t value = b0 & (0x7F >> length);
  for (size_t k = 1; k < length; ++k) {
    const auto b = static_cast<unsigned char>(bytes[i + k]);
    if (b < (k == 1 ? lo : 0x80) || b > (k == 1 ? hi : 0xBF)) return 0;
    value = (value << 6) | (b & 0x3F);
  }
  *cp = value;
  return length;
}

// Returns the offset of the first byte of `bytes` that does not begin a well-formed
// UTF-8 sequence, or std::string_view::npos when all of `bytes` is well-formed UTF-8.
inline size_t FindInvalidUtf8(std::string_view bytes) {
  char32_t cp = 0;
  for (size_t i = 0; i < bytes.size();) {
    const size_t length = DecodeUtf8At(bytes, i, &cp);
    if (length == 0) return i;
    i += length;
  }
  return std::string_view::npos;
}

// Returns the offset of the first character of `text` that a YAML 1.2 stream may not
// hold (5.1, c-printable: ill-formed UTF-8, C0 controls but tab, line feed and carriage
// return, DEL, C1 controls but NEL, U+FFFE, U+FFFF), or std::string_view::npos. Such
// characters must be written as escapes; yaml-cpp mangles some of them (NUL) into
// bytes that are not UTF-8 instead of refusing them.
inline size_t FindNonPrintableYaml(std::string_view text) {
  char32_t cp = 0;
  for (size_t i = 0; i < text.size();) {
    const size_t length = DecodeUtf8At(text, i, &cp);
    const bool printable = cp == 0x09 || cp == 0x0A || cp == 0x0D || (cp >= 0x20 && cp <= 0x7E) ||
                           cp == 0x85 || (cp >= 0xA0 && cp <= 0xFFFD) || cp >= 0x10000;
    if (length == 0 || !printable) return i;
    i += length;
  }
  return std::string_view::npos;
}

}  // namespace orca
