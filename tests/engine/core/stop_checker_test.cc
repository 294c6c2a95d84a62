// StopChecker on its own: deltas are fed by hand, as the engine feeds it the
// detokenizer's increments, and every returned piece is checked.
#include "engine/core/stop_checker.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace orca {
namespace {

// Appends each delta; returns what each call returned.
std::vector<std::string> Feed(StopChecker& checker, const std::vector<std::string>& deltas) {
  std::vector<std::string> out;
  for (const auto& d : deltas) out.push_back(checker.Append(d));
  return out;
}

// Returns whether `s` is complete, well-formed UTF-8 (no cut character at either end).
bool IsWholeUtf8(const std::string& s) {
  size_t i = 0;
  while (i < s.size()) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    size_t len = c < 0x80           ? 1
                 : (c >> 5) == 0x6  ? 2
                 : (c >> 4) == 0xE  ? 3
                 : (c >> 3) == 0x1E ? 4
                                    : 0;
    if (len == 0 || i + len > s.size()) return false;
    for (size_t k = 1; k < len; ++k) {
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
    }
    i += len;
  }
  return true;
}

TEST(StopCheckerTest, PassesTextThroughWithNoStopStrings) {
  StopChecker checker({});
  EXPECT_EQ(Feed(checker, {"Once", " upon", " a time"}),
            (std::vector<std::string>{"Once", " upon", " a time"}));
  EXPECT_FALSE(checker.stopped());
  EXPECT_EQ(checker.Flush(), "");
}

TEST(StopCheckerTest, IgnoresEmptyStopStrings) {
  StopChecker checker({"", ""});
  EXPECT_EQ(checker.Append("abc"), "abc");
  EXPECT_EQ(checker.Append(""), "");
  EXPECT_FALSE(checker.stopped());
}

TEST(StopCheckerTest, StopsInsideOneDelta) {
  StopChecker checker({"END"});
  EXPECT_EQ(checker.Append("the END of it"), "the ");
  EXPECT_TRUE(checker.stopped());
  EXPECT_EQ(checker.matched(), "END");
  // Nothing after a stop: neither later deltas nor the held text.
  EXPECT_EQ(checker.Append(" more"), "");
  EXPECT_EQ(checker.Flush(), "");
}

TEST(StopCheckerTest, MatchesAStopStringSplitAcrossDeltas) {
  StopChecker checker({"\n\nUser:"});
  EXPECT_EQ(Feed(checker, {"Hi", " there", "\n", "\nUs", "er", ":", " more"}),
            (std::vector<std::string>{"Hi", " there", "", "", "", "", ""}));
  EXPECT_TRUE(checker.stopped());
  EXPECT_EQ(checker.matched(), "\n\nUser:");
}

TEST(StopCheckerTest, HoldsBackOnlyAPossibleStopPrefixAndReleasesItWhenItDiverges) {
  StopChecker checker({"stop"});
  EXPECT_EQ(checker.Append("a st"), "a ");  // "st" could start "stop"
  EXPECT_EQ(checker.Append("o"), "");       // "sto" still could
  EXPECT_EQ(checker.Append("ck"), "stock");
  EXPECT_FALSE(checker.stopped());
  EXPECT_EQ(checker.Append(" s"), " ");
  EXPECT_EQ(checker.Flush(), "s");  // generation ended: the held tail is released
  EXPECT_FALSE(checker.stopped());
}

TEST(StopCheckerTest, HoldsTheLongestPrefixOfAnyStopString) {
  StopChecker checker({"xy", "abcd"});
  EXPECT_EQ(checker.Append("zab"), "z");   // "ab" starts "abcd"
  EXPECT_EQ(checker.Append("cx"), "abc");  // "abcx" is no prefix; "x" starts "xy"
  EXPECT_EQ(checker.Append("y!"), "");
  EXPECT_TRUE(checker.stopped());
  EXPECT_EQ(checker.matched(), "xy");
}

TEST(StopCheckerTest, RecognisesAStopThatOverlapsADivergedPrefix) {
  // After "aa" + "a" the first "a" can go, but the last two could still start "aab".
  StopChecker checker({"aab"});
  EXPECT_EQ(checker.Append("aa"), "");
  EXPECT_EQ(checker.Append("a"), "a");
  EXPECT_EQ(checker.Append("b"), "");
  EXPECT_TRUE(checker.stopped());
}

TEST(StopCheckerTest, IncludesTheStopStringWhenAsked) {
  StopChecker checker({"</s>"}, /*include_stop_in_output=*/true);
  EXPECT_EQ(Feed(checker, {"done", "</", "s>", "tail"}),
            (std::vector<std::string>{"done", "", "</s>", ""}));
  EXPECT_TRUE(checker.stopped());
  EXPECT_EQ(checker.matched(), "</s>");
  EXPECT_EQ(checker.Flush(), "");
}

TEST(StopCheckerTest, IncludedStopDropsTextAfterItInTheSameDelta) {
  StopChecker checker({"."}, /*include_stop_in_output=*/true);
  EXPECT_EQ(checker.Append("One. Two."), "One.");
}

TEST(StopCheckerTest, EarliestMatchWinsAmongSeveralStopStrings) {
  // Both appear in one delta: the one that starts first wins, whatever the list order.
  StopChecker a({"world", "hello"});
  EXPECT_EQ(a.Append("say hello world"), "say ");
  EXPECT_EQ(a.matched(), "hello");

  StopChecker b({"hello", "world"}, /*include_stop_in_output=*/true);
  EXPECT_EQ(b.Append("world, hello"), "world");
  EXPECT_EQ(b.matched(), "world");

  // The longer stop starts earlier and is completed by a later delta.
  StopChecker c({"b", "xab"});
  EXPECT_EQ(c.Append("1xa"), "1");
  EXPECT_EQ(c.Append("b"), "");
  EXPECT_EQ(c.matched(), "xab");
}

TEST(StopCheckerTest, FlushReturnsTheHeldTailOnce) {
  StopChecker checker({"###"});
  EXPECT_EQ(checker.Append("x##"), "x");
  EXPECT_EQ(checker.Flush(), "##");
  EXPECT_EQ(checker.Flush(), "");
  EXPECT_FALSE(checker.stopped());
}

TEST(StopCheckerTest, MatchesMultiByteStopStringsAcrossDeltas) {
  const std::string owari = "\xe7\xb5\x82\xe3\x82\x8f\xe3\x82\x8a";  // 終わり
  StopChecker checker({owari});
  // 物語は終 | わ | り。
  EXPECT_EQ(checker.Append("\xe7\x89\xa9\xe8\xaa\x9e\xe3\x81\xaf\xe7\xb5\x82"),
            "\xe7\x89\xa9\xe8\xaa\x9e\xe3\x81\xaf");
  EXPECT_EQ(checker.Append("\xe3\x82\x8f"), "");
  EXPECT_EQ(checker.Append("\xe3\x82\x8a\xe3\x80\x82"), "");
  EXPECT_TRUE(checker.stopped());
  EXPECT_EQ(checker.matched(), owari);
}

TEST(StopCheckerTest, ReleasesAHeldMultiByteCharacterWhole) {
  const std::string e_acute = "\xc3\xa9";  // é
  const std::string e_grave = "\xc3\xa8";  // è shares é's lead byte
  StopChecker checker({e_acute + "!"});
  EXPECT_EQ(checker.Append("caf" + e_acute), "caf");  // "é" starts "é!"
  EXPECT_EQ(checker.Append(e_grave), e_acute + e_grave);
  // A delta that ends inside a character whose lead byte starts a stop: the lead
  // byte is held, never emitted alone.
  EXPECT_EQ(checker.Append("x\xc3"), "x");
  EXPECT_EQ(checker.Append("\xa8"), e_grave);
  EXPECT_FALSE(checker.stopped());
}

TEST(StopCheckerTest, NeverCutsACharacterWhenHoldingBack) {
  // Stop strings from the API are valid UTF-8, so a held-back tail starts on a
  // character boundary by itself; a stop beginning with a continuation byte is the one
  // way to ask for a cut inside "é", and the checker must move the cut before it.
  StopChecker checker({"\xa9!"});
  const std::string first = checker.Append("caf\xc3\xa9");
  EXPECT_EQ(first, "caf");
  EXPECT_TRUE(IsWholeUtf8(first));
  EXPECT_EQ(checker.Append("x"), "\xc3\xa9x");
}

// The cut is always on a character boundary, also when a delta ends inside a character
// and no stop string is involved (it used to be returned as is).
TEST(StopCheckerTest, HoldsAnIncompleteTrailingCharacter) {
  StopChecker checker({"zzz"});
  EXPECT_EQ(checker.Append("a\xe6\x97"), "a");
  EXPECT_EQ(checker.Append("\xa5"), "\xe6\x97\xa5");  // 日
  StopChecker none({});
  EXPECT_EQ(none.Append("b\xf0\x9f"), "b");
  EXPECT_EQ(none.Append("\x98\x80!"), "\xf0\x9f\x98\x80!");  // 😀
}

// The reference semantics: after each delta, if the text so far contains a stop
// string, the output is the text before the earliest-starting one (plus it when
// included) and generation stops; otherwise the output is the whole text.
std::string Reference(const std::vector<std::string>& stops, bool include,
                      const std::vector<std::string>& deltas) {
  std::string text;
  for (const auto& d : deltas) {
    text += d;
    size_t best = std::string::npos, len = 0;
    for (const auto& s : stops) {
      if (s.empty()) continue;
      size_t p = text.find(s);
      if (p != std::string::npos && (best == std::string::npos || p < best)) {
        best = p;
        len = s.size();
      }
    }
    if (best != std::string::npos) return text.substr(0, include ? best + len : best);
  }
  return text;
}

TEST(StopCheckerTest, RandomizedStreamsMatchTheReferenceAndHoldBackNoMore) {
  // Characters of 1 to 4 bytes; deltas are whole characters, as the detokenizer's are.
  const std::vector<std::string> alphabet = {
      "a", "b", "\xc3\xa9", "\xc3\xa8", "\xe6\x97\xa5", "\xe6\x97\xa6", "\xf0\x9f\x9a\x80"};
  std::mt19937 rng(20240611);
  auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
  for (int trial = 0; trial < 3000; ++trial) {
    std::vector<std::string> stops;
    for (size_t n = pick(3); n > 0; --n) {
      std::string s;
      for (size_t k = 1 + pick(3); k > 0; --k) s += alphabet[pick(alphabet.size())];
      stops.push_back(s);
    }
    std::vector<std::string> deltas;
    for (size_t n = 1 + pick(12); n > 0; --n) {
      std::string d;
      for (size_t k = pick(3); k > 0; --k) d += alphabet[pick(alphabet.size())];
      deltas.push_back(d);
    }
    const bool include = pick(2) == 1;
    SCOPED_TRACE(::testing::Message() << "trial " << trial);

    StopChecker checker(stops, include);
    std::string text, out;
    for (const auto& d : deltas) {
      if (checker.stopped()) break;
      text += d;
      const std::string piece = checker.Append(d);
      ASSERT_TRUE(IsWholeUtf8(piece));
      out += piece;
      ASSERT_EQ(text.compare(0, out.size(), out), 0) << "output is not a prefix of the text";
      if (!checker.stopped()) {
        // What is held must be a proper prefix of some stop string.
        const std::string held = text.substr(out.size());
        bool prefix = held.empty();
        for (const auto& s : stops)
          prefix = prefix || (held.size() < s.size() && s.starts_with(held));
        ASSERT_TRUE(prefix) << "held back " << held.size() << " bytes that start no stop";
      }
    }
    out += checker.Flush();
    ASSERT_EQ(out, Reference(stops, include, deltas));
  }
}

}  // namespace
}  // namespace orca
