// Observations that order how a serving group stops: whether its scheduler has
// stopped (so its workers may go), and the marks the reconciler leaves on a group's
// scheduler Deployment while it restarts or releases the group. Pure functions;
// thread-safe.
//
// The scheduler drains on SIGTERM through its workers, so the reconciler stops the
// scheduler first (scale-down, rollouts, restarts, release) and its workers only once
// SchedulerStopped says so (docs/controller.md, "Lifecycle and conditions").
#pragma once

#include <string>
#include <vector>

#include "absl/time/time.h"
#include "controller/status/observe.h"

namespace orca::controller {

// Annotation on a scheduler Deployment while its group restarts (value: the restart
// number): the scheduler is scaled to zero first, and its workers are replaced once it
// has stopped.
inline constexpr char kAnnotationRestarting[] = "serving.orca.dev/restarting";

// Whether the scheduler pods of a group have stopped; when not, when to look again.
struct SchedulerStop {
  bool stopped = true;
  absl::Duration wait = absl::InfiniteDuration();
};

// Returns whether every scheduler pod of group `group` in `pods` (except those at
// revision `keep`, when non-empty) is gone or past its termination deadline. A
// terminating pod's deletionTimestamp is its deadline: the API server sets it to the
// time of the delete plus the pod's terminationGracePeriodSeconds (from
// spec.lifecycle), after which the kubelet kills it. A pod not yet terminating (its
// Deployment was just deleted or scaled down) has not stopped. `wait` is the time to
// the earliest deadline (at least 1 s), or 2 s for a pod not yet terminating.
SchedulerStop SchedulerStopped(const std::vector<Json>& pods, int group, const std::string& keep,
                               absl::Time now);

// Returns the scheduler Deployment of group `group` that is not being deleted, or
// nullptr. The pointer is into `owned`.
const Json* SchedulerDeployment(const OwnedObjects& owned, int group);

// Returns true when group `group` is in the middle of a restart: its scheduler
// Deployment carries kAnnotationRestarting.
bool RestartPending(const OwnedObjects& owned, int group);

// Returns true when the scheduler Deployment of group `group` is scaled to zero: the
// reconciler released the group or is restarting it (it scales the scheduler first).
bool ScaledToZero(const OwnedObjects& owned, int group);

}  // namespace orca::controller
