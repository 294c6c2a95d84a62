// KvCapacity: the KV-admission policy (TensorRT-LLM's capacity scheduler): how much KV
// cache a request must hold to compute its next tokens, and whom to preempt when blocks
// run out. `reserve` (ORCA, and every request-level baseline): prompt + max_tokens,
// reserved at admission, never preempting. `paged` under iteration-level scheduling:
// only what is computed now; when blocks run out, the most recently admitted running
// request that is neither in this batch nor in flight is preempted and recomputed
// later. The batch's shape is BatchBudget's. Pure; thread-safe.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/config/engine_config.h"
#include "engine/runner/iteration.h"
#include "engine/sched/request.h"

namespace orca {

class KvCapacity {
 public:
  KvCapacity(KvPolicy kv_policy, SchedulingPolicy policy)
      : reserve_(kv_policy == KvPolicy::kReserve || IsRequestLevel(policy)),
        preempt_(kv_policy == KvPolicy::kPaged && policy == SchedulingPolicy::kIteration) {}

  // Returns the tokens whose KV `r` must hold to compute `n` more tokens now: reserve:
  // its whole prompt + max_tokens (tokens generated before a recompute included); paged:
  // the tokens computed so far plus the `n`.
  int32_t TokensToHold(const Request& r, int32_t n) const {
    return reserve_ ? r.prompt_len() + r.max_tokens : r.num_computed_tokens + n;
  }
  // Whether running requests may be preempted to make room.
  bool may_preempt() const { return preempt_; }
  // Returns the request to preempt so that `r` can grow: the most recently admitted of
  // `running` that is not `r`, not in `plan` and not in flight; nullptr when there is
  // none, or none admitted after `r` (then `r` itself yields).
  static Request* Victim(const std::vector<Request*>& running, const Request& r,
                         const IterationPlan& plan);

 private:
  bool reserve_;
  bool preempt_;
};

}  // namespace orca
