// The scheduler's two small policies on their own: batch composition (BatchBudget) and
// KV admission (KvCapacity).
#include <gtest/gtest.h>

#include "engine/sched/batch_budget.h"
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
