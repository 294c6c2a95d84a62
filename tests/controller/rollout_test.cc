#include "controller/builders/rollout.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace orca::controller {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

GroupObservation Group(int i, const std::string& rev, bool ready, bool updated = true) {
  GroupObservation g;
  g.index = i;
  g.exists = true;
  g.revision = rev;
  g.ready = ready;
  g.pods_updated = updated;
  return g;
}

TEST(RolloutTest, CreatesMissingGroups) {
  RolloutPlan p = PlanRollout({3, "new", false, 1, {Group(0, "new", true)}});
  EXPECT_THAT(p.apply, ElementsAre(0, 1, 2));
  EXPECT_FALSE(p.complete);
}

TEST(RolloutTest, UpdatesOneGroupAtATime) {
  RolloutInput in{
      3, "new", false, 1, {Group(0, "old", true), Group(1, "old", true), Group(2, "old", true)}};
  RolloutPlan p = PlanRollout(in);
  EXPECT_THAT(p.apply, ElementsAre(0));
  EXPECT_THAT(p.keep, ElementsAre(1, 2));
  // Group 0 took the template but its pods are not replaced yet: it is unavailable.
  in.groups[0] = Group(0, "new", false, false);
  p = PlanRollout(in);
  EXPECT_THAT(p.apply, ElementsAre(0));
  EXPECT_THAT(p.keep, ElementsAre(1, 2));
  EXPECT_EQ(p.unavailable, 1);
  // Pods replaced but not ready yet: still unavailable.
  in.groups[0] = Group(0, "new", false, true);
  EXPECT_THAT(PlanRollout(in).keep, ElementsAre(1, 2));
  // Ready: the next group goes.
  in.groups[0] = Group(0, "new", true, true);
  p = PlanRollout(in);
  EXPECT_THAT(p.apply, ElementsAre(0, 1));
  EXPECT_THAT(p.keep, ElementsAre(2));
}

TEST(RolloutTest, HonoursMaxUnavailable) {
  RolloutInput in{
      4,
      "new",
      false,
      2,
      {Group(0, "old", true), Group(1, "old", true), Group(2, "old", true), Group(3, "old", true)}};
  EXPECT_THAT(PlanRollout(in).apply, ElementsAre(0, 1));
  in.groups[3] = Group(3, "old", false);  // one already down: budget 1
  RolloutPlan p = PlanRollout(in);
  EXPECT_THAT(p.apply, ElementsAre(0, 3));
  EXPECT_THAT(p.keep, ElementsAre(1, 2));
}

TEST(RolloutTest, RecreateUpdatesAll) {
  RolloutPlan p = PlanRollout({2, "new", true, 1, {Group(0, "old", true), Group(1, "old", true)}});
  EXPECT_THAT(p.apply, ElementsAre(0, 1));
  EXPECT_THAT(p.keep, IsEmpty());
}

TEST(RolloutTest, RemovesGroupsAboveReplicasAndCompletes) {
  RolloutPlan p = PlanRollout(
      {1, "r", false, 1, {Group(0, "r", true), Group(1, "r", true), Group(2, "r", false)}});
  EXPECT_THAT(p.remove, ElementsAre(1, 2));
  EXPECT_FALSE(p.complete);
  p = PlanRollout({1, "r", false, 1, {Group(0, "r", true)}});
  EXPECT_TRUE(p.complete);
  EXPECT_EQ(p.ready, 1);
  EXPECT_EQ(p.updated, 1);
}

}  // namespace
}  // namespace orca::controller
