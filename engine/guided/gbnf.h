// GBNF grammars (llama.cpp's notation, also read by xgrammar and llguidance), parsed
// into rules for the guided decoder's pushdown automaton (grammar_automaton.h): vLLM's
// `guided_grammar`.
//
// Syntax: rules `name ::= alternatives` (names of letters, digits, '-' and '_'; a rule
// runs until the next `name ::=`, so alternatives may continue on new lines), `root` the
// start; alternatives `a | b`; sequences of "literals" (escapes \n \r \t \\ \" \' \[ \]
// \xHH \uHHHH \UHHHHHHHH), [classes] ([^...] negated, ranges a-z, the same escapes), `.`
// (any character), rule references, ( groups ), each followed by at most one of * + ?
// {m} {m,} {m,n}; `#` comments.
//
// Errors are InvalidArgument naming the line and column: syntax errors, a rule defined
// twice, a reference to an undefined rule, no `root`. Pure; thread-safe.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/guided/utf8_ranges.h"

namespace orca {

struct GbnfNode {
  enum Kind { kLiteral, kClass, kRef, kSeq, kAlt, kRepeat };
  explicit GbnfNode(Kind k, std::string t = "") : kind(k), text(std::move(t)) {}
  Kind kind;
  std::string text;             // kLiteral: its bytes (UTF-8); kRef: the rule's name
  CodeRanges chars;             // kClass (and `.`): the code points it matches, normalized
  std::vector<GbnfNode> kids;   // kSeq: items in order; kAlt: alternatives; kRepeat: one
  int min = 0, max = -1;        // kRepeat: {min, max}; max -1 = unbounded
  size_t line = 0, column = 0;  // kRef: where it is used
};

// Rules by name; every reference resolves and `root` is among them.
using GbnfRules = std::map<std::string, GbnfNode>;

absl::StatusOr<GbnfRules> ParseGbnf(std::string_view grammar);

}  // namespace orca
