// The rank deadline of a serving group (issue 16): a rank that falls silent (a
// SIGSTOPped process keeps its TCP connection, and may stop in the middle of a plan it
// already took, so only its missing heartbeats give it away) breaks the group within
// GroupExecutorOptions::rank_deadline_s: the outstanding plan fails with Unavailable
// (retriable), every session ends, and the unresponsive-rank handler is told which rank
// it was, and only that one; an idle group too. A rank that keeps its heartbeats but
// takes longer than the deadline to compute is not unresponsive. Over the control plane
// with bare gRPC ranks (the protocol), and with an engine over WorkerRank threads one of
// which freezes (what a request sees).
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <chrono>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "engine/core/engine.h"
#include "engine/group/group_executor.h"
#include "engine/model/model_config.h"
#include "engine/runner/model_runner.h"
#include "orca/v1/control.grpc.pb.h"
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

GroupExecutorOptions Options(const std::string& dir, double rank_deadline_s) {
  GroupExecutorOptions go;
  go.model_dir = dir;
  go.parallel.tensor = 2;
  go.listen = "127.0.0.1:0";
  go.kv_cache.block_size = 16;
  go.kv_cache.num_blocks = 64;
  // Far beyond the plan deadline: a healthy rank waiting on its frozen peer's all-reduce
  // must not be what breaks the group.
  go.comm_timeout_s = 30;
  go.iteration_timeout_s = 60;
  go.rank_deadline_s = rank_deadline_s;
  return go;
}

// The ranks the executor reported unresponsive, with the reasons.
class Reported {
 public:
  UnresponsiveRankHandler Handler() {
    return [this](int32_t rank, const std::string& reason) {
      absl::MutexLock lock(&mu_);
      ranks_.push_back(rank);
      reasons_.push_back(reason);
    };
  }
  std::vector<int32_t> ranks() const {
    absl::MutexLock lock(&mu_);
    return ranks_;
  }
  std::string reasons() const {
    absl::MutexLock lock(&mu_);
    std::string out;
    for (const std::string& r : reasons_) absl::StrAppend(&out, r, "\n");
    return out;
  }

 private:
  mutable absl::Mutex mu_;
  std::vector<int32_t> ranks_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> reasons_ ABSL_GUARDED_BY(mu_);
};

// A CPU rank as a bare gRPC client of the control plane, driven message by message,
// with heartbeats (as WorkerRank sends them) every 100 ms while beating. Every read is
// bounded by the call's 60 s deadline.
class ControlRank {
 public:
  ControlRank(int port, int32_t tp_rank, const std::string& model_dir)
      : tp_rank_(tp_rank),
        config_(*LoadModelConfig(model_dir)),
        stub_(v1::ControlPlane::NewStub(grpc::CreateChannel(absl::StrCat("127.0.0.1:", port),
                                                            grpc::InsecureChannelCredentials()))) {
    ctx_.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
    stream_ = stub_->Join(&ctx_);
    v1::WorkerMessage m;
    m.mutable_hello()->set_tp_rank(tp_rank);
    m.mutable_hello()->set_device("cpu");
    m.mutable_hello()->set_worker(absl::StrCat("bare tp ", tp_rank));
    EXPECT_TRUE(stream_->Write(m));
  }
  ~ControlRank() {
    StopBeating();
    ctx_.TryCancel();
    v1::SchedulerMessage m;
    while (stream_->Read(&m)) {
    }
    (void)stream_->Finish();
  }

  // Reads GroupInit, reports ready for its generation and starts beating.
  bool JoinGeneration() {
    v1::SchedulerMessage m;
    if (!stream_->Read(&m) || !m.has_init()) return false;
    generation_ = m.init().generation();
    // The cache a worker allocates for this init (the scheduler checks the size).
    const absl::StatusOr<DType> kv_dtype = ParseDType(m.init().kv_cache_dtype());
    if (!kv_dtype.ok()) return false;
    kv_bytes_ = ModelRunner::KvBytesPerBlock(config_, ModelShard{1, 2, 0, tp_rank_},
                                             m.init().block_size(), *kv_dtype) *
                static_cast<uint64_t>(m.init().num_kv_blocks());
    if (!Beat()) return false;
    beats_ = std::thread([this] {
      absl::MutexLock lock(&mu_);
      auto stop = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return stop_; };
      while (!mu_.AwaitWithTimeout(absl::Condition(&stop), absl::Milliseconds(100))) {
        v1::WorkerMessage beat;
        beat.mutable_ready()->set_generation(generation_);
        beat.mutable_ready()->set_kv_cache_bytes(kv_bytes_);
        stream_->Write(beat);
      }
    });
    return true;
  }
  // Falls silent, as a stopped process does.
  void StopBeating() {
    {
      absl::MutexLock lock(&mu_);
      stop_ = true;
    }
    if (beats_.joinable()) beats_.join();
  }
  // Reads the next plan; nullopt when the session ended.
  std::optional<v1::IterationPlan> ReadPlan() {
    v1::SchedulerMessage m;
    if (!stream_->Read(&m) || !m.has_plan()) return std::nullopt;
    return m.plan();
  }
  // Reports ready, or (again) beats: a WorkerReady of the generation.
  bool Beat() {
    v1::WorkerMessage m;
    m.mutable_ready()->set_generation(generation_);
    m.mutable_ready()->set_kv_cache_bytes(kv_bytes_);
    absl::MutexLock lock(&mu_);
    return stream_->Write(m);
  }
  bool Done(uint64_t iteration) {
    v1::WorkerMessage m;
    m.mutable_done()->set_iteration(iteration);
    absl::MutexLock lock(&mu_);
    return stream_->Write(m);
  }
  // Waits for the scheduler to end the session; false when it sent something instead.
  bool Ended() {
    v1::SchedulerMessage m;
    return !stream_->Read(&m);
  }

 private:
  int32_t tp_rank_;
  ModelConfig config_;
  std::unique_ptr<v1::ControlPlane::Stub> stub_;
  grpc::ClientContext ctx_;
  std::unique_ptr<grpc::ClientReaderWriter<v1::WorkerMessage, v1::SchedulerMessage>> stream_;
  uint64_t generation_ = 0;
  uint64_t kv_bytes_ = 0;
  absl::Mutex mu_;  // one write at a time
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread beats_;
};

IterationPlan PlanNumber(uint64_t iteration) {
  IterationPlan plan;
  plan.iteration = iteration;
  return plan;
}

TEST(GroupDeadlineTest, SilentRankBreaksTheGroupWithAPlanDueAndNamesOnlyThatRank) {
  ORCA_REQUIRE_SHARED_MODEL(dir, "stories260K");
  constexpr double kDeadlineS = 1;
  auto group = GroupExecutor::Create(Options(dir, kDeadlineS));
  ASSERT_TRUE(group.ok()) << group.status();
  GroupExecutor& exec = **group;
  Reported reported;
  exec.SetUnresponsiveRankHandler(reported.Handler());
  ControlRank sampling(exec.port(), 0, dir), other(exec.port(), 1, dir);
  ASSERT_TRUE(sampling.JoinGeneration());
  ASSERT_TRUE(other.JoinGeneration());
  ASSERT_TRUE(exec.WaitReady(absl::Seconds(10)));

  // Answered after twice the deadline, with heartbeats meanwhile: slow, not unresponsive.
  ASSERT_TRUE(exec.Submit(PlanNumber(1)).ok());
  for (ControlRank* r : {&sampling, &other}) {
    std::optional<v1::IterationPlan> plan = r->ReadPlan();
    ASSERT_TRUE(plan.has_value());
    EXPECT_EQ(plan->iteration(), 1u);
  }
  absl::SleepFor(absl::Seconds(2 * kDeadlineS));
  ASSERT_TRUE(sampling.Done(1));
  auto result = exec.Wait();
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->iteration, 1u);
  EXPECT_TRUE(exec.ready());
  EXPECT_TRUE(reported.ranks().empty()) << reported.reasons();

  // Rank 1 stops (beats no more) with the next plan due.
  other.StopBeating();
  const absl::Time stopped = absl::Now();
  ASSERT_TRUE(exec.Submit(PlanNumber(2)).ok());
  ASSERT_TRUE(sampling.ReadPlan().has_value());
  auto failed = exec.Wait();
  const absl::Duration took = absl::Now() - stopped;
  std::cout << "[ deadline ] the group broke " << absl::ToDoubleMilliseconds(took)
            << " ms after rank 1 fell silent: " << failed.status() << "\n";
  EXPECT_EQ(failed.status().code(), absl::StatusCode::kUnavailable) << failed.status();
  EXPECT_NE(failed.status().message().find("rank 1"), std::string::npos) << failed.status();
  EXPECT_GE(took, absl::Seconds(kDeadlineS) - absl::Milliseconds(200));
  EXPECT_LT(took, absl::Seconds(kDeadlineS + 2)) << "the deadline was not enforced";
  EXPECT_FALSE(exec.ready());
  EXPECT_EQ(exec.group_status().breaks, 1u);
  EXPECT_TRUE(Eventually([&] { return !reported.ranks().empty(); }, absl::Seconds(2)));
  EXPECT_EQ(reported.ranks(), std::vector<int32_t>{1}) << reported.reasons();
  EXPECT_NE(reported.reasons().find("with plan 2 due"), std::string::npos) << reported.reasons();
  // Both sessions are ended (the unresponsive rank finds its own gone when it resumes).
  EXPECT_TRUE(sampling.Ended());
  std::optional<v1::IterationPlan> unread = other.ReadPlan();
  EXPECT_TRUE(!unread.has_value() || other.Ended());
}

// A stopped process keeps its connection and sends nothing, whether or not work is
// due: an idle ready group breaks too (the keepalive would take ~20 s, and nothing
// would restart the worker).
TEST(GroupDeadlineTest, SilentRankOfAnIdleGroupBreaksItToo) {
  ORCA_REQUIRE_SHARED_MODEL(dir, "stories260K");
  constexpr double kDeadlineS = 1;
  auto group = GroupExecutor::Create(Options(dir, kDeadlineS));
  ASSERT_TRUE(group.ok()) << group.status();
  GroupExecutor& exec = **group;
  Reported reported;
  exec.SetUnresponsiveRankHandler(reported.Handler());
  ControlRank sampling(exec.port(), 0, dir), other(exec.port(), 1, dir);
  ASSERT_TRUE(sampling.JoinGeneration());
  ASSERT_TRUE(other.JoinGeneration());
  ASSERT_TRUE(exec.WaitReady(absl::Seconds(10)));
  absl::SleepFor(absl::Seconds(2 * kDeadlineS));
  EXPECT_TRUE(exec.ready()) << "beating ranks were taken for unresponsive";
  sampling.StopBeating();
  EXPECT_TRUE(Eventually([&] { return !exec.ready(); }, absl::Seconds(kDeadlineS + 2)));
  EXPECT_TRUE(Eventually([&] { return !reported.ranks().empty(); }, absl::Seconds(2)));
  EXPECT_EQ(reported.ranks(), std::vector<int32_t>{0}) << reported.reasons();
  EXPECT_EQ(exec.group_status().breaks, 1u);
  EXPECT_TRUE(exec.TakeStateLost());
  EXPECT_TRUE(other.Ended());
}

// Freezes a WorkerRank's heartbeats and its reader thread at the next plan: a SIGSTOPped
// worker, within one process (its rank thread finishes the plan it runs, then waits).
class Freezer {
 public:
  void Freeze() {
    absl::MutexLock lock(&mu_);
    frozen_ = true;
  }
  void Thaw() {
    absl::MutexLock lock(&mu_);
    frozen_ = false;
  }
  // The hook: blocks while frozen.
  void Hold() {
    absl::MutexLock lock(&mu_);
    auto thawed = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return !frozen_; };
    mu_.Await(absl::Condition(&thawed));
  }

 private:
  absl::Mutex mu_;
  bool frozen_ ABSL_GUARDED_BY(mu_) = false;
};

TEST(GroupDeadlineTest, FrozenRankFailsTheRequestRetriablyAndAReplacementServes) {
  ORCA_REQUIRE_SHARED_MODEL(dir, "stories260K");
  constexpr double kDeadlineS = 2;
  auto group = GroupExecutor::Create(Options(dir, kDeadlineS));
  ASSERT_TRUE(group.ok()) << group.status();
  GroupExecutor* exec = group->get();
  Reported reported;
  exec->SetUnresponsiveRankHandler(reported.Handler());
  auto freezer = std::make_shared<Freezer>();  // outlives the rank that calls it
  Ranks ranks(dir, exec->port(), 2);
  WorkerOptions healthy = ranks.Options(0);
  healthy.heartbeat = absl::Milliseconds(100);
  ranks.Start(0, healthy);
  WorkerOptions frozen = ranks.Options(1);
  frozen.heartbeat = absl::Milliseconds(100);
  frozen.pause_hook = [freezer] { freezer->Hold(); };
  ranks.Start(1, frozen);
  struct ThawAtExit {  // a failed assertion must not leave the rank frozen
    Freezer* f;
    ~ThawAtExit() { f->Thaw(); }
  } thaw_at_exit{freezer.get()};
  ASSERT_TRUE(exec->WaitReady(absl::Seconds(30)));
  EngineOptions eo;
  eo.model.dir = dir;
  eo.kv_cache.num_blocks = 64;
  eo.kv_cache.block_size = 16;
  auto created = Engine::Create(eo, std::move(*group));
  ASSERT_TRUE(created.ok()) << created.status();
  Engine& engine = **created;
  engine.Start();
  const std::vector<TestRequest> probe = {{"Once upon a time", 8}};
  const std::vector<std::vector<int32_t>> before = RunRequests(engine, probe);
  ASSERT_EQ(before.size(), 1u);
  ASSERT_EQ(before[0].size(), 8u);

  auto running = SubmitGreedy(engine, {"Once upon a time", 500});
  ASSERT_NE(running, nullptr);
  Collected c = Collect(*running, absl::Seconds(30), /*min_tokens=*/3);
  ASSERT_GE(c.tokens.size(), 3u) << "the request made no progress";
  ASSERT_FALSE(c.finished);
  freezer->Freeze();
  const absl::Time t0 = absl::Now();
  c = Collect(*running, absl::Seconds(25), -1, std::move(c));
  const absl::Duration took = absl::Now() - t0;
  ASSERT_TRUE(c.finished) << "the request did not end within 25 s of rank 1 freezing";
  std::cout << "[ deadline ] rank 1 frozen: the request failed after "
            << absl::ToDoubleMilliseconds(took) << " ms: " << c.last.status << "\n";
  EXPECT_EQ(c.last.finish_reason, FinishReason::kError);
  EXPECT_TRUE(absl::IsUnavailable(c.last.status)) << c.last.status;  // retriable
  EXPECT_LT(took, absl::Seconds(kDeadlineS + 3))
      << "the frozen rank was not caught by the deadline";
  EXPECT_FALSE(engine.ready());
  EXPECT_TRUE(Eventually([&] { return !reported.ranks().empty(); }, absl::Seconds(2)));
  EXPECT_EQ(reported.ranks(), std::vector<int32_t>{1}) << reported.reasons();

  // What the supervisor does: the frozen worker goes, a fresh one takes its rank.
  ranks.worker(1).Stop();
  freezer->Thaw();
  EXPECT_TRUE(ranks.StopRank(1).ok());
  WorkerOptions replacement = ranks.Options(1);
  replacement.heartbeat = absl::Milliseconds(100);
  ranks.Start(1, replacement);
  ASSERT_TRUE(Eventually([&] { return engine.ready(); }, absl::Seconds(30)))
      << "the group did not re-form with the replacement";
  EXPECT_EQ(RunRequests(engine, probe), before);
  engine.Stop();
}

}  // namespace
}  // namespace orca
