#include "bench/loadgen/trace.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

namespace orca::bench {
namespace {

struct Moments {
  double mean = 0, var = 0;
};

template <typename F>
Moments MomentsOf(const std::vector<TraceRequest>& t, F value) {
  Moments m;
  for (const auto& r : t) m.mean += value(r);
  m.mean /= static_cast<double>(t.size());
  for (const auto& r : t) m.var += (value(r) - m.mean) * (value(r) - m.mean);
  m.var /= static_cast<double>(t.size() - 1);
  return m;
}

// Variance of the discrete uniform distribution on [a, b].
double UniformVar(double a, double b) { return ((b - a + 1) * (b - a + 1) - 1) / 12.0; }

TraceOptions PaperTrace(int64_t n, double rate, uint64_t seed) {
  TraceOptions o;
  o.num_requests = n;
  o.rate = rate;
  o.seed = seed;
  return o;
}

TEST(TraceTest, PaperTraceMomentsMatchTheDistributions) {
  auto t = GenerateTrace(PaperTrace(20000, 4.0, 7));
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ(t->size(), 20000u);
  // Lengths: uniform on [32, 512] and [1, 128]. Standard errors are ~1 and ~0.26; the
  // tolerances are over 3 of them.
  Moments in = MomentsOf(*t, [](const TraceRequest& r) { return double(r.input_len); });
  Moments out = MomentsOf(*t, [](const TraceRequest& r) { return double(r.output_len); });
  EXPECT_NEAR(in.mean, 272.0, 3.5);
  EXPECT_NEAR(out.mean, 64.5, 1.0);
  EXPECT_NEAR(in.var / UniformVar(32, 512), 1.0, 0.04);
  EXPECT_NEAR(out.var / UniformVar(1, 128), 1.0, 0.04);
  int in_lo = 1 << 30, in_hi = 0, out_lo = 1 << 30, out_hi = 0;
  for (const auto& r : *t) {
    in_lo = std::min(in_lo, r.input_len);
    in_hi = std::max(in_hi, r.input_len);
    out_lo = std::min(out_lo, r.output_len);
    out_hi = std::max(out_hi, r.output_len);
  }
  EXPECT_EQ(in_lo, 32);
  EXPECT_EQ(in_hi, 512);
  EXPECT_EQ(out_lo, 1);
  EXPECT_EQ(out_hi, 128);
  // Inter-arrival gaps: exponential with mean 1/rate and coefficient of variation 1.
  std::vector<double> gaps;
  double prev = 0;
  for (const auto& r : *t) {
    gaps.push_back(r.arrival_s - prev);
    prev = r.arrival_s;
  }
  double mean = std::accumulate(gaps.begin(), gaps.end(), 0.0) / gaps.size();
  double var = 0;
  for (double g : gaps) var += (g - mean) * (g - mean);
  var /= gaps.size() - 1;
  EXPECT_NEAR(mean, 0.25, 0.25 * 0.03);
  EXPECT_NEAR(std::sqrt(var) / mean, 1.0, 0.04);
  EXPECT_NEAR(MeanRate(*t), 4.0, 0.12);
  // Poisson counts: arrivals per 1 s window have variance equal to their mean.
  std::vector<double> counts(static_cast<size_t>(t->back().arrival_s), 0.0);
  for (const auto& r : *t) {
    if (r.arrival_s < counts.size()) counts[static_cast<size_t>(r.arrival_s)] += 1;
  }
  double cm = std::accumulate(counts.begin(), counts.end(), 0.0) / counts.size(), cv = 0;
  for (double c : counts) cv += (c - cm) * (c - cm);
  cv /= counts.size() - 1;
  EXPECT_NEAR(cv / cm, 1.0, 0.12);
}

TEST(TraceTest, BurstinessShapesTheGapsButNotTheRateOrTheLengths) {
  auto poisson = GenerateTrace(PaperTrace(20000, 4.0, 7));
  ASSERT_TRUE(poisson.ok());
  for (double b : {0.25, 4.0}) {
    TraceOptions o = PaperTrace(20000, 4.0, 7);
    o.burstiness = b;
    auto t = GenerateTrace(o);
    ASSERT_TRUE(t.ok()) << t.status();
    std::vector<double> gaps;
    double prev = 0;
    for (size_t i = 0; i < t->size(); ++i) {
      gaps.push_back((*t)[i].arrival_s - prev);
      prev = (*t)[i].arrival_s;
      ASSERT_EQ((*t)[i].input_len, (*poisson)[i].input_len) << "burstiness changed a length";
      ASSERT_EQ((*t)[i].output_len, (*poisson)[i].output_len);
      ASSERT_EQ((*t)[i].prompt, (*poisson)[i].prompt);
    }
    // Gamma(shape b, scale 1 / (rate b)): mean 1 / rate, coefficient of variation
    // 1 / sqrt(b). Standard errors of the mean are 1.4 % (b = 0.25) and 0.35 % (b = 4).
    double mean = std::accumulate(gaps.begin(), gaps.end(), 0.0) / gaps.size(), var = 0;
    for (double g : gaps) var += (g - mean) * (g - mean);
    var /= gaps.size() - 1;
    EXPECT_NEAR(mean, 0.25, 0.25 * 0.05) << "burstiness " << b;
    EXPECT_NEAR(std::sqrt(var) / mean, 1.0 / std::sqrt(b), 0.06 / std::sqrt(b))
        << "burstiness " << b;
    auto again = GenerateTrace(o);
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(again->back().arrival_s, t->back().arrival_s) << "not reproducible";
  }
  TraceOptions bad = PaperTrace(10, 1.0, 1);
  bad.burstiness = 0;
  EXPECT_EQ(GenerateTrace(bad).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(TraceTest, PromptsHaveTheInputLengthAndTokenRange) {
  TraceOptions o = PaperTrace(200, 1.0, 3);
  o.token_id_min = 5;
  o.token_id_max = 9;
  auto t = GenerateTrace(o);
  ASSERT_TRUE(t.ok());
  std::vector<int> seen(10, 0);
  for (const auto& r : *t) {
    ASSERT_EQ(static_cast<int32_t>(r.prompt.size()), r.input_len);
    for (int32_t id : r.prompt) {
      ASSERT_GE(id, 5);
      ASSERT_LE(id, 9);
      seen[id] = 1;
    }
  }
  EXPECT_EQ(std::accumulate(seen.begin(), seen.end(), 0), 5);
}

TEST(TraceTest, SameSeedSameTraceOtherSeedOtherTrace) {
  auto a = GenerateTrace(PaperTrace(100, 2.0, 42));
  auto b = GenerateTrace(PaperTrace(100, 2.0, 42));
  auto c = GenerateTrace(PaperTrace(100, 2.0, 43));
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  bool differs = false;
  for (size_t i = 0; i < a->size(); ++i) {
    EXPECT_EQ((*a)[i].arrival_s, (*b)[i].arrival_s);
    EXPECT_EQ((*a)[i].input_len, (*b)[i].input_len);
    EXPECT_EQ((*a)[i].output_len, (*b)[i].output_len);
    EXPECT_EQ((*a)[i].prompt, (*b)[i].prompt);
    differs = differs || (*a)[i].input_len != (*c)[i].input_len;
  }
  EXPECT_TRUE(differs);
}

TEST(TraceTest, FirstRequestsArePinnedAcrossLibraries) {
  // The generator is mt19937_64 with our own distributions, so a seed means the same
  // requests with every standard library, forever (results stay comparable).
  auto t = GenerateTrace(PaperTrace(3, 1.0, 1));
  ASSERT_TRUE(t.ok());
  EXPECT_EQ((*t)[0].input_len, 175);
  EXPECT_EQ((*t)[1].input_len, 393);
  EXPECT_EQ((*t)[2].input_len, 452);
  EXPECT_EQ((*t)[0].output_len, 27);
  EXPECT_EQ((*t)[1].output_len, 74);
  EXPECT_EQ((*t)[2].output_len, 1);
}

TEST(TraceTest, RateOnlyScalesArrivals) {
  auto slow = GenerateTrace(PaperTrace(50, 1.0, 9));
  auto fast = GenerateTrace(PaperTrace(50, 8.0, 9));
  auto burst = GenerateTrace(PaperTrace(50, 0.0, 9));
  ASSERT_TRUE(slow.ok() && fast.ok() && burst.ok());
  for (size_t i = 0; i < 50; ++i) {
    EXPECT_NEAR((*fast)[i].arrival_s, (*slow)[i].arrival_s / 8.0, 1e-12);
    EXPECT_EQ((*fast)[i].input_len, (*slow)[i].input_len);
    EXPECT_EQ((*fast)[i].prompt, (*slow)[i].prompt);
    EXPECT_EQ((*burst)[i].arrival_s, 0.0);
    EXPECT_EQ((*burst)[i].output_len, (*slow)[i].output_len);
  }
  auto scaled = ScaleArrivals(*slow, 0.5);
  EXPECT_NEAR(scaled[10].arrival_s, (*slow)[10].arrival_s * 0.5, 1e-12);
}

TEST(TraceTest, RedrawnPromptsKeepLengthsAndDiffer) {
  TraceOptions o = PaperTrace(40, 1.0, 11);
  auto t = GenerateTrace(o);
  ASSERT_TRUE(t.ok());
  auto same = RedrawPrompts(*t, o, 0);
  auto other = RedrawPrompts(*t, o, 1);
  auto other_again = RedrawPrompts(*t, o, 1);
  size_t differ = 0;
  for (size_t i = 0; i < t->size(); ++i) {
    EXPECT_EQ(same[i].prompt, (*t)[i].prompt);
    EXPECT_EQ(other[i].prompt, other_again[i].prompt);
    ASSERT_EQ(other[i].prompt.size(), (*t)[i].prompt.size());
    EXPECT_EQ(other[i].arrival_s, (*t)[i].arrival_s);
    EXPECT_EQ(other[i].output_len, (*t)[i].output_len);
    differ += other[i].prompt[0] != (*t)[i].prompt[0];
  }
  EXPECT_GT(differ, 30u);
}

TEST(TraceTest, FixedTraceAndBadRanges) {
  TraceOptions o = PaperTrace(30, 1.0, 1);
  o.input_min = o.input_max = 100;
  o.output_min = o.output_max = 7;
  auto t = GenerateTrace(o);
  ASSERT_TRUE(t.ok());
  for (const auto& r : *t) {
    EXPECT_EQ(r.input_len, 100);
    EXPECT_EQ(r.output_len, 7);
  }
  o.input_min = 0;
  EXPECT_EQ(GenerateTrace(o).status().code(), absl::StatusCode::kInvalidArgument);
  o.input_min = 10;
  o.output_min = 9;
  o.output_max = 8;
  EXPECT_EQ(GenerateTrace(o).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(TraceTest, JsonlRoundTripsAndDrawsMissingPrompts) {
  auto t = GenerateTrace(PaperTrace(20, 3.0, 5));
  ASSERT_TRUE(t.ok());
  auto back = ParseJsonlTrace(TraceToJsonl(*t, true), "mem", TraceOptions{});
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_EQ(back->size(), t->size());
  for (size_t i = 0; i < t->size(); ++i) {
    EXPECT_DOUBLE_EQ((*back)[i].arrival_s, (*t)[i].arrival_s);
    EXPECT_EQ((*back)[i].prompt, (*t)[i].prompt);
    EXPECT_EQ((*back)[i].output_len, (*t)[i].output_len);
  }
  auto drawn = ParseJsonlTrace(
      "{\"arrival_s\": 0.5, \"input_len\": 4, \"output_len\": 2}\n\n"
      "{\"arrival_s\": 1, \"input_len\": 3, \"output_len\": 1}\n",
      "mem", TraceOptions{});
  ASSERT_TRUE(drawn.ok()) << drawn.status();
  ASSERT_EQ(drawn->size(), 2u);
  EXPECT_EQ((*drawn)[0].prompt.size(), 4u);
  EXPECT_EQ((*drawn)[1].prompt.size(), 3u);
}

TEST(TraceTest, JsonlErrorsNameTheLine) {
  auto bad = ParseJsonlTrace(
      "{\"arrival_s\": 1, \"input_len\": 4, \"output_len\": 2}\n"
      "{\"arrival_s\": 0.5, \"input_len\": 4, \"output_len\": 2}\n",
      "t.jsonl", TraceOptions{});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), testing::HasSubstr("t.jsonl:2"));
  EXPECT_FALSE(ParseJsonlTrace("{\"arrival_s\": 0, \"output_len\": 2}\n", "t", {}).ok());
  EXPECT_FALSE(
      ParseJsonlTrace("{\"arrival_s\": 0, \"input_len\": 0, \"output_len\": 2}\n", "t", {}).ok());
  EXPECT_FALSE(ParseJsonlTrace("not json\n", "t", {}).ok());
}

}  // namespace
}  // namespace orca::bench
