// Making the deferred token masks of a plan's sequences (iteration.h,
// DeferredTokenMask). The rank that samples makes them after starting the forward pass
// (ModelRunner::Execute); a group's executor makes them before it encodes a plan (the
// control plane carries masks, not guides). Either way in parallel on a pool: a
// grammar's first visit to a state walks the vocabulary's trie (0.1-0.6 ms a mask).
#pragma once

#include "absl/types/span.h"
#include "engine/common/thread_pool.h"
#include "engine/runner/iteration.h"

namespace orca {

// Whether some of `plan`'s sequences carry a deferred mask.
bool HasDeferredMasks(const IterationPlan& plan);

// Gives every sequence of `seqs` that carries a deferred mask the mask it makes
// (allowed_token_mask set, deferred_mask cleared), on `pool` when one is given and more
// than one mask is to be made, else on the calling thread.
void MakeDeferredMasks(absl::Span<ScheduledSequence* const> seqs, ThreadPool* pool);

}  // namespace orca
