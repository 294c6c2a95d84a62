// What a guided request asks the output to match: a pattern and how it is written.
// The engine's guide cache (token_guide.h) compiles each distinct one once.
#pragma once

#include <string>

namespace orca {

enum class GuideSyntax {
  kRegex,       // a regular expression (byte_dfa.h)
  kGbnf,        // a GBNF grammar (gbnf.h, grammar_automaton.h)
  kJsonSchema,  // a recursive JSON schema, run as a grammar (json_schema.h)
};

struct GuideSpec {
  std::string pattern;
  GuideSyntax syntax = GuideSyntax::kRegex;
};

}  // namespace orca
