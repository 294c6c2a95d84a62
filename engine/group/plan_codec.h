// Conversions between the engine's iteration structs (engine/runner/iteration.h) and
// their control-plane messages (proto/orca/v1/control.proto).
//
// Plans travel as deltas within a group generation (PlanEncoder on the scheduler,
// PlanDecoder on every rank): every rank receives every plan of the generation in the
// same order, so each keeps, per sequence, the block table, sampling parameters and
// penalty history the plans so far gave it, and a plan carries only what is new — the
// appended blocks, the penalty history's new tokens, sampling parameters the first time
// or when they change — plus the ids of sequences released since the previous plan.
// A plan's size is O(new work), not O(context) (a decode step of a sequence with
// penalties at context L sent L + L/16 integers; now a few). The decoded plan equals
// the encoded one exactly, except that a deferred token mask (iteration.h) is made
// when encoded and arrives as the allowed_token_mask it made. A new generation starts both sides
// empty (a new encoder, a new session's decoder).
#pragma once

#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "engine/runner/iteration.h"
#include "orca/v1/control.pb.h"

namespace orca {

// Whole messages, no state (results, and tests).
void ToProto(const IterationPlan& plan, v1::IterationPlan* out);
IterationPlan FromProto(const v1::IterationPlan& plan);
void ToProto(const IterationResult& result, v1::IterationDone* out);
IterationResult FromProto(const v1::IterationDone& done);

// What both ends hold for one sequence between plans.
struct HeldSequence {
  std::vector<int32_t> block_table;
  SamplingParams sampling;
  std::vector<int32_t> penalty_history;
};

// The scheduler's side of one generation. Not thread-safe (the engine's thread).
class PlanEncoder {
 public:
  void Encode(const IterationPlan& plan, v1::IterationPlan* out);
  size_t num_held() const { return held_.size(); }

 private:
  absl::flat_hash_map<uint64_t, HeldSequence> held_;
};

// A rank's side of one generation. Decode fails (InvalidArgument) on a delta that
// does not fit what the rank holds: the control plane lost a plan or reordered them,
// and the rank can no longer trust its state. Not thread-safe.
class PlanDecoder {
 public:
  absl::StatusOr<IterationPlan> Decode(const v1::IterationPlan& plan);
  size_t num_held() const { return held_.size(); }

 private:
  absl::flat_hash_map<uint64_t, HeldSequence> held_;
};

}  // namespace orca
