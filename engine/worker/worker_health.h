// WorkerHealth: what an `orca worker` answers on /health (liveness) and /ready
// (readiness), and when it stops waiting for a serving group, as a pure function of its
// ranks' progress and the time (docs/distributed.md, "Worker lifecycle"). No clock is
// read here: the caller passes `now`, so the state machine is tested without sleeping.
//
// A rank is either waiting for a group (dialing the scheduler, or joined but the group
// not yet formed) since some time, or in a group (it has received GroupInit: it sets up
// its communicators and shard, then executes plans). A process is
//   live   unless a rank has executed one plan longer than the plan deadline (a hung
//          communicator: the scheduler's rank deadline, parallelism.rank_deadline_s) or
//          a rank has waited for a group longer than the join timeout
//          (worker.join_timeout_s);
//   ready  when every rank is in a group and serving plans;
//   timed out (it should exit non-zero) when a rank has waited past the join timeout.
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "absl/time/time.h"
#include "absl/types/span.h"

namespace orca {

// One rank's progress, as WorkerRank::progress() reports it.
struct RankProgress {
  std::string name;       // for messages: "stage 0 tp 1"
  bool in_group = false;  // received GroupInit of the current session
  bool serving = false;   // in_group, and its shard and communicators are up
  absl::Time since;       // when in_group last changed (process start at first)
  // The plan it is executing and since when; unset while it waits for the next plan.
  std::optional<absl::Time> plan_started;
  uint64_t plan = 0;
};

struct HealthLimits {
  absl::Duration join_timeout = absl::ZeroDuration();   // zero: wait for a group forever
  absl::Duration plan_deadline = absl::ZeroDuration();  // zero: no deadline on a plan
};

struct WorkerHealth {
  bool live = true;             // /health answers 200
  bool ready = false;           // /ready answers 200
  bool join_timed_out = false;  // the worker should exit non-zero
  std::string reason;           // why it is not live (or not ready); empty when both
};

// Returns the health of a worker whose ranks made `ranks` progress, at `now`. A worker
// without ranks is live and not ready.
WorkerHealth EvaluateWorkerHealth(absl::Span<const RankProgress> ranks, absl::Time now,
                                  const HealthLimits& limits);

}  // namespace orca
