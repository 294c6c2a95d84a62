#include "engine/tokenizer/internal/byte_level.h"

#include <array>
#include <vector>

#include "engine/tokenizer/internal/unicode.h"

namespace orca::tokenizer_internal {
namespace {

struct ByteTables {
  std::array<std::string, 256> byte_to_string;
  std::array<char32_t, 256> byte_to_cp;
  std::vector<int16_t> cp_to_byte;  // indexed by code point < 0x200, -1 when none

  ByteTables() : cp_to_byte(0x200, -1) {
    // Printable Latin-1 bytes stand for themselves; the rest are shifted to U+0100...
    // (the bytes_to_unicode() of openai/gpt-2's encoder.py).
    char32_t next_shifted = 0x100;
    for (int b = 0; b < 256; ++b) {
      const bool printable =
          (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      byte_to_cp[b] = printable ? static_cast<char32_t>(b) : next_shifted++;
      AppendUtf8(byte_to_cp[b], &byte_to_string[b]);
      cp_to_byte[byte_to_cp[b]] = static_cast<int16_t>(b);
    }
  }
};

const ByteTables& Tables() {
  static const ByteTables* tables = new ByteTables();
  return *tables;
}

}  // namespace

const std::string& ByteToUnicode(uint8_t b) { return Tables().byte_to_string[b]; }

std::optional<uint8_t> UnicodeToByte(char32_t code_point) {
  const ByteTables& t = Tables();
  if (code_point >= t.cp_to_byte.size() || t.cp_to_byte[code_point] < 0) return std::nullopt;
  return static_cast<uint8_t>(t.cp_to_byte[code_point]);
}

std::string BytesToUnicode(std::string_view bytes) {
  const ByteTables& t = Tables();
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) out += t.byte_to_string[static_cast<uint8_t>(c)];
  return out;
}

std::optional<std::string> UnicodeToBytes(std::string_view token) {
  std::string out;
  out.reserve(token.size());
  size_t pos = 0;
  while (pos < token.size()) {
    const Utf8Char c = DecodeUtf8(token, pos);
    if (!c.valid) return std::nullopt;
    const std::optional<uint8_t> b = UnicodeToByte(c.code_point);
    if (!b.has_value()) return std::nullopt;
    out.push_back(static_cast<char>(*b));
    pos += c.length;
  }
  return out;
}

}  // namespace orca::tokenizer_internal
