#include "engine/sched/kv_capacity.h"

namespace orca {

Request* KvCapacity::Victim(const std::vector<Request*>& running, const Request& r,
                            const IterationPlan& plan) {
  Request* victim = nullptr;
  for (Request* c : running) {
    if (c == &r || c->in_flight > 0) continue;
    bool in_batch = false;
    for (const auto& s : plan.seqs) in_batch |= s.seq_id == c->id;
    if (in_batch) continue;
    if (victim == nullptr || c->admit_order > victim->admit_order) victim = c;
  }
  if (victim != nullptr && victim->admit_order < r.admit_order) return nullptr;
  return victim;
}

}  // namespace orca
