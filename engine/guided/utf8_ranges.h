// Sets of Unicode code points and their UTF-8 encodings as byte ranges: what the
// guided decoder's automata (byte_dfa.h, grammar_automaton.h) read their character
// classes into. Pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace orca {

inline constexpr uint32_t kMaxCodePoint = 0x10FFFF;

// A set of code points as sorted, disjoint, non-adjacent ranges.
using CodeRanges = std::vector<std::pair<uint32_t, uint32_t>>;
// One inclusive byte range per position of a UTF-8 sequence.
using ByteRanges = std::vector<std::pair<uint8_t, uint8_t>>;

// Sorts and merges overlapping or adjacent ranges.
CodeRanges Normalize(CodeRanges r);
// Every code point (up to kMaxCodePoint) not in the normalized `r`.
CodeRanges Complement(const CodeRanges& r);
// Removes the surrogates, which UTF-8 cannot encode.
CodeRanges WithoutSurrogates(const CodeRanges& r);
// The UTF-8 encoding of `cp`.
std::string Utf8(uint32_t cp);
// Splits the code points [lo, hi] (no surrogates) into byte-range sequences whose
// cross products are exactly their UTF-8 encodings; appends them to `out`.
void Utf8Sequences(uint32_t lo, uint32_t hi, std::vector<ByteRanges>& out);

}  // namespace orca
