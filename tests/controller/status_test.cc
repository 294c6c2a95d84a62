#include "controller/status/status.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "controller/status/group_stop.h"
#include "controller/status/observe.h"
#include "tests/controller/cr_builder.h"

namespace orca::controller {
namespace {

using testing::CrBuilder;
using ::testing::HasSubstr;

Json FindCondition(const Json& status, const std::string& type) {
  for (const Json& c : status["conditions"]) {
    if (c["type"] == type) return c;
  }
  return Json();
}

TEST(StatusTest, AvailableWhenEnoughGroupsReady) {
  auto d = ParseInferenceDeployment(CrBuilder().Replicas(2).Build());
  ASSERT_TRUE(d.ok());
  GroupObservation g0{0, true, "r", true, true, "", ""};
  GroupObservation g1{1, true, "r", false, true, "", ""};
  StatusInput in;
  in.deployment = &*d;
  in.update_revision = "r";
  in.groups = {g0, g1};
  in.plan = PlanRollout({2, "r", false, 1, in.groups});
  in.now = absl::FromUnixSeconds(1000);
  Json s = ComputeStatus(in);
  EXPECT_EQ(s["readyReplicas"], 1);
  EXPECT_EQ(s["replicas"], 2);
  EXPECT_EQ(FindCondition(s, "Available")["status"], "True");  // 2 - maxUnavailable 1
  EXPECT_EQ(FindCondition(s, "Progressing")["reason"], "WaitingForReadiness");
  EXPECT_EQ(FindCondition(s, "Degraded")["status"], "False");
  EXPECT_EQ(FindCondition(s, "ScalingReady")["reason"], "AutoscalingDisabled");
  EXPECT_EQ(s["selector"], "serving.orca.dev/deployment=demo,serving.orca.dev/role=scheduler");

  // Transition times survive an unchanged recomputation.
  d->status = s;
  in.now = absl::FromUnixSeconds(2000);
  Json again = ComputeStatus(in);
  EXPECT_FALSE(StatusDiffers(s, again));
  EXPECT_EQ(FindCondition(again, "Available")["lastTransitionTime"], "1970-01-01T00:16:40Z");
}

TEST(StatusTest, InvalidSpecKeepsOtherConditions) {
  Json old = {{"conditions", Json::array({{{"type", "Available"}, {"status", "True"}}})}};
  Json s = InvalidSpecStatus(old, 4, "spec.replicas: bad", absl::FromUnixSeconds(0));
  EXPECT_EQ(s["observedGeneration"], 4);
  EXPECT_EQ(FindCondition(s, "Available")["status"], "True");
  EXPECT_EQ(FindCondition(s, "Degraded")["reason"], "InvalidSpec");
  EXPECT_THAT(FindCondition(s, "Degraded")["message"].get<std::string>(),
              HasSubstr("spec.replicas"));
}

TEST(ObserveTest, GroupsFromWorkloadsAndPods) {
  auto workload = [](const std::string& kind, int g, const std::string& rev, int ready) {
    return Json{
        {"kind", kind},
        {"metadata",
         {{"name", "x"},
          {"generation", 2},
          {"labels",
           {{"serving.orca.dev/group", std::to_string(g)}, {"serving.orca.dev/revision", rev}}}}},
        {"spec", {{"replicas", 1}}},
        {"status", {{"observedGeneration", 2}, {"readyReplicas", ready}}}};
  };
  auto pod = [](int g, const std::string& rev, int restarts) {
    return Json{
        {"metadata",
         {{"name", "p" + std::to_string(g) + rev},
          {"labels",
           {{"serving.orca.dev/group", std::to_string(g)}, {"serving.orca.dev/revision", rev}}}}},
        {"status",
         {{"containerStatuses", Json::array({{{"name", "worker"}, {"restartCount", restarts}}})}}}};
  };
  OwnedObjects owned;
  owned.deployments = {workload("Deployment", 0, "a", 1), workload("Deployment", 1, "b", 0)};
  owned.stateful_sets = {workload("StatefulSet", 0, "a", 1), workload("StatefulSet", 1, "b", 1)};
  owned.pods = {pod(0, "a", 0), pod(0, "a", 2), pod(1, "b", 0), pod(1, "old", 0)};
  std::vector<GroupObservation> groups = ObserveGroups(owned);
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_TRUE(groups[0].ready);
  EXPECT_TRUE(groups[0].pods_updated);
  EXPECT_THAT(groups[0].failure, HasSubstr("restarted 2 time(s)"));
  EXPECT_FALSE(groups[1].ready);
  EXPECT_FALSE(groups[1].pods_updated) << "a pod of another revision is still there";
  EXPECT_TRUE(groups[1].failure.empty());
}

TEST(ObserveTest, ContainsAll) {
  Json live = {{"a", 1}, {"b", {{"c", Json::array({1, 2})}, {"d", "x"}}}};
  EXPECT_TRUE(ContainsAll(live, {{"b", {{"c", Json::array({1, 2})}}}}));
  EXPECT_FALSE(ContainsAll(live, {{"b", {{"c", Json::array({1})}}}}));
  EXPECT_FALSE(ContainsAll(live, {{"e", 1}}));
  EXPECT_FALSE(ContainsAll(live, {{"a", 2}}));
}

Json WaitingPod(const std::string& name, const std::string& list, const std::string& reason,
                const std::string& created = "2024-05-01T12:00:00Z") {
  return Json{
      {"metadata",
       {{"name", name},
        {"creationTimestamp", created},
        {"labels", {{"serving.orca.dev/group", "1"}}}}},
      {"status",
       {{"phase", "Pending"},
        {list,
         Json::array({{{"name", "c"},
                       {"state", {{"waiting", {{"reason", reason}, {"message", "why"}}}}}}})}}}};
}

TEST(ObserveTest, BlockedPodsFromSchedulingAndContainerWaitingReasons) {
  absl::Time now = absl::FromUnixSeconds(1714564800) + absl::Minutes(10);  // 12:10
  Json unschedulable = {
      {"metadata", {{"name", "a"}, {"labels", {{"serving.orca.dev/group", "0"}}}}},
      {"status",
       {{"phase", "Pending"},
        {"conditions", Json::array({{{"type", "PodScheduled"},
                                     {"status", "False"},
                                     {"reason", "Unschedulable"},
                                     {"message", "0/3 nodes are available"}}})}}}};
  Json terminating = WaitingPod("z", "containerStatuses", "ImagePullBackOff");
  terminating["metadata"]["deletionTimestamp"] = "2024-05-01T12:09:00Z";
  OwnedObjects owned;
  owned.pods = {
      WaitingPod("f", "containerStatuses", "CrashLoopBackOff"),  // a failure, not blocked
      WaitingPod("e", "containerStatuses", "ContainerCreating",
                 "2024-05-01T12:08:00Z"),                         // 2 min: still fine
      WaitingPod("d", "containerStatuses", "ContainerCreating"),  // 10 min: blocked
      WaitingPod("c", "initContainerStatuses", "CreateContainerConfigError"),
      WaitingPod("b", "containerStatuses", "ErrImagePull"),
      unschedulable,
      terminating,
  };
  std::vector<BlockedPod> blocked = ObserveBlockedPods(owned, now);
  ASSERT_EQ(blocked.size(), 4u);
  EXPECT_EQ(blocked[0].pod, "a");
  EXPECT_EQ(blocked[0].reason, "Unschedulable");
  EXPECT_EQ(blocked[0].message, "0/3 nodes are available");
  EXPECT_EQ(blocked[0].group, 0);
  EXPECT_EQ(blocked[1].reason, "ErrImagePull");
  EXPECT_EQ(blocked[1].message, "container c: why");
  EXPECT_EQ(blocked[2].reason, "CreateContainerConfigError");
  EXPECT_EQ(blocked[3].pod, "d");
  EXPECT_EQ(blocked[3].reason, "ContainerCreating");
  EXPECT_THAT(blocked[3].message, HasSubstr("for 10 min"));
  EXPECT_THAT(blocked[3].message, HasSubstr("FailedMount"));
}

TEST(StatusTest, PodsBlockedAndRoutingReadyConditions) {
  auto d = ParseInferenceDeployment(CrBuilder().Build());
  ASSERT_TRUE(d.ok());
  StatusInput in;
  in.deployment = &*d;
  in.update_revision = "r";
  in.groups = {GroupObservation{0, true, "r", true, true, "", ""}};
  in.plan = PlanRollout({1, "r", false, 1, in.groups});
  in.now = absl::FromUnixSeconds(1000);
  Json s = ComputeStatus(in);
  EXPECT_EQ(FindCondition(s, "PodsBlocked")["status"], "False");
  EXPECT_EQ(FindCondition(s, "RoutingReady")["reason"], "InferencePoolDisabled");

  for (const char* pod : {"p1", "p2", "p3", "p4"}) {
    in.blocked.push_back(BlockedPod{pod, 0, "ImagePullBackOff", "container c: no such image"});
  }
  in.routing = Problem{"InferencePoolApiMissing", "install it"};
  s = ComputeStatus(in);
  Json blocked = FindCondition(s, "PodsBlocked");
  EXPECT_EQ(blocked["status"], "True");
  EXPECT_EQ(blocked["reason"], "ImagePullBackOff");
  std::string m = blocked["message"];
  EXPECT_THAT(m, HasSubstr("pod p1 (group 0) ImagePullBackOff: container c: no such image"));
  EXPECT_THAT(m, HasSubstr("pod p3"));
  EXPECT_THAT(m, ::testing::Not(HasSubstr("pod p4")));
  EXPECT_THAT(m, HasSubstr("and 1 more blocked pod(s)"));
  EXPECT_EQ(FindCondition(s, "RoutingReady")["status"], "False");
  EXPECT_EQ(FindCondition(s, "RoutingReady")["reason"], "InferencePoolApiMissing");
}

Json SchedulerPod(int group, const std::string& rev, const std::string& deletion = "") {
  Json pod = {{"metadata",
               {{"name", "s" + std::to_string(group) + rev},
                {"labels",
                 {{"serving.orca.dev/group", std::to_string(group)},
                  {"serving.orca.dev/role", "scheduler"},
                  {"serving.orca.dev/revision", rev}}}}}};
  if (!deletion.empty()) pod["metadata"]["deletionTimestamp"] = deletion;
  return pod;
}

TEST(GroupStopTest, SchedulerStoppedWaitsForPodsOrTheirDeadline) {
  absl::Time now = ParseRfc3339("2024-05-01T12:00:00Z");
  Json worker = SchedulerPod(0, "a");
  worker["metadata"]["labels"]["serving.orca.dev/role"] = "worker";
  EXPECT_TRUE(SchedulerStopped({worker, SchedulerPod(1, "a")}, 0, "", now).stopped)
      << "workers and other groups do not count";

  SchedulerStop running = SchedulerStopped({SchedulerPod(0, "a")}, 0, "", now);
  EXPECT_FALSE(running.stopped) << "a scheduler not yet terminating has not stopped";
  EXPECT_EQ(running.wait, absl::Seconds(2));

  // Terminating until its deadline (deletion + grace period), then stopped.
  SchedulerStop draining =
      SchedulerStopped({SchedulerPod(0, "a", "2024-05-01T12:00:45Z")}, 0, "", now);
  EXPECT_FALSE(draining.stopped);
  EXPECT_EQ(draining.wait, absl::Seconds(45));
  EXPECT_TRUE(SchedulerStopped({SchedulerPod(0, "a", "2024-05-01T12:00:45Z")}, 0, "",
                               now + absl::Seconds(45))
                  .stopped);

  // A rollout only waits for the old revision's scheduler.
  EXPECT_TRUE(SchedulerStopped({SchedulerPod(0, "new")}, 0, "new", now).stopped);
  EXPECT_FALSE(
      SchedulerStopped({SchedulerPod(0, "new"), SchedulerPod(0, "old")}, 0, "new", now).stopped);
}

TEST(GroupStopTest, RestartAndReleaseMarksOnTheSchedulerDeployment) {
  auto deployment = [](int group, int replicas) {
    return Json{{"metadata", {{"labels", {{"serving.orca.dev/group", std::to_string(group)}}}}},
                {"spec", {{"replicas", replicas}}}};
  };
  OwnedObjects owned;
  owned.deployments = {deployment(0, 1), deployment(1, 0), deployment(2, 0)};
  owned.deployments[2]["metadata"]["annotations"][kAnnotationRestarting] = "2";
  EXPECT_FALSE(ScaledToZero(owned, 0));
  EXPECT_TRUE(ScaledToZero(owned, 1));
  EXPECT_FALSE(RestartPending(owned, 1));
  EXPECT_TRUE(RestartPending(owned, 2));
  EXPECT_FALSE(ScaledToZero(owned, 3)) << "no Deployment: nothing is scaled";
  owned.deployments[1]["metadata"]["deletionTimestamp"] = "2024-05-01T12:00:00Z";
  EXPECT_EQ(SchedulerDeployment(owned, 1), nullptr) << "a Deployment being deleted is not live";
}

}  // namespace
}  // namespace orca::controller
