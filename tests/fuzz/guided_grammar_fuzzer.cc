// Fuzzes the GBNF grammar reader and its pushdown automaton (engine/guided/gbnf.h,
// grammar_automaton.h), which take `guided_grammar` from any client: input = the
// grammar, compiled as the server does, then walked.
//
// The contract checked besides "no crash, no hang, no blow-up": a refused grammar is
// InvalidArgument; a walk from the start over the highest allowed byte of each state
// (up to 256 steps) only visits states that match or have a byte that leads on (unless
// nesting nears kMaxDepth, where continuations are cut off), and the states made stay
// within kMaxStates. At a few states of the walk, over a small vocabulary (every printable
// character and runs of brackets, quotes and separators): every token the mask allows
// (made from kept stack tops) leads on, and every token one walk of the trie allows is in
// it (unless that walk ran out of its budget).

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/guided/grammar_automaton.h"
#include "engine/guided/token_guide.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

const orca::TokenVocabulary& Vocabulary() {
  static const orca::TokenVocabulary* vocab = [] {
    std::vector<std::string> bytes = {"", "\n", "\t", "\\", "\": ", "\", \"", "\"}", "\"]"};
    for (char c = ' '; c <= '~'; ++c) bytes.emplace_back(1, c);
    for (const char* run : {"(", ")", "[", "]", "{", "}", "\"", "a", " ", "\n"}) {
      for (size_t n = 2; n <= 12; n += 2) bytes.push_back(std::string(n, run[0]) + "a");
      for (size_t n = 2; n <= 12; n += 2) bytes.push_back("a" + std::string(n, run[0]));
    }
    return new orca::TokenVocabulary(std::move(bytes));
  }();
  return *vocab;
}

bool Allowed(const std::vector<uint32_t>& mask, int32_t t) {
  return (mask[t / 32] >> (t % 32)) & 1;
}

// The mask's contract at state `s` (the header comment).
void CheckMask(const orca::GrammarAutomaton& a, int32_t s) {
  const orca::TokenVocabulary& vocab = Vocabulary();
  std::vector<uint32_t> kept((static_cast<size_t>(vocab.size()) + 31) / 32, 0), walked = kept;
  a.AllowTokens(s, vocab, kept);
  a.AllowTokensByWalk(s, vocab, walked);
  for (int32_t t = 1; t < vocab.size(); ++t) {
    if (Allowed(kept, t) && a.Walk(s, vocab.bytes(t)) == orca::ByteAutomaton::kDead) {
      __builtin_trap();  // allowed, but leads nowhere
    }
    // (A walk that ran out of budget may miss tokens; the kept tops look at far fewer.)
    if (Allowed(walked, t) && !Allowed(kept, t)) __builtin_trap();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string grammar = orca::fuzz::AsString(data, size);
  auto g = orca::GrammarAutomaton::Compile(grammar);
  if (!g.ok()) {
    if (g.status().code() != absl::StatusCode::kInvalidArgument) __builtin_trap();
    return 0;
  }
  const orca::GrammarAutomaton& a = **g;
  int32_t s = a.start();
  // Unfinishable branches are dropped, so every state can still end in a match.
  for (int step = 0; step < 256; ++step) {
    if (!a.accepting(s) && !a.has_next(s)) __builtin_trap();
    if (step == 0 || step == 8 || step == 64 || step == 255) CheckMask(a, s);
    int32_t next = orca::ByteAutomaton::kDead;
    // The highest allowed byte (closing brackets and quotes sort after openings less
    // often than letters: a mix of nesting and closing).
    for (int b = 255; b >= 0 && next == orca::ByteAutomaton::kDead; --b) {
      next = a.Next(s, static_cast<uint8_t>(b));
    }
    if (next == orca::ByteAutomaton::kDead) {
      // Stuck (neither a match nor a way on) only where nesting nears kMaxDepth, whose
      // deeper continuations are cut off by design.
      if (!a.accepting(s) && a.depth(s) < orca::GrammarAutomaton::kMaxDepth / 2) __builtin_trap();
      break;
    }
    s = next;
  }
  if (a.num_states() > orca::GrammarAutomaton::kMaxStates) __builtin_trap();
  return 0;
}
