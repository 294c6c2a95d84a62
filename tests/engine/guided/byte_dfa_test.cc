// ByteDfa against Python's `re` (an independent engine): for a corpus of patterns,
// strings drawn near each pattern's language must fullmatch exactly when Python says
// so (re.ASCII: \d \w \s are ASCII, as here). Also the refusals, which must name what
// is not supported.
#include "engine/guided/byte_dfa.h"

#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/testutil/testutil.h"

namespace orca {
namespace {

using nlohmann::json;

const std::vector<std::string> kPatterns = {
    "abc",
    "a|b|cd",
    "[0-9]{3}-[0-9]{4}",
    "\\d+(\\.\\d+)?",
    "-?(0|[1-9][0-9]*)(\\.[0-9]+)?([eE][+-]?[0-9]+)?",
    "(yes|no|maybe)",
    "[a-z_][a-z0-9_]{0,7}",
    "[^a-c]*",
    "x*y+z?",
    "(ab){2,3}",
    "(a|b)*abb",
    "\\w+@\\w+\\.(com|org)",
    "\"([^\"\\\\]|\\\\.)*\"",
    "[A-Z][a-z]+( [A-Z][a-z]+)*",
    "(true|false|null)",
    "\\s*\\{\\s*\"name\"\\s*:\\s*\"[a-z]+\"\\s*\\}",
    "[\\d\\s]+",
    "(?:red|green|blue)-[0-9]",
    ".{2}",
    "é+|ü",
    "[α-ω]{1,3}",
    "\\x41\\u00e9",
    "a{0}b",
    "(a?){3}",
    "((a|b)c)*",
    "[\\W]+",
    "[-a]+",
    "a.c",
    "^start$",
    "(0|1)+",
};

std::string RandomString(std::mt19937& rng, const std::string& alphabet_of) {
  // Characters of the pattern itself, plus a few others, so matches are common.
  static const std::vector<std::string> extra = {"a",  "b", "c", "0", "1", "9", " ",  "-", "\"",
                                                 "\\", ".", "@", "é", "ü", "β", "\n", "Z", "_"};
  std::vector<std::string> pool = extra;
  for (size_t i = 0; i < alphabet_of.size();) {
    const auto b = static_cast<unsigned char>(alphabet_of[i]);
    const size_t n = b < 0x80 ? 1 : b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : 2;
    pool.push_back(alphabet_of.substr(i, n));
    i += n;
  }
  std::string s;
  const int len = static_cast<int>(rng() % 12);
  for (int i = 0; i < len; ++i) s += pool[rng() % pool.size()];
  return s;
}

TEST(ByteDfaTest, AgreesWithPythonRe) {
  testing::TempDir tmp;
  std::mt19937 rng(3);
  json cases = json::array();
  std::vector<ByteDfa> dfas;
  for (const std::string& p : kPatterns) {
    absl::StatusOr<ByteDfa> dfa = ByteDfa::Compile(p);
    ASSERT_TRUE(dfa.ok()) << p << ": " << dfa.status();
    dfas.push_back(*std::move(dfa));
    json strings = json::array();
    for (int i = 0; i < 400; ++i) strings.push_back(RandomString(rng, p));
    // Some strings the pattern's own literal parts make, e.g. "abc", "555-1234".
    const std::vector<std::string> seeds = {"abc",
                                            "555-1234",
                                            "12.5",
                                            "-0.5e+3",
                                            "yes",
                                            "abb",
                                            "abab",
                                            "ababab",
                                            "x@y.com",
                                            "\"a\\\"b\"",
                                            "Ann Lee",
                                            "true",
                                            "{\"name\": \"bo\"}",
                                            "red-7",
                                            "éé",
                                            "αβ",
                                            "Aé",
                                            "b",
                                            "",
                                            "cacbc",
                                            "start",
                                            "0110",
                                            "xyz",
                                            "cd",
                                            "aa"};
    for (const std::string& s : seeds) strings.push_back(s);
    // Near-misses of those: one byte doubled or dropped ("xyzz", "1.55", "--5"), where a
    // quantifier that repeats too much or too little shows.
    for (int i = 0; i < 300; ++i) {
      std::string s = seeds[rng() % seeds.size()];
      if (s.empty()) continue;
      const size_t at = rng() % s.size();
      if (static_cast<unsigned char>(s[at]) >= 0x80) continue;  // keep the text UTF-8
      if (rng() % 2) {
        s.insert(at, 1, s[at]);
      } else {
        s.erase(at, 1);
      }
      strings.push_back(s);
    }
    cases.push_back({{"pattern", p}, {"strings", strings}});
  }
  {
    std::ofstream f(tmp.file("cases.json"));
    f << cases.dump();
  }
  const std::string script =
      "import json, re, sys\n"
      "cases = json.load(open(sys.argv[1]))\n"
      "out = [[re.fullmatch(c['pattern'], s, re.ASCII | re.DOTALL * 0) is not None\n"
      "        for s in c['strings']] for c in cases]\n"
      "json.dump(out, sys.stdout)\n";
  {
    std::ofstream f(tmp.file("ref.py"));
    f << script;
  }
  std::string output;
  ASSERT_EQ(testing::RunCommand(
                "/usr/bin/python3 " + tmp.file("ref.py") + " " + tmp.file("cases.json") + " 2>&1",
                &output),
            0)
      << output;
  const json want = json::parse(output);
  int matches = 0;
  for (size_t c = 0; c < cases.size(); ++c) {
    const json& strings = cases[c]["strings"];
    for (size_t i = 0; i < strings.size(); ++i) {
      const std::string s = strings[i];
      const bool got = dfas[c].Matches(s);
      EXPECT_EQ(got, want[c][i].get<bool>()) << "pattern " << kPatterns[c] << " on '" << s << "'";
      matches += got;
    }
  }
  EXPECT_GT(matches, 300) << "the corpus should hold plenty of matches";
}

TEST(ByteDfaTest, CompleteAndDeadStates) {
  absl::StatusOr<ByteDfa> dfa = ByteDfa::Compile("(yes|no)");
  ASSERT_TRUE(dfa.ok());
  const int32_t y = dfa->Walk(dfa->start(), "y");
  ASSERT_NE(y, ByteDfa::kDead);
  EXPECT_FALSE(dfa->accepting(y));
  const int32_t yes = dfa->Walk(y, "es");
  EXPECT_TRUE(dfa->accepting(yes));
  EXPECT_FALSE(dfa->has_next(yes));  // complete
  EXPECT_EQ(dfa->Walk(y, "x"), ByteDfa::kDead);
  // Only transitions that can still reach a match exist.
  absl::StatusOr<ByteDfa> two = ByteDfa::Compile("ab|ac");
  ASSERT_TRUE(two.ok());
  for (int b = 0; b < 256; ++b) {
    if (b != 'a') {
      EXPECT_EQ(two->Next(two->start(), static_cast<uint8_t>(b)), ByteDfa::kDead);
    }
  }
  EXPECT_TRUE(ByteDfa::Compile(ChoicePattern({"a.b", "(x)", "[y]*", ""}))->Matches("(x)"));
  EXPECT_FALSE(ByteDfa::Compile(ChoicePattern({"a.b"}))->Matches("axb"));
  EXPECT_TRUE(ByteDfa::Compile(ChoicePattern({"a.b", ""}))->Matches(""));
}

TEST(ByteDfaTest, RefusesWhatItDoesNotSupportNamingIt) {
  const std::vector<std::pair<std::string, std::string>> refused = {
      {"(a)\\1", "\\1"},
      {"(?=a)b", "lookaround"},
      {"(?P<n>a)", "named groups"},
      {"\\bword", "word boundaries"},
      {"a{2000}", "over 1000"},
      {"[z-a]", "out of order"},
      {"(ab", "unterminated group"},
      {"ab)", "unbalanced"},
      {"*a", "nothing to repeat"},
      {"[abc", "unterminated character class"},
      {"a^b", "'^'"},
      {"[^\\x00-\\x{10FFFF}]", "bad hexadecimal"},
      {"[[:alpha:]]", "POSIX"},
      {"(a|b)*a(a|b){18}", "automaton states"},
  };
  for (const auto& [pattern, what] : refused) {
    absl::StatusOr<ByteDfa> dfa = ByteDfa::Compile(pattern);
    ASSERT_FALSE(dfa.ok()) << pattern;
    EXPECT_EQ(dfa.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(dfa.status().message().find(what), std::string::npos)
        << pattern << ": " << dfa.status().message();
  }
  EXPECT_FALSE(ByteDfa::Compile("[^\\s\\S]").ok());  // matches nothing
}

}  // namespace
}  // namespace orca
