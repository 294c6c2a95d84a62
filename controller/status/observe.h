// Reading the owned objects of one InferenceDeployment back into per-group
// observations. Pure functions; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "absl/time/time.h"
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
  std::vector<Json> autoscalers;      // HPAs
  std::vector<Json> scaled_objects;   // KEDA
  std::vector<Json> inference_pools;  // Gateway API Inference Extension
  std::vector<Json> pods;
};

// Returns one observation per group found among the workloads and pods, ordered by
// index. A group is ready when its scheduler Deployment has a ready replica, and
// its pods are updated when every workload observed its generation, every expected
// pod exists and no pod carries another revision.
std::vector<GroupObservation> ObserveGroups(const OwnedObjects& owned);

// A pod that cannot start: not schedulable, image not pullable, configuration
// missing, or its containers stuck being created.
struct BlockedPod {
  std::string pod;
  int group = -1;
  std::string reason;   // Unschedulable, ImagePullBackOff, CreateContainerConfigError, ...
  std::string message;  // from the pod's condition or container status
};

// How long a container may stay in ContainerCreating / PodInitializing before it
// counts as blocked (a volume that cannot be mounted looks like this).
inline constexpr absl::Duration kContainerCreatingLimit = absl::Minutes(5);

// Returns the pods of `owned` (not terminating) that are blocked, in name order:
// PodScheduled=False (its reason and message), a container or init container waiting
// with an image, configuration or creation error, or waiting in ContainerCreating /
// PodInitializing for kContainerCreatingLimit since the pod was created.
std::vector<BlockedPod> ObserveBlockedPods(const OwnedObjects& owned, absl::Time now);

// Returns the integer value of label `key` of `object`, or -1.
int LabelInt(const Json& object, const char* key);
// Returns the string value of label `key`, or "".
std::string Label(const Json& object, const char* key);
// Returns true when every field of `desired` is present with the same value in
// `live` (arrays must match element-wise): applying `desired` would change nothing.
// Resource quantities (the values under `limits` and `requests`, `sizeLimit`,
// `averageValue`) are compared in canonical form, as the API server stores them
// ("1" == 1 == "1000m", "1Gi" == "1024Mi").
bool ContainsAll(const Json& live, const Json& desired);
// Returns true when `a` and `b` are the same Kubernetes quantity (strings or numbers,
// controller/api/quantity.h); values that are not quantities compare as JSON.
bool SameQuantity(const Json& a, const Json& b);

}  // namespace orca::controller
