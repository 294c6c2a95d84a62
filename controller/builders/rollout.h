// Group-atomic rollout planning: which serving groups get the update revision in
// this reconcile pass. Pure functions; thread-safe.
//
// A group is updated only as a whole (all its workloads get the new template in one
// pass, then its stale pods are replaced together), at most maxUnavailable groups
// are unavailable at a time (RollingUpdate), and a group counts as updated only
// when every one of its pods carries the update revision.
#pragma once

#include <string>
#include <vector>

namespace orca::controller {

// What the controller observed about one serving group.
struct GroupObservation {
  int index = 0;
  bool exists = false;        // any workload of the group exists
  std::string revision;       // revision label of its workloads ("" when they disagree)
  bool ready = false;         // its scheduler reports ready (group complete and initialised)
  bool pods_updated = false;  // every pod exists, carries `revision` and is observed
  std::string failure;        // non-empty when a pod of the group restarted or failed
  std::string failed_pod;     // the pod `failure` is about
};

struct RolloutInput {
  int replicas = 0;
  std::string update_revision;
  bool recreate = false;                 // Recreate strategy: every group at once
  int max_unavailable = 1;               // RollingUpdate
  std::vector<GroupObservation> groups;  // observed groups, any index
};

struct RolloutPlan {
  std::vector<int> apply;   // groups applied at update_revision now (create, update, re-apply)
  std::vector<int> keep;    // existing groups left at their old revision this pass
  std::vector<int> remove;  // groups with index >= replicas
  int unavailable = 0;      // groups < replicas that exist and are unavailable
  int updated = 0;          // groups < replicas at update_revision with all pods updated
  int ready = 0;            // groups < replicas that are ready
  bool complete = false;    // every group < replicas is updated and ready, nothing to remove
};

// Returns the plan for one pass. Groups are updated in ascending index order;
// old-revision groups that are not ready are updated without waiting for budget.
RolloutPlan PlanRollout(const RolloutInput& in);

}  // namespace orca::controller
