// The three scheduling policies on a real model (stories260K) through the Engine: they
// must produce the same greedy tokens, and differ only in what they compute. Under
// `request` (FasterTransformer's static batch) a finished member keeps its row until
// the longest member is done; under `request-compact` it leaves; under `iteration`
// new requests join a running batch.
#include <gtest/gtest.h>

#include <map>
#include <vector>

#include "engine/core/engine.h"
#include "tests/testutil/testutil.h"

namespace orca {
namespace {

struct TokenCounter : EngineObserver {
  void OnIteration(double, double, int32_t batch_size, int32_t num_tokens, int32_t) override {
    ++iterations;
    rows += batch_size;
    tokens += num_tokens;
  }
  void OnFirstToken(double, double) override {}
  void OnToken(double) override {}
  void OnFinished(FinishReason, int32_t, int32_t, double) override {}
  int64_t iterations = 0, rows = 0, tokens = 0;
};

struct PolicyRun {
  std::vector<std::vector<int32_t>> outputs;
  TokenCounter counter;
};

std::unique_ptr<Engine> MakeEngine(const std::string& dir, SchedulingPolicy policy) {
  EngineOptions eo;
  eo.model.dir = dir;
  eo.kv_cache.num_blocks = 256;
  eo.device.threads = 1;
  eo.scheduler.policy = policy;
  auto engine = Engine::Create(eo);
  EXPECT_TRUE(engine.ok()) << engine.status();
  return engine.ok() ? std::move(*engine) : nullptr;
}

// A greedy request for exactly `max_tokens` tokens.
std::shared_ptr<RequestStream> SubmitGreedy(Engine& engine, const std::string& prompt,
                                            int max_tokens) {
  GenerateParams p;
  p.prompt_tokens = engine.tokenizer().Encode(prompt, true);
  p.max_tokens = max_tokens;
  p.ignore_eos = true;
  p.sampling.temperature = 0;
  auto s = engine.Submit(std::move(p));
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? *s : nullptr;
}

// Submits every request before the loop starts, so a static batch holds all of them.
void RunPolicy(const std::string& dir, SchedulingPolicy policy, const std::vector<int>& max_tokens,
               PolicyRun* run) {
  std::unique_ptr<Engine> engine = MakeEngine(dir, policy);
  ASSERT_NE(engine, nullptr);
  engine->SetObserver(&run->counter);
  const char* prompts[] = {"Once upon a time", "The little dog", "Lily and Ben were friends",
                           "One day", "The sun was hot and the sky"};
  std::vector<std::shared_ptr<RequestStream>> streams;
  for (size_t i = 0; i < max_tokens.size(); ++i) {
    streams.push_back(SubmitGreedy(*engine, prompts[i % 5], max_tokens[i]));
    ASSERT_NE(streams.back(), nullptr);
  }
  engine->Start();
  for (auto& s : streams) {
    std::vector<int32_t> out;
    StreamEvent ev;
    bool finished = false;
    while (!finished) {
      ASSERT_TRUE(s->Pop(&ev, absl::Seconds(60))) << "no event for 60 s";
      out.insert(out.end(), ev.token_ids.begin(), ev.token_ids.end());
      finished = ev.finished;
    }
    EXPECT_EQ(ev.finish_reason, FinishReason::kLength);
    run->outputs.push_back(out);
  }
  engine->Stop();
}

TEST(EnginePolicyTest, StaticBatchesComputeFinishedRowsAndMatchIterationLevel) {
  ORCA_REQUIRE_SHARED_MODEL(dir, "stories260K");
  const std::vector<int> max_tokens = {3, 7, 12, 20, 30};
  PolicyRun iteration, request, compact;
  RunPolicy(dir, SchedulingPolicy::kIteration, max_tokens, &iteration);
  RunPolicy(dir, SchedulingPolicy::kRequest, max_tokens, &request);
  RunPolicy(dir, SchedulingPolicy::kRequestCompact, max_tokens, &compact);
  ASSERT_EQ(iteration.outputs.size(), max_tokens.size());
  for (size_t i = 0; i < max_tokens.size(); ++i) {
    EXPECT_EQ(iteration.outputs[i].size(), static_cast<size_t>(max_tokens[i]));
  }
  EXPECT_EQ(request.outputs, iteration.outputs);
  EXPECT_EQ(compact.outputs, iteration.outputs);

  // One prefill iteration for all five, then 29 decode iterations for the longest.
  EXPECT_EQ(request.counter.iterations, 30);
  EXPECT_EQ(compact.counter.iterations, 30);
  // request: every decode iteration has all 5 rows; compact: only unfinished ones.
  int64_t compact_decode_rows = 0;
  for (int m : max_tokens) compact_decode_rows += m - 1;
  EXPECT_EQ(request.counter.rows, 5 + 5 * 29);
  EXPECT_EQ(compact.counter.rows, 5 + compact_decode_rows);
  EXPECT_EQ(request.counter.tokens - compact.counter.tokens, 5 * 29 - compact_decode_rows);
}

// A static batch whose last running member is aborted (its client went away) is over:
// the responses it held must go out at once, not when some later request arrives.
TEST(EnginePolicyTest, AbortingTheLastRunningMemberReleasesTheStaticBatch) {
  ORCA_REQUIRE_SHARED_MODEL(dir, "stories260K");
  for (SchedulingPolicy policy : {SchedulingPolicy::kRequest, SchedulingPolicy::kRequestCompact}) {
    std::unique_ptr<Engine> engine = MakeEngine(dir, policy);
    ASSERT_NE(engine, nullptr);
    auto short_one = SubmitGreedy(*engine, "Once upon a time", 2);
    auto long_one = SubmitGreedy(*engine, "Once upon a time", 400);
    ASSERT_TRUE(short_one && long_one);
    engine->Start();
    while (engine->Snapshot().iterations < 10) absl::SleepFor(absl::Milliseconds(1));
    engine->Abort(long_one->id());
    StreamEvent ev;
    int32_t tokens = 0;
    do {
      ASSERT_TRUE(short_one->Pop(&ev, absl::Seconds(5)))
          << "the held response was not released after the batch's last member left";
      tokens += static_cast<int32_t>(ev.token_ids.size());
    } while (!ev.finished);
    EXPECT_EQ(ev.finish_reason, FinishReason::kLength);
    EXPECT_EQ(tokens, 2);
    do {
      ASSERT_TRUE(long_one->Pop(&ev, absl::Seconds(5)));
    } while (!ev.finished);
    EXPECT_EQ(ev.finish_reason, FinishReason::kAbort);
    engine->Stop();
  }
}

}  // namespace
}  // namespace orca

namespace orca {
namespace {

// A checkpoint whose tokenizer cannot be read fails Engine::Create with an error naming
// the file; nothing crashes on the way out (the engine is destroyed half-made).
TEST(EngineCreateTest, FailsCleanlyOnACorruptTokenizer) {
  ORCA_REQUIRE_SHARED_MODEL(dir, "stories260K");
  testing::TempDir tmp;
  for (const char* f :
       {"config.json", "generation_config.json", "model.safetensors", "tokenizer_config.json"}) {
    ASSERT_EQ(testing::RunCommand("cp " + dir + "/" + f + " " + tmp.path() + "/"), 0);
  }
  ASSERT_EQ(testing::RunCommand("echo garbage > " + tmp.file("tokenizer.json")), 0);
  EngineOptions eo;
  eo.model.dir = tmp.path();
  eo.kv_cache.num_blocks = 16;
  auto engine = Engine::Create(eo);
  ASSERT_FALSE(engine.ok());
  EXPECT_NE(std::string(engine.status().message()).find("tokenizer.json"), std::string::npos)
      << engine.status();
}

}  // namespace
}  // namespace orca
