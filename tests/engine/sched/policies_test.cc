// The scheduler's small policies on their own: batch composition (BatchBudget, with its
// latency target's IterationCostModel) and KV admission (KvCapacity).
#include <gtest/gtest.h>

#include <limits>
#include <random>

#include "engine/sched/batch_budget.h"
#include "engine/sched/iteration_cost_model.h"
#include "engine/sched/kv_capacity.h"

namespace orca {
namespace {

TEST(BatchBudgetTest, FitsWholeSequencesOrChunksThem) {
  SchedulerOptions o;
  o.max_batch_size = 2;
  o.max_batched_tokens = 10;
  o.chunked_prefill = true;
  BatchBudget b(o);
  EXPECT_EQ(b.Fit(4), 4);
  b.Spend(4);
  EXPECT_EQ(b.Fit(9), 6);  // a chunk of what is left
  b.Spend(6);
  EXPECT_EQ(b.Fit(3), 0);  // nothing left this iteration
  EXPECT_FALSE(b.full(1));
  EXPECT_TRUE(b.full(2));
  o.chunked_prefill = false;
  BatchBudget whole(o);
  EXPECT_EQ(whole.Fit(11), std::nullopt);  // may not be cut: waits
  EXPECT_EQ(whole.Fit(10), 10);
  // A recompute after preemption may outgrow the budget: it is cut even so.
  EXPECT_EQ(whole.Fit(11, /*recompute=*/true), 10);
  whole.Spend(7);
  EXPECT_EQ(whole.Fit(5, /*recompute=*/true), 3);
}

// A machine whose iterations cost 3 ms + 40 us per row + 50 us per token + 2 ns per
// query-key pair: the ground truth the model must recover from noisy timings.
double TrueSeconds(const IterationShape& s) {
  return 3e-3 + 40e-6 * s.rows + 50e-6 * s.tokens + 2e-9 * s.attended;
}

// An iteration as a serving engine has them: some decodes at various contexts and,
// every other time, a prefill chunk.
IterationShape RandomIteration(std::mt19937& rng) {
  IterationShape s;
  const int decodes = static_cast<int>(rng() % 33);
  for (int i = 0; i < decodes; ++i) s.AddRow(1, static_cast<int32_t>(rng() % 1024));
  if (decodes == 0 || rng() % 2 == 0) {
    s.AddRow(1 + static_cast<int32_t>(rng() % 512), static_cast<int32_t>(rng() % 1024));
  }
  return s;
}

TEST(IterationCostModelTest, RecoversALinearCostFromNoisyTimings) {
  IterationCostModel m;
  std::mt19937 rng(7);
  std::normal_distribution<double> noise(1.0, 0.03);  // 3 % timing noise
  for (int i = 0; i < 2000; ++i) {
    const IterationShape s = RandomIteration(rng);
    m.Observe(s, TrueSeconds(s) * noise(rng));
  }
  ASSERT_TRUE(m.ready());
  for (int i = 0; i < 200; ++i) {
    const IterationShape s = RandomIteration(rng);
    EXPECT_NEAR(m.Predict(s), TrueSeconds(s), 0.03 * TrueSeconds(s) + 2e-4);
  }
  // The marginal cost of a prefill token, which sizes chunks, within 5 %.
  IterationShape a, b;
  a.AddRow(1, 100);
  b.AddRow(401, 100);
  EXPECT_NEAR((m.Predict(b) - m.Predict(a)) / 400, (TrueSeconds(b) - TrueSeconds(a)) / 400,
              0.05 * (TrueSeconds(b) - TrueSeconds(a)) / 400);
}

TEST(IterationCostModelTest, WaitsForPrefillsAndKeepsCostsNonNegative) {
  IterationCostModel m;
  // Decode-only iterations whose time falls with rows (noise on a shared machine):
  // no prefill seen, so no prediction.
  for (int i = 0; i < 100; ++i) {
    IterationShape s;
    for (int r = 0; r <= i % 8; ++r) s.AddRow(1, 10);
    m.Observe(s, 0.010 - 0.0001 * s.rows);
  }
  EXPECT_FALSE(m.ready());
  EXPECT_EQ(m.Predict(IterationShape{}), 0);
  for (int i = 0; i < 8; ++i) {
    IterationShape s;
    s.AddRow(100 + 10 * i, 0);
    m.Observe(s, 0.010);  // prefill chunks cost nothing extra either
  }
  ASSERT_TRUE(m.ready());
  for (double c : m.coefficients()) EXPECT_GE(c, 0);
  // Bad timings are ignored.
  const int64_t n = m.num_observations();
  IterationShape s;
  s.AddRow(1, 0);
  m.Observe(s, -1);
  m.Observe(s, std::numeric_limits<double>::quiet_NaN());
  m.Observe(IterationShape{}, 1);
  EXPECT_EQ(m.num_observations(), n);
}

// A model trained on exactly 2 ms + 100 us per token.
IterationCostModel LinearModel() {
  IterationCostModel m;
  std::mt19937 rng(3);
  for (int i = 0; i < 200; ++i) {
    IterationShape s;
    const int decodes = static_cast<int>(rng() % 16);
    for (int d = 0; d < decodes; ++d) s.AddRow(1, static_cast<int32_t>(rng() % 300));
    if (decodes == 0 || rng() % 2) s.AddRow(1 + static_cast<int32_t>(rng() % 300), 0);
    m.Observe(s, 2e-3 + 100e-6 * s.tokens);
  }
  return m;
}

TEST(BatchBudgetTest, LatencyTargetCutsPrefillChunksButNeverDecodes) {
  const IterationCostModel m = LinearModel();
  ASSERT_TRUE(m.ready());
  SchedulerOptions o;
  o.max_batch_size = 64;
  o.max_batched_tokens = 512;
  BatchBudget b(o, &m, /*target_s=*/0.010);
  for (int i = 0; i < 8; ++i) {
    ASSERT_EQ(b.Fit(1, false, 200), 1);
    b.Spend(1, 200);
  }
  // 2 ms + 0.1 ms x (8 + n) <= 10 ms: n = 72.
  const int32_t n = *b.Fit(500, false, 0);
  EXPECT_NEAR(n, 72, 1);
  b.Spend(n, 0);
  EXPECT_LE(*b.Fit(500, false, 0), 1);  // the target is reached
  EXPECT_EQ(b.Fit(1, false, 300), 1);   // a decode still joins
  // Past the target, an iteration still prefills max_batched_tokens / 32 tokens.
  BatchBudget tight(o, &m, /*target_s=*/0.001);
  tight.Spend(1, 10);
  EXPECT_EQ(tight.min_prefill_tokens(), 16);
  EXPECT_EQ(tight.Fit(500, false, 0), 16);
  tight.Spend(10, 0);
  EXPECT_EQ(tight.Fit(500, false, 0), 6);
  // Without chunked prefill the target holds nothing back.
  o.chunked_prefill = false;
  BatchBudget whole(o, &m, 0.001);
  EXPECT_EQ(whole.Fit(300), 300);
}

Request Running(uint64_t id, int64_t admit_order) {
  Request r;
  r.id = id;
  r.admit_order = admit_order;
  r.status = RequestStatus::kRunning;
  r.prompt_tokens = {1, 2, 3};
  r.max_tokens = 5;
  r.num_computed_tokens = 2;
  return r;
}

TEST(KvCapacityTest, ReserveHoldsTheWholeRequestPagedWhatIsComputed) {
  Request r = Running(1, 0);
  EXPECT_EQ(KvCapacity(KvPolicy::kReserve, SchedulingPolicy::kIteration).TokensToHold(r, 1), 8);
  EXPECT_EQ(KvCapacity(KvPolicy::kPaged, SchedulingPolicy::kRequest).TokensToHold(r, 1), 8);
  EXPECT_EQ(KvCapacity(KvPolicy::kPaged, SchedulingPolicy::kIteration).TokensToHold(r, 1), 3);
  EXPECT_TRUE(KvCapacity(KvPolicy::kPaged, SchedulingPolicy::kIteration).may_preempt());
  EXPECT_FALSE(KvCapacity(KvPolicy::kReserve, SchedulingPolicy::kIteration).may_preempt());
  EXPECT_FALSE(KvCapacity(KvPolicy::kPaged, SchedulingPolicy::kRequestCompact).may_preempt());
}

TEST(KvCapacityTest, PreemptsTheNewestThatIsNeitherInTheBatchNorInFlight) {
  Request a = Running(1, 0), b = Running(2, 1), c = Running(3, 2), d = Running(4, 3),
          e = Running(5, 4), f = Running(6, 5);
  std::vector<Request*> running = {&a, &b, &c, &d, &e, &f};
  IterationPlan plan;
  plan.seqs.emplace_back();
  plan.seqs.back().seq_id = 6;                          // f is in this batch
  e.in_flight = 1;                                      // e is in flight
  EXPECT_EQ(KvCapacity::Victim(running, a, plan), &d);  // the newest free one
  EXPECT_EQ(KvCapacity::Victim(running, c, plan), &d);
  // Nothing admitted after d is free to take: d yields itself.
  EXPECT_EQ(KvCapacity::Victim(running, d, plan), nullptr);
}

}  // namespace
}  // namespace orca
