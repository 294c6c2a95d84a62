// ScorePromptToken against a float64 log-softmax written out here, on rows built to
// have ties, NaN and a top N past the vocabulary.
#include "engine/runner/prompt_logprobs.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

namespace orca {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

// log-softmax of row[i] in float64, NaN as -inf.
double ReferenceLogprob(const std::vector<float>& row, int32_t i) {
  double max = -kInf;
  for (float v : row)
    if (!std::isnan(v)) max = std::max<double>(max, v);
  double sum = 0;
  for (float v : row)
    if (!std::isnan(v)) sum += std::exp(static_cast<double>(v) - max);
  return std::isnan(row[i]) ? -kInf : row[i] - max - std::log(sum);
}

TEST(PromptLogprobsTest, LogprobRankAndTopMatchAFloat64Reference) {
  std::mt19937 rng(7);
  std::normal_distribution<float> logit(0.0f, 4.0f);
  std::vector<float> row(1000);
  for (float& v : row) v = logit(rng);
  row[17] = 30.0f;  // one clear favourite
  for (int32_t target : {17, 3, 999}) {
    PromptLogprob p = ScorePromptToken(row, target, 5);
    EXPECT_EQ(p.token_id, target);
    EXPECT_NEAR(p.logprob, ReferenceLogprob(row, target), 1e-5);
    const int32_t greater = static_cast<int32_t>(
        std::count_if(row.begin(), row.end(), [&](float v) { return v > row[target]; }));
    EXPECT_EQ(p.rank, greater + 1);
    std::vector<int32_t> order(row.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](int32_t a, int32_t b) { return row[a] > row[b]; });
    ASSERT_EQ(p.top_logprobs.size(), 5u);
    for (size_t k = 0; k < 5; ++k) {
      EXPECT_EQ(p.top_logprobs[k].first, order[k]) << k;
      EXPECT_NEAR(p.top_logprobs[k].second, ReferenceLogprob(row, order[k]), 1e-5);
    }
  }
}

TEST(PromptLogprobsTest, TiesShareTheBetterRankAndListSmallerIdsFirst) {
  const std::vector<float> row = {1.0f, 3.0f, 3.0f, 2.0f, 3.0f};
  PromptLogprob p = ScorePromptToken(row, 4, 3);
  EXPECT_EQ(p.rank, 1);
  ASSERT_EQ(p.top_logprobs.size(), 3u);
  EXPECT_EQ(p.top_logprobs[0].first, 1);
  EXPECT_EQ(p.top_logprobs[1].first, 2);
  EXPECT_EQ(p.top_logprobs[2].first, 4);
  EXPECT_EQ(ScorePromptToken(row, 3, 0).rank, 4);
  EXPECT_TRUE(ScorePromptToken(row, 3, 0).top_logprobs.empty());
  // A top N past the vocabulary lists the whole vocabulary.
  EXPECT_EQ(ScorePromptToken(row, 0, 50).top_logprobs.size(), row.size());
}

TEST(PromptLogprobsTest, NaNCountsAsMinusInfinity) {
  const std::vector<float> row = {kNaN, 0.0f, kNaN, 1.0f};
  PromptLogprob nan_target = ScorePromptToken(row, 0, 4);
  EXPECT_EQ(nan_target.logprob, -kInf);
  EXPECT_EQ(nan_target.rank, 3);  // below both finite logits
  EXPECT_NEAR(ScorePromptToken(row, 3, 0).logprob, ReferenceLogprob(row, 3), 1e-6);
  EXPECT_EQ(nan_target.top_logprobs[0].first, 3);
  EXPECT_EQ(nan_target.top_logprobs[1].first, 1);
  // Nothing finite: everything scores -inf, nothing is NaN.
  const std::vector<float> none = {kNaN, -kInf};
  PromptLogprob p = ScorePromptToken(none, 1, 2);
  EXPECT_EQ(p.logprob, -kInf);
  EXPECT_EQ(p.rank, 1);
  for (const auto& [id, lp] : p.top_logprobs) EXPECT_EQ(lp, -kInf) << id;
}

}  // namespace
}  // namespace orca
