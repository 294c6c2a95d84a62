#include "engine/worker/worker_health.h"

#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace orca {
namespace {

using ::testing::HasSubstr;

const absl::Time kStart = absl::FromUnixSeconds(1'700'000'000);

// A rank's progress, built fluently: Rank("stage 0 tp 0").Waiting(at) / .Serving(at) ...
class Rank {
 public:
  explicit Rank(std::string name) { p_.name = std::move(name); }
  // Waiting for a group since `t` (process start, or its group ended).
  Rank& Waiting(absl::Time t) {
    p_.in_group = p_.serving = false;
    p_.since = t;
    return *this;
  }
  // Received GroupInit at `t`, still setting up its shard and communicators.
  Rank& SettingUp(absl::Time t) {
    p_.in_group = true;
    p_.serving = false;
    p_.since = t;
    return *this;
  }
  Rank& Serving(absl::Time t) {
    p_.in_group = p_.serving = true;
    p_.since = t;
    return *this;
  }
  Rank& Executing(uint64_t plan, absl::Time t) {
    p_.plan = plan;
    p_.plan_started = t;
    return *this;
  }
  operator RankProgress() const { return p_; }

 private:
  RankProgress p_;
};

HealthLimits Limits(double join_s, double plan_s) {
  return HealthLimits{absl::Seconds(join_s), absl::Seconds(plan_s)};
}

WorkerHealth At(std::vector<RankProgress> ranks, absl::Duration after_start,
                HealthLimits limits = Limits(300, 10)) {
  return EvaluateWorkerHealth(ranks, kStart + after_start, limits);
}

TEST(WorkerHealthTest, WaitingWithinTheJoinTimeoutIsLiveAndNotReady) {
  WorkerHealth h = At({Rank("stage 0 tp 0").Waiting(kStart)}, absl::Seconds(299));
  EXPECT_TRUE(h.live);
  EXPECT_FALSE(h.ready);
  EXPECT_FALSE(h.join_timed_out);
  EXPECT_THAT(h.reason, HasSubstr("stage 0 tp 0 is waiting for a group"));
}

TEST(WorkerHealthTest, WaitingPastTheJoinTimeoutIsDeadAndTimedOut) {
  WorkerHealth h = At({Rank("stage 0 tp 0").Waiting(kStart)}, absl::Seconds(300));
  EXPECT_FALSE(h.live);
  EXPECT_FALSE(h.ready);
  EXPECT_TRUE(h.join_timed_out);
  EXPECT_THAT(h.reason, HasSubstr("without a serving group for 5m"));
  EXPECT_THAT(h.reason, HasSubstr("join timeout 5m"));
}

TEST(WorkerHealthTest, JoinTimeoutCountsFromWhenTheGroupEnded) {
  // The group ended 100 s after start: the worker has the whole timeout again from then.
  const absl::Time ended = kStart + absl::Seconds(100);
  EXPECT_FALSE(At({Rank("r").Waiting(ended)}, absl::Seconds(399)).join_timed_out);
  EXPECT_TRUE(At({Rank("r").Waiting(ended)}, absl::Seconds(400)).join_timed_out);
}

TEST(WorkerHealthTest, ZeroJoinTimeoutWaitsForever) {
  WorkerHealth h = At({Rank("r").Waiting(kStart)}, absl::Hours(1000), Limits(0, 10));
  EXPECT_TRUE(h.live);
  EXPECT_FALSE(h.join_timed_out);
}

TEST(WorkerHealthTest, IdleInAGroupIsLiveAndReadyHoweverLong) {
  // Joined, no plan for hours (no traffic): the live control stream is the progress.
  WorkerHealth h = At(
      {Rank("a").Serving(kStart + absl::Seconds(5)), Rank("b").Serving(kStart + absl::Seconds(6))},
      absl::Hours(30));
  EXPECT_TRUE(h.live);
  EXPECT_TRUE(h.ready);
  EXPECT_FALSE(h.join_timed_out);
  EXPECT_EQ(h.reason, "");
}

TEST(WorkerHealthTest, SettingUpInAGroupIsLiveAndNotReadyAndNeverTimesOut) {
  WorkerHealth h = At({Rank("a").SettingUp(kStart)}, absl::Seconds(1000));
  EXPECT_TRUE(h.live);
  EXPECT_FALSE(h.ready);
  EXPECT_FALSE(h.join_timed_out);
  EXPECT_THAT(h.reason, HasSubstr("a is setting up its group"));
}

TEST(WorkerHealthTest, APlanWithinTheDeadlineIsProgress) {
  const absl::Time began = kStart + absl::Seconds(50);
  WorkerHealth h = At({Rank("a").Serving(kStart).Executing(7, began)},
                      absl::Seconds(50) + absl::Milliseconds(9999));
  EXPECT_TRUE(h.live);
  EXPECT_TRUE(h.ready);
}

TEST(WorkerHealthTest, APlanPastTheDeadlineIsAHungRank) {
  const absl::Time began = kStart + absl::Seconds(50);
  WorkerHealth h = At({Rank("stage 1 tp 0").Serving(kStart),
                       Rank("stage 1 tp 1").Serving(kStart).Executing(42, began)},
                      absl::Seconds(60));
  EXPECT_FALSE(h.live);
  EXPECT_FALSE(h.ready);
  EXPECT_FALSE(h.join_timed_out);  // hung, not lonely: the kubelet restarts it
  EXPECT_THAT(h.reason, HasSubstr("stage 1 tp 1 has been executing plan 42 for 10s"));
  EXPECT_THAT(h.reason, HasSubstr("deadline 10s"));
}

TEST(WorkerHealthTest, ZeroPlanDeadlineNeverCallsARankHung) {
  WorkerHealth h =
      At({Rank("a").Serving(kStart).Executing(1, kStart)}, absl::Hours(2), Limits(300, 0));
  EXPECT_TRUE(h.live);
  EXPECT_TRUE(h.ready);
}

TEST(WorkerHealthTest, OneRankWithoutAGroupMakesTheWorkerNotReady) {
  WorkerHealth h = At({Rank("a").Serving(kStart), Rank("b").Waiting(kStart + absl::Seconds(3))},
                      absl::Seconds(10));
  EXPECT_TRUE(h.live);
  EXPECT_FALSE(h.ready);
  EXPECT_THAT(h.reason, HasSubstr("b is waiting for a group"));
}

TEST(WorkerHealthTest, NoRanksIsNotReady) {
  WorkerHealth h = EvaluateWorkerHealth({}, kStart, Limits(300, 10));
  EXPECT_TRUE(h.live);
  EXPECT_FALSE(h.ready);
}

}  // namespace
}  // namespace orca
