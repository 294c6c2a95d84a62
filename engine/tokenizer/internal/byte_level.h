// GPT-2's reversible map between bytes and printable characters, used by byte-level BPE
// ("Ġ" stands for the space byte). Thread-safe; the tables are built once.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace orca::tokenizer_internal {

// Returns the UTF-8 encoding of the character that stands for byte `b`.
const std::string& ByteToUnicode(uint8_t b);

// Returns the byte that character `code_point` stands for, or nullopt.
std::optional<uint8_t> UnicodeToByte(char32_t code_point);

// Maps every byte of `bytes` to its character.
std::string BytesToUnicode(std::string_view bytes);

// Maps the characters of `token` back to bytes. Returns nullopt when some character is
// not one of the 256 byte characters (e.g. an added token's text).
std::optional<std::string> UnicodeToBytes(std::string_view token);

}  // namespace orca::tokenizer_internal
