#include "controller/status/group_stop.h"

#include <algorithm>

#include "controller/builders/layout.h"
#include "controller/status/status.h"

namespace orca::controller {
namespace {

bool Terminating(const Json& o) {
  return o.contains("metadata") && o["metadata"].contains("deletionTimestamp");
}

}  // namespace

SchedulerStop SchedulerStopped(const std::vector<Json>& pods, int group, const std::string& keep,
                               absl::Time now) {
  SchedulerStop s;
  for (const Json& pod : pods) {
    if (LabelInt(pod, kLabelGroup) != group || Label(pod, kLabelRole) != "scheduler") continue;
    if (!keep.empty() && Label(pod, kLabelRevision) == keep) continue;
    absl::Duration wait = absl::Seconds(2);
    if (Terminating(pod)) {
      const Json& ts = pod["metadata"]["deletionTimestamp"];
      absl::Time deadline =
          ts.is_string() ? ParseRfc3339(ts.get<std::string>()) : absl::InfinitePast();
      if (now >= deadline) continue;
      wait = std::max(absl::Seconds(1), deadline - now);
    }
    s.stopped = false;
    s.wait = std::min(s.wait, wait);
  }
  return s;
}

const Json* SchedulerDeployment(const OwnedObjects& owned, int group) {
  for (const Json& d : owned.deployments) {
    if (LabelInt(d, kLabelGroup) == group && !Terminating(d)) return &d;
  }
  return nullptr;
}

bool RestartPending(const OwnedObjects& owned, int group) {
  const Json* d = SchedulerDeployment(owned, group);
  return d != nullptr && (*d)["metadata"].contains("annotations") &&
         (*d)["metadata"]["annotations"].is_object() &&
         (*d)["metadata"]["annotations"].contains(kAnnotationRestarting);
}

bool ScaledToZero(const OwnedObjects& owned, int group) {
  const Json* d = SchedulerDeployment(owned, group);
  return d != nullptr && d->contains("spec") && (*d)["spec"].is_object() &&
         (*d)["spec"].value("replicas", 1) == 0;
}

}  // namespace orca::controller
