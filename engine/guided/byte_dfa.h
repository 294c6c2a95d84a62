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
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/guided/byte_automaton.h"
#include "engine/guided/gbnf.h"

namespace orca {

class ByteDfa final : public ByteAutomaton {
 public:
  // At most this many states, else Compile fails (a pattern such as (a|b)*a(a|b){20}
  // blows up under subset construction).
  static constexpr int32_t kMaxStates = 20000;

  static absl::StatusOr<ByteDfa> Compile(std::string_view pattern);

  int32_t start() const override { return 0; }
  int32_t num_states() const { return static_cast<int32_t>(accepting_.size()); }
  // The state after reading `byte` in `state` (kDead when no match can follow).
  int32_t Next(int32_t state, uint8_t byte) const override {
    return next_[static_cast<size_t>(state) * 256 + byte];
  }
  bool accepting(int32_t state) const override { return accepting_[static_cast<size_t>(state)]; }
  // Whether any byte leads on from `state` (false: the match is complete).
  bool has_next(int32_t state) const override { return has_next_[static_cast<size_t>(state)]; }

 private:
  std::vector<int32_t> next_;  // [state * 256 + byte]
  std::vector<bool> accepting_, has_next_;
};

// A pattern as the body of a grammar rule (grammar_automaton.h), with rule calls
// `(?&name)` (PCRE's subroutine syntax; ByteDfa::Compile refuses them) as references:
// how a recursive JSON schema becomes a grammar (json_schema.h).
absl::StatusOr<GbnfNode> RegexToGbnf(std::string_view pattern);

// Returns a pattern matching exactly `text` (its metacharacters escaped).
std::string RegexLiteral(std::string_view text);

// Returns a pattern matching exactly one of `choices` (each escaped).
std::string ChoicePattern(const std::vector<std::string>& choices);

}  // namespace orca
