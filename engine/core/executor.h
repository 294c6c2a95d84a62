// Executor: where the Engine's iteration plans run (DESIGN.md section 2, step 3):
// in-process on one rank (LocalExecutor) or on a group of workers over the control
// plane (GroupExecutor, engine/group). Plans are submitted in order and their results
// come back in the same order; up to max_inflight() plans may be outstanding at once
// (one per pipeline stage).
//
// Thread safety: Submit(), Wait() and TakeStateLost() belong to one thread, the
// engine's. Every other call is thread-safe and any thread may make it: config(),
// block_size() and max_inflight() return what was fixed at creation (Engine::Submit and
// the HTTP handlers read config()), and num_kv_blocks() too, except for a group whose
// cache its ranks size by their memory: 0 until the group first forms, fixed from then
// on (the engine adopts it before its first plan); ready(), WaitReady() and
// group_status() synchronise internally (health checks, metrics scrapes, and the serve
// command waiting for its group to form).
#pragma once

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "engine/model/model_config.h"
#include "engine/runner/iteration.h"

namespace orca {

// What the executor's group looks like now (for metrics). An in-process executor is a
// group of one rank that never breaks.
struct GroupStatus {
  int32_t world_size = 1;    // pipeline × tensor ranks
  int32_t ranks_joined = 1;  // ranks connected to the control plane now
  uint64_t generation = 1;   // initialisations so far
  uint64_t breaks = 0;       // times a formed group broke
};

class Executor {
 public:
  virtual ~Executor() = default;

  // Fixed at creation (num_kv_blocks: see above). Thread-safe.
  virtual const ModelConfig& config() const = 0;
  virtual int32_t num_kv_blocks() const = 0;
  virtual int32_t block_size() const = 0;
  virtual int32_t max_inflight() const { return 1; }

  // Thread-safe.
  virtual GroupStatus group_status() const { return GroupStatus{}; }

  // Whether plans can run now: a group is complete and initialised. Thread-safe.
  virtual bool ready() const { return true; }
  // Waits up to `timeout` for ready(); returns ready(). Thread-safe.
  virtual bool WaitReady(absl::Duration timeout) {
    (void)timeout;
    return ready();
  }

  // Returns true once after the executor lost its KV cache contents (a group broke and
  // re-formed or is re-forming) since the last call: every running request must be
  // failed or recomputed, even when no plan was outstanding at the time.
  virtual bool TakeStateLost() { return false; }

  // Starts `plan`. Fails with Unavailable when the group is not ready.
  virtual absl::Status Submit(const IterationPlan& plan) = 0;
  // Returns the result of the oldest outstanding plan. InvalidArgument or Internal:
  // that plan failed (the executor stays usable). Unavailable: the group broke; every
  // outstanding plan is lost and the KV cache contents with it (the engine must fail
  // or recompute all running requests); no plan is outstanding afterwards.
  virtual absl::StatusOr<IterationResult> Wait() = 0;
};

}  // namespace orca
