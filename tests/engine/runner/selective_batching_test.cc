// Selective batching is exact: sequences batched together (joining at different
// iterations, with different prompt lengths and prefill chunk sizes, mixing prefill
// chunks with decodes in one flat batch) produce the same greedy tokens as each
// sequence alone, with logits within 1e-4.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <memory>

#include "engine/runner/sampler.h"
#include "engine/tokenizer/tokenizer.h"
#include "tests/engine/runner/runner_test_util.h"
#include "tests/testutil/testutil.h"

namespace orca {
namespace {

struct TestSeq {
  uint64_t id;
  std::vector<int32_t> tokens;  // prompt, then generated tokens appended
  size_t prompt_len;
  int32_t join_iteration;
  int32_t chunk;
  int32_t computed = 0;
  BlockTable table;
  std::vector<int32_t> generated;
  std::vector<std::vector<float>> step_logits;
};

std::vector<float> SoloStepLogits(ModelRunner& runner, const std::vector<int32_t>& all,
                                  size_t prompt_len, size_t steps) {
  // Logits that predict each generated token, computed alone in one prefill.
  std::vector<float> rows =
      orca::testing::PrefillLogits(runner, all, static_cast<int32_t>(all.size()));
  const size_t vocab = runner.config().vocab_size;
  return std::vector<float>(rows.begin() + (prompt_len - 1) * vocab,
                            rows.begin() + (prompt_len - 1 + steps) * vocab);
}

TEST(SelectiveBatchingTest, BatchedEqualsAlone) {
  ORCA_REQUIRE_SHARED_MODEL(dir, "stories260K");
  auto tok = Tokenizer::FromDirectory(dir);
  ASSERT_TRUE(tok.ok()) << tok.status();
  auto m = orca::testing::LoadModel(dir, /*num_blocks=*/512, /*block_size=*/16);
  ASSERT_NE(m.runner, nullptr);
  ModelRunner& runner = *m.runner;
  const int32_t vocab = runner.config().vocab_size;
  constexpr int32_t kSteps = 40;

  const std::vector<std::string> prompts = {
      "Once upon a time",
      "The little dog ran to the park and saw a big red ball",
      "Tom",
      "One day, a girl named Sue went to the store with her mom. They bought apples, bread and "
      "milk. "
      "On the way home",
      "The sun was hot",
      "Lily and Ben were friends. They liked to play",
      "A cat sat on the mat. It was a happy cat because it had a warm bed and lots of food to eat "
      "every day",
      "Once there was a big tree in a small town",
  };
  const int32_t joins[] = {0, 0, 1, 2, 3, 5, 8, 13};
  const int32_t chunks[] = {512, 3, 1, 7, 16, 2, 11, 5};
  std::vector<TestSeq> seqs;
  for (size_t i = 0; i < prompts.size(); ++i) {
    TestSeq s;
    s.id = 100 + i;
    s.tokens = (*tok)->Encode(prompts[i], true);
    s.prompt_len = s.tokens.size();
    s.join_iteration = joins[i];
    s.chunk = chunks[i];
    seqs.push_back(std::move(s));
  }

  KvBlockPool pool(runner.num_kv_blocks(), runner.block_size());
  int32_t max_batch_tokens_seen = 0;
  bool mixed_iteration_seen = false;
  for (int32_t it = 0; it < 500; ++it) {
    IterationPlan plan;
    plan.iteration = it;
    std::vector<TestSeq*> in_plan;
    for (TestSeq& s : seqs) {
      if (it < s.join_iteration || static_cast<int32_t>(s.generated.size()) == kSteps) continue;
      plan.seqs.push_back(
          orca::testing::NextChunk(s.id, s.tokens, s.computed, s.chunk, s.table, pool));
      ASSERT_FALSE(::testing::Test::HasFailure());
      in_plan.push_back(&s);
    }
    if (plan.seqs.empty()) break;
    bool has_prefill = false, has_decode = false;
    for (const auto& ss : plan.seqs) {
      (ss.token_ids.size() > 1 ? has_prefill : has_decode) = true;
    }
    mixed_iteration_seen |= has_prefill && has_decode;
    max_batch_tokens_seen =
        std::max<int32_t>(max_batch_tokens_seen, static_cast<int32_t>(plan.num_tokens()));
    auto logits = runner.Forward(plan);
    ASSERT_TRUE(logits.ok()) << logits.status();
    size_t row = 0;
    for (size_t i = 0; i < plan.seqs.size(); ++i) {
      TestSeq& s = *in_plan[i];
      s.computed += static_cast<int32_t>(plan.seqs[i].token_ids.size());
      if (!plan.seqs[i].sample) continue;
      const float* r = logits->row(row++);
      int32_t best = static_cast<int32_t>(std::max_element(r, r + vocab) - r);
      s.step_logits.emplace_back(r, r + vocab);
      s.generated.push_back(best);
      s.tokens.push_back(best);
      if (static_cast<int32_t>(s.generated.size()) == kSteps) s.table.Release(pool);
    }
  }
  EXPECT_TRUE(mixed_iteration_seen) << "no iteration mixed prefill chunks with decodes";
  EXPECT_EQ(pool.num_free(), pool.num_blocks()) << "KV blocks leaked";

  for (TestSeq& s : seqs) {
    ASSERT_EQ(s.generated.size(), static_cast<size_t>(kSteps)) << "sequence " << s.id;
    std::vector<int32_t> prompt(s.tokens.begin(), s.tokens.begin() + s.prompt_len);
    EXPECT_EQ(s.generated, orca::testing::GreedyAlone(runner, prompt, kSteps))
        << "sequence " << s.id;
    std::vector<float> solo = SoloStepLogits(runner, s.tokens, s.prompt_len, kSteps);
    for (int32_t step = 0; step < kSteps; ++step) {
      const float* a = s.step_logits[step].data();
      const float* b = solo.data() + static_cast<size_t>(step) * vocab;
      double max_diff = 0, max_ref = 0;
      for (int32_t v = 0; v < vocab; ++v) {
        max_diff = std::max<double>(max_diff, std::abs(a[v] - b[v]));
        max_ref = std::max<double>(max_ref, std::abs(b[v]));
      }
      ASSERT_LT(max_diff / max_ref, 1e-4) << "sequence " << s.id << " step " << step;
    }
  }
}

// `n` whole prompts (taken in turn from `prompts`), each one prefill chunk that samples,
// sequence ids from `first_id`; `tables` gets their blocks from `pool`.
std::vector<ScheduledSequence> WholePrompts(const Tokenizer& tok,
                                            const std::vector<std::string>& prompts, size_t n,
                                            uint64_t first_id, KvBlockPool& pool,
                                            std::vector<BlockTable>& tables) {
  tables.resize(n);
  std::vector<ScheduledSequence> seqs;
  for (size_t i = 0; i < n; ++i) {
    const std::vector<int32_t> tokens = tok.Encode(prompts[i % prompts.size()], true);
    seqs.push_back(orca::testing::NextChunk(first_id + i, tokens, 0,
                                            static_cast<int32_t>(tokens.size()), tables[i], pool));
  }
  return seqs;
}

// stories260K on a runner that samples on three threads (sampler_threads).
class SampledRowsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ORCA_REQUIRE_SHARED_MODEL(dir, "stories260K");
    auto tok = Tokenizer::FromDirectory(dir);
    ASSERT_TRUE(tok.ok()) << tok.status();
    tok_ = std::move(*tok);
    model_ = orca::testing::LoadModel(dir, /*num_blocks=*/256, /*block_size=*/16,
                                      /*sampler_threads=*/3);
    ASSERT_NE(model_.runner, nullptr);
  }
  const Tokenizer& tok() const { return *tok_; }
  ModelRunner& runner() { return *model_.runner; }

 private:
  std::unique_ptr<Tokenizer> tok_;
  orca::testing::LoadedModel model_;
};

// Execute samples an iteration's rows on several threads (sampler_threads): every row
// gets the token the sampler draws from that row's logits, in plan order.
TEST_F(SampledRowsTest, ParallelSamplingEqualsSerial) {
  ModelRunner& runner = this->runner();
  KvBlockPool pool(runner.num_kv_blocks(), runner.block_size());
  const std::vector<std::string> prompts = {"Once upon a time", "Tom", "The sun was hot",
                                            "Lily and Ben were friends", "A cat sat"};
  IterationPlan plan;
  std::vector<BlockTable> tables;
  plan.seqs = WholePrompts(tok(), prompts, prompts.size() * 3, 200, pool, tables);
  ASSERT_FALSE(::testing::Test::HasFailure());
  for (size_t i = 0; i < plan.seqs.size(); ++i) {
    ScheduledSequence& s = plan.seqs[i];
    s.sampling.temperature = 0.5f + 0.25f * static_cast<float>(i % 4);
    s.sampling.top_k = i % 3 == 0 ? 0 : 40;
    s.sampling.top_p = i % 2 == 0 ? 1.0f : 0.9f;
    s.sampling.seed = 77 + i;
    s.sampling.logprobs = i % 5 == 0 ? 2 : -1;
    s.output_index = static_cast<int32_t>(i);
    if (i == 4) s.sample = false;  // a prefill chunk that does not sample
  }
  auto logits = runner.Forward(plan);
  ASSERT_TRUE(logits.ok()) << logits.status();
  std::vector<SampledToken> serial;
  size_t row = 0;
  for (const ScheduledSequence& s : plan.seqs) {
    if (!s.sample) continue;
    serial.push_back(SampleToken(
        absl::MakeSpan(logits->row(row++), static_cast<size_t>(logits->vocab_size)), s));
  }
  auto result = runner.Execute(plan);  // the same slots again: the same logits
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->tokens.size(), serial.size());
  for (size_t i = 0; i < serial.size(); ++i) {
    EXPECT_EQ(result->tokens[i].seq_id, serial[i].seq_id) << "row " << i;
    EXPECT_EQ(result->tokens[i].token_id, serial[i].token_id) << "row " << i;
    EXPECT_EQ(result->tokens[i].top_logprobs, serial[i].top_logprobs) << "row " << i;
  }
  for (BlockTable& t : tables) t.Release(pool);
}

// A deferred mask as a scheduler leaves it (iteration.h): counts how often it is made.
class CountedMask : public DeferredTokenMask {
 public:
  explicit CountedMask(std::vector<uint32_t> mask) : mask_(std::move(mask)) {}
  std::vector<uint32_t> Make() const override {
    made_.fetch_add(1);
    return mask_;
  }
  int made() const { return made_.load(); }

 private:
  const std::vector<uint32_t> mask_;
  mutable std::atomic<int> made_{0};
};

// Execute makes each deferred mask once and draws as if the plan had carried it; a row
// whose mask allows nothing (or only banned tokens) draws no token, and the rows beside
// it draw as they would alone.
TEST_F(SampledRowsTest, DeferredMasksAreMadeOnceAndDrawnAsGiven) {
  ModelRunner& runner = this->runner();
  const int32_t vocab = runner.config().vocab_size;
  const size_t words = (static_cast<size_t>(vocab) + 31) / 32;
  KvBlockPool pool(runner.num_kv_blocks(), runner.block_size());
  const std::vector<std::string> prompts = {"Once upon a time", "Tom", "The sun was hot"};
  IterationPlan given, deferred;
  std::vector<std::shared_ptr<const CountedMask>> masks;
  std::vector<BlockTable> tables;
  std::vector<ScheduledSequence> seqs = WholePrompts(tok(), prompts, 9, 300, pool, tables);
  ASSERT_FALSE(::testing::Test::HasFailure());
  for (size_t i = 0; i < seqs.size(); ++i) {
    ScheduledSequence& s = seqs[i];
    s.sampling.temperature = i % 2 == 0 ? 0.0f : 0.8f;
    s.sampling.seed = 5 + i;
    std::vector<uint32_t> mask;
    if (i % 3 == 1) {  // every third token from 3 * i on
      mask.assign(words, 0u);
      for (int32_t t = static_cast<int32_t>(3 * i); t < vocab; t += 3)
        mask[t / 32] |= 1u << (t % 32);
    } else if (i == 5) {  // nothing
      mask.assign(words, 0u);
    } else if (i == 6) {  // only token 7, banned
      mask.assign(words, 0u);
      mask[0] = 1u << 7;
      s.banned_token_ids = {7};
    }
    ScheduledSequence d = s;
    s.allowed_token_mask = mask;
    if (!mask.empty()) {
      masks.push_back(std::make_shared<const CountedMask>(mask));
      d.deferred_mask = masks.back();
    }
    given.seqs.push_back(std::move(s));
    deferred.seqs.push_back(std::move(d));
  }
  auto expected = runner.Execute(given);
  ASSERT_TRUE(expected.ok()) << expected.status();
  auto result = runner.Execute(deferred);  // the same slots again: the same logits
  ASSERT_TRUE(result.ok()) << result.status();
  for (const auto& mask : masks) EXPECT_EQ(mask->made(), 1);
  ASSERT_EQ(result->tokens.size(), given.seqs.size());
  for (size_t i = 0; i < given.seqs.size(); ++i) {
    EXPECT_EQ(result->tokens[i].seq_id, given.seqs[i].seq_id) << "row " << i;
    EXPECT_EQ(result->tokens[i].token_id, expected->tokens[i].token_id) << "row " << i;
    if (i == 5 || i == 6) {
      EXPECT_EQ(result->tokens[i].token_id, -1) << "row " << i;
    } else {
      EXPECT_GE(result->tokens[i].token_id, 0) << "row " << i;
    }
    if (i % 3 == 1) {
      EXPECT_EQ(result->tokens[i].token_id % 3, 0) << "row " << i;
    }
  }
  // A mask wider than the vocabulary is refused, as one on the wire is.
  deferred.seqs[0].deferred_mask =
      std::make_shared<const CountedMask>(std::vector<uint32_t>(words + 1, ~0u));
  auto wide = runner.Execute(deferred);
  EXPECT_EQ(wide.status().code(), absl::StatusCode::kInvalidArgument) << wide.status();
  for (BlockTable& t : tables) t.Release(pool);
}

TEST(SelectiveBatchingTest, RejectsMalformedPlansWithoutComputing) {
  ORCA_REQUIRE_SHARED_MODEL(dir, "stories260K");
  auto m = orca::testing::LoadModel(dir, 8, 16);
  ASSERT_NE(m.runner, nullptr);
  auto plan_with = [](std::vector<int32_t> tokens, int32_t start, std::vector<int32_t> table) {
    IterationPlan p;
    ScheduledSequence s;
    s.token_ids = std::move(tokens);
    s.start_pos = start;
    s.block_table = std::move(table);
    s.sample = true;
    p.seqs.push_back(s);
    return p;
  };
  EXPECT_EQ(m.runner->Forward(plan_with({600}, 0, {0})).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(m.runner->Forward(plan_with({-1}, 0, {0})).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(m.runner->Forward(plan_with({5}, 16, {0})).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(m.runner->Forward(plan_with({5}, 0, {8})).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(m.runner->Forward(plan_with({5}, 511, {0})).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(m.runner->Forward(plan_with({}, 0, {0})).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(m.runner->Forward(plan_with({5}, 0, {0})).ok());
}

}  // namespace
}  // namespace orca
