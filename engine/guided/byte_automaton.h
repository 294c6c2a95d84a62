// What the guided decoder (token_guide.h) needs of an automaton over output bytes: a
// start state, a transition per byte that is kDead unless a match can still follow, and
// whether a state matches or may go on. Two implement it: ByteDfa (regular
// expressions, compiled ahead) and GrammarAutomaton (context-free grammars, states made
// as they are reached). Implementations are safe for concurrent use.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace orca {

class TokenVocabulary;  // token_guide.h

class ByteAutomaton {
 public:
  static constexpr int32_t kDead = -1;

  virtual ~ByteAutomaton() = default;
  virtual int32_t start() const = 0;
  // The state after reading `byte` in `state` (kDead when no match can follow).
  virtual int32_t Next(int32_t state, uint8_t byte) const = 0;
  // Whether the bytes read so far match.
  virtual bool accepting(int32_t state) const = 0;
  // Whether any byte leads on from `state` (false: the match is complete).
  virtual bool has_next(int32_t state) const = 0;

  // The state after reading `bytes` from `state` (kDead as soon as one byte has none).
  virtual int32_t Walk(int32_t state, std::string_view bytes) const {
    for (char c : bytes) {
      if (state == kDead) return kDead;
      state = Next(state, static_cast<uint8_t>(c));
    }
    return state;
  }
  // Sets bit t (mask[t / 32] >> (t % 32)) for every token t of `vocab` whose bytes may
  // follow `state`: one walk of the vocabulary's trie that drops every subtree the
  // automaton cannot continue (`mask` is first grown to the vocabulary's
  // ceil(size / 32) words if it is shorter; bits already set stay). The default follows
  // Next (token_guide.cc); an automaton that makes its states as they are reached walks
  // without making any.
  virtual void AllowTokens(int32_t state, const TokenVocabulary& vocab,
                           std::vector<uint32_t>& mask) const;
  // Whether the automaton can make no more states (only one that makes them lazily).
  virtual bool exhausted() const { return false; }
  // Whether the whole of `text` matches.
  bool Matches(std::string_view text) const {
    const int32_t s = Walk(start(), text);
    return s != kDead && accepting(s);
  }
};

}  // namespace orca
