#include "controller/status/status.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

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

}  // namespace
}  // namespace orca::controller
