// The control plane's plan deltas (engine/group/plan_codec.h): every plan a real
// scheduler produces under churn (admission, chunked prefill, decodes, preemption and
// recompute, aborts, penalties that need the token history, two batches in flight)
// decodes on the rank side to exactly the plan the scheduler made, through the wire
// format, and the ranks' results (sampled tokens, prompt logprobs) come back exactly; a rank that
// missed a plan refuses the next one that builds on it; and the bytes per plan stop growing with
// the context.
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "engine/group/plan_codec.h"
#include "engine/sched/scheduler.h"

namespace orca {
namespace {

v1::IterationPlan ThroughTheWire(const v1::IterationPlan& msg) {
  std::string wire;
  EXPECT_TRUE(msg.SerializeToString(&wire));
  v1::IterationPlan parsed;
  EXPECT_TRUE(parsed.ParseFromString(wire));
  return parsed;
}

std::unique_ptr<Request> RandomRequest(uint64_t id, std::mt19937& rng) {
  auto r = std::make_unique<Request>();
  r->id = id;
  const int32_t len = 1 + static_cast<int32_t>(rng() % 60);
  for (int32_t i = 0; i < len; ++i) r->prompt_tokens.push_back(static_cast<int32_t>(rng() % 500));
  r->max_tokens = 1 + static_cast<int32_t>(rng() % 50);
  r->arrival_time = static_cast<double>(id);
  r->sampling.temperature = rng() % 2 ? 0.0f : 0.7f;
  if (rng() % 2) r->sampling.presence_penalty = 0.5f;  // needs the history
  if (rng() % 3 == 0) r->sampling.logit_bias = {{3, 1.5f}};
  r->sampling.seed = id;
  r->min_tokens = static_cast<int32_t>(rng() % 3);
  r->stop_token_ids = {0};
  // (From the id: more draws would change the churn the seeds were chosen for.)
  if (id % 3 == 0) r->sampling.prompt_logprobs = static_cast<int32_t>(id % 2);
  return r;
}

IterationResult Sample(const IterationPlan& plan, std::mt19937& rng) {
  IterationResult result;
  result.iteration = plan.iteration;
  for (const ScheduledSequence& s : plan.seqs) {
    if (!s.sample) continue;
    SampledToken t;
    t.seq_id = s.seq_id;
    t.token_id = 1 + static_cast<int32_t>(rng() % 499);
    t.logprob = -0.5f;
    t.top_logprobs = {{t.token_id, -0.5f}, {2, -1.5f}};
    result.tokens.push_back(t);
  }
  for (const ScheduledSequence& s : plan.seqs) {
    if (s.prompt_logprob_targets.empty()) continue;
    SequencePromptLogprobs p;
    p.seq_id = s.seq_id;
    p.first_position = s.start_pos + s.prompt_logprobs_from + 1;
    for (int32_t target : s.prompt_logprob_targets) {
      p.entries.push_back(PromptLogprob{target, -1.25f, 3, {{target, -1.25f}, {4, -2.0f}}});
    }
    result.prompt_logprobs.push_back(std::move(p));
  }
  return result;
}

// The result as a rank sends it and the scheduler reads it.
IterationResult ResultThroughTheWire(const IterationResult& result) {
  v1::IterationDone msg;
  ToProto(result, &msg);
  std::string wire;
  EXPECT_TRUE(msg.SerializeToString(&wire));
  v1::IterationDone parsed;
  EXPECT_TRUE(parsed.ParseFromString(wire));
  IterationResult back = FromProto(parsed);
  EXPECT_EQ(back.iteration, result.iteration);
  EXPECT_EQ(back.prompt_logprobs, result.prompt_logprobs);
  EXPECT_EQ(back.tokens.size(), result.tokens.size());
  for (size_t i = 0; i < back.tokens.size() && i < result.tokens.size(); ++i) {
    EXPECT_EQ(back.tokens[i].seq_id, result.tokens[i].seq_id);
    EXPECT_EQ(back.tokens[i].token_id, result.tokens[i].token_id);
    EXPECT_EQ(back.tokens[i].logprob, result.tokens[i].logprob);
    EXPECT_EQ(back.tokens[i].top_logprobs, result.tokens[i].top_logprobs);
  }
  return back;
}

TEST(PlanDeltaTest, EveryPlanOfAChurningSchedulerDecodesExactly) {
  for (uint32_t seed = 1; seed <= 6; ++seed) {
    std::mt19937 rng(seed);
    SchedulerConfig c;
    c.max_model_len = 256;
    c.max_batch_size = 2 + static_cast<int32_t>(rng() % 8);
    c.max_batched_tokens = 16 + static_cast<int32_t>(rng() % 64);
    c.max_inflight_batches = 1 + static_cast<int32_t>(seed % 2);
    c.prefix_caching = seed % 3 != 0;
    KvBlockPool pool(40, 4);  // small: requests are preempted and recomputed
    IterationScheduler sched(c, &pool);
    PlanEncoder encoder;
    PlanDecoder decoder;
    std::deque<ScheduledBatch> inflight;
    uint64_t next_id = 1, iteration = 0;
    int plans = 0, deltas = 0, prompt_scores = 0;
    for (int step = 0; step < 1500; ++step) {
      const int op = static_cast<int>(rng() % 10);
      if (op < 3) {
        (void)sched.Add(RandomRequest(next_id++, rng));
      } else if (op == 3 && next_id > 1) {
        sched.Abort(1 + rng() % (next_id - 1));
      } else {
        ScheduledBatch b = sched.Schedule();
        if (!b.empty()) {
          b.plan.iteration = ++iteration;
          v1::IterationPlan msg;
          encoder.Encode(b.plan, &msg);
          for (const auto& q : msg.seqs()) deltas += q.block_table_base() > 0;
          absl::StatusOr<IterationPlan> back = decoder.Decode(ThroughTheWire(msg));
          ASSERT_TRUE(back.ok()) << back.status();
          ASSERT_EQ(*back, b.plan) << "seed " << seed << " plan " << iteration;
          ++plans;
          inflight.push_back(std::move(b));
        }
        if (!inflight.empty() && (rng() % 2 || inflight.size() >= 2)) {
          for (const RequestUpdate& u : sched.Update(
                   inflight.front(), ResultThroughTheWire(Sample(inflight.front().plan, rng)))) {
            prompt_scores += static_cast<int>(u.prompt_logprobs.size());
            EXPECT_NE(u.finish_reason, FinishReason::kError) << "seed " << seed;
          }
          inflight.pop_front();
        }
      }
    }
    EXPECT_GT(plans, 300) << "seed " << seed;
    EXPECT_GT(deltas, 100) << "seed " << seed << ": tables were always sent whole";
    EXPECT_GT(sched.num_preemptions(), 0) << "seed " << seed;
    EXPECT_GT(prompt_scores, 100) << "seed " << seed;
    // What both ends hold is bounded by the sequences alive, not by all ever seen.
    EXPECT_EQ(encoder.num_held(), decoder.num_held());
    EXPECT_LE(encoder.num_held(), static_cast<size_t>(c.max_running()) * 2 + 2);
  }
}

// A token mask the scheduler left unmade (iteration.h): the ranks hold no guides, so
// it is made when the plan is encoded and arrives made, whole or as a delta.
TEST(PlanDeltaTest, DeferredMasksTravelMade) {
  class FixedMask : public DeferredTokenMask {
   public:
    std::vector<uint32_t> Make() const override { return {0x5u, 0x0u, 0x80000000u}; }
  };
  IterationPlan plan;
  plan.iteration = 1;
  ScheduledSequence s;
  s.seq_id = 4;
  s.token_ids = {7, 8};
  s.block_table = {3};
  s.sample = true;
  s.deferred_mask = std::make_shared<FixedMask>();
  plan.seqs.push_back(s);
  IterationPlan made = plan;
  made.seqs[0].deferred_mask = nullptr;
  made.seqs[0].allowed_token_mask = {0x5u, 0x0u, 0x80000000u};
  v1::IterationPlan whole;
  ToProto(plan, &whole);
  EXPECT_EQ(FromProto(ThroughTheWire(whole)), made);
  PlanEncoder encoder;
  PlanDecoder decoder;
  v1::IterationPlan delta;
  encoder.Encode(plan, &delta);
  absl::StatusOr<IterationPlan> back = decoder.Decode(ThroughTheWire(delta));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, made);
}

ScheduledSequence Decoding(uint64_t id, int32_t pos, std::vector<int32_t> blocks) {
  ScheduledSequence s;
  s.seq_id = id;
  s.token_ids = {7};
  s.start_pos = pos;
  s.block_table = std::move(blocks);
  s.sample = true;
  s.sampling.presence_penalty = 0.5f;
  s.penalty_history.assign(static_cast<size_t>(pos + 1), 9);
  return s;
}

// A rank that missed a plan (or got them out of order) cannot rebuild the sequences it
// builds on: it refuses the plan, naming the sequence, instead of computing on a wrong
// block table or penalty history.
TEST(PlanDeltaTest, ARankThatMissedAPlanRefusesTheNext) {
  PlanEncoder encoder;
  IterationPlan p1, p2, p3;
  p1.iteration = 1;
  p1.seqs = {Decoding(5, 3, {1})};
  p2.iteration = 2;
  p2.seqs = {Decoding(5, 4, {1, 2})};
  p3.iteration = 3;
  p3.seqs = {Decoding(5, 5, {1, 2})};
  v1::IterationPlan m1, m2, m3;
  encoder.Encode(p1, &m1);
  encoder.Encode(p2, &m2);
  encoder.Encode(p3, &m3);
  EXPECT_EQ(m2.seqs(0).block_table_size(), 1) << "the appended block only";
  EXPECT_FALSE(m2.seqs(0).has_sampling()) << "unchanged sampling sent again";
  EXPECT_EQ(m3.seqs(0).penalty_history_size(), 1) << "the new history token only";

  PlanDecoder missed_first;
  absl::StatusOr<IterationPlan> r = missed_first.Decode(m2);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("sequence 5"), std::string::npos) << r.status();

  PlanDecoder missed_second;
  ASSERT_TRUE(missed_second.Decode(m1).ok());
  r = missed_second.Decode(m3);
  ASSERT_FALSE(r.ok()) << "decoded plan 3 without plan 2";
  EXPECT_NE(r.status().message().find("plan 3"), std::string::npos) << r.status();

  PlanDecoder in_order;
  for (const auto* m : {&m1, &m2, &m3}) ASSERT_TRUE(in_order.Decode(*m).ok());
}

// A released sequence is forgotten on both ends: scheduled again (a preempted request
// re-admitted with a new table) it is sent whole.
TEST(PlanDeltaTest, ReleasedSequencesAreSentWholeAgain) {
  PlanEncoder encoder;
  PlanDecoder decoder;
  IterationPlan p1;
  p1.seqs = {Decoding(8, 6, {3, 4})};
  IterationPlan p2;
  p2.released_seq_ids = {8};
  p2.seqs = {Decoding(8, 6, {3, 4})};
  v1::IterationPlan m1, m2;
  encoder.Encode(p1, &m1);
  encoder.Encode(p2, &m2);
  EXPECT_EQ(m2.seqs(0).block_table_base(), 0);
  EXPECT_EQ(m2.seqs(0).block_table_size(), 2);
  EXPECT_TRUE(m2.seqs(0).has_sampling());
  ASSERT_TRUE(decoder.Decode(m1).ok());
  absl::StatusOr<IterationPlan> back = decoder.Decode(m2);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, p2);
  IterationPlan p3;
  p3.released_seq_ids = {8};
  v1::IterationPlan m3;
  encoder.Encode(p3, &m3);
  ASSERT_TRUE(decoder.Decode(m3).ok());
  EXPECT_EQ(encoder.num_held(), 0u);
  EXPECT_EQ(decoder.num_held(), 0u);
}

}  // namespace
}  // namespace orca
