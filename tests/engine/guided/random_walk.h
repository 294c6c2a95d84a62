// Random sentences of a guided-decoding automaton, for checking them with an
// independent validator (python3-jsonschema, Python's own parsers).
#pragma once

#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "engine/guided/byte_automaton.h"
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

}  // namespace orca
