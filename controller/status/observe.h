// Reading the owned objects of one InferenceDeployment back into per-group
// observations. Pure functions; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "controller/api/spec.h"
#include "controller/builders/rollout.h"

namespace orca::controller {

// Owned objects of one InferenceDeployment, as listed by label.
struct OwnedObjects {
  std::vector<Json> config_maps;
  std::vector<Json> services;
  std::vector<Json> deployments;
  std::vector<Json> stateful_sets;
  std::vector<Json> ingresses;
  std::vector<Json> autoscalers;     // HPAs
  std::vector<Json> scaled_objects;  // KEDA
  std::vector<Json> pods;
};

// Returns one observation per group found among the workloads and pods, ordered by
// index. A group is ready when its scheduler Deployment has a ready replica, and
// its pods are updated when every workload observed its generation, every expected
// pod exists and no pod carries another revision.
std::vector<GroupObservation> ObserveGroups(const OwnedObjects& owned);

// Returns the integer value of label `key` of `object`, or -1.
int LabelInt(const Json& object, const char* key);
// Returns the string value of label `key`, or "".
std::string Label(const Json& object, const char* key);
// Returns true when every field of `desired` is present with the same value in
// `live` (arrays must match element-wise): applying `desired` would change nothing.
bool ContainsAll(const Json& live, const Json& desired);

}  // namespace orca::controller
