// The iteration-level scheduler, tested without a model. FakeModel stands in for the
// executor: it "computes" KV by writing each scheduled token into its cache slot and
// "samples" a token that is a hash of the whole history read back through the block
// table — so any block-table, preemption or prefix-cache mistake changes the output.
#include "engine/sched/scheduler.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>

#include "engine/guided/byte_dfa.h"
#include "engine/runner/deferred_masks.h"
#include "engine/runner/sampler.h"

namespace orca {
namespace {

constexpr int32_t kVocab = 1000;
constexpr int32_t kEos = 0;

class FakeModel {
 public:
  FakeModel(int32_t num_blocks, int32_t block_size)
      : bs_(block_size), kv_(num_blocks * block_size, -1) {}

  IterationResult Execute(const IterationPlan& given) {
    // Guided rows' masks are made as a sampling rank makes them.
    IterationPlan plan = given;
    std::vector<ScheduledSequence*> seqs;
    for (ScheduledSequence& s : plan.seqs) seqs.push_back(&s);
    MakeDeferredMasks(absl::MakeSpan(seqs), nullptr);
    IterationResult result;
    for (const ScheduledSequence& s : plan.seqs) {
      for (size_t i = 0; i < s.token_ids.size(); ++i) {
        int32_t pos = s.start_pos + static_cast<int32_t>(i);
        kv_[Slot(s, pos)] = s.token_ids[i];
      }
      // "Scores" prompt token p as logprob -p, checking the targets it can see.
      if (!s.prompt_logprob_targets.empty() && score_prompts) {
        SequencePromptLogprobs scored;
        scored.seq_id = s.seq_id;
        scored.first_position = s.start_pos + s.prompt_logprobs_from + 1;
        for (size_t i = 0; i < s.prompt_logprob_targets.size(); ++i) {
          const size_t next_row = static_cast<size_t>(s.prompt_logprobs_from) + i + 1;
          if (next_row < s.token_ids.size()) {
            EXPECT_EQ(s.prompt_logprob_targets[i], s.token_ids[next_row]);
          }
          PromptLogprob p;
          p.token_id = s.prompt_logprob_targets[i];
          p.logprob = -static_cast<float>(scored.first_position + static_cast<int32_t>(i));
          scored.entries.push_back(p);
        }
        result.prompt_logprobs.push_back(std::move(scored));
      }
      if (!s.sample) continue;
      uint64_t h = 1469598103934665603ull;
      int32_t end = s.start_pos + static_cast<int32_t>(s.token_ids.size());
      for (int32_t pos = 0; pos < end; ++pos) {
        int32_t t = kv_[Slot(s, pos)];
        EXPECT_GE(t, 0) << "read an unwritten KV slot";
        h = (h ^ static_cast<uint64_t>(t + 1)) * 1099511628211ull;
      }
      SampledToken tok;
      tok.seq_id = s.seq_id;
      tok.token_id = static_cast<int32_t>((h >> 17) % kVocab);
      for (int32_t b : s.banned_token_ids) {
        if (tok.token_id == b) tok.token_id = (tok.token_id + 1) % kVocab;
      }
      // Guided: the next allowed token from the hash on (the sampler's -inf elsewhere);
      // none where the mask allows nothing, as ModelRunner::Execute draws.
      if (AllowsNoToken(s, kVocab)) {
        tok.token_id = -1;
        ++no_token_rows;
      } else if (!s.allowed_token_mask.empty()) {
        auto allowed = [&](int32_t t) {
          return static_cast<size_t>(t) / 32 < s.allowed_token_mask.size() &&
                 ((s.allowed_token_mask[t / 32] >> (t % 32)) & 1);
        };
        int32_t t = tok.token_id;
        for (int32_t i = 0; i < kVocab && !allowed(t); ++i) t = (t + 1) % kVocab;
        EXPECT_TRUE(allowed(t)) << "an empty mask was scheduled";
        tok.token_id = t;
      }
      result.tokens.push_back(tok);
    }
    return result;
  }

  bool score_prompts = true;  // false: a rank that leaves prompt logprobs out
  int64_t no_token_rows = 0;  // rows whose token mask allowed nothing

 private:
  int32_t Slot(const ScheduledSequence& s, int32_t pos) const {
    return s.block_table.at(pos / bs_) * bs_ + pos % bs_;
  }
  int32_t bs_;
  std::vector<int32_t> kv_;
};

std::unique_ptr<Request> MakeRequest(uint64_t id, int32_t prompt_len, int32_t max_tokens,
                                     double arrival = 0, int32_t prompt_seed = -1) {
  auto r = std::make_unique<Request>();
  r->id = id;
  std::mt19937 rng(prompt_seed < 0 ? static_cast<uint32_t>(id)
                                   : static_cast<uint32_t>(prompt_seed));
  for (int32_t i = 0; i < prompt_len; ++i)
    r->prompt_tokens.push_back(1 + static_cast<int32_t>(rng() % (kVocab - 1)));
  r->max_tokens = max_tokens;
  r->sampling.temperature = 0;
  r->arrival_time = arrival > 0 ? arrival : static_cast<double>(id);
  return r;
}

struct Harness {
  Harness(SchedulerConfig config, int32_t num_blocks, int32_t block_size = 4)
      : pool(num_blocks, block_size), sched(config, &pool), model(num_blocks, block_size) {}

  // Runs one iteration; returns the updates.
  std::vector<RequestUpdate> Step() {
    ScheduledBatch batch = sched.Schedule();
    plans.push_back(batch);
    if (batch.empty()) return {};
    return Complete(batch);
  }
  // Executes a scheduled batch and applies it; returns the updates.
  std::vector<RequestUpdate> Complete(const ScheduledBatch& batch) {
    auto updates = sched.Update(batch, model.Execute(batch.plan));
    for (const auto& u : updates) {
      for (int32_t t : u.new_tokens) outputs[u.request_id].push_back(t);
      auto& scores = prompt_scores[u.request_id];
      scores.insert(scores.end(), u.prompt_logprobs.begin(), u.prompt_logprobs.end());
      if (u.finished) {
        finished[u.request_id] = u.finish_reason;
        errors[u.request_id] = u.error;
      }
    }
    return updates;
  }
  void RunToCompletion(int max_iterations = 100000) {
    for (int i = 0; i < max_iterations && sched.has_work(); ++i) Step();
    ASSERT_FALSE(sched.has_work()) << "did not finish";
  }

  KvBlockPool pool;
  IterationScheduler sched;
  FakeModel model;
  std::vector<ScheduledBatch> plans;
  std::map<uint64_t, std::vector<int32_t>> outputs;
  std::map<uint64_t, std::vector<PromptLogprob>> prompt_scores;
  std::map<uint64_t, FinishReason> finished;
  std::map<uint64_t, absl::Status> errors;  // of finished requests
};

// Expects `scores` to be the fake's scores of prompt positions 1 .. P-1 of `prompt`,
// each once, in order.
void ExpectWholePromptScored(const std::vector<int32_t>& prompt,
                             const std::vector<PromptLogprob>& scores, uint64_t id) {
  ASSERT_EQ(scores.size() + 1, prompt.size()) << "request " << id;
  for (size_t i = 0; i < scores.size(); ++i) {
    EXPECT_EQ(scores[i].token_id, prompt[i + 1]) << "request " << id << " position " << i + 1;
    EXPECT_EQ(scores[i].logprob, -static_cast<float>(i + 1)) << "request " << id;
  }
}

bool InPlan(const ScheduledBatch& b, uint64_t id) {
  for (const auto& s : b.plan.seqs) {
    if (s.seq_id == id) return true;
  }
  return false;
}

TEST(SchedulerTest, FinishedRequestsLeaveAndNewOnesJoinNextIteration) {
  SchedulerConfig c;
  c.max_batch_size = 2;
  c.max_model_len = 256;
  Harness h(c, 64);
  ASSERT_TRUE(h.sched.Add(MakeRequest(1, 5, 3)).ok());
  ASSERT_TRUE(h.sched.Add(MakeRequest(2, 5, 20)).ok());
  ASSERT_TRUE(h.sched.Add(MakeRequest(3, 5, 4)).ok());
  // Iteration 1: prefill of 1 and 2 (batch size 2); 3 waits.
  h.Step();
  EXPECT_TRUE(InPlan(h.plans.back(), 1) && InPlan(h.plans.back(), 2) && !InPlan(h.plans.back(), 3));
  h.Step();
  h.Step();  // request 1 has generated its 3 tokens
  ASSERT_EQ(h.finished.count(1), 1u);
  EXPECT_EQ(h.finished[1], FinishReason::kLength);
  EXPECT_EQ(h.outputs[1].size(), 3u);
  // Very next iteration: 3 joins while 2 keeps decoding.
  h.Step();
  EXPECT_TRUE(InPlan(h.plans.back(), 3));
  EXPECT_TRUE(InPlan(h.plans.back(), 2));
  h.RunToCompletion();
  EXPECT_EQ(h.outputs[2].size(), 20u);
  EXPECT_EQ(h.outputs[3].size(), 4u);
  EXPECT_EQ(h.pool.num_free(), h.pool.num_blocks());
}

TEST(SchedulerTest, AdmitsInArrivalOrder) {
  SchedulerConfig c;
  c.max_batch_size = 1;
  c.max_model_len = 256;
  Harness h(c, 64);
  double now = 100;
  for (uint64_t id : {5, 3, 9, 1})
    ASSERT_TRUE(h.sched.Add(MakeRequest(id, 3, 2, /*arrival=*/now++)).ok());
  std::vector<uint64_t> first_seen;
  for (int i = 0; i < 100 && h.sched.has_work(); ++i) {
    h.Step();
    for (const auto& s : h.plans.back().plan.seqs) {
      if (std::find(first_seen.begin(), first_seen.end(), s.seq_id) == first_seen.end())
        first_seen.push_back(s.seq_id);
    }
  }
  EXPECT_EQ(first_seen, (std::vector<uint64_t>{5, 3, 9, 1}));  // arrival order, not id order
}

TEST(SchedulerTest, BudgetsHoldEveryIterationAndDecodesComeFirst) {
  for (bool chunked : {true, false}) {
    SchedulerConfig c;
    c.max_batch_size = 6;
    c.max_batched_tokens = 32;
    c.chunked_prefill = chunked;
    c.max_model_len = 512;
    Harness h(c, 400);
    std::mt19937 rng(3);
    uint64_t next = 1;
    for (int it = 0; it < 600; ++it) {
      if (rng() % 3 == 0) {
        ASSERT_TRUE(h.sched.Add(MakeRequest(next++, 1 + rng() % 30, 1 + rng() % 20)).ok());
      }
      h.Step();
      const ScheduledBatch& b = h.plans.back();
      EXPECT_LE(b.plan.num_tokens(), c.max_batched_tokens);
      EXPECT_LE(static_cast<int32_t>(b.plan.seqs.size()), c.max_batch_size);
      bool seen_prefill = false;
      for (const auto& s : b.plan.seqs) {
        bool decode = s.token_ids.size() == 1 && s.start_pos > 0;
        if (!decode) seen_prefill = true;
        // Decodes of running requests precede every new prefill chunk.
        if (decode && seen_prefill) {
          const Request* r = h.sched.Find(s.seq_id);
          ASSERT_TRUE(r == nullptr || s.start_pos >= static_cast<int32_t>(r->prompt_tokens.size()));
        }
      }
    }
    h.RunToCompletion();
    EXPECT_EQ(h.pool.num_free(), h.pool.num_blocks());
  }
}

TEST(SchedulerTest, ChunkedPrefillSplitsLongPrompts) {
  SchedulerConfig c;
  c.max_batched_tokens = 16;
  c.max_model_len = 256;
  Harness h(c, 64);
  ASSERT_TRUE(h.sched.Add(MakeRequest(1, 50, 2)).ok());
  h.RunToCompletion();
  // 50 prompt tokens in chunks of 16: 16, 16, 16, 2 (samples), then one decode.
  ASSERT_GE(h.plans.size(), 5u);
  EXPECT_EQ(h.plans[0].plan.seqs[0].token_ids.size(), 16u);
  EXPECT_FALSE(h.plans[0].plan.seqs[0].sample);
  EXPECT_EQ(h.plans[3].plan.seqs[0].token_ids.size(), 2u);
  EXPECT_TRUE(h.plans[3].plan.seqs[0].sample);
}

// The latency target on a simulated machine (2 ms + 100 us per token per iteration):
// once the cost model has learned it, no iteration with decodes running outlasts the
// target by more than its minimum prefill, a prompt still gets the whole budget when
// nothing decodes, and every request's output is the one a run without the target gives.
TEST(SchedulerTest, LatencyTargetHoldsDecodingIterationsToItWithTheSameOutputs) {
  auto simulated_seconds = [](const ScheduledBatch& b) {
    return 2e-3 + 100e-6 * b.plan.num_tokens();
  };
  std::map<uint64_t, std::vector<int32_t>> outputs[2];
  for (double target_ms : {0.0, 8.0}) {
    SchedulerConfig c;
    c.max_batch_size = 16;
    c.max_batched_tokens = 256;
    c.max_model_len = 1024;
    c.target_itl_ms = target_ms;
    Harness h(c, 2048);
    std::mt19937 rng(5);
    uint64_t next = 1;
    int over_target = 0, checked = 0;
    for (int it = 0; it < 3000 && (next <= 60 || h.sched.has_work()); ++it) {
      if (next <= 60 && rng() % 6 == 0) {
        ASSERT_TRUE(h.sched.Add(MakeRequest(next++, 20 + rng() % 400, 1 + rng() % 40)).ok());
      }
      bool decoding = false;
      for (uint64_t id : h.sched.RunningIds()) {
        const Request* r = h.sched.Find(id);
        decoding |= r->num_computed_tokens >= r->prompt_len();
      }
      const bool model_ready = h.sched.cost_model().ready();
      ScheduledBatch batch = h.sched.Schedule();
      if (batch.empty()) continue;
      h.Complete(batch);
      h.sched.ObserveIteration(batch, simulated_seconds(batch));
      if (target_ms > 0 && model_ready && decoding) {
        ++checked;
        // The minimum prefill (256 / 32 = 8 tokens) may pass the target.
        if (simulated_seconds(batch) > target_ms / 1000 + 8 * 100e-6 + 1e-9) ++over_target;
      }
    }
    ASSERT_FALSE(h.sched.has_work());
    // A prompt on an idle engine takes the whole budget at once.
    ASSERT_TRUE(h.sched.Add(MakeRequest(next, 400, 4)).ok());
    EXPECT_EQ(h.Step().size(), 0u);
    EXPECT_EQ(h.plans.back().num_prefill_tokens, c.max_batched_tokens);
    h.RunToCompletion();
    EXPECT_EQ(h.pool.num_free(), h.pool.num_blocks());
    if (target_ms > 0) {
      EXPECT_GT(checked, 100);
      EXPECT_EQ(over_target, 0);
    }
    outputs[target_ms > 0] = h.outputs;
  }
  EXPECT_EQ(outputs[0], outputs[1]);
  EXPECT_EQ(outputs[1].size(), 61u);
}

std::map<uint64_t, std::vector<int32_t>> RunWorkload(SchedulerConfig c, int32_t num_blocks,
                                                     int64_t* preemptions) {
  Harness h(c, num_blocks);
  std::mt19937 rng(11);
  for (uint64_t id = 1; id <= 40; ++id) {
    EXPECT_TRUE(h.sched.Add(MakeRequest(id, 4 + rng() % 40, 5 + rng() % 40)).ok());
  }
  int32_t max_used = 0;
  for (int i = 0; i < 100000 && h.sched.has_work(); ++i) {
    h.Step();
    max_used = std::max(max_used, h.pool.num_used());
    EXPECT_LE(h.pool.num_used(), h.pool.num_blocks());
  }
  EXPECT_FALSE(h.sched.has_work());
  EXPECT_EQ(h.pool.num_free(), h.pool.num_blocks());
  *preemptions = h.sched.num_preemptions();
  for (uint64_t id = 1; id <= 40; ++id) EXPECT_EQ(h.finished[id], FinishReason::kLength) << id;
  return h.outputs;
}

// Prompt logprobs: chunked prefill scores every prompt position exactly once, in order,
// a chunk's last row scoring the next chunk's first token; requests preempted and
// recomputed (prompt or outputs) never score a position twice, and outputs are those
// of a run with room for all.
TEST(SchedulerTest, PromptLogprobsCoverThePromptOnceAcrossChunksAndPreemption) {
  SchedulerConfig c;
  c.max_batched_tokens = 12;
  c.max_model_len = 256;
  c.prefix_caching = false;
  auto run = [&](int32_t num_blocks, int64_t* preemptions) {
    Harness h(c, num_blocks);
    std::mt19937 rng(5);
    std::map<uint64_t, std::vector<int32_t>> prompts;
    for (uint64_t id = 1; id <= 24; ++id) {
      auto r = MakeRequest(id, 2 + static_cast<int32_t>(rng() % 45), 3 + rng() % 20);
      r->sampling.prompt_logprobs = id % 3 == 0 ? -1 : static_cast<int32_t>(id % 2);
      if (r->sampling.prompt_logprobs >= 0) prompts[id] = r->prompt_tokens;
      EXPECT_TRUE(h.sched.Add(std::move(r)).ok());
    }
    h.RunToCompletion();
    for (const auto& [id, prompt] : prompts)
      ExpectWholePromptScored(prompt, h.prompt_scores[id], id);
    for (uint64_t id = 3; id <= 24; id += 3) EXPECT_TRUE(h.prompt_scores[id].empty()) << id;
    EXPECT_EQ(h.pool.num_free(), h.pool.num_blocks());
    *preemptions = h.sched.num_preemptions();
    return h.outputs;
  };
  int64_t roomy = -1, squeezed = -1;
  const auto reference = run(4000, &roomy);
  EXPECT_EQ(roomy, 0);
  EXPECT_EQ(run(30, &squeezed), reference);
  EXPECT_GT(squeezed, 0) << "the workload should force preemptions";
}

// A request that wants its prompt scored computes every prompt row: it does not start
// from the prefix cache (it still fills it for others).
TEST(SchedulerTest, PromptLogprobsBypassThePrefixCache) {
  SchedulerConfig c;
  c.max_model_len = 256;
  Harness h(c, 64, 4);
  ASSERT_TRUE(h.sched.Add(MakeRequest(1, 22, 5, 1, /*prompt_seed=*/77)).ok());
  h.RunToCompletion();
  auto scored = MakeRequest(2, 22, 5, 2, /*prompt_seed=*/77);
  scored->sampling.prompt_logprobs = 0;
  const std::vector<int32_t> prompt = scored->prompt_tokens;
  ASSERT_TRUE(h.sched.Add(std::move(scored)).ok());
  h.Step();
  EXPECT_EQ(h.plans.back().plan.seqs[0].start_pos, 0);
  h.RunToCompletion();
  ExpectWholePromptScored(prompt, h.prompt_scores[2], 2);
  EXPECT_EQ(h.outputs[2], h.outputs[1]);
  ASSERT_TRUE(h.sched.Add(MakeRequest(3, 22, 5, 3, /*prompt_seed=*/77)).ok());
  h.Step();
  EXPECT_EQ(h.plans.back().plan.seqs[0].start_pos, 20);
  EXPECT_EQ(h.sched.num_prefix_cache_hit_tokens(), 20);
}

// A rank whose result lacks the prompt logprobs a plan asked for fails that request
// (an error, its blocks freed), never leaves a hole in what the client gets.
TEST(SchedulerTest, MissingPromptLogprobsFailTheRequest) {
  SchedulerConfig c;
  c.max_model_len = 256;
  c.max_batched_tokens = 8;
  Harness h(c, 64, 4);
  h.model.score_prompts = false;
  auto r = MakeRequest(1, 20, 5);
  r->sampling.prompt_logprobs = 1;
  ASSERT_TRUE(h.sched.Add(std::move(r)).ok());
  ASSERT_TRUE(h.sched.Add(MakeRequest(2, 20, 5)).ok());
  h.RunToCompletion();
  EXPECT_EQ(h.finished[1], FinishReason::kError);
  EXPECT_EQ(h.finished[2], FinishReason::kLength);
  EXPECT_EQ(h.pool.num_free(), h.pool.num_blocks());
}

// Guided decoding: every sampled token is one the guide allows (stop tokens only where
// the output already matches), the request stops once the pattern is complete, and
// preemption (outputs replayed, not resampled) keeps the guide's state.
TEST(SchedulerTest, GuidedRequestsFollowTheirPatternThroughPreemption) {
  // Tokens 10..13 spell "a", "b", "ab", "ba"; every other id spells nothing.
  std::vector<std::string> bytes(kVocab);
  bytes[10] = "a", bytes[11] = "b", bytes[12] = "ab", bytes[13] = "ba";
  auto vocab = std::make_shared<const TokenVocabulary>(bytes);
  auto guide = TokenGuide::Create("(ab){3}|b{2,5}", vocab);
  ASSERT_TRUE(guide.ok()) << guide.status();
  auto spell = [&](const std::vector<int32_t>& out) {
    std::string s;
    for (int32_t t : out) s += t == kEos ? "" : bytes[t];
    return s;
  };
  auto run = [&](int32_t num_blocks, int64_t* preemptions) {
    SchedulerConfig c;
    c.max_model_len = 256;
    c.prefix_caching = false;
    Harness h(c, num_blocks);
    for (uint64_t id = 1; id <= 16; ++id) {
      auto r = MakeRequest(id, 10 + static_cast<int32_t>(id % 7), 20);
      r->stop_token_ids = {kEos};
      r->guide = *guide;
      r->guide_state = (*guide)->start();
      EXPECT_TRUE(h.sched.Add(std::move(r)).ok());
    }
    h.RunToCompletion();
    const ByteDfa dfa = *ByteDfa::Compile("(ab){3}|b{2,5}");
    for (uint64_t id = 1; id <= 16; ++id) {
      EXPECT_EQ(h.finished[id], FinishReason::kStop) << id;
      EXPECT_TRUE(dfa.Matches(spell(h.outputs[id]))) << id << ": " << spell(h.outputs[id]);
    }
    EXPECT_EQ(h.pool.num_free(), h.pool.num_blocks());
    *preemptions = h.sched.num_preemptions();
    return h.outputs;
  };
  int64_t roomy = -1, squeezed = -1;
  const auto reference = run(4000, &roomy);
  EXPECT_EQ(run(16, &squeezed), reference);
  EXPECT_GT(squeezed, 0) << "the workload should force preemptions";
}

// A guide whose next bytes no token spells: the plan carries its mask unmade (the
// sampling rank makes it), the row draws no token, and the request fails with the
// tokens it had and an error that says why, its blocks returned; so does one whose
// output may end but not yet (min_tokens); a request beside them is not disturbed.
TEST(SchedulerTest, AGuideNoTokenCanContinueFailsItsRequest) {
  std::vector<std::string> bytes(kVocab);
  bytes[10] = "a", bytes[11] = "b";  // nothing spells "c"
  auto vocab = std::make_shared<const TokenVocabulary>(bytes);
  auto stuck = TokenGuide::Create("ac", vocab);
  auto fine = TokenGuide::Create("(ab)+", vocab);
  auto ends_early = TokenGuide::Create("ab(c)?", vocab);  // may end after "ab", not go on
  ASSERT_TRUE(stuck.ok() && fine.ok() && ends_early.ok());
  SchedulerConfig c;
  c.max_model_len = 256;
  Harness h(c, 64);
  for (uint64_t id : {1, 2, 3}) {
    auto r = MakeRequest(id, 6, 8);
    r->stop_token_ids = {kEos};
    r->guide = id == 1 ? *stuck : id == 2 ? *fine : *ends_early;
    r->guide_state = r->guide->start();
    if (id == 3) r->min_tokens = 5;  // EOS banned until then
    ASSERT_TRUE(h.sched.Add(std::move(r)).ok());
  }
  const ScheduledBatch first = h.sched.Schedule();
  ASSERT_EQ(first.plan.seqs.size(), 3u);
  for (const ScheduledSequence& s : first.plan.seqs) {
    EXPECT_NE(s.deferred_mask, nullptr) << s.seq_id;
    EXPECT_TRUE(s.allowed_token_mask.empty()) << s.seq_id;
  }
  h.Complete(first);
  h.RunToCompletion();
  EXPECT_EQ(h.finished[1], FinishReason::kError);
  EXPECT_EQ(h.errors[1].code(), absl::StatusCode::kInvalidArgument) << h.errors[1];
  EXPECT_NE(h.errors[1].message().find("guided decoding: after 1 output tokens"), std::string::npos)
      << h.errors[1];
  EXPECT_EQ(h.outputs[1], std::vector<int32_t>({10}));  // "a", and no token -1
  EXPECT_EQ(h.model.no_token_rows, 2);
  EXPECT_EQ(h.finished[3], FinishReason::kError);
  EXPECT_EQ(h.outputs[3], std::vector<int32_t>({10, 11}));
  EXPECT_NE(h.errors[3].message().find("after 2 output tokens the output matches the pattern"),
            std::string::npos)
      << h.errors[3];
  EXPECT_NE(h.errors[3].message().find("min_tokens 5"), std::string::npos) << h.errors[3];
  std::string spelled;
  for (int32_t t : h.outputs[2]) spelled += t == kEos ? "" : bytes[static_cast<size_t>(t)];
  EXPECT_TRUE(ByteDfa::Compile("(ab)+")->Matches(spelled)) << spelled;
  EXPECT_NE(h.finished[2], FinishReason::kError);
  EXPECT_EQ(h.pool.num_free(), h.pool.num_blocks());
}

TEST(SchedulerTest, ReserveNeverPreemptsOrOvercommits) {
  SchedulerConfig c;
  c.kv_policy = KvPolicy::kReserve;
  c.max_model_len = 256;
  int64_t preemptions = -1;
  RunWorkload(c, 40, &preemptions);
  EXPECT_EQ(preemptions, 0);
}

TEST(SchedulerTest, PagedPreemptsAndRecomputesToTheSameOutput) {
  SchedulerConfig big;
  big.max_model_len = 256;
  big.prefix_caching = false;
  int64_t p_big = -1, p_small = -1, p_cached = -1;
  auto reference = RunWorkload(big, 4000, &p_big);
  EXPECT_EQ(p_big, 0);
  SchedulerConfig small = big;
  auto squeezed = RunWorkload(small, 40, &p_small);  // 160 token slots for 40 requests
  EXPECT_GT(p_small, 0) << "the workload should force preemptions";
  EXPECT_EQ(squeezed, reference);
  SchedulerConfig cached = small;
  cached.prefix_caching = true;
  EXPECT_EQ(RunWorkload(cached, 40, &p_cached), reference);
}

TEST(SchedulerTest, PrefixCacheSkipsRecomputationWithIdenticalOutput) {
  SchedulerConfig c;
  c.max_model_len = 256;
  Harness h(c, 64, 4);
  ASSERT_TRUE(h.sched.Add(MakeRequest(1, 22, 5, 1, /*prompt_seed=*/77)).ok());
  h.RunToCompletion();
  ASSERT_TRUE(h.sched.Add(MakeRequest(2, 22, 5, 2, /*prompt_seed=*/77)).ok());
  h.Step();
  // 22 tokens = 5 full blocks + 2; all 5 full blocks are cached: computation starts at 20.
  ASSERT_FALSE(h.plans.back().empty());
  EXPECT_EQ(h.plans.back().plan.seqs[0].start_pos, 20);
  EXPECT_EQ(h.sched.num_prefix_cache_hit_tokens(), 20);
  h.RunToCompletion();
  EXPECT_EQ(h.outputs[2], h.outputs[1]);
  EXPECT_EQ(h.pool.usage(), 0.0);
  EXPECT_GT(h.pool.num_cached(), 0);
}

TEST(SchedulerTest, StopTokensMinTokensAndContextLimit) {
  SchedulerConfig c;
  c.max_model_len = 40;
  Harness h(c, 64);
  auto r = MakeRequest(1, 10, 30);
  r->stop_token_ids = {kEos};
  r->min_tokens = 25;
  ASSERT_TRUE(h.sched.Add(std::move(r)).ok());
  h.RunToCompletion();
  EXPECT_GE(h.outputs[1].size(), 25u);
  for (size_t i = 0; i + 1 < 25 && i < h.outputs[1].size(); ++i) EXPECT_NE(h.outputs[1][i], kEos);
  EXPECT_EQ(h.sched.Add(MakeRequest(2, 30, 11)).code(),
            absl::StatusCode::kInvalidArgument);  // 41 > 40
  EXPECT_EQ(h.sched.Add(MakeRequest(3, 0, 1)).code(), absl::StatusCode::kInvalidArgument);
  Harness tiny(c, 2, 4);  // 8 token slots
  EXPECT_EQ(tiny.sched.Add(MakeRequest(4, 6, 6)).code(), absl::StatusCode::kInvalidArgument);
}

// Without chunked prefill a prompt is scheduled whole: one longer than
// max_batched_tokens could never run, and once queued it stalled every request behind it
// (issue 16, bug 1). Add refuses it, naming the limit, under every policy.
TEST(SchedulerTest, RefusesAPromptOverTheBudgetWithoutChunkedPrefill) {
  for (SchedulingPolicy policy : {SchedulingPolicy::kIteration, SchedulingPolicy::kRequest,
                                  SchedulingPolicy::kRequestCompact}) {
    SchedulerConfig c;
    c.policy = policy;
    c.chunked_prefill = false;
    c.max_batched_tokens = 64;
    c.max_model_len = 256;
    Harness h(c, 200);
    const absl::Status s = h.sched.Add(MakeRequest(1, 100, 4));
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(s.message().find("the prompt has 100 tokens but --max-batched-tokens is 64"),
              std::string::npos)
        << s.message();
    ASSERT_TRUE(h.sched.Add(MakeRequest(2, 64, 4)).ok()) << "exactly the budget fits";
    ASSERT_TRUE(h.sched.Add(MakeRequest(3, 5, 3)).ok());
    h.RunToCompletion();
    EXPECT_EQ(h.outputs[2].size(), 4u);
    EXPECT_EQ(h.outputs[3].size(), 3u);
  }
}

// A preempted request recomputes its prompt and its generated tokens. Here both prompts
// fit the budget (12 <= 16), but the preempted one has grown past it by the time it is
// recomputed: without chunking it waited for a budget it could never get. It is
// chunked instead, and its output is what it would have been without preemption.
TEST(SchedulerTest, RecomputeAfterPreemptionIsChunkedWithoutChunkedPrefill) {
  SchedulerConfig c;
  c.chunked_prefill = false;
  c.max_batched_tokens = 16;
  c.max_model_len = 256;
  c.prefix_caching = false;
  auto run = [&](int32_t num_blocks, int64_t* preemptions) {
    Harness h(c, num_blocks, 4);
    EXPECT_TRUE(h.sched.Add(MakeRequest(1, 12, 30)).ok());
    EXPECT_TRUE(h.sched.Add(MakeRequest(2, 12, 30)).ok());
    h.RunToCompletion(2000);
    bool recompute_chunked = false;
    for (const auto& b : h.plans) {
      EXPECT_LE(b.plan.num_tokens(), c.max_batched_tokens);
      // A cut prefill: without chunked prefill only a recompute may be cut.
      for (const auto& s : b.plan.seqs) recompute_chunked |= !s.sample && s.token_ids.size() > 1;
    }
    EXPECT_EQ(recompute_chunked, num_blocks < 100);
    EXPECT_EQ(h.pool.num_free(), h.pool.num_blocks());
    *preemptions = h.sched.num_preemptions();
    return h.outputs;
  };
  int64_t roomy_preemptions = -1, tight_preemptions = -1;
  const auto reference = run(400, &roomy_preemptions);
  EXPECT_EQ(roomy_preemptions, 0);
  // 16 blocks of 4 tokens for two requests growing to 42 tokens (11 blocks) each.
  EXPECT_EQ(run(16, &tight_preemptions), reference);
  EXPECT_GT(tight_preemptions, 0) << "the workload should force a preemption";
  ASSERT_EQ(reference.size(), 2u);
  EXPECT_EQ(reference.at(2).size(), 30u);
}

// Whatever the policy, budget and KV pressure, every request Add accepts without
// chunked prefill completes: nothing waits forever at the head of the queue.
TEST(SchedulerTest, NeverStallsWithoutChunkedPrefill) {
  for (uint32_t seed = 1; seed <= 24; ++seed) {
    std::mt19937 rng(seed);
    SchedulerConfig c;
    c.chunked_prefill = false;
    c.max_model_len = 128;
    c.max_batch_size = 1 + rng() % 8;
    c.max_batched_tokens = 8 + rng() % 32;
    c.kv_policy = rng() % 3 == 0 ? KvPolicy::kReserve : KvPolicy::kPaged;
    c.prefix_caching = rng() % 2;
    const SchedulingPolicy policies[] = {SchedulingPolicy::kIteration, SchedulingPolicy::kRequest,
                                         SchedulingPolicy::kRequestCompact};
    c.policy = policies[rng() % 3];
    Harness h(c, 24 + rng() % 24);
    std::set<uint64_t> accepted;
    for (uint64_t id = 1; id <= 30; ++id) {
      const int32_t prompt = 1 + rng() % 48;
      const absl::Status s =
          h.sched.Add(MakeRequest(id, prompt, 1 + rng() % 40, 0, static_cast<int32_t>(rng() % 4)));
      if (s.ok()) accepted.insert(id);
      if (prompt > c.max_batched_tokens) {
        EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << "seed " << seed;
      }
    }
    h.RunToCompletion(20000);
    for (uint64_t id : accepted) EXPECT_EQ(h.finished.count(id), 1u) << "seed " << seed;
    EXPECT_EQ(h.pool.num_free(), h.pool.num_blocks()) << "seed " << seed;
  }
}

TEST(SchedulerTest, RequestLevelBatchesNeverAdmitUntilTheBatchIsDone) {
  for (SchedulingPolicy policy : {SchedulingPolicy::kRequest, SchedulingPolicy::kRequestCompact}) {
    SchedulerConfig c;
    c.policy = policy;
    c.max_batch_size = 3;
    c.max_model_len = 256;
    Harness h(c, 200);
    ASSERT_TRUE(h.sched.Add(MakeRequest(1, 5, 2)).ok());
    ASSERT_TRUE(h.sched.Add(MakeRequest(2, 5, 10)).ok());
    ASSERT_TRUE(h.sched.Add(MakeRequest(3, 5, 3)).ok());
    ASSERT_TRUE(h.sched.Add(MakeRequest(4, 5, 3)).ok());
    while (!h.finished.count(2)) {
      h.Step();
      ASSERT_FALSE(InPlan(h.plans.back(), 4)) << "request 4 joined a running static batch";
    }
    h.Step();
    EXPECT_TRUE(InPlan(h.plans.back(), 4));
    h.RunToCompletion();
    EXPECT_EQ(h.pool.num_free(), h.pool.num_blocks());
  }
}

// Outputs of requests run alone under iteration-level scheduling: the reference that
// every batching policy must reproduce token for token.
std::map<uint64_t, std::vector<int32_t>> RunAlone(const std::vector<std::pair<int, int>>& reqs) {
  std::map<uint64_t, std::vector<int32_t>> out;
  for (size_t i = 0; i < reqs.size(); ++i) {
    SchedulerConfig c;
    c.max_model_len = 256;
    Harness h(c, 200);
    EXPECT_TRUE(h.sched.Add(MakeRequest(i + 1, reqs[i].first, reqs[i].second)).ok());
    h.RunToCompletion();
    out[i + 1] = h.outputs[i + 1];
  }
  return out;
}

TEST(SchedulerTest, StaticBatchKeepsItsShapeUntilTheLongestMemberIsDone) {
  // FasterTransformer's static batch: all members prefill, then every iteration has a
  // row for every member (finished ones recompute without sampling) until the
  // longest is done, and then all of them finish together.
  const std::vector<std::pair<int, int>> reqs = {{5, 2}, {9, 10}, {3, 4}};
  SchedulerConfig c;
  c.policy = SchedulingPolicy::kRequest;
  c.max_batch_size = 3;
  c.max_batched_tokens = 8;  // the prompts (17 tokens) need three iterations
  c.max_model_len = 256;
  Harness h(c, 200);
  for (size_t i = 0; i < reqs.size(); ++i)
    ASSERT_TRUE(h.sched.Add(MakeRequest(i + 1, reqs[i].first, reqs[i].second)).ok());
  int prefill_iterations = 0;
  int decode_iterations = 0;
  std::set<uint64_t> completed;
  while (h.sched.has_work()) {
    auto updates = h.Step();
    const ScheduledBatch& b = h.plans.back();
    ASSERT_FALSE(b.empty());
    if (b.num_prefill_tokens > 0) {
      ++prefill_iterations;
      EXPECT_EQ(b.num_decode_tokens, 0) << "a member decoded before the batch had prefilled";
      continue;
    }
    ++decode_iterations;
    ASSERT_EQ(b.plan.seqs.size(), 3u) << "decode iteration " << decode_iterations;
    for (const auto& s : b.plan.seqs) {
      EXPECT_EQ(s.sample, completed.count(s.seq_id) == 0) << "request " << s.seq_id;
    }
    for (const auto& u : updates) {
      if (u.finished) completed.insert(u.request_id);
    }
    if (completed.size() < 3) {
      EXPECT_TRUE(h.sched.TakeFinished().empty()) << "a member left before its batch ended";
    }
  }
  EXPECT_EQ(prefill_iterations, 3);
  EXPECT_EQ(decode_iterations, 9) << "the longest member's 10 tokens, the first from prefill";
  EXPECT_EQ(h.sched.TakeFinished().size(), 3u);
  EXPECT_EQ(h.outputs, RunAlone(reqs));
  for (uint64_t id = 1; id <= 3; ++id) EXPECT_EQ(h.finished[id], FinishReason::kLength);
  EXPECT_EQ(h.pool.num_free(), h.pool.num_blocks());
}

TEST(SchedulerTest, CompactStaticBatchStopsComputingFinishedMembers) {
  const std::vector<std::pair<int, int>> reqs = {{5, 2}, {9, 10}, {3, 4}};
  SchedulerConfig c;
  c.policy = SchedulingPolicy::kRequestCompact;
  c.max_batch_size = 3;
  c.max_model_len = 256;
  Harness h(c, 200);
  for (size_t i = 0; i < reqs.size(); ++i)
    ASSERT_TRUE(h.sched.Add(MakeRequest(i + 1, reqs[i].first, reqs[i].second)).ok());
  h.RunToCompletion();
  // The prompts fit one iteration, so every row samples: none recomputes a finished one.
  for (const auto& b : h.plans) {
    for (const auto& s : b.plan.seqs) EXPECT_TRUE(s.sample) << "request " << s.seq_id;
  }
  EXPECT_EQ(h.plans.back().plan.seqs.size(), 1u);
  EXPECT_EQ(h.outputs, RunAlone(reqs));
}

TEST(SchedulerTest, StaticBatchEndsWhenItsLastRunningMemberIsAbortedOrStopped) {
  SchedulerConfig c;
  c.policy = SchedulingPolicy::kRequest;
  c.max_batch_size = 3;
  c.max_model_len = 256;
  Harness h(c, 200);
  ASSERT_TRUE(h.sched.Add(MakeRequest(1, 5, 2)).ok());
  ASSERT_TRUE(h.sched.Add(MakeRequest(2, 5, 50)).ok());
  ASSERT_TRUE(h.sched.Add(MakeRequest(3, 5, 50)).ok());
  ASSERT_TRUE(h.sched.Add(MakeRequest(4, 5, 3)).ok());
  while (!h.finished.count(1)) h.Step();
  h.Step();
  EXPECT_EQ(h.sched.num_running(), 3);
  EXPECT_TRUE(h.sched.Finish(2, FinishReason::kStop));  // a stop string, held like a length
  EXPECT_FALSE(h.sched.Finish(2, FinishReason::kStop));
  EXPECT_EQ(h.sched.num_running(), 3);
  EXPECT_TRUE(h.sched.TakeFinished().empty());
  EXPECT_TRUE(h.sched.Abort(3));  // leaves at once; the batch has nothing left to run
  EXPECT_EQ(h.sched.num_running(), 0);
  auto done = h.sched.TakeFinished();
  ASSERT_EQ(done.size(), 3u);
  std::map<uint64_t, FinishReason> reasons;
  for (const auto& r : done) reasons[r->id] = r->finish_reason;
  EXPECT_EQ(reasons[1], FinishReason::kLength);
  EXPECT_EQ(reasons[2], FinishReason::kStop);
  EXPECT_EQ(reasons[3], FinishReason::kAbort);
  h.Step();
  EXPECT_TRUE(InPlan(h.plans.back(), 4)) << "the next batch starts";
  h.RunToCompletion();
  EXPECT_EQ(h.pool.num_free(), h.pool.num_blocks());
}

// A two-stage pipeline's scheduler: two batches in flight.
SchedulerConfig TwoStages(int32_t max_batch_size = 64) {
  SchedulerConfig c;
  c.max_inflight_batches = 2;
  c.max_batch_size = max_batch_size;
  c.max_model_len = 256;
  return c;
}

TEST(SchedulerTest, InFlightRequestsAreNotScheduledTwice) {
  Harness h(TwoStages(), 64);
  ASSERT_TRUE(h.sched.Add(MakeRequest(1, 5, 4)).ok());
  ASSERT_TRUE(h.sched.Add(MakeRequest(2, 5, 4)).ok());
  ScheduledBatch a = h.sched.Schedule();
  ASSERT_TRUE(h.sched.Add(MakeRequest(3, 5, 4)).ok());
  ScheduledBatch b = h.sched.Schedule();
  EXPECT_TRUE(InPlan(a, 1) && InPlan(a, 2));
  EXPECT_FALSE(InPlan(b, 1) || InPlan(b, 2));
  EXPECT_TRUE(InPlan(b, 3));
  EXPECT_TRUE(h.sched.Schedule().empty()) << "a third batch with 2 in flight";
  h.sched.Update(a, h.model.Execute(a.plan));
  h.sched.Update(b, h.model.Execute(b.plan));
  h.RunToCompletion();
  EXPECT_EQ(h.pool.num_free(), h.pool.num_blocks());
}

// ORCA's Algorithm 1 caps each batch at max_batch_size, not the sum over the P
// batches in flight: under a burst the second stage's batch is as full as the first.
TEST(SchedulerTest, EveryInFlightBatchFillsToMaxBatchSize) {
  Harness h(TwoStages(/*max_batch_size=*/4), 64);
  for (uint64_t id = 1; id <= 10; ++id) ASSERT_TRUE(h.sched.Add(MakeRequest(id, 3, 4)).ok());
  ScheduledBatch a = h.sched.Schedule();
  ScheduledBatch b = h.sched.Schedule();
  EXPECT_EQ(a.plan.seqs.size(), 4u);
  EXPECT_EQ(b.plan.seqs.size(), 4u) << "the second stage idles";
  EXPECT_EQ(h.sched.num_running(), 8);
  EXPECT_EQ(h.sched.num_waiting(), 2);
  h.Complete(a);
  h.Complete(b);
  h.RunToCompletion();
  EXPECT_EQ(h.finished.size(), 10u);
  EXPECT_EQ(h.pool.num_free(), h.pool.num_blocks());
}

// Six requests decoding on a two-stage pipeline: each in-flight batch takes three
// decodes, not six and then none.
TEST(SchedulerTest, DecodesAreSpreadEvenlyOverTheInFlightBatches) {
  Harness h(TwoStages(/*max_batch_size=*/8), 64);
  for (uint64_t id = 1; id <= 6; ++id) ASSERT_TRUE(h.sched.Add(MakeRequest(id, 3, 20)).ok());
  ScheduledBatch prefill = h.sched.Schedule();
  ASSERT_EQ(prefill.plan.seqs.size(), 6u);
  h.Complete(prefill);
  for (int round = 0; round < 5; ++round) {
    ScheduledBatch a = h.sched.Schedule();
    ScheduledBatch b = h.sched.Schedule();
    EXPECT_EQ(a.num_decode_tokens, 3) << "round " << round;
    EXPECT_EQ(b.num_decode_tokens, 3) << "round " << round;
    h.Complete(a);
    h.Complete(b);
  }
  h.RunToCompletion();
  EXPECT_EQ(h.finished.size(), 6u);
}

// Out of blocks, with the only newer request in flight: the older one waits for that
// batch to return (then takes the newer one's blocks) instead of preempting itself
// and throwing its KV away.
TEST(SchedulerTest, NoSelfPreemptionWhileABatchIsInFlight) {
  const SchedulerConfig c = TwoStages();
  Harness h(c, /*num_blocks=*/2, /*block_size=*/4);
  ASSERT_TRUE(h.sched.Add(MakeRequest(1, 4, 3)).ok());
  ScheduledBatch a = h.sched.Schedule();  // 1's prompt: one block
  ASSERT_TRUE(h.sched.Add(MakeRequest(2, 4, 3)).ok());
  ScheduledBatch b = h.sched.Schedule();  // 2's prompt: the other block
  ASSERT_TRUE(InPlan(a, 1) && InPlan(b, 2));
  h.Complete(a);
  // 1's first decode needs a second block; 2 holds it and is in flight.
  ScheduledBatch c1 = h.sched.Schedule();
  EXPECT_FALSE(InPlan(c1, 1));
  EXPECT_EQ(h.sched.Find(1)->num_preemptions, 0) << "request 1 preempted itself";
  EXPECT_EQ(h.sched.Find(1)->status, RequestStatus::kRunning);
  h.Complete(c1);
  h.Complete(b);
  ScheduledBatch d = h.sched.Schedule();  // 2 is back: it is the victim now
  EXPECT_TRUE(InPlan(d, 1));
  EXPECT_EQ(h.sched.Find(2)->num_preemptions, 1);
  h.Complete(d);
  h.RunToCompletion();
  EXPECT_EQ(h.finished.size(), 2u);
  // The same outputs as with room for both.
  Harness roomy(c, 16, 4);
  ASSERT_TRUE(roomy.sched.Add(MakeRequest(1, 4, 3)).ok());
  ASSERT_TRUE(roomy.sched.Add(MakeRequest(2, 4, 3)).ok());
  roomy.RunToCompletion();
  EXPECT_EQ(h.outputs, roomy.outputs);
}

// Admission leaves 1% of the pool free while others run, so the running requests'
// next blocks do not at once preempt what was just admitted; alone, a request may
// take everything.
TEST(SchedulerTest, AdmissionKeepsAWatermarkOfFreeBlocks) {
  SchedulerConfig c;
  c.max_model_len = 2048;
  c.max_batched_tokens = 1024;
  Harness h(c, /*num_blocks=*/200, /*block_size=*/4);
  ASSERT_EQ(KvAdmissionWatermark(200), 2);
  ASSERT_TRUE(h.sched.Add(MakeRequest(1, 4 * 197, 1)).ok());  // 197 blocks: 3 left
  ASSERT_TRUE(h.sched.Add(MakeRequest(2, 8, 1)).ok());        // 2 blocks: 1 over the mark
  ScheduledBatch a = h.sched.Schedule();
  EXPECT_TRUE(InPlan(a, 1));
  EXPECT_FALSE(InPlan(a, 2)) << "admitted into the watermark";
  EXPECT_EQ(h.pool.num_free(), 3);
  h.Complete(a);
  h.RunToCompletion();
  EXPECT_EQ(h.finished.size(), 2u);
  Harness alone(c, 200, 4);
  ASSERT_TRUE(alone.sched.Add(MakeRequest(1, 4 * 199, 1)).ok());
  EXPECT_TRUE(InPlan(alone.sched.Schedule(), 1)) << "a lone request may use the whole pool";
}

TEST(SchedulerTest, RandomizedChurnNeverLeaksBlocks) {
  for (uint32_t seed = 1; seed <= 12; ++seed) {
    SchedulerConfig c;
    std::mt19937 rng(seed);
    c.max_model_len = 128;
    c.max_batch_size = 1 + rng() % 8;
    c.max_batched_tokens = 8 + rng() % 64;
    c.kv_policy = rng() % 3 == 0 ? KvPolicy::kReserve : KvPolicy::kPaged;
    c.prefix_caching = rng() % 2;
    const SchedulingPolicy policies[] = {SchedulingPolicy::kIteration, SchedulingPolicy::kRequest,
                                         SchedulingPolicy::kRequestCompact};
    c.policy = policies[rng() % 3];
    c.chunked_prefill = rng() % 4 != 0;
    c.max_inflight_batches = 1 + rng() % 2;
    Harness h(c, 24 + rng() % 40);
    uint64_t next = 1;
    std::vector<ScheduledBatch> inflight;
    for (int it = 0; it < 3000; ++it) {
      int op = rng() % 10;
      if (op < 4) {
        (void)h.sched.Add(
            MakeRequest(next, 1 + rng() % 40, 1 + rng() % 40, 0, static_cast<int32_t>(rng() % 4)));
        ++next;
      } else if (op == 4 && next > 1) {
        h.sched.Abort(1 + rng() % (next - 1));
      } else if (op == 5 && next > 1) {
        h.sched.Finish(1 + rng() % (next - 1), FinishReason::kStop);
      } else {
        ScheduledBatch b = h.sched.Schedule();
        if (!b.empty()) inflight.push_back(b);
        if (!inflight.empty() && (rng() % 2 || inflight.size() >= 2)) {
          ScheduledBatch done = inflight.front();
          inflight.erase(inflight.begin());
          h.sched.Update(done, h.model.Execute(done.plan));
        }
      }
      ASSERT_LE(h.pool.num_used(), h.pool.num_blocks());
    }
    for (auto& b : inflight) h.sched.Update(b, h.model.Execute(b.plan));
    for (uint64_t id = 1; id < next; ++id) h.sched.Abort(id);
    EXPECT_FALSE(h.sched.has_work());
    EXPECT_EQ(h.pool.num_used(), 0) << "seed " << seed;
    EXPECT_EQ(h.pool.num_free(), h.pool.num_blocks()) << "seed " << seed;
  }
}

}  // namespace
}  // namespace orca
