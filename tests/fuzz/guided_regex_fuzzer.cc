// Fuzzes the guided-decoding pattern compiler (engine/guided/byte_dfa.h), which takes
// `guided_regex` from any client: input = the pattern, then (after the first NUL) a
// text to match.
//
// The contract checked besides "no crash, no hang, no blow-up": a refused pattern is
// InvalidArgument; a compiled automaton has no dead transitions (every state it can
// reach may still end in a match: walking the text never lands on a state that is
// neither accepting nor continuable).

#include <cstddef>
#include <cstdint>
#include <string>

#include "engine/guided/byte_dfa.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input = orca::fuzz::AsString(data, size);
  const size_t nul = input.find('\0');
  const std::string pattern = input.substr(0, nul);
  const std::string text = nul == std::string::npos ? "" : input.substr(nul + 1);
  absl::StatusOr<orca::ByteDfa> dfa = orca::ByteDfa::Compile(pattern);
  if (!dfa.ok()) {
    if (dfa.status().code() != absl::StatusCode::kInvalidArgument) __builtin_trap();
    return 0;
  }
  int32_t state = dfa->start();
  for (char c : text) {
    if (!dfa->accepting(state) && !dfa->has_next(state)) __builtin_trap();  // a dead state
    state = dfa->Next(state, static_cast<uint8_t>(c));
    if (state == orca::ByteDfa::kDead) break;
  }
  (void)dfa->Matches(text);
  return 0;
}
