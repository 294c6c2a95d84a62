// A serving group in one process (DESIGN.md section 4): a GroupExecutor serving the
// control plane on loopback and one WorkerRank thread per rank, each with its own CPU
// backend and model shard, talking Gloo over loopback. An Engine over the group must
// produce exactly the tokens of an Engine over the local executor; the group is ready
// only with every rank present; losing a rank fails the running requests with a
// retriable error, and a replacement rank brings the group back under a new generation.
// A group that breaks between two plans (nothing outstanding) must fail the running
// requests too (a stand-in executor makes that case deterministic). Also: the plan
// codec of the control plane is lossless. Every wait has a deadline.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <future>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "engine/core/engine.h"
#include "engine/core/local_executor.h"
#include "engine/group/group_executor.h"
#include "engine/group/plan_codec.h"
#include "engine/worker/worker.h"
#include "tests/engine/group/group_test_util.h"
#include "tests/testutil/testutil.h"

namespace orca {
namespace {

using testing::Collect;
using testing::Collected;
using testing::Eventually;
using testing::Ranks;
using testing::RunRequests;
using testing::SubmitGreedy;
using testing::TestRequest;

constexpr int32_t kNumKvBlocks = 256;
constexpr int32_t kBlockSize = 16;

// Requests run concurrently: different prompt lengths (one longer than two KV blocks, so
// its prefix is cached) and lengths, three guided (their masks made where the plan is
// executed, or by the group's executor before it sends the plan: two of one grammar at
// once, on two threads, under ThreadSanitizer too).
const std::vector<TestRequest>& Requests() {
  static const auto* r = new std::vector<TestRequest>{
      {"Once upon a time", 20},
      {"The little dog ran to the park and saw a big red ball. He wanted to play with it, so "
       "he ran to the ball and",
       24},
      {"Tom", 16},
      {"Lily and Ben were friends. They liked to play", 20},
      {"Tom had a", 18, "( [a-z]+[,.])+"},
      {"Lily and Ben", 14, R"(root ::= (" " [a-z]+ [,.])+)", GuideSyntax::kGbnf},
      {"The sun was hot", 12, R"(root ::= (" " [a-z]+ [,.])+)", GuideSyntax::kGbnf},
  };
  return *r;
}

EngineOptions EngineOptionsFor(const std::string& dir) {
  EngineOptions eo;
  eo.model.dir = dir;
  eo.kv_cache.num_blocks = kNumKvBlocks;
  eo.kv_cache.block_size = kBlockSize;
  eo.device.threads = 1;
  return eo;
}

// The tokens of Requests() on an engine over the local executor (computed once).
const std::vector<std::vector<int32_t>>& LocalTokens(const std::string& dir) {
  static std::vector<std::vector<int32_t>>* tokens = nullptr;
  if (tokens == nullptr) {
    auto engine = Engine::Create(EngineOptionsFor(dir));
    EXPECT_TRUE(engine.ok()) << engine.status();
    if (!engine.ok()) {
      static const std::vector<std::vector<int32_t>> none;
      return none;
    }
    (*engine)->Start();
    tokens = new std::vector<std::vector<int32_t>>(RunRequests(**engine, Requests()));
    (*engine)->Stop();
  }
  return *tokens;
}

GroupExecutorOptions GroupOptionsFor(const std::string& dir, int32_t pipeline, int32_t tensor,
                                     const std::string& pipeline_layers = "") {
  GroupExecutorOptions go;
  go.model_dir = dir;
  go.parallel.pipeline = pipeline;
  go.parallel.pipeline_layers = pipeline_layers;
  go.parallel.tensor = tensor;
  go.listen = "127.0.0.1:0";
  go.kv_cache.block_size = kBlockSize;
  go.kv_cache.num_blocks = kNumKvBlocks;
  go.comm_timeout_s = 10;
  go.iteration_timeout_s = 30;
  return go;
}

IterationPlan OnePlan() {
  IterationPlan plan;
  ScheduledSequence s;
  s.seq_id = 1;
  s.token_ids = {1, 403};
  s.block_table = {0};
  s.sample = true;
  s.sampling.temperature = 0;
  plan.seqs.push_back(s);
  return plan;
}

// pipeline x tensor, and the layers per stage ("": the balanced split, 3 + 2 here).
using Layout = std::tuple<int32_t, int32_t, std::string>;
class GroupLayoutTest : public ::testing::TestWithParam<Layout> {};

// With one rank missing the group is not ready and refuses plans; with all present it
// becomes ready, and an engine over it generates exactly what the local engine does.
// (An uneven split reaches the ranks in GroupInit: a rank that kept the even split would
// hold another number of layers' KV cache than the scheduler sized, and the group would
// break instead of becoming ready.)
TEST_P(GroupLayoutTest, EngineOverGroupMatchesLocalEngine) {
  ORCA_REQUIRE_SHARED_MODEL(dir, "stories260K");
  const auto [pipeline, tensor, layers] = GetParam();
  const int32_t world = pipeline * tensor;
  const auto& local = LocalTokens(dir);
  ASSERT_EQ(local.size(), Requests().size());

  auto group = GroupExecutor::Create(GroupOptionsFor(dir, pipeline, tensor, layers));
  ASSERT_TRUE(group.ok()) << group.status();
  GroupExecutor* exec = group->get();
  ASSERT_GT(exec->port(), 0);
  EXPECT_EQ(exec->max_inflight(), pipeline);
  EXPECT_EQ(exec->num_kv_blocks(), kNumKvBlocks);
  EXPECT_EQ(exec->block_size(), kBlockSize);
  EXPECT_EQ(exec->config().num_layers, 5);
  EXPECT_FALSE(exec->ready());
  EXPECT_EQ(exec->generation(), 0u);

  Ranks ranks(dir, exec->port(), tensor);
  // Every rank but the last.
  for (int32_t rank = 0; rank + 1 < world; ++rank) ranks.StartRank(rank);
  absl::SleepFor(absl::Milliseconds(500));
  EXPECT_FALSE(exec->WaitReady(absl::Milliseconds(300)));
  EXPECT_FALSE(exec->ready());
  EXPECT_EQ(exec->generation(), 0u) << "initialised without every rank";
  EXPECT_EQ(exec->Submit(OnePlan()).code(), absl::StatusCode::kUnavailable);
  for (int32_t rank = 0; rank + 1 < world; ++rank) EXPECT_FALSE(ranks.worker(rank).ready());

  const absl::Time t0 = absl::Now();
  ranks.StartRank(world - 1);
  ASSERT_TRUE(exec->WaitReady(absl::Seconds(30))) << "the group did not form in 30 s";
  std::cout << "[ layout ] " << pipeline << "x" << tensor << " ready in "
            << absl::ToDoubleMilliseconds(absl::Now() - t0) << " ms\n";
  EXPECT_EQ(exec->generation(), 1u);
  for (int32_t rank = 0; rank < world; ++rank) {
    EXPECT_TRUE(Eventually([&] { return ranks.worker(rank).ready(); }, absl::Seconds(10)))
        << "rank " << rank;
    EXPECT_EQ(ranks.worker(rank).generation(), 1u) << "rank " << rank;
  }

  auto engine = Engine::Create(EngineOptionsFor(dir), std::move(*group));
  ASSERT_TRUE(engine.ok()) << engine.status();
  EXPECT_TRUE((*engine)->ready());
  (*engine)->Start();
  const absl::Time t1 = absl::Now();
  std::vector<std::vector<int32_t>> got = RunRequests(**engine, Requests());
  std::cout << "[ layout ] " << pipeline << "x" << tensor << ": " << Requests().size()
            << " requests in " << absl::ToDoubleMilliseconds(absl::Now() - t1) << " ms\n";
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i], local[i]) << "request " << i << " (" << Requests()[i].prompt << ")";
    if (Requests()[i].guide.empty()) continue;
    // (Both followed the pattern: neither dropped the masks.)
    auto guide = (*engine)->Guide(Requests()[i].guide, Requests()[i].guide_syntax);
    ASSERT_TRUE(guide.ok()) << guide.status();
    int32_t state = (*guide)->start();
    for (int32_t t : got[i]) state = (*guide)->Next(state, t);
    EXPECT_NE(state, TokenGuide::kDead) << "request " << i << " left its pattern";
  }
  // Every rank executed every plan the engine completed (counters settle once the last
  // result is in; a stage may finish its part of a plan after the last stage returns).
  auto counts = [&] {
    std::vector<int64_t> c = {(*engine)->Snapshot().iterations};
    for (int32_t rank = 0; rank < world; ++rank) c.push_back(ranks.worker(rank).iterations());
    return c;
  };
  EXPECT_TRUE(Eventually(
      [&] {
        const std::vector<int64_t> c = counts();
        return c[0] > 0 && std::all_of(c.begin(), c.end(), [&](int64_t v) { return v == c[0]; });
      },
      absl::Seconds(5)))
      << "iterations of the engine, then of each rank: " << ::testing::PrintToString(counts());
  (*engine)->Stop();
  for (int32_t rank = 0; rank < world; ++rank) {
    EXPECT_TRUE(ranks.StopRank(rank).ok()) << "rank " << rank;
  }
}

std::string LayoutName(const ::testing::TestParamInfo<Layout>& info) {
  const auto& [pipeline, tensor, layers] = info.param;
  std::string name = absl::StrCat("pp", pipeline, "_tp", tensor);
  if (!layers.empty())
    absl::StrAppend(&name, "_layers_", absl::StrReplaceAll(layers, {{",", "_"}}));
  return name;
}

INSTANTIATE_TEST_SUITE_P(Layouts, GroupLayoutTest,
                         ::testing::Values(Layout{1, 1, ""}, Layout{1, 2, ""}, Layout{2, 1, ""},
                                           Layout{2, 2, ""}, Layout{2, 1, "4,1"}),
                         LayoutName);

// PP=2: a rank that stops while a long request runs fails that request with a retriable
// error and unreadies the group; a replacement rank re-forms it under a new generation,
// the request that waited meanwhile and a new one both produce the usual tokens.
class GroupFailureTest : public ::testing::TestWithParam<int32_t> {};

TEST_P(GroupFailureTest, LostRankFailsRequestsRetriablyAndReplacementRecovers) {
  ORCA_REQUIRE_SHARED_MODEL(dir, "stories260K");
  const int32_t lost = GetParam();
  const auto& local = LocalTokens(dir);
  ASSERT_EQ(local.size(), Requests().size());
  auto group = GroupExecutor::Create(GroupOptionsFor(dir, 2, 1));
  ASSERT_TRUE(group.ok()) << group.status();
  GroupExecutor* exec = group->get();
  Ranks ranks(dir, exec->port(), 1);
  ranks.StartRank(0);
  ranks.StartRank(1);
  ASSERT_TRUE(exec->WaitReady(absl::Seconds(30)));
  const uint64_t gen = exec->generation();
  auto created = Engine::Create(EngineOptionsFor(dir), std::move(*group));
  ASSERT_TRUE(created.ok()) << created.status();
  Engine& engine = **created;
  engine.Start();

  // The long-prompt request first (its prefix blocks are cached afterwards).
  EXPECT_EQ(RunRequests(engine, {Requests()[1]}), std::vector<std::vector<int32_t>>{local[1]});

  GenerateParams p;
  p.prompt_tokens = engine.tokenizer().Encode("Once upon a time", true);
  p.max_tokens = 500;
  p.ignore_eos = true;
  p.sampling.temperature = 0;
  auto long_stream = engine.Submit(std::move(p));
  ASSERT_TRUE(long_stream.ok()) << long_stream.status();
  Collected c = Collect(**long_stream, absl::Seconds(30), /*min_tokens=*/3);
  ASSERT_GE(c.tokens.size(), 3u) << "the long request made no progress";
  ASSERT_FALSE(c.finished) << "the long request finished before the rank was stopped";

  const absl::Time t0 = absl::Now();
  EXPECT_TRUE(ranks.StopRank(lost).ok());
  c = Collect(**long_stream, absl::Seconds(30), -1, std::move(c));
  ASSERT_TRUE(c.finished) << "the long request did not end within 30 s of losing rank " << lost;
  std::cout << "[ failure ] rank " << lost << " lost: request failed after "
            << absl::ToDoubleMilliseconds(absl::Now() - t0) << " ms, " << c.tokens.size()
            << " tokens in: " << c.last.status << "\n";
  EXPECT_EQ(c.last.finish_reason, FinishReason::kError);
  EXPECT_TRUE(absl::IsUnavailable(c.last.status)) << c.last.status;  // retriable
  EXPECT_FALSE(c.last.status.message().empty());
  EXPECT_LT(c.tokens.size(), 500u);
  // The tokens before the failure are the local engine's.
  const std::vector<int32_t>& first = local[0];
  for (size_t i = 0; i < std::min(c.tokens.size(), first.size()); ++i) {
    ASSERT_EQ(c.tokens[i], first[i]) << "token " << i;
  }
  EXPECT_FALSE(engine.ready());
  EXPECT_FALSE(Eventually([&] { return engine.ready(); }, absl::Milliseconds(500)))
      << "the group re-formed with a rank missing";

  // A request submitted during the outage waits for the group.
  auto waiting = SubmitGreedy(engine, Requests()[1]);
  ASSERT_NE(waiting, nullptr);

  const absl::Time t1 = absl::Now();
  ranks.StartRank(lost);
  ASSERT_TRUE(Eventually([&] { return engine.ready(); }, absl::Seconds(20)))
      << "the group did not re-form within 20 s";
  std::cout << "[ failure ] re-formed " << absl::ToDoubleMilliseconds(absl::Now() - t1)
            << " ms after the replacement started\n";
  EXPECT_GT(exec->generation(), gen);
  Collected w = Collect(*waiting, absl::Seconds(60));
  ASSERT_TRUE(w.finished);
  EXPECT_EQ(w.last.finish_reason, FinishReason::kLength) << w.last.status;
  EXPECT_EQ(w.tokens, local[1]);
  // New requests succeed with the same tokens as before.
  EXPECT_EQ(RunRequests(engine, Requests()), local);
  engine.Stop();
}

INSTANTIATE_TEST_SUITE_P(LostRank, GroupFailureTest, ::testing::Values(1, 0), [](const auto& info) {
  return info.param == 1 ? std::string("SamplingRank") : std::string("FirstStage");
});

// An executor that stands for a group which breaks between two plans (no plan
// outstanding): ready() turns false, and plans are refused until it is ready again. The
// running requests lost their KV cache with the group, so the engine must fail them
// (retriably) instead of waiting for the group and then decoding on without that cache.
class BreakableExecutor : public Executor {
 public:
  explicit BreakableExecutor(std::unique_ptr<LocalExecutor> local) : local_(std::move(local)) {}
  const ModelConfig& config() const override { return local_->config(); }
  int32_t num_kv_blocks() const override { return local_->num_kv_blocks(); }
  int32_t block_size() const override { return local_->block_size(); }
  bool ready() const override { return ready_.load(); }
  bool WaitReady(absl::Duration timeout) override {
    Eventually([&] { return ready_.load(); }, timeout);
    return ready_.load();
  }
  absl::Status Submit(const IterationPlan& plan) override {
    if (!ready_.load()) return absl::UnavailableError("the group is not ready");
    return local_->Submit(plan);
  }
  absl::StatusOr<IterationResult> Wait() override { return local_->Wait(); }
  bool TakeStateLost() override { return lost_.exchange(false); }
  // Breaking the "group" loses the KV cache, as GroupExecutor reports it.
  void set_ready(bool ready) {
    if (!ready) lost_.store(true);
    ready_.store(ready);
  }

 private:
  std::unique_ptr<LocalExecutor> local_;
  std::atomic<bool> ready_{true};
  std::atomic<bool> lost_{false};
};

TEST(EngineOverGroupTest, RunningRequestsFailRetriablyWhenTheGroupBreaksBetweenPlans) {
  ORCA_REQUIRE_SHARED_MODEL(dir, "stories260K");
  LocalExecutorOptions lo;
  lo.model.dir = dir;
  lo.device.threads = 1;
  lo.kv_cache.num_blocks = kNumKvBlocks;
  lo.kv_cache.block_size = kBlockSize;
  auto local = LocalExecutor::Create(lo);
  ASSERT_TRUE(local.ok()) << local.status();
  auto owned = std::make_unique<BreakableExecutor>(std::move(*local));
  BreakableExecutor* exec = owned.get();
  auto created = Engine::Create(EngineOptionsFor(dir), std::move(owned));
  ASSERT_TRUE(created.ok()) << created.status();
  Engine& engine = **created;
  engine.Start();
  GenerateParams p;
  p.prompt_tokens = engine.tokenizer().Encode("Once upon a time", true);
  p.max_tokens = 500;
  p.ignore_eos = true;
  p.sampling.temperature = 0;
  auto stream = engine.Submit(std::move(p));
  ASSERT_TRUE(stream.ok()) << stream.status();
  Collected c = Collect(**stream, absl::Seconds(30), /*min_tokens=*/3);
  ASSERT_GE(c.tokens.size(), 3u);
  ASSERT_FALSE(c.finished);
  exec->set_ready(false);
  c = Collect(**stream, absl::Seconds(5), -1, std::move(c));
  EXPECT_TRUE(c.finished) << "the running request was neither failed nor finished within 5 s "
                             "of the group breaking (it is waiting for a group whose KV cache "
                             "is gone)";
  if (c.finished) {
    EXPECT_EQ(c.last.finish_reason, FinishReason::kError);
    EXPECT_TRUE(absl::IsUnavailable(c.last.status)) << c.last.status;  // retriable
  }
  // Back: a new request runs normally.
  exec->set_ready(true);
  EXPECT_EQ(RunRequests(engine, {Requests()[0]}),
            std::vector<std::vector<int32_t>>{LocalTokens(dir)[0]});
  engine.Stop();
}

// generation() of the executor, checked around a failure without an engine in between.
TEST(GroupExecutorTest, GenerationIncreasesWhenTheGroupReforms) {
  ORCA_REQUIRE_SHARED_MODEL(dir, "stories260K");
  auto group = GroupExecutor::Create(GroupOptionsFor(dir, 1, 2));
  ASSERT_TRUE(group.ok()) << group.status();
  GroupExecutor& exec = **group;
  Ranks ranks(dir, exec.port(), 2);
  ranks.StartRank(0);
  ranks.StartRank(1);
  ASSERT_TRUE(exec.WaitReady(absl::Seconds(30)));
  const uint64_t gen = exec.generation();
  EXPECT_EQ(gen, 1u);
  // A plan runs; the result is the sampling rank's.
  IterationPlan plan = OnePlan();
  plan.iteration = 7;
  ASSERT_TRUE(exec.Submit(plan).ok());
  auto result = exec.Wait();
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->iteration, 7u);
  ASSERT_EQ(result->tokens.size(), 1u);
  EXPECT_EQ(result->tokens[0].seq_id, 1u);
  // A malformed plan fails alone; the group stays usable.
  IterationPlan bad = OnePlan();
  bad.iteration = 8;
  bad.seqs[0].token_ids = {100000};
  ASSERT_TRUE(exec.Submit(bad).ok());
  auto failed = exec.Wait();
  EXPECT_EQ(failed.status().code(), absl::StatusCode::kInvalidArgument) << failed.status();
  EXPECT_TRUE(exec.ready());

  EXPECT_FALSE(exec.TakeStateLost());  // nothing lost yet
  EXPECT_TRUE(ranks.StopRank(1).ok());
  EXPECT_TRUE(Eventually([&] { return !exec.ready(); }, absl::Seconds(10)));
  // No plan was outstanding: the loss is reported once all the same.
  EXPECT_EQ(exec.group_status().breaks, 1u);
  EXPECT_EQ(exec.group_status().world_size, 2);
  EXPECT_TRUE(exec.TakeStateLost());
  EXPECT_FALSE(exec.TakeStateLost());
  EXPECT_EQ(exec.Submit(plan).code(), absl::StatusCode::kUnavailable);
  ranks.StartRank(1);
  ASSERT_TRUE(exec.WaitReady(absl::Seconds(20)));
  EXPECT_GT(exec.generation(), gen);
  EXPECT_TRUE(Eventually([&] { return ranks.worker(0).generation() == exec.generation(); },
                         absl::Seconds(5)));
  plan.iteration = 9;
  ASSERT_TRUE(exec.Submit(plan).ok());
  auto again = exec.Wait();
  ASSERT_TRUE(again.ok()) << again.status();
  ASSERT_EQ(again->tokens.size(), 1u);
  EXPECT_EQ(again->tokens[0].token_id, result->tokens[0].token_id);
}

TEST(GroupExecutorTest, RejectsLayoutsAndWorkersThatDoNotFit) {
  ORCA_REQUIRE_SHARED_MODEL(dir, "stories260K");
  auto bad = GroupExecutor::Create(GroupOptionsFor(dir, 1, 3));
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument) << bad.status();
  bad = GroupExecutor::Create(GroupOptionsFor(dir, 6, 1));
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument) << bad.status();
  // Layers per stage that do not fit the model's five, or are not counts.
  for (const char* layers : {"2,2", "5,0", "1,1,3", "3;2", "x"}) {
    bad = GroupExecutor::Create(GroupOptionsFor(dir, 2, 1, layers));
    EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument) << layers;
    EXPECT_THAT(std::string(bad.status().message()), ::testing::HasSubstr("pipeline layers"))
        << layers;
  }

  auto group = GroupExecutor::Create(GroupOptionsFor(dir, 1, 1));
  ASSERT_TRUE(group.ok()) << group.status();
  GroupExecutor& exec = **group;
  Ranks ranks(dir, exec.port(), 1);
  // A worker offering another device, or a rank outside the layout, gives up at once.
  ranks.Start(0, ranks.Options(0, Device::kCuda));
  absl::Status s = ranks.WaitExit(0, absl::Seconds(20));
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  WorkerOptions outside = ranks.Options(0);
  outside.tp_rank = 1;
  ranks.Start(0, outside);
  s = ranks.WaitExit(0, absl::Seconds(20));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_FALSE(exec.ready());
  // The right one forms the group; a second claimant of the same rank is turned away
  // and keeps retrying (a restarted worker whose old connection is not yet known dead)
  // without disturbing the group.
  ranks.StartRank(0);
  ASSERT_TRUE(exec.WaitReady(absl::Seconds(30)));
  ranks.Start(1, ranks.Options(0));  // tracked under key 1, claims rank 0
  absl::SleepFor(absl::Milliseconds(2500));
  EXPECT_FALSE(ranks.worker(1).ready());
  EXPECT_TRUE(exec.ready());
  EXPECT_EQ(exec.generation(), 1u);
  EXPECT_TRUE(ranks.StopRank(1).ok());
  EXPECT_TRUE(exec.ready());
}

// The plan codec: every field of a plan and of a result survives the trip through the
// control-plane messages (and their wire format).
void ExpectSamplingEq(const SamplingParams& a, const SamplingParams& b) {
  EXPECT_EQ(a.temperature, b.temperature);
  EXPECT_EQ(a.top_k, b.top_k);
  EXPECT_EQ(a.top_p, b.top_p);
  EXPECT_EQ(a.min_p, b.min_p);
  EXPECT_EQ(a.repetition_penalty, b.repetition_penalty);
  EXPECT_EQ(a.presence_penalty, b.presence_penalty);
  EXPECT_EQ(a.frequency_penalty, b.frequency_penalty);
  EXPECT_EQ(a.logit_bias, b.logit_bias);
  EXPECT_EQ(a.seed, b.seed);
  EXPECT_EQ(a.logprobs, b.logprobs);
}

TEST(PlanCodecTest, PlanRoundTripsWithEveryField) {
  IterationPlan plan;
  plan.iteration = (uint64_t{1} << 40) + 17;
  for (int i = 0; i < 3; ++i) {
    ScheduledSequence s;
    s.seq_id = (uint64_t{1} << 50) + static_cast<uint64_t>(i);
    s.token_ids = {1, 403 + i, 407, 261, 378 - i};
    s.start_pos = 11 * i + 3;
    s.block_table = {5 + i, 9, 2, 100000};
    s.sample = i != 1;
    SamplingParams& p = s.sampling;
    p.temperature = 0.75f + static_cast<float>(i);
    p.top_k = 40 + i;
    p.top_p = 0.9f;
    p.min_p = 0.05f;
    p.repetition_penalty = 1.3f;
    p.presence_penalty = -0.5f;
    p.frequency_penalty = 0.25f;
    p.logit_bias = {{7, -100.0f}, {42, 2.5f}, {i, 0.125f}};
    p.seed = 0xfedcba9876543210ull - static_cast<uint64_t>(i);
    p.logprobs = 5 - i;
    s.output_index = 12 + i;
    s.penalty_history = {1, 403, 407, 261, 378, 432, 383};
    s.penalty_prompt_len = 5;
    s.banned_token_ids = {2, 1};
    plan.seqs.push_back(s);
  }
  v1::IterationPlan msg;
  ToProto(plan, &msg);
  std::string wire;
  ASSERT_TRUE(msg.SerializeToString(&wire));
  v1::IterationPlan parsed;
  ASSERT_TRUE(parsed.ParseFromString(wire));
  const IterationPlan back = FromProto(parsed);
  EXPECT_EQ(back.iteration, plan.iteration);
  ASSERT_EQ(back.seqs.size(), plan.seqs.size());
  for (size_t i = 0; i < plan.seqs.size(); ++i) {
    SCOPED_TRACE(::testing::Message() << "sequence " << i);
    const ScheduledSequence& a = back.seqs[i];
    const ScheduledSequence& b = plan.seqs[i];
    EXPECT_EQ(a.seq_id, b.seq_id);
    EXPECT_EQ(a.token_ids, b.token_ids);
    EXPECT_EQ(a.start_pos, b.start_pos);
    EXPECT_EQ(a.block_table, b.block_table);
    EXPECT_EQ(a.sample, b.sample);
    ExpectSamplingEq(a.sampling, b.sampling);
    EXPECT_EQ(a.output_index, b.output_index);
    EXPECT_EQ(a.penalty_history, b.penalty_history);
    EXPECT_EQ(a.penalty_prompt_len, b.penalty_prompt_len);
    EXPECT_EQ(a.banned_token_ids, b.banned_token_ids);
  }
  // Defaults survive too (greedy off, logprobs -1, no bias).
  IterationPlan plain;
  plain.seqs.emplace_back();
  v1::IterationPlan plain_msg;
  ToProto(plain, &plain_msg);
  const IterationPlan plain_back = FromProto(plain_msg);
  ASSERT_EQ(plain_back.seqs.size(), 1u);
  ExpectSamplingEq(plain_back.seqs[0].sampling, SamplingParams{});
  EXPECT_FALSE(plain_back.seqs[0].sample);
}

TEST(PlanCodecTest, ResultRoundTripsWithTopLogprobs) {
  IterationResult result;
  result.iteration = 123456789012ull;
  for (int i = 0; i < 3; ++i) {
    SampledToken t;
    t.seq_id = 1000 + static_cast<uint64_t>(i);
    t.token_id = 432 - i;
    t.logprob = -0.125f * static_cast<float>(i + 1);
    for (int k = 0; k < i * 2; ++k) t.top_logprobs.emplace_back(k * 7, -0.5f * k - 0.03125f);
    result.tokens.push_back(t);
  }
  v1::IterationDone msg;
  ToProto(result, &msg);
  std::string wire;
  ASSERT_TRUE(msg.SerializeToString(&wire));
  v1::IterationDone parsed;
  ASSERT_TRUE(parsed.ParseFromString(wire));
  const IterationResult back = FromProto(parsed);
  EXPECT_EQ(back.iteration, result.iteration);
  ASSERT_EQ(back.tokens.size(), result.tokens.size());
  for (size_t i = 0; i < result.tokens.size(); ++i) {
    EXPECT_EQ(back.tokens[i].seq_id, result.tokens[i].seq_id);
    EXPECT_EQ(back.tokens[i].token_id, result.tokens[i].token_id);
    EXPECT_EQ(back.tokens[i].logprob, result.tokens[i].logprob);
    EXPECT_EQ(back.tokens[i].top_logprobs, result.tokens[i].top_logprobs);
  }
  EXPECT_EQ(back.tokens[2].top_logprobs.size(), 4u);
}

}  // namespace
}  // namespace orca
