// Random sentences of a guided-decoding automaton, for checking them with an
// independent validator (python3-jsonschema, Python's own parsers); random token walks
// that check a grammar's masks against one walk of the vocabulary's trie.
#pragma once

#include <algorithm>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "engine/guided/byte_automaton.h"
#include "engine/guided/grammar_automaton.h"
#include "engine/guided/token_guide.h"
#include "engine/tokenizer/tokenizer.h"
#include "tests/testutil/testutil.h"

namespace orca {

// Walks `dfa` from its start over random allowed bytes, stopping at an accepting state
// with probability 1/4 (or when nothing follows); sets *ok when it ended in a match
// within `max_bytes`.
inline std::string RandomWalk(const ByteAutomaton& dfa, std::mt19937& rng, bool* ok,
                              size_t max_bytes = 600) {
  std::string out;
  int32_t s = dfa.start();
  while (out.size() < max_bytes) {
    std::vector<int> bytes;
    for (int b = 0; b < 256; ++b) {
      if (dfa.Next(s, static_cast<uint8_t>(b)) != ByteAutomaton::kDead) bytes.push_back(b);
    }
    if (dfa.accepting(s) && (bytes.empty() || rng() % 4 == 0)) {
      *ok = true;
      return out;
    }
    if (bytes.empty()) break;
    const int b = bytes[rng() % bytes.size()];
    out.push_back(static_cast<char>(b));
    s = dfa.Next(s, static_cast<uint8_t>(b));
  }
  *ok = false;
  return out;
}

// Runs the Python `script` with the path of a file holding `cases` (JSON text) as its
// argument, both written to `dir`; returns its exit status and sets *output to what it
// printed (stdout and stderr).
inline int RunPythonCheck(const testing::TempDir& dir, const std::string& cases,
                          const std::string& script, std::string* output) {
  std::ofstream(dir.file("cases.json")) << cases;
  std::ofstream(dir.file("check.py")) << script;
  return testing::RunCommand(
      "/usr/bin/python3 " + dir.file("check.py") + " " + dir.file("cases.json") + " 2>&1", output);
}

// The vocabulary of the synthetic byte-level tokenizer `orca model random` writes (32,000
// tokens: the benchmarks' and the GPU figures'), made once.
inline std::shared_ptr<const TokenVocabulary> SyntheticVocabulary() {
  static const std::shared_ptr<const TokenVocabulary> vocab = [] {
    testing::TempDir dir;
    EXPECT_TRUE(WriteSyntheticTokenizer(dir.path(), 32000).ok());
    auto tok = Tokenizer::FromDirectory(dir.path());
    EXPECT_TRUE(tok.ok()) << tok.status();
    return tok.ok() ? TokenVocabulary::FromTokenizer(**tok)
                    : std::make_shared<const TokenVocabulary>(std::vector<std::string>{});
  }();
  return vocab;
}

// Walks `g` token by token from its start, `walks` times for up to `steps` tokens each,
// checking at every state that AllowTokens' mask (made from kept stack tops) equals one
// walk of the trie (AllowTokensByWalk), and that it allows something unless the output
// is complete. For the first half of a walk's steps it picks, when it can, a token with
// one of `deeper`'s bytes (so that outputs nest), and past a quarter of kMaxDepth one
// without.
// Returns the deepest stack reached.
inline size_t ExpectMasksEqualTheWalk(const GrammarAutomaton& g, const TokenVocabulary& vocab,
                                      std::mt19937& rng, int walks, int steps,
                                      std::string_view deeper, const std::string& name) {
  const size_t words = (static_cast<size_t>(vocab.size()) + 31) / 32;
  size_t deepest = 0;
  for (int walk = 0; walk < walks; ++walk) {
    int32_t s = g.start();
    std::string out;
    for (int step = 0; step < steps; ++step) {
      std::vector<uint32_t> kept(words, 0), walked(words, 0);
      g.AllowTokens(s, vocab, kept);
      g.AllowTokensByWalk(s, vocab, walked);
      std::vector<int32_t> allowed, nesting, flat;
      for (int32_t t = 0; t < vocab.size(); ++t) {
        const bool k = (kept[t / 32] >> (t % 32)) & 1, w = (walked[t / 32] >> (t % 32)) & 1;
        if (k != w) {
          ADD_FAILURE() << name << " after \"" << out << "\": token " << t << " \""
                        << vocab.bytes(t) << "\" " << (k ? "allowed" : "refused")
                        << " by the kept tops, " << (w ? "allowed" : "refused") << " by the walk";
          return deepest;
        }
        if (!k) continue;
        allowed.push_back(t);
        (vocab.bytes(t).find_first_of(deeper) != std::string::npos ? nesting : flat).push_back(t);
      }
      if (allowed.empty()) {
        EXPECT_TRUE(g.accepting(s) && !g.has_next(s)) << name << ": stuck after \"" << out << "\"";
        break;
      }
      const bool deep = g.depth(s) >= GrammarAutomaton::kMaxDepth / 4;
      const auto& from = deep && !flat.empty()                           ? flat
                         : !deep && step < steps / 2 && !nesting.empty() ? nesting
                                                                         : allowed;
      const int32_t t = from[rng() % from.size()];
      out += vocab.bytes(t);
      s = g.Walk(s, vocab.bytes(t));
      if (s == ByteAutomaton::kDead) {
        ADD_FAILURE() << name << ": allowed token \"" << vocab.bytes(t) << "\" died after \"" << out
                      << "\"";
        return deepest;
      }
      deepest = std::max(deepest, g.depth(s));
    }
  }
  return deepest;
}

}  // namespace orca
