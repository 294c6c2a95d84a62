#include "engine/worker/worker_health.h"

#include "absl/strings/str_cat.h"

namespace orca {
namespace {

std::string Seconds(absl::Duration d) {
  return absl::FormatDuration(absl::Trunc(d, absl::Milliseconds(100)));
}

}  // namespace

WorkerHealth EvaluateWorkerHealth(absl::Span<const RankProgress> ranks, absl::Time now,
                                  const HealthLimits& limits) {
  WorkerHealth h;
  h.ready = !ranks.empty();
  std::string not_ready;
  for (const RankProgress& r : ranks) {
    if (!r.in_group) {
      const absl::Duration waited = now - r.since;
      if (limits.join_timeout > absl::ZeroDuration() && waited >= limits.join_timeout) {
        h.live = false;
        h.join_timed_out = true;
        if (h.reason.empty()) {
          h.reason =
              absl::StrCat("rank ", r.name, " has been without a serving group for ",
                           Seconds(waited), " (join timeout ", Seconds(limits.join_timeout), ")");
        }
      }
    }
    if (r.plan_started.has_value() && limits.plan_deadline > absl::ZeroDuration()) {
      const absl::Duration running = now - *r.plan_started;
      if (running >= limits.plan_deadline) {
        h.live = false;
        if (h.reason.empty()) {
          h.reason = absl::StrCat("rank ", r.name, " has been executing plan ", r.plan, " for ",
                                  Seconds(running), " (deadline ", Seconds(limits.plan_deadline),
                                  "): a hung communicator or device");
        }
      }
    }
    if (!r.serving && not_ready.empty()) {
      not_ready = absl::StrCat("rank ", r.name,
                               r.in_group ? " is setting up its group" : " is waiting for a group");
    }
    h.ready = h.ready && r.serving;
  }
  h.ready = h.ready && h.live;
  if (h.reason.empty()) h.reason = ranks.empty() ? "no ranks" : not_ready;
  return h;
}

}  // namespace orca
