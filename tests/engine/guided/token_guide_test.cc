// TokenGuide over the stories260K vocabulary: token bytes as the detokenizer writes them
// mid-text, masks equal to a brute-force check of every token against the choices
// (string prefixes, no automaton), and random walks through the masks that always end
// in a match.
#include "engine/guided/token_guide.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "engine/guided/byte_dfa.h"
#include "engine/guided/grammar_automaton.h"
#include "tests/testutil/testutil.h"

namespace orca {
namespace {

std::unique_ptr<Tokenizer> LoadTokenizer() {
  const std::string dir = testing::SourceDir() + "/models/stories260K";
  auto tok = Tokenizer::FromDirectory(dir);
  EXPECT_TRUE(tok.ok()) << tok.status();
  return tok.ok() ? std::move(*tok) : nullptr;
}

bool Allowed(const std::vector<uint32_t>& mask, int32_t t) {
  return (mask[t / 32] >> (t % 32)) & 1;
}

TEST(TokenGuideTest, TokenBytesAreWhatTheDetokenizerWritesMidText) {
  auto tok = LoadTokenizer();
  ASSERT_NE(tok, nullptr);
  auto vocab = TokenVocabulary::FromTokenizer(*tok);
  ASSERT_EQ(vocab->size(), tok->vocab_size());
  const std::string text = "Once upon a time, Lily said: \"Hi!\"\nThe end.";
  const std::vector<int32_t> ids = tok->Encode(text, /*add_special_tokens=*/false);
  std::string joined;
  for (int32_t id : ids) joined += vocab->bytes(id);
  // The first token's leading space is the only difference (SentencePiece's dummy prefix).
  EXPECT_EQ(joined, " " + text);
  EXPECT_TRUE(vocab->bytes(*tok->bos_id()).empty());
  EXPECT_TRUE(vocab->bytes(*tok->eos_id()).empty());
}

TEST(TokenGuideTest, MasksEqualABruteForceCheckOfEveryToken) {
  auto tok = LoadTokenizer();
  ASSERT_NE(tok, nullptr);
  auto vocab = TokenVocabulary::FromTokenizer(*tok);
  const std::vector<std::string> choices = {" yes", " no", " maybe so", "Lily"};
  auto guide = TokenGuide::Create(ChoicePattern(choices), vocab);
  ASSERT_TRUE(guide.ok()) << guide.status();
  std::mt19937 rng(1);
  int allowed_total = 0;
  for (int walk = 0; walk < 50; ++walk) {
    int32_t state = (*guide)->start();
    std::string out;
    while (!(*guide)->complete(state)) {
      const auto held = (*guide)->Mask(state);
      const std::vector<uint32_t>& mask = *held;
      std::vector<int32_t> allowed;
      for (int32_t t = 0; t < vocab->size(); ++t) {
        // Allowed exactly when out + bytes is a prefix of some choice.
        const std::string next = out + vocab->bytes(t);
        bool prefix = false;
        for (const std::string& c : choices)
          prefix |= !vocab->bytes(t).empty() && c.starts_with(next);
        ASSERT_EQ(Allowed(mask, t), prefix)
            << "after '" << out << "' token " << t << " '" << vocab->bytes(t) << "'";
        if (prefix) allowed.push_back(t);
      }
      ASSERT_FALSE(allowed.empty()) << "stuck after '" << out << "'";
      allowed_total += static_cast<int>(allowed.size());
      const int32_t t = allowed[rng() % allowed.size()];
      out += vocab->bytes(t);
      state = (*guide)->Next(state, t);
      ASSERT_NE(state, TokenGuide::kDead);
    }
    EXPECT_NE(std::find(choices.begin(), choices.end(), out), choices.end()) << out;
  }
  EXPECT_GT(allowed_total, 100);
  EXPECT_EQ((*guide)->Next((*guide)->start(), *tok->bos_id()), TokenGuide::kDead);
}

// A context-free guide: nonempty text of letters, spaces and parenthesised groups, each
// group nonempty, nested at will. Whether a text can still become a sentence is checked
// by counting (no grammar): only those characters, never more ')' than '(' so far, no
// "()"; anything else can always be closed.
bool ParenPrefix(const std::string& s) {
  int depth = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '(') {
      ++depth;
    } else if (c == ')') {
      if (--depth < 0 || (i > 0 && s[i - 1] == '(')) return false;
    } else if (c != ' ' && (c < 'a' || c > 'z')) {
      return false;
    }
  }
  return true;
}

TEST(TokenGuideTest, GrammarMasksEqualACountingCheckOfEveryToken) {
  auto tok = LoadTokenizer();
  ASSERT_NE(tok, nullptr);
  auto vocab = TokenVocabulary::FromTokenizer(*tok);
  auto guide =
      TokenGuide::Create(R"g(root ::= (" " | [a-z] | "(" root ")")+)g", vocab, GuideSyntax::kGbnf);
  ASSERT_TRUE(guide.ok()) << guide.status();
  std::mt19937 rng(3);
  int max_depth = 0;
  for (int walk = 0; walk < 40; ++walk) {
    int32_t state = (*guide)->start();
    std::string out;
    // Prefers '(' while short, so walks nest deeply; then closes.
    for (int step = 0; step < 60; ++step) {
      const auto held = (*guide)->Mask(state);
      const std::vector<uint32_t>& mask = *held;
      std::vector<int32_t> allowed, opening;
      for (int32_t t = 0; t < vocab->size(); ++t) {
        const bool ok = !vocab->bytes(t).empty() && ParenPrefix(out + vocab->bytes(t));
        ASSERT_EQ(Allowed(mask, t), ok)
            << "after '" << out << "' token " << t << " '" << vocab->bytes(t) << "'";
        if (!ok) continue;
        allowed.push_back(t);
        if (vocab->bytes(t).find('(') != std::string::npos) opening.push_back(t);
      }
      ASSERT_FALSE(allowed.empty()) << "stuck after '" << out << "'";
      const auto& from = step < 30 && !opening.empty() ? opening : allowed;
      const int32_t t = from[rng() % from.size()];
      out += vocab->bytes(t);
      state = (*guide)->Next(state, t);
      ASSERT_NE(state, TokenGuide::kDead);
      int depth = 0;
      for (char c : out) depth += c == '(' ? 1 : c == ')' ? -1 : 0;
      max_depth = std::max(max_depth, depth);
      EXPECT_EQ((*guide)->accepting(state), depth == 0 && !out.empty()) << out;
    }
  }
  EXPECT_GE(max_depth, 10);
}

// AllowTokens grows a mask shorter than the vocabulary (an empty one included) before it
// walks, for a pattern and a grammar, both ways a grammar makes masks.
TEST(TokenGuideTest, AllowTokensFitsAShortMaskToTheVocabulary) {
  auto tok = LoadTokenizer();
  ASSERT_NE(tok, nullptr);
  auto vocab = TokenVocabulary::FromTokenizer(*tok);
  const size_t words = (static_cast<size_t>(vocab->size()) + 31) / 32;
  auto dfa = ByteDfa::Compile("( [a-z]+)+");
  auto grammar = GrammarAutomaton::Compile("root ::= (\" \" [a-z]+ \",\"?)+");
  ASSERT_TRUE(dfa.ok() && grammar.ok());
  auto check = [&](auto allow, const char* what) {
    std::vector<uint32_t> full(words, 0u), empty, shorter(3, 0u);
    allow(full);
    allow(empty);
    allow(shorter);
    EXPECT_NE(std::count(full.begin(), full.end(), 0u), static_cast<ptrdiff_t>(words)) << what;
    EXPECT_EQ(empty, full) << what;
    EXPECT_EQ(shorter, full) << what;
  };
  check([&](std::vector<uint32_t>& m) { dfa->AllowTokens(dfa->start(), *vocab, m); }, "regex");
  const GrammarAutomaton& g = **grammar;
  check([&](std::vector<uint32_t>& m) { g.AllowTokens(g.start(), *vocab, m); }, "grammar");
  check([&](std::vector<uint32_t>& m) { g.AllowTokensByWalk(g.start(), *vocab, m); },
        "grammar, walked");
}

TEST(TokenGuideTest, CacheCompilesOncePerPatternAndReportsErrors) {
  auto tok = LoadTokenizer();
  ASSERT_NE(tok, nullptr);
  GuideCache cache(TokenVocabulary::FromTokenizer(*tok), 2);
  auto a = cache.Get("[0-9]+");
  auto b = cache.Get("[0-9]+");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->get(), b->get());
  auto bad = cache.Get("(?=x)");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("lookaround"), std::string::npos);
  // The same text as a grammar is another guide.
  auto grammar = cache.Get("root ::= [0-9]+", GuideSyntax::kGbnf);
  ASSERT_TRUE(grammar.ok()) << grammar.status();
  EXPECT_NE(grammar->get(), a->get());
  EXPECT_FALSE(cache.Get("[0-9]+", GuideSyntax::kGbnf).ok());
  ASSERT_TRUE(cache.Get("x").ok());
  ASSERT_TRUE(cache.Get("y").ok());
  EXPECT_NE(cache.Get("[0-9]+")->get(), a->get()) << "evicted after two newer patterns";
}

}  // namespace
}  // namespace orca
