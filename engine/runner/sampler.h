// Sampler: picks the next token of one sequence from its logits on the host.
// Deterministic: the random draw is a pure function of (seed, output_index), so a
// request sampled with a seed is reproducible and a preempted request that is
// recomputed samples the same tokens. Stateless and thread-safe.
#pragma once

#include <cstdint>
#include <vector>

#include "absl/types/span.h"
#include "engine/runner/iteration.h"

namespace orca {

// Samples from `logits` (vocab entries; modified in place by penalties and filters).
SampledToken SampleToken(absl::Span<float> logits, const ScheduledSequence& seq);

// Returns a uniform double in [0, 1) derived from (seed, index) by SplitMix64.
double SeededUniform(uint64_t seed, uint64_t index);

}  // namespace orca
