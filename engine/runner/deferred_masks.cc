#include "engine/runner/deferred_masks.h"

#include <algorithm>
#include <vector>

namespace orca {

bool HasDeferredMasks(const IterationPlan& plan) {
  return std::any_of(plan.seqs.begin(), plan.seqs.end(),
                     [](const ScheduledSequence& s) { return s.deferred_mask != nullptr; });
}

void MakeDeferredMasks(absl::Span<ScheduledSequence* const> seqs, ThreadPool* pool) {
  std::vector<ScheduledSequence*> deferred;
  for (ScheduledSequence* s : seqs) {
    if (s->deferred_mask != nullptr) deferred.push_back(s);
  }
  auto make = [&](int64_t i) {
    ScheduledSequence& s = *deferred[static_cast<size_t>(i)];
    s.allowed_token_mask = s.deferred_mask->Make();
    s.deferred_mask = nullptr;
  };
  const int64_t n = static_cast<int64_t>(deferred.size());
  if (pool != nullptr && n > 1) {
    pool->ParallelFor(n, make);
  } else {
    for (int64_t i = 0; i < n; ++i) make(i);
  }
}

}  // namespace orca
