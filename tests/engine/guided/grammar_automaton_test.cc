// GrammarAutomaton: a GBNF grammar's sentences and nothing else, at any depth of
// nesting, checked by hand on small grammars and, for random sentences of real grammars,
// by independent parsers: Python's json module for a JSON grammar, Python's own
// expression parser (ast) for arithmetic, and Python's re for a line format.
#include "engine/guided/grammar_automaton.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <random>
#include <string_view>
#include <tuple>

#include "engine/guided/token_guide.h"
#include "nlohmann/json.hpp"
#include "tests/engine/guided/random_walk.h"
#include "tests/testutil/testutil.h"

namespace orca {
namespace {

std::unique_ptr<const GrammarAutomaton> Compile(const std::string& grammar) {
  absl::StatusOr<std::unique_ptr<const GrammarAutomaton>> g = GrammarAutomaton::Compile(grammar);
  EXPECT_TRUE(g.ok()) << grammar << ": " << g.status();
  if (!g.ok()) return *GrammarAutomaton::Compile("root ::= \"compile failed\"");
  return *std::move(g);
}

// A grammar the ambiguity probe refuses, compiled without it: what the bounds while
// running do with it.
std::unique_ptr<const GrammarAutomaton> CompileUnprobed(const std::string& grammar) {
  absl::StatusOr<std::unique_ptr<const GrammarAutomaton>> probed =
      GrammarAutomaton::Compile(grammar);
  EXPECT_FALSE(probed.ok()) << grammar << ": the probe should refuse it";
  if (!probed.ok()) {
    EXPECT_NE(probed.status().message().find("too ambiguous"), std::string::npos)
        << probed.status();
  }
  auto g = GrammarAutomaton::Compile(grammar, GrammarAutomaton::kMaxStates, /*probe=*/false);
  EXPECT_TRUE(g.ok()) << grammar << ": " << g.status();
  if (!g.ok()) return *GrammarAutomaton::Compile("root ::= \"compile failed\"");
  return *std::move(g);
}

// The fuzzer's walk: from each state the highest byte that leads on, `steps` times;
// returns the most positions a state held.
size_t HighestByteWalk(const GrammarAutomaton& g, int steps) {
  int32_t s = g.start();
  size_t most = 0;
  for (int step = 0; step < steps; ++step) {
    int32_t next = ByteAutomaton::kDead;
    for (int b = 255; b >= 0 && next == ByteAutomaton::kDead; --b) {
      next = g.Next(s, static_cast<uint8_t>(b));
    }
    EXPECT_NE(next, ByteAutomaton::kDead) << step;
    if (next == ByteAutomaton::kDead) break;
    EXPECT_EQ(g.Next(next, 0x01), ByteAutomaton::kDead);
    s = next;
    most = std::max(most, g.positions(s));
  }
  return most;
}

TEST(GrammarAutomatonTest, SmallGrammarsMatchTheirSentencesOnly) {
  auto yes_no = Compile(R"(root ::= "yes" | "no" # a comment
)");
  EXPECT_TRUE(yes_no->Matches("yes"));
  EXPECT_TRUE(yes_no->Matches("no"));
  EXPECT_FALSE(yes_no->Matches("yesno"));
  EXPECT_FALSE(yes_no->Matches("ye"));
  EXPECT_EQ(yes_no->Next(yes_no->start(), 'x'), ByteAutomaton::kDead);

  // Rules, classes, repetition, escapes; alternatives continue on the next line.
  auto list = Compile(R"(
root  ::= item ("," item){0,2} "\n"
item  ::= [a-z_] [a-z0-9_-]* "=" value
value ::= [0-9]+ | "\"" [^"\\\n]* "\""
        | "\u00e9\x41"
)");
  EXPECT_TRUE(list->Matches("a=1\n"));
  EXPECT_TRUE(
      list->Matches("a=1,b_2=\"x y\",c=\xc3\xa9"
                    "A\n"));
  EXPECT_TRUE(list->Matches("k=\"caf\xc3\xa9\"\n"));  // a negated class takes any character
  EXPECT_FALSE(list->Matches("k=\"caf\xc3\"\n"));     // ... but only whole UTF-8 ones
  EXPECT_FALSE(list->Matches("a=1,b=2,c=3,d=4\n"));   // {0,2}
  EXPECT_FALSE(list->Matches("1=1\n"));
  EXPECT_FALSE(list->Matches("a=\"x\"y\"\n"));
  EXPECT_FALSE(list->Matches("a=1"));

  auto any = Compile(R"(root ::= "<" . ">")");
  EXPECT_TRUE(any->Matches("<\n>"));
  EXPECT_TRUE(any->Matches("<\xe2\x82\xac>"));
  EXPECT_FALSE(any->Matches("<>"));
  EXPECT_FALSE(any->Matches("<\xed\xa0\x80>"));  // a surrogate is not UTF-8

  // Complete once nothing may follow; accepting with more allowed otherwise.
  auto done = Compile(R"(root ::= "a" "b"?)");
  const int32_t a = done->Walk(done->start(), "a");
  EXPECT_TRUE(done->accepting(a));
  EXPECT_TRUE(done->has_next(a));
  const int32_t ab = done->Walk(a, "b");
  EXPECT_TRUE(done->accepting(ab));
  EXPECT_FALSE(done->has_next(ab));
}

TEST(GrammarAutomatonTest, NestingIsUnbounded) {
  auto parens = Compile(R"g(root ::= "(" root ")" | "x")g");
  for (int depth : {0, 1, 5, 100, 400}) {
    const std::string s = std::string(depth, '(') + "x" + std::string(depth, ')');
    EXPECT_TRUE(parens->Matches(s)) << depth;
    EXPECT_FALSE(parens->Matches(s + ")")) << depth;
    EXPECT_FALSE(parens->Matches(s.substr(0, s.size() - 1))) << depth;
  }
  // Right recursion and repetition are tail calls: their stacks do not grow, so a
  // long list takes a few states, not one per item.
  auto list = Compile(R"(root ::= item ("," root)?
item ::= [0-9]+)");
  std::string items = "1";
  for (int i = 0; i < 2000; ++i) items += "," + std::to_string(i);
  EXPECT_TRUE(list->Matches(items));
  EXPECT_LT(list->num_states(), 20);
  // Deeper than kMaxDepth stack entries is cut off, never wrong.
  const size_t deep = GrammarAutomaton::kMaxDepth + 10;
  EXPECT_FALSE(parens->Matches(std::string(deep, '(') + "x" + std::string(deep, ')')));
}

// Found by fuzzing (tests/fuzz/regressions/guided_grammar/ambiguous-deep-nesting.gbnf:
// the fuzzer's walk over it took 46 s): an ambiguous grammar that nests deep makes
// many deep stacks, each copied and expanded for every byte tried. Here "a"^n is read
// with 0..n optional "b"s pending: n stacks of up to n positions (n^2/2 in all). A
// configuration now holds kMaxPositions at most, the shallowest stacks kept (and Compile's
// probe refuses the grammar: a string of 73 "a"s outgrows the bound).
TEST(GrammarAutomatonTest, AmbiguousDeepNestingStaysBounded) {
  auto g = CompileUnprobed(R"(root ::= "a" root "b"? | "a" root | "c")");
  int32_t s = g->start();
  size_t most = 0;
  for (int step = 0; step < 500; ++step) {
    s = g->Next(s, 'a');
    ASSERT_NE(s, ByteAutomaton::kDead) << step;
    most = std::max(most, g->positions(s));
  }
  EXPECT_LE(most, GrammarAutomaton::kMaxPositions);
  EXPECT_GT(most, GrammarAutomaton::kMaxPositions / 2);  // the bound is what held it
  // What is kept still reads on and closes: the shallow readings.
  EXPECT_TRUE(g->accepting(g->Walk(s, "c")));
  EXPECT_TRUE(g->accepting(g->Walk(s, "cbb")));
  EXPECT_LT(g->depth(s), GrammarAutomaton::kMaxDepth);
}

// Found by fuzzing (tests/fuzz/regressions/guided_grammar/expression-whose-whitespace-
// is-an-expression.gbnf): whitespace that may be a whole expression makes every step
// thousands of deep readings that share their tops. Each step kept its bounds, but
// ordering them compared the stacks element by element: 256 steps took 17.6 s in the
// fuzz build (over its 10 s timeout), 3.7 s now. The walk the fuzzer makes: bounded,
// and every byte a state's stacks cannot take is dead at once.
TEST(GrammarAutomatonTest, ExpressionsWhoseWhitespaceIsAnExpressionStayBounded) {
  auto g = CompileUnprobed(
      "root   ::= expr\n"
      "expr   ::= term (ws [-+] ws term)*\n"
      "term   ::= factor (ws [*/] ws factor)*\n"
      "factor ::= \"1\" | [1-9] [0-9]{0,3} | \"(\" ws expr ws \")\"  |\"-\" factor\n"
      "ws    ::= expr?\n");
  EXPECT_LE(HighestByteWalk(*g, 256), GrammarAutomaton::kMaxPositions);
  EXPECT_TRUE(g->accepting(g->Walk(g->start(), "12*(3-4)")));
  EXPECT_FALSE(g->accepting(g->Walk(g->start(), "12*(3-4")));
}

// Found by fuzzing (tests/fuzz/regressions/guided_grammar/recursion-inside-bounded-
// repetitions.gbnf): lines that may be empty, each holding up to six nested roots of two
// or three lines, read every letter in thousands of ways. Each step stayed within its
// bounds (then 32,768 positions and 2^21 positions looked at), but 256 such steps took
// 10 s and 2.2 GB in the fuzz build. The probe now refuses the grammar after four bytes,
// naming them; run anyway, a state holds at most kMaxPositions.
constexpr char kNestedLines[] =
    "root ::= line{2,3}\n"
    "line ::=| [A-Z] [a-z]root{0,6} \": \" (\"on\" | \"off\"[0-9X]{1,3} \"%\") \"\\n\"\n";
TEST(GrammarAutomatonTest, RecursionInsideBoundedRepetitionsIsRefused) {
  const std::string grammar = kNestedLines;
  absl::StatusOr<std::unique_ptr<const GrammarAutomaton>> r = GrammarAutomaton::Compile(grammar);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("too ambiguous: after \"A"), std::string::npos)
      << r.status().message();
  EXPECT_NE(r.status().message().find("1024 ways"), std::string::npos) << r.status().message();
  auto g = CompileUnprobed(grammar);
  EXPECT_LE(HighestByteWalk(*g, 64), GrammarAutomaton::kMaxPositions);
  // Grammars like it that read each byte one way run (tests below: kLines).
}

// A mask's trie walk is bounded too (kMaxMaskWork positions looked at): over a grammar
// read many ways at once, tokens past the budget are left out, never wrongly allowed.
TEST(GrammarAutomatonTest, AMaskWalkStopsAtItsBudget) {
  auto g = CompileUnprobed(kNestedLines);
  // Token k: the first k bytes of "AaAaAa...", each a step of hundreds of thousands of
  // positions once the readings fill a configuration.
  constexpr size_t kLongest = 200;  // (nesting kLongest / 2 deep: below kMaxDepth)
  std::string text;
  for (size_t k = 0; k < kLongest; ++k) text += k % 2 == 0 ? 'A' : 'a';
  std::vector<std::string> bytes = {""};
  for (size_t k = 1; k <= kLongest; ++k) bytes.push_back(text.substr(0, k));
  const TokenVocabulary vocab(bytes);
  std::vector<uint32_t> mask((bytes.size() + 31) / 32);
  g->AllowTokens(g->start(), vocab, mask);
  auto allowed = [&](size_t t) { return (mask[t / 32] >> (t % 32)) & 1; };
  int32_t s = g->start();
  size_t longest = 0;
  for (size_t k = 1; k <= kLongest; ++k) {
    s = g->Next(s, static_cast<uint8_t>(text[k - 1]));
    ASSERT_NE(s, ByteAutomaton::kDead) << k;  // every token leads on
    if (allowed(k)) longest = k;
  }
  for (size_t k = 1; k <= longest; ++k) EXPECT_TRUE(allowed(k)) << k;
  EXPECT_GT(longest, 8u);
  EXPECT_LT(longest, kLongest) << "the budget should have ended the walk";
}

TEST(GrammarAutomatonTest, ErrorsNameTheProblemAndWhere) {
  const std::pair<std::string, std::string> cases[] = {
      {"root ::= item", "line 1, column 10: rule 'item' is not defined"},
      {"item ::= \"a\"", "no 'root' rule"},
      {"root ::= \"a", "line 1, column 12: expected a closing '\"'"},
      {"root ::= \"\\q\"", "expected an escape"},
      {"root ::= [z-a]", "a range in order"},
      {"root ::= []", "a character in the class"},
      {"root ::= \"a\"\nroot ::= \"b\"", "line 2, column 1: rule 'root' is defined twice"},
      {"root ::= \"a\"**", "one repetition per item"},
      {"root ::= \"a\"{3,1}", "not below the minimum"},
      {"root ::= (\"a\"", "a closing ')'"},
      {"root ::= \"a\" root", "'root' has no finite sentence"},
      {"root ::= [^\\x00-\\U0010FFFF]", "'root' has no finite sentence"},
      {"root ::= expr\nexpr ::= expr \"+\" \"1\" | \"1\"", "rule 'expr' is left-recursive"},
      {"root ::= a\na ::= \"x\"? b\nb ::= a \"y\" | \"z\"", "is left-recursive"},
      {"root = \"a\"", "'::=' after the rule name"},
      {"root ::= @", "line 1, column 10: expected a literal"},
  };
  for (const auto& [grammar, message] : cases) {
    absl::StatusOr<std::unique_ptr<const GrammarAutomaton>> r = GrammarAutomaton::Compile(grammar);
    ASSERT_FALSE(r.ok()) << grammar;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << grammar;
    EXPECT_NE(r.status().message().find(message), std::string::npos)
        << grammar << ": " << r.status().message();
  }
  // Bounded repetitions expand to helper rules: too many are refused, not built.
  std::string wide = "root ::=";
  for (int i = 0; i < 100; ++i) wide += " \"a\"{0,1000}";
  absl::StatusOr<std::unique_ptr<const GrammarAutomaton>> r = GrammarAutomaton::Compile(wide);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("elements once its repetitions are expanded"),
            std::string::npos)
      << r.status().message();
}

// A token mask's walk makes no states; the states outputs reach are capped, and a
// guide at its cap says so (the guide cache then compiles a fresh one).
TEST(GrammarAutomatonTest, StatesAreMadeWhereOutputsGoAndCapped) {
  auto g = *GrammarAutomaton::Compile(R"g(root ::= "(" root ")" | [a-z]+)g", /*max_states=*/8);
  EXPECT_EQ(g->num_states(), 1);
  const int32_t a = g->Walk(g->start(), "((ab");
  ASSERT_NE(a, ByteAutomaton::kDead);
  EXPECT_EQ(g->num_states(), 2);  // only where the walk ended
  EXPECT_FALSE(g->exhausted());
  int32_t s = g->start();
  for (int i = 0; i < 10 && s != ByteAutomaton::kDead; ++i) s = g->Walk(s, "(");
  EXPECT_EQ(s, ByteAutomaton::kDead);  // the ninth state is not made
  EXPECT_TRUE(g->exhausted());
  EXPECT_EQ(g->num_states(), 8);
  EXPECT_EQ(g->Walk(g->start(), "((ab"), a) << "known states still work";
}

TEST(GrammarAutomatonTest, CyclesThatReadNothingAndDeadBranchesAreHarmless) {
  // Tail-call cycles (a -> root -> a) and a repetition of something that may be empty
  // read nothing and push nothing: accepted, and they end.
  auto cycle = Compile(R"(root ::= a
a ::= root | "x")");
  EXPECT_TRUE(cycle->Matches("x"));
  EXPECT_FALSE(cycle->Matches("xx"));
  auto empty_repeat = Compile(R"(root ::= ("a"?)* "b")");
  EXPECT_TRUE(empty_repeat->Matches("b"));
  EXPECT_TRUE(empty_repeat->Matches("aaab"));
  // A branch that can never finish is dropped: its first byte is not allowed.
  auto dead = Compile(R"(root ::= "a" | "b" loop
loop ::= "c" loop)");
  EXPECT_TRUE(dead->Matches("a"));
  EXPECT_EQ(dead->Next(dead->start(), 'b'), ByteAutomaton::kDead);
  // A highly ambiguous grammar (eight rules, each two ways) is refused; run anyway, it
  // stays within its bounds.
  std::string knot = "root ::= r0\n";
  for (int i = 0; i < 8; ++i) {
    knot += "r" + std::to_string(i) + " ::= \"a\" r" + std::to_string((i + 1) % 8) + " r" +
            std::to_string((i + 3) % 8) + " | \"a\"\n";
  }
  auto k = CompileUnprobed(knot);
  int32_t s = k->start();
  for (int i = 0; i < 200 && s != ByteAutomaton::kDead; ++i) s = k->Next(s, 'a');
  EXPECT_LE(k->num_states(), GrammarAutomaton::kMaxStates);
}

// Real grammars (our own writing, in the style of llama.cpp's grammars/).
constexpr char kJsonGrammar[] = R"g(
root   ::= object
value  ::= object | array | string | number | ("true" | "false" | "null") ws
object ::= "{" ws ( string ":" ws value ("," ws string ":" ws value)* )? "}" ws
array  ::= "[" ws ( value ("," ws value)* )? "]" ws
string ::= "\"" ( [^"\\\x7F\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4}) )* "\"" ws
number ::= "-"? ([0-9] | [1-9] [0-9]{1,8}) ("." [0-9]{1,6})? ([eE] [-+]? [0-9]{1,2})? ws
ws     ::= | " " | "\n" [ \t]{0,4}
)g";
constexpr char kArithmetic[] = R"g(
root   ::= expr
expr   ::= term (ws [-+] ws term)*
term   ::= factor (ws [*/] ws factor)*
factor ::= "0" | [1-9] [0-9]{0,3} | "(" ws expr ws ")" | "-" factor
ws     ::= " "?
)g";
constexpr char kLines[] = R"(
root ::= line{1,3}
line ::= [A-Z] [a-z]{0,6} ": " ("on" | "off" | [0-9]{1,3} "%") "\n"
)";

TEST(GrammarAutomatonTest, RandomSentencesParseWithIndependentParsers) {
  testing::TempDir tmp;
  std::mt19937 rng(5);
  nlohmann::json cases = nlohmann::json::object();
  for (const auto& [name, grammar] :
       {std::pair{"json", kJsonGrammar}, std::pair{"arith", kArithmetic},
        std::pair{"lines", kLines}}) {
    auto g = Compile(grammar);
    nlohmann::json docs = nlohmann::json::array();
    for (int i = 0; i < 150; ++i) {
      bool ok = false;
      std::string doc = RandomWalk(*g, rng, &ok, 2000);
      if (ok) docs.push_back(doc);
    }
    EXPECT_GE(docs.size(), 60u) << name << ": walks rarely end";
    cases[name] = docs;
  }
  // Known sentences, however deep, and known non-sentences.
  auto json = Compile(kJsonGrammar);
  EXPECT_TRUE(json->Matches(R"({"a": {"b": [{"c": [[[{"d": {}}]]]}]}})"));
  for (const char* bad : {"{", "{\"a\":}", "[1]", "{\"a\": 01}", "{\"a\": \"\x01\"}", "{} {}",
                          R"({"a": {"b": [{"c": [[[{"d": {}}]]}]}})"}) {
    EXPECT_FALSE(json->Matches(bad)) << bad;
  }
  EXPECT_TRUE(json->Matches("{\"a\": [1, {\"b\": null}], \"c\": -0.5e+3}"));
  auto arith = Compile(kArithmetic);
  for (const char* bad : {"(1", "1+", "1 + * 2", ")(", "((((1)))"}) {
    EXPECT_FALSE(arith->Matches(bad)) << bad;
  }
  EXPECT_TRUE(arith->Matches("(1 + 2) * -3/4"));
  EXPECT_TRUE(arith->Matches("((((((((1))))))))"));
  const std::string check =
      "import ast, json, re, sys\n"
      "cases = json.load(open(sys.argv[1]))\n"
      "bad = []\n"
      "for d in cases['json']:\n"
      "    try:\n"
      "        assert isinstance(json.loads(d), dict)\n"
      "    except Exception as e: bad.append(['json', d, str(e)])\n"
      "for d in cases['arith']:\n"
      "    try:\n"
      "        ast.parse(d, mode='eval')\n"
      "    except Exception as e: bad.append(['arith', d, str(e)])\n"
      "line = re.compile(r'(?:[A-Z][a-z]{0,6}: (?:on|off|[0-9]{1,3}%)\\n){1,3}')\n"
      "for d in cases['lines']:\n"
      "    if not line.fullmatch(d): bad.append(['lines', d, 'no match'])\n"
      "print(json.dumps(bad))\n";
  std::string output;
  const int rc = RunPythonCheck(tmp, cases.dump(), check, &output);
  ASSERT_EQ(rc, 0) << output;
  for (const nlohmann::json& b : nlohmann::json::parse(output)) {
    ADD_FAILURE() << b[0] << " produced " << b[1] << ": " << b[2];
  }
}

// AllowTokens makes a state's mask from masks kept per stack top (a top's tokens
// allowed whatever lies below, and the few that return below it mid-token walked from
// the real stacks); one walk of the vocabulary's trie from the state's whole
// configuration, which knows nothing of tops, must give the same mask at every state of
// random token walks that nest deep, over the 32,000-token synthetic vocabulary and
// stories260K's.
TEST(GrammarAutomatonTest, MasksFromKeptTopsEqualOneWalkOfTheTrie) {
  constexpr char kOutline[] = R"g(root ::= item{20,}
item ::= "- " [a-zA-Z ,.']{1,40} "\n" | "(" root ")\n"
)g";
  constexpr char kParens[] = R"g(root ::= (" " | [a-z] | "(" root ")")+)g";
  auto stories = Tokenizer::FromDirectory(testing::SourceDir() + "/models/stories260K");
  ASSERT_TRUE(stories.ok()) << stories.status();
  // Every printable character and runs of brackets, so that tokens return from many
  // levels (past any top) at once.
  std::vector<std::string> brackets = {"", "ab", "a b", "\n"};
  for (char c = ' '; c <= '~'; ++c) brackets.emplace_back(1, c);
  for (int n = 1; n <= 24; ++n) {
    brackets.push_back(std::string(static_cast<size_t>(n), '('));
    brackets.push_back(std::string(static_cast<size_t>(n), ')'));
    brackets.push_back("a" + std::string(static_cast<size_t>(n), ')'));
    brackets.push_back(std::string(static_cast<size_t>(n), ')') + "\n");
    brackets.push_back(")\n" + std::string(static_cast<size_t>(n), ')'));
  }
  const std::pair<std::string, std::shared_ptr<const TokenVocabulary>> vocabs[] = {
      {"synthetic", SyntheticVocabulary()},
      {"stories260K", TokenVocabulary::FromTokenizer(**stories)},
      {"brackets", std::make_shared<const TokenVocabulary>(brackets)}};
  // name, grammar, bytes that open a level, and whether walks nest deeper than the tops
  // (so that dependent tokens are walked from real stacks below them).
  const std::tuple<const char*, const char*, const char*, bool> grammars[] = {
      {"outline", kOutline, "(", true},
      {"parens", kParens, "(", true},
      {"arith", kArithmetic, "(", true},
      {"json", kJsonGrammar, "{[", false},
      {"lines", kLines, "", false}};
  std::mt19937 rng(17);
  for (const auto& [vocab_name, vocab] : vocabs) {
    ASSERT_GT(vocab->size(), 100);
    for (const auto& [name, grammar, deeper, nests] : grammars) {
      auto g = Compile(grammar);
      const std::string what = std::string(name) + " over " + vocab_name;
      const size_t deepest = ExpectMasksEqualTheWalk(*g, *vocab, rng, 4, 40, deeper, what);
      EXPECT_GT(g->num_top_masks(), 0u) << what << ": masks were not made from kept tops";
      if (nests) {
        EXPECT_GE(deepest, 2 * GrammarAutomaton::kTopFrames)
            << what << ": the walks nest too little";
      }
    }
  }
}

// Tops are keyed by a stack's fewest top positions that leave few tokens depending on
// what lies below: a nested outline's walks (each level's item count and character
// count in its stacks) meet under a hundred tops, where keying every stack by its
// kTopFrames positions kept one per combination of the enclosing levels' positions
// (here 394; 7,885 and growing after 350 requests of orca-bench-guided-mask's serving
// walk). The masks still equal the walk's.
TEST(GrammarAutomatonTest, NestedOutlinesKeepFewTops) {
  constexpr char kOutline[] = R"g(root ::= item{20,}
item ::= "- " [a-zA-Z ,.']{1,40} "\n" | "(" root ")\n"
)g";
  auto g = Compile(kOutline);
  std::mt19937 rng(29);
  const size_t deepest =
      ExpectMasksEqualTheWalk(*g, *SyntheticVocabulary(), rng, 16, 160, "(", "outline");
  EXPECT_GE(deepest, 2 * GrammarAutomaton::kTopFrames) << "the walks nest too little";
  EXPECT_LT(g->num_top_masks(), 150u);  // 91; keyed by kTopFrames positions, 394
}

// A walk that meets more configurations than its transition tables hold (one per byte
// of a 6,000-byte token, each a different count) goes on with a hash map: the same
// mask.
TEST(GrammarAutomatonTest, LongWalksMeetManyConfigurations) {
  auto g = Compile(R"g(root ::= "aaaaa"{0,1000} "b"?)g");
  std::vector<std::string> bytes = {""};
  for (size_t k = 1; k <= 6000; k += 7) bytes.push_back(std::string(k, 'a'));
  for (size_t k = 1; k <= 6000; k += 7) bytes.push_back(std::string(k, 'a') + "b");
  const TokenVocabulary vocab(bytes);
  std::vector<uint32_t> kept((bytes.size() + 31) / 32), walked = kept;
  g->AllowTokens(g->start(), vocab, kept);
  g->AllowTokensByWalk(g->start(), vocab, walked);
  for (size_t t = 1; t < bytes.size(); ++t) {
    const auto a = std::count(bytes[t].begin(), bytes[t].end(), 'a');
    const bool ok = a <= 5000 && (bytes[t].back() == 'a' || a % 5 == 0);
    EXPECT_EQ((kept[t / 32] >> (t % 32)) & 1, ok ? 1u : 0u) << bytes[t].size();
    EXPECT_EQ((walked[t / 32] >> (t % 32)) & 1, ok ? 1u : 0u) << bytes[t].size();
  }
}

// A top most of whose tokens return below it (here an "x" and runs of closing brackets,
// most of them past the top's six positions) is not worth keeping: states with it are
// walked, the same mask.
TEST(GrammarAutomatonTest, TopsMostTokensReturnFromAreWalked) {
  auto g = Compile(R"g(root ::= "(" root ")" | "x")g");
  std::vector<std::string> bytes = {"", "(", ")", "x"};
  for (size_t n = 1; n <= 40; ++n) {
    bytes.push_back("x" + std::string(n, ')'));
    bytes.push_back(std::string(n, '('));
  }
  const TokenVocabulary vocab(bytes);
  std::mt19937 rng(29);
  const size_t deepest = ExpectMasksEqualTheWalk(*g, vocab, rng, 6, 24, "(", "brackets");
  EXPECT_GT(deepest, 2 * GrammarAutomaton::kTopFrames);
}

// The kept tops stop at kMaxTopMaskBytes (here a vocabulary of a million ids, nearly all
// without bytes, so that each top takes 125 KB), and masks are then walked: the same.
TEST(GrammarAutomatonTest, KeptTopsStopAtTheirBudget) {
  auto g = Compile(R"g(root ::= [a-c]{0,400})g");
  std::vector<std::string> bytes(1'000'000);
  bytes[1] = "a";
  bytes[2] = "b";
  bytes[3] = "cc";
  bytes[999'999] = "ab";
  const TokenVocabulary vocab(bytes);
  const size_t per_top = (bytes.size() + 31) / 32 * 4;
  int32_t s = g->start();
  for (int step = 0; step < 400; ++step) {
    std::vector<uint32_t> mask((bytes.size() + 31) / 32, 0);
    g->AllowTokens(s, vocab, mask);
    // "a" and "b" while the output may grow, "cc" and "ab" while it may grow by two.
    ASSERT_EQ(mask[0], 0b0110u | (step < 399 ? 0b1000u : 0u)) << step;
    ASSERT_EQ((mask.back() >> (999'999 % 32)) & 1, step < 399 ? 1u : 0u) << step;
    s = g->Walk(s, "a");
  }
  EXPECT_GE(g->num_top_masks(), GrammarAutomaton::kMaxTopMaskBytes / per_top / 2);
  EXPECT_LE(g->num_top_masks(), GrammarAutomaton::kMaxTopMaskBytes / per_top + 1);
}

}  // namespace
}  // namespace orca
