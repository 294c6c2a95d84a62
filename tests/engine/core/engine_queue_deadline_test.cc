// The engine's queue deadline (issue 16): a request that waits for admission longer
// than SchedulerOptions::queue_timeout_s (here: behind a serving group that is down) fails
// with Unavailable (retriable: HTTP 503 + Retry-After) instead of waiting forever; one
// that is admitted before its deadline runs to its end, and the engine keeps serving.
// On a real model (stories260K), over a stand-in executor whose readiness the test sets.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <utility>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "engine/core/engine.h"
#include "engine/core/local_executor.h"
#include "tests/testutil/testutil.h"

namespace orca {
namespace {

// The local executor behind a readiness switch: not ready stands for a serving group
// that is down (plans are refused; requests wait in the engine's queue).
class GatedExecutor : public Executor {
 public:
  explicit GatedExecutor(std::unique_ptr<LocalExecutor> local) : local_(std::move(local)) {}
  const ModelConfig& config() const override { return local_->config(); }
  int32_t num_kv_blocks() const override { return local_->num_kv_blocks(); }
  int32_t block_size() const override { return local_->block_size(); }
  bool ready() const override { return ready_.load(); }
  bool WaitReady(absl::Duration timeout) override {
    const absl::Time deadline = absl::Now() + timeout;
    while (!ready_.load() && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(5));
    return ready_.load();
  }
  absl::Status Submit(const IterationPlan& plan) override {
    if (!ready_.load()) return absl::UnavailableError("the group is not ready");
    return local_->Submit(plan);
  }
  absl::StatusOr<IterationResult> Wait() override { return local_->Wait(); }
  void set_ready(bool ready) { ready_.store(ready); }

 private:
  std::unique_ptr<LocalExecutor> local_;
  std::atomic<bool> ready_{false};
};

struct Outcome {
  bool finished = false;
  StreamEvent last;
  int32_t tokens = 0;
  absl::Duration elapsed;
};

using Clock = std::chrono::steady_clock;

// Pops `stream`'s events until it finishes or `timeout` passes since `start`.
// Durations on the monotonic clock, as the engine measures its deadlines (the wall
// clock may be stepped), and from a `start` taken before Submit: the engine stamps the
// request's arrival inside Submit, and on a loaded machine Submit itself can take a
// noticeable time (CI, TSan, 12 tests on 2 cores: the deadline seemed to fire 0.27 s
// early when the clock started after Submit returned).
Outcome Drain(RequestStream& stream, Clock::time_point start, absl::Duration timeout) {
  Outcome o;
  auto since_start = [&] { return absl::FromChrono(Clock::now() - start); };
  while (!o.finished) {
    const absl::Duration left = timeout - since_start();
    if (left <= absl::ZeroDuration() || !stream.Pop(&o.last, left)) break;
    o.tokens += static_cast<int32_t>(o.last.token_ids.size());
    o.finished = o.last.finished;
  }
  o.elapsed = since_start();
  return o;
}

GenerateParams Greedy(Engine& engine, int32_t max_tokens) {
  GenerateParams p;
  p.prompt_tokens = engine.tokenizer().Encode("Once upon a time", true);
  p.max_tokens = max_tokens;
  p.ignore_eos = true;
  p.sampling.temperature = 0;
  return p;
}

TEST(EngineQueueDeadlineTest, QueuedRequestFailsRetriablyAtItsDeadlineAndServingGoesOn) {
  ORCA_REQUIRE_SHARED_MODEL(dir, "stories260K");
  LocalExecutorOptions lo;
  lo.model.dir = dir;
  lo.device.threads = 1;
  lo.kv_cache.num_blocks = 64;
  auto local = LocalExecutor::Create(lo);
  ASSERT_TRUE(local.ok()) << local.status();
  auto owned = std::make_unique<GatedExecutor>(std::move(*local));
  GatedExecutor* exec = owned.get();
  EngineOptions eo;
  eo.model.dir = dir;
  eo.scheduler.queue_timeout_s = 1.5;
  auto created = Engine::Create(eo, std::move(owned));
  ASSERT_TRUE(created.ok()) << created.status();
  Engine& engine = **created;
  engine.Start();

  // The group is down: the request waits in the queue, then fails at its deadline.
  GenerateParams params = Greedy(engine, 8);
  const Clock::time_point before_submit = Clock::now();
  auto queued = engine.Submit(std::move(params));
  ASSERT_TRUE(queued.ok()) << queued.status();
  Outcome o = Drain(**queued, before_submit, absl::Seconds(10));
  ASSERT_TRUE(o.finished) << "the queued request still waits after 10 s (no queue deadline)";
  EXPECT_EQ(o.last.finish_reason, FinishReason::kError);
  EXPECT_TRUE(absl::IsUnavailable(o.last.status)) << o.last.status;  // retriable: 503
  EXPECT_NE(o.last.status.message().find("queue deadline"), std::string::npos) << o.last.status;
  EXPECT_EQ(o.tokens, 0);
  EXPECT_GE(o.elapsed, absl::Seconds(1.4)) << "failed before its deadline";
  EXPECT_LT(o.elapsed, absl::Seconds(4)) << "failed long after its deadline";

  // A request admitted within its deadline is not failed by it, however long it runs.
  auto waits_briefly = engine.Submit(Greedy(engine, 64));
  ASSERT_TRUE(waits_briefly.ok()) << waits_briefly.status();
  absl::SleepFor(absl::Milliseconds(500));
  exec->set_ready(true);
  o = Drain(**waits_briefly, Clock::now(), absl::Seconds(30));
  ASSERT_TRUE(o.finished);
  EXPECT_EQ(o.last.finish_reason, FinishReason::kLength) << o.last.status;
  EXPECT_EQ(o.tokens, 64);
  engine.Stop();
}

TEST(EngineQueueDeadlineTest, ZeroMeansNoDeadline) {
  ORCA_REQUIRE_SHARED_MODEL(dir, "stories260K");
  LocalExecutorOptions lo;
  lo.model.dir = dir;
  lo.device.threads = 1;
  lo.kv_cache.num_blocks = 64;
  auto local = LocalExecutor::Create(lo);
  ASSERT_TRUE(local.ok()) << local.status();
  auto owned = std::make_unique<GatedExecutor>(std::move(*local));
  GatedExecutor* exec = owned.get();
  EngineOptions eo;
  eo.model.dir = dir;
  eo.scheduler.queue_timeout_s = 0;
  auto created = Engine::Create(eo, std::move(owned));
  ASSERT_TRUE(created.ok()) << created.status();
  Engine& engine = **created;
  engine.Start();
  auto queued = engine.Submit(Greedy(engine, 4));
  ASSERT_TRUE(queued.ok()) << queued.status();
  Outcome o = Drain(**queued, Clock::now(), absl::Seconds(1));
  EXPECT_FALSE(o.finished) << o.last.status;
  exec->set_ready(true);
  o = Drain(**queued, Clock::now(), absl::Seconds(30));
  ASSERT_TRUE(o.finished);
  EXPECT_EQ(o.last.finish_reason, FinishReason::kLength) << o.last.status;
  engine.Stop();
}

}  // namespace
}  // namespace orca
