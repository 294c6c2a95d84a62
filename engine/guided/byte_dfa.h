// A regular expression compiled to a deterministic automaton over UTF-8 bytes, for
// guided decoding (vLLM's `guided_regex` / `guided_choice`): the whole output must
// match, so the pattern is anchored at both ends.
//
// Supported syntax (what JSON-schema `pattern`s and choice lists need): literals (any
// UTF-8 text), escapes \d \w \s \D \W \S \t \n \r \f \v \0 \xHH \uHHHH and escaped
// punctuation, `.` (any code point but a newline), classes [a-z_], [^...] (negated
// classes hold ASCII only), groups ( ) and (?: ), alternation |, quantifiers * + ?
// {n} {n,} {n,m} (lazy forms accepted: only the language matters), ^ at the start and
// $ at the end. Anything else (backreferences, lookaround, named groups, \b) is
// refused with InvalidArgument naming it, never silently ignored.
//
// Dead states (from which no accepting state is reachable) are removed: every
// transition that exists can still lead to a match. Immutable after Compile; safe for
// concurrent use.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace orca {

class ByteDfa {
 public:
  static constexpr int32_t kDead = -1;
  // At most this many states, else Compile fails (a pattern such as (a|b)*a(a|b){20}
  // blows up under subset construction).
  static constexpr int32_t kMaxStates = 20000;

  static absl::StatusOr<ByteDfa> Compile(std::string_view pattern);

  int32_t start() const { return 0; }
  int32_t num_states() const { return static_cast<int32_t>(accepting_.size()); }
  // The state after reading `byte` in `state` (kDead when no match can follow).
  int32_t Next(int32_t state, uint8_t byte) const {
    return next_[static_cast<size_t>(state) * 256 + byte];
  }
  // The state after reading `bytes` from `state` (kDead as soon as one byte has none).
  int32_t Walk(int32_t state, std::string_view bytes) const;
  bool accepting(int32_t state) const { return accepting_[static_cast<size_t>(state)]; }
  // Whether any byte leads on from `state` (false: the match is complete).
  bool has_next(int32_t state) const { return has_next_[static_cast<size_t>(state)]; }
  // Whether the whole of `text` matches.
  bool Matches(std::string_view text) const;

 private:
  std::vector<int32_t> next_;  // [state * 256 + byte]
  std::vector<bool> accepting_, has_next_;
};

// Returns a pattern matching exactly one of `choices` (each escaped).
std::string ChoicePattern(const std::vector<std::string>& choices);

}  // namespace orca
