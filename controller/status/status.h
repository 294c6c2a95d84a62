// The InferenceDeployment status: conditions with actionable reasons, group records
// (restart accounting) and counts, computed from observations. Pure functions;
// thread-safe.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "controller/api/spec.h"
#include "controller/builders/rollout.h"
#include "controller/status/observe.h"

namespace orca::controller {

// Per-group state persisted in status.groups.
struct GroupRecord {
  int index = 0;
  int restarts = 0;
  std::string revision;  // revision the restarts were counted at
  std::string last_failure;
  std::string last_restart_time;  // RFC 3339; empty when never restarted
};

// Returns status.groups of a stored status, by index.
std::map<int, GroupRecord> ReadGroupRecords(const Json& status);

struct Problem {
  std::string reason;
  std::string message;
};

struct StatusInput {
  const InferenceDeployment* deployment = nullptr;
  std::string update_revision;
  RolloutPlan plan;
  std::vector<GroupObservation> groups;
  std::map<int, GroupRecord> records;
  std::optional<Problem> degraded;  // InvalidSpec, GroupRestartLimitExceeded, ApplyFailed...
  std::optional<Problem> scaling;   // autoscaler could not be configured
  std::optional<Problem> routing;   // InferencePool could not be configured
  std::vector<BlockedPod> blocked;  // pods that cannot start (ObserveBlockedPods)
  absl::Time now;
};

// Returns the full status for `in`, keeping lastTransitionTime of conditions whose
// status did not change since deployment->status. Conditions: Available, Progressing,
// Degraded, ScalingReady, RoutingReady (InferencePool) and PodsBlocked (True while a
// pod cannot be scheduled or its containers cannot start).
Json ComputeStatus(const StatusInput& in);

// Blocked pods the PodsBlocked condition names; the rest are counted.
inline constexpr size_t kBlockedPodsShown = 3;

// Returns the message of the PodsBlocked condition: the first kBlockedPodsShown
// blocked pods by name, each as "pod NAME (group G) REASON: MESSAGE", and how many
// more there are.
std::string BlockedPodsMessage(const std::vector<BlockedPod>& blocked);

// Returns the status for a spec that failed validation: the stored status with
// observedGeneration and a Degraded=True/InvalidSpec condition carrying `message`.
Json InvalidSpecStatus(const Json& stored_status, int64_t generation, const std::string& message,
                       absl::Time now);

// Returns true when `a` and `b` differ in anything but condition timestamps.
bool StatusDiffers(const Json& a, const Json& b);

// Returns `t` as RFC 3339 in UTC with second precision ("2024-05-01T12:00:00Z").
std::string FormatRfc3339(absl::Time t);
// Parses FormatTime's output; InfinitePast on failure.
absl::Time ParseRfc3339(const std::string& s);

}  // namespace orca::controller
