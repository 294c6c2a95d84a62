#include "engine/runner/sampler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>

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
