#include "controller/builders/rollout.h"

#include <algorithm>
#include <map>

namespace orca::controller {

RolloutPlan PlanRollout(const RolloutInput& in) {
  RolloutPlan plan;
  std::map<int, const GroupObservation*> by_index;
  for (const GroupObservation& g : in.groups) by_index[g.index] = &g;

  std::vector<int> candidates;  // old revision and ready: need budget
  for (int i = 0; i < in.replicas; ++i) {
    auto it = by_index.find(i);
    const GroupObservation* g = it == by_index.end() ? nullptr : it->second;
    if (g == nullptr || !g->exists) {
      plan.apply.push_back(i);
      continue;
    }
    bool at_update = g->revision == in.update_revision;
    if (g->ready) ++plan.ready;
    if (at_update && g->pods_updated) ++plan.updated;
    bool unavailable = !g->ready || (at_update && !g->pods_updated);
    if (unavailable) ++plan.unavailable;
    if (at_update || !g->ready || in.recreate) {
      plan.apply.push_back(i);
    } else {
      candidates.push_back(i);
    }
  }
  int budget = std::max(0, in.max_unavailable - plan.unavailable);
  for (int i : candidates) {
    if (budget > 0) {
      plan.apply.push_back(i);
      --budget;
    } else {
      plan.keep.push_back(i);
    }
  }
  std::sort(plan.apply.begin(), plan.apply.end());
  for (const auto& [index, g] : by_index) {
    if (index >= in.replicas && g->exists) plan.remove.push_back(index);
  }
  plan.complete = plan.updated == in.replicas && plan.ready == in.replicas && plan.remove.empty();
  return plan;
}

}  // namespace orca::controller
