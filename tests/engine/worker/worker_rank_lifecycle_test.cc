// WorkerRank's lifecycle on loopback (docs/distributed.md, "Worker lifecycle"): a rank
// that dials a scheduler nobody runs reports that it waits for a group and stops at
// once on Drain(); ranks of a 2-stage group (threads of this process, a GroupExecutor
// and an engine over it, stories260K) that are drained mid-request keep executing plans
// so the request completes, and return from Run() only when the group ends.
#include <gtest/gtest.h>

#include <future>
#include <memory>
#include <thread>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "engine/core/engine.h"
#include "engine/group/group_executor.h"
#include "engine/worker/worker.h"
#include "tests/engine/group/group_test_util.h"
#include "tests/testutil/testutil.h"

namespace orca {
namespace {

using testing::Collect;
using testing::Collected;
using testing::Eventually;
using testing::Ranks;
using testing::SubmitGreedy;

TEST(WorkerRankLifecycleTest, DialingRankWaitsForAGroupAndDrainsAtOnce) {
  WorkerOptions o;
  o.scheduler = "127.0.0.1:1";  // nothing listens there
  o.stage = 1;
  o.tp_rank = 0;
  const absl::Time before = absl::Now();
  WorkerRank rank(o);
  std::future<absl::Status> run = std::async(std::launch::async, [&rank] { return rank.Run(); });
  absl::SleepFor(absl::Milliseconds(300));
  const RankProgress p = rank.progress();
  EXPECT_EQ(p.name, "stage 1 tp 0");
  EXPECT_FALSE(p.in_group);
  EXPECT_FALSE(p.serving);
  EXPECT_GE(p.since, before);
  EXPECT_LE(p.since, before + absl::Milliseconds(300));
  EXPECT_FALSE(p.plan_started.has_value());

  const absl::Time drained = absl::Now();
  rank.Drain();
  ASSERT_EQ(run.wait_for(std::chrono::seconds(5)), std::future_status::ready)
      << "a rank without a group must stop at once on Drain()";
  EXPECT_TRUE(run.get().ok());
  EXPECT_LT(absl::Now() - drained, absl::Seconds(2));
}

TEST(WorkerRankLifecycleTest, DrainedRanksOfAGroupFinishTheRequestAndStopWhenTheGroupEnds) {
  ORCA_REQUIRE_SHARED_MODEL(dir, "stories260K");
  GroupExecutorOptions go;
  go.model_dir = dir;
  go.parallel.pipeline = 2;
  go.listen = "127.0.0.1:0";
  go.kv_cache.num_blocks = 64;
  go.comm_timeout_s = 10;
  go.iteration_timeout_s = 30;
  auto group = GroupExecutor::Create(go);
  ASSERT_TRUE(group.ok()) << group.status();
  GroupExecutor* exec = group->get();
  Ranks ranks(dir, exec->port(), 1);
  ranks.StartRank(0);
  ranks.StartRank(1);
  ASSERT_TRUE(exec->WaitReady(absl::Seconds(30))) << "the group did not form in 30 s";
  EngineOptions eo;
  eo.model.dir = dir;
  eo.kv_cache.num_blocks = 64;
  eo.device.threads = 1;
  auto engine = Engine::Create(eo, std::move(*group));
  ASSERT_TRUE(engine.ok()) << engine.status();
  (*engine)->Start();
  for (int32_t r : {0, 1}) {
    ASSERT_TRUE(Eventually([&] { return ranks.worker(r).progress().serving; }, absl::Seconds(10)));
  }

  auto stream = SubmitGreedy(**engine, {"Once upon a time", 200});
  ASSERT_NE(stream, nullptr);
  Collected got = Collect(*stream, absl::Seconds(30), /*min_tokens=*/5);
  ASSERT_GE(got.tokens.size(), 5u);
  ASSERT_FALSE(got.finished) << "the request ended before the drain began";
  ranks.worker(0).Drain();
  ranks.worker(1).Drain();
  got = Collect(*stream, absl::Seconds(60), -1, std::move(got));
  ASSERT_TRUE(got.finished);
  EXPECT_EQ(got.last.finish_reason, FinishReason::kLength) << got.last.status;
  EXPECT_EQ(got.tokens.size(), 200u);
  EXPECT_TRUE(ranks.worker(0).progress().in_group) << "a drained rank left its group";

  // The scheduler ends the group: the drained ranks return from Run() instead of
  // dialing again.
  (*engine)->Stop();
  engine->reset();
  EXPECT_TRUE(ranks.WaitExit(0, absl::Seconds(10)).ok());
  EXPECT_TRUE(ranks.WaitExit(1, absl::Seconds(10)).ok());
}

}  // namespace
}  // namespace orca
