// Fuzzes the GBNF grammar reader and its pushdown automaton (engine/guided/gbnf.h,
// grammar_automaton.h), which take `guided_grammar` from any client: input = the
// grammar, compiled as the server does, then walked.
//
// The contract checked besides "no crash, no hang, no blow-up": a refused grammar is
// InvalidArgument; a walk from the start over the highest allowed byte of each state
// (up to 256 steps) only visits states that match or have a byte that leads on (unless
// nesting nears kMaxDepth, where continuations are cut off), and the states made stay
// within kMaxStates.

#include <cstddef>
#include <cstdint>
#include <string>

#include "engine/guided/grammar_automaton.h"
#include "tests/fuzz/fuzz_util.h"

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
