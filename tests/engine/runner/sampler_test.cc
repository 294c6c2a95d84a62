#include "engine/runner/sampler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <numeric>
#include <random>
#include <set>

#include "tests/engine/runner/sampler_reference.h"

namespace orca {
namespace {

const std::vector<float> kLogits = {1.0f, 3.0f, 0.5f, 2.5f, -1.0f, 2.0f, 0.0f, -3.0f};

ScheduledSequence Seq(SamplingParams p, int32_t index = 0) {
  ScheduledSequence s;
  s.seq_id = 9;
  s.sampling = p;
  s.output_index = index;
  return s;
}

std::vector<double> Softmax(const std::vector<float>& logits, double temperature) {
  std::vector<double> p(logits.size());
  double m = *std::max_element(logits.begin(), logits.end()), z = 0;
  for (size_t i = 0; i < p.size(); ++i) z += p[i] = std::exp((logits[i] - m) / temperature);
  for (double& v : p) v /= z;
  return p;
}

std::map<int32_t, int> Draw(SamplingParams p, int n) {
  std::map<int32_t, int> counts;
  for (int i = 0; i < n; ++i) {
    std::vector<float> l = kLogits;
    ++counts[SampleToken(absl::MakeSpan(l), Seq(p, i)).token_id];
  }
  return counts;
}

TEST(SamplerTest, GreedyPicksArgmax) {
  SamplingParams p;
  p.temperature = 0;
  std::vector<float> l = kLogits;
  EXPECT_EQ(SampleToken(absl::MakeSpan(l), Seq(p)).token_id, 1);
}

TEST(SamplerTest, SeedMakesDrawsReproducible) {
  SamplingParams p;
  p.seed = 1234;
  std::vector<int32_t> a, b, c;
  for (int i = 0; i < 200; ++i) {
    std::vector<float> l1 = kLogits, l2 = kLogits, l3 = kLogits;
    a.push_back(SampleToken(absl::MakeSpan(l1), Seq(p, i)).token_id);
    b.push_back(SampleToken(absl::MakeSpan(l2), Seq(p, i)).token_id);
    SamplingParams q = p;
    q.seed = 999;
    c.push_back(SampleToken(absl::MakeSpan(l3), Seq(q, i)).token_id);
  }
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
}

TEST(SamplerTest, FrequenciesFollowTemperatureSoftmax) {
  for (double t : {1.0, 0.5, 2.0}) {
    SamplingParams p;
    p.temperature = static_cast<float>(t);
    p.seed = 7;
    const int n = 40000;
    auto counts = Draw(p, n);
    std::vector<double> expected = Softmax(kLogits, t);
    for (size_t i = 0; i < expected.size(); ++i) {
      double freq = static_cast<double>(counts[static_cast<int32_t>(i)]) / n;
      // 5 standard deviations of a binomial proportion.
      double tol = 5 * std::sqrt(expected[i] * (1 - expected[i]) / n) + 1e-4;
      EXPECT_NEAR(freq, expected[i], tol) << "token " << i << " temperature " << t;
    }
  }
}

TEST(SamplerTest, TopKKeepsOnlyTheKBest) {
  SamplingParams p;
  p.top_k = 3;
  p.seed = 3;
  auto counts = Draw(p, 5000);
  std::set<int32_t> seen;
  for (auto& [t, c] : counts) seen.insert(t);
  EXPECT_EQ(seen, (std::set<int32_t>{1, 3, 5}));
  p.top_k = 1;
  p.temperature = 5;
  EXPECT_EQ(Draw(p, 500).size(), 1u);
}

TEST(SamplerTest, TopPKeepsTheNucleus) {
  // Probabilities sorted: tokens 1, 3, 5, 0, ... Cumulative mass of {1, 3} is below
  // 0.8; adding 5 crosses it, so the nucleus is {1, 3, 5}.
  std::vector<double> pr = Softmax(kLogits, 1.0);
  ASSERT_LT(pr[1] + pr[3], 0.8);
  ASSERT_GE(pr[1] + pr[3] + pr[5], 0.8);
  SamplingParams p;
  p.top_p = 0.8f;
  p.seed = 11;
  const int n = 30000;
  auto counts = Draw(p, n);
  std::set<int32_t> seen;
  for (auto& [t, c] : counts) seen.insert(t);
  EXPECT_EQ(seen, (std::set<int32_t>{1, 3, 5}));
  double z = pr[1] + pr[3] + pr[5];
  EXPECT_NEAR(static_cast<double>(counts[1]) / n, pr[1] / z, 0.015);
}

TEST(SamplerTest, MinPDropsUnlikelyTokens) {
  std::vector<double> pr = Softmax(kLogits, 1.0);
  SamplingParams p;
  p.min_p = 0.5f;  // keep tokens with p >= 0.5 * p_max: 1 (p_max) and 3 (e^-0.5 = 0.61)
  p.seed = 5;
  auto counts = Draw(p, 5000);
  std::set<int32_t> seen;
  for (auto& [t, c] : counts) seen.insert(t);
  EXPECT_EQ(seen, (std::set<int32_t>{1, 3}));
  (void)pr;
}

TEST(SamplerTest, LogprobsAreLogSoftmaxOfTheModel) {
  SamplingParams p;
  p.temperature = 0.7f;  // logprobs do not depend on sampling transforms
  p.logprobs = 3;
  p.seed = 1;
  std::vector<float> l = kLogits;
  SampledToken t = SampleToken(absl::MakeSpan(l), Seq(p));
  std::vector<double> pr = Softmax(kLogits, 1.0);
  EXPECT_NEAR(t.logprob, std::log(pr[t.token_id]), 1e-5);
  ASSERT_EQ(t.top_logprobs.size(), 3u);
  EXPECT_EQ(t.top_logprobs[0].first, 1);
  EXPECT_EQ(t.top_logprobs[1].first, 3);
  EXPECT_EQ(t.top_logprobs[2].first, 5);
  for (auto& [id, lp] : t.top_logprobs) EXPECT_NEAR(lp, std::log(pr[id]), 1e-5);
}

TEST(SamplerTest, RepetitionPenaltyFollowsHuggingFace) {
  SamplingParams p;
  p.temperature = 0;
  p.repetition_penalty = 2.0f;
  p.logprobs = 0;
  ScheduledSequence s = Seq(p);
  s.penalty_history = {1, 1, 4};
  std::vector<float> l = kLogits;
  SampledToken t = SampleToken(absl::MakeSpan(l), s);
  EXPECT_FLOAT_EQ(l[1], 1.5f);   // positive: divided
  EXPECT_FLOAT_EQ(l[4], -2.0f);  // negative: multiplied
  EXPECT_EQ(t.token_id, 3);      // 2.5 now beats 1.5
}

TEST(SamplerTest, BannedTokensAreNeverSampled) {
  SamplingParams p;
  p.seed = 2;
  for (int i = 0; i < 2000; ++i) {
    std::vector<float> l = kLogits;
    ScheduledSequence s = Seq(p, i);
    s.banned_token_ids = {1, 3};
    int32_t tok = SampleToken(absl::MakeSpan(l), s).token_id;
    ASSERT_NE(tok, 1);
    ASSERT_NE(tok, 3);
  }
}

TEST(SamplerTest, SeededUniformIsInRangeAndSpread) {
  double sum = 0;
  for (int i = 0; i < 100000; ++i) {
    double u = SeededUniform(42, i);
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    sum += u;
  }
  EXPECT_NEAR(sum / 100000, 0.5, 0.005);
}

}  // namespace
}  // namespace orca

namespace orca {
namespace {

TEST(SamplerTest, PresenceFrequencyPenaltiesAndLogitBiasFollowOpenAI) {
  SamplingParams p;
  p.temperature = 0;
  p.presence_penalty = 0.5f;
  p.frequency_penalty = 0.25f;
  p.logit_bias = {{6, 10.0f}};
  ScheduledSequence s = Seq(p);
  s.penalty_history = {1, 1, 3, 3, 3};  // the prompt: not penalised
  s.penalty_prompt_len = 2;             // output = {3, 3, 3}
  std::vector<float> l = kLogits;
  SampledToken t = SampleToken(absl::MakeSpan(l), s);
  EXPECT_FLOAT_EQ(l[1], 3.0f);
  EXPECT_FLOAT_EQ(l[3], 2.5f - 3 * 0.25f - 0.5f);
  EXPECT_FLOAT_EQ(l[6], 10.0f);
  EXPECT_EQ(t.token_id, 6);
}

}  // namespace
}  // namespace orca

namespace orca {
namespace {

// Truncated draws (top-k, top-p, min-p and their mixes) pick exactly the token the full
// sort picks, on a 16k vocabulary whose nuclei hold from one to thousands of tokens (the
// sampler sorts only a growing prefix, or partitions for min-p).
// A row's logit bias and penalties as edits (what the CUDA backend applies, and
// SampleToken too): one per token, in token order, the kinds together, biases summed,
// ids outside the vocabulary dropped; rows appended one after another stay apart.
TEST(SamplerTest, LogitEditsAreOnePerTokenAndRowsStayApart) {
  ScheduledSequence a;
  a.sampling.logit_bias = {{9, 1.0f}, {3, 2.0f}, {9, 0.5f}, {100, 7.0f}, {-2, 1.0f}};
  a.sampling.frequency_penalty = 0.5f;
  a.sampling.presence_penalty = 0.25f;
  a.sampling.repetition_penalty = 1.2f;
  a.penalty_history = {3, 9, 9, 4, -1, 100};
  a.penalty_prompt_len = 1;  // 3 is the prompt: no presence or frequency penalty
  ScheduledSequence b;
  b.sampling.logit_bias = {{9, -1.0f}};
  std::vector<LogitEdit> edits;
  AppendLogitEdits(a, 100, &edits);
  AppendLogitEdits(b, 100, &edits);
  ASSERT_EQ(edits.size(), 4u);
  auto expect = [&](size_t i, int32_t token, uint32_t ops, float bias, float subtract) {
    SCOPED_TRACE(i);
    EXPECT_EQ(edits[i].token, token);
    EXPECT_EQ(edits[i].ops, ops);
    EXPECT_EQ(edits[i].bias, bias);
    EXPECT_EQ(edits[i].subtract, subtract);
  };
  expect(0, 3, LogitEdit::kBias | LogitEdit::kRepeat, 2.0f, 0.0f);
  expect(1, 4, LogitEdit::kSubtract | LogitEdit::kRepeat, 0.0f, 0.75f);
  expect(2, 9, LogitEdit::kBias | LogitEdit::kSubtract | LogitEdit::kRepeat, 1.5f, 1.25f);
  expect(3, 9, LogitEdit::kBias, -1.0f, 0.0f);  // b's, not merged into a's
  // SampleToken applies exactly these: bias, then subtract, then the repetition rule.
  std::vector<float> logits(100, 0.0f);
  logits[3] = -1.0f;
  logits[4] = 2.0f;
  logits[9] = 0.5f;
  a.sampling.temperature = 0.0f;
  a.sampling.logprobs = 0;
  std::vector<float> row = logits;
  SampleToken(absl::MakeSpan(row), a);
  EXPECT_FLOAT_EQ(row[3], (-1.0f + 2.0f) / 1.2f);
  EXPECT_FLOAT_EQ(row[4], (2.0f - 0.75f) / 1.2f);
  EXPECT_FLOAT_EQ(row[9], (0.5f + 1.5f - 1.25f) / 1.2f);
  EXPECT_EQ(row[5], 0.0f);
}

TEST(SamplerTest, TruncatedDrawsEqualTheFullSortReference) {
  std::mt19937 rng(5);
  const int32_t vocab = 16000;
  int checked = 0;
  for (float spread : {0.5f, 2.0f, 6.0f}) {  // flat to peaked distributions
    std::normal_distribution<float> normal(0.0f, spread);
    std::vector<float> logits(vocab);
    for (float& v : logits) v = normal(rng);
    logits[123] = logits[456];  // a tie
    for (int32_t top_k : {0, 1, 50, 5000}) {
      for (float top_p : {1.0f, 0.3f, 0.9f, 0.99f}) {
        for (float min_p : {0.0f, 0.01f, 0.3f}) {
          if (top_k == 0 && top_p == 1.0f && min_p == 0.0f) continue;
          for (float temperature : {0.6f, 1.4f}) {
            SamplingParams p;
            p.temperature = temperature;
            p.top_k = top_k;
            p.top_p = top_p;
            p.min_p = min_p;
            p.seed = static_cast<uint64_t>(checked);
            for (int32_t index = 0; index < 2; ++index) {
              std::vector<float> l = logits;
              ScheduledSequence s = Seq(p, index);
              const int32_t got = SampleToken(absl::MakeSpan(l), s).token_id;
              ASSERT_EQ(got,
                        orca::testing::FullSortReference(logits, p, SeededUniform(p.seed, index)))
                  << "spread " << spread << " top_k " << top_k << " top_p " << top_p << " min_p "
                  << min_p << " T " << temperature << " index " << index;
              ++checked;
            }
          }
        }
      }
    }
  }
  EXPECT_GT(checked, 500);
}

// Untruncated draws walk the vocabulary in id order rather than sorted: the same
// distribution, checked on a 1000-token vocabulary against softmax.
TEST(SamplerTest, UntruncatedDrawsFollowSoftmaxOnALargeVocabulary) {
  std::mt19937 rng(9);
  std::normal_distribution<float> normal(0.0f, 1.5f);
  std::vector<float> logits(1000);
  for (float& v : logits) v = normal(rng);
  std::vector<double> expected = Softmax(logits, 0.8);
  SamplingParams p;
  p.temperature = 0.8f;
  p.seed = 31;
  const int n = 100000;
  std::vector<int> counts(logits.size());
  for (int i = 0; i < n; ++i) {
    std::vector<float> l = logits;
    ++counts[SampleToken(absl::MakeSpan(l), Seq(p, i)).token_id];
  }
  // Pearson's chi-square over the 999 degrees of freedom: mean 999, sd 44.7; 1300 is
  // beyond 6.7 sd.
  double chi2 = 0;
  for (size_t t = 0; t < logits.size(); ++t) {
    const double e = expected[t] * n;
    chi2 += (counts[t] - e) * (counts[t] - e) / e;
  }
  EXPECT_LT(chi2, 1300);
}

// NaN logits (a broken model or kernel) are never picked and cannot make the sort
// undefined; +inf is the largest finite value, so the token that has it wins.
TEST(SamplerTest, NanLogitsAreNeverSampledAndInfinityWins) {
  std::vector<float> with_nan = kLogits;
  with_nan[0] = with_nan[1] = std::nanf("");  // 1 was the argmax
  SamplingParams greedy;
  greedy.temperature = 0;
  greedy.logprobs = 2;
  std::vector<float> l = with_nan;
  SampledToken t = SampleToken(absl::MakeSpan(l), Seq(greedy));
  EXPECT_EQ(t.token_id, 3);
  EXPECT_TRUE(std::isfinite(t.logprob));
  ASSERT_EQ(t.top_logprobs.size(), 2u);
  EXPECT_EQ(t.top_logprobs[0].first, 3);
  EXPECT_EQ(t.top_logprobs[1].first, 5);
  for (float top_p : {1.0f, 0.9f}) {
    SamplingParams p;
    p.top_p = top_p;
    p.seed = 4;
    for (int i = 0; i < 2000; ++i) {
      std::vector<float> row = with_nan;
      const int32_t tok = SampleToken(absl::MakeSpan(row), Seq(p, i)).token_id;
      ASSERT_NE(tok, 0);
      ASSERT_NE(tok, 1);
    }
  }
  std::vector<float> with_inf = kLogits;
  with_inf[6] = INFINITY;
  SamplingParams p;
  p.seed = 8;
  p.logprobs = 0;
  for (int i = 0; i < 100; ++i) {
    std::vector<float> row = with_inf;
    SampledToken s = SampleToken(absl::MakeSpan(row), Seq(p, i));
    ASSERT_EQ(s.token_id, 6);
    ASSERT_TRUE(std::isfinite(s.logprob));
  }
  // Every token banned or NaN: the draw still returns a token id, not garbage.
  std::vector<float> all_nan(8, std::nanf(""));
  EXPECT_EQ(SampleToken(absl::MakeSpan(all_nan), Seq(p)).token_id, 0);
}

}  // namespace
}  // namespace orca
