// The engine flags shared by `orca serve` (and later `orca scheduler`): model,
// scheduling policy, batch budgets, KV cache.
#pragma once

#include "absl/status/statusor.h"
#include "engine/cli/flags.h"
#include "engine/serving/engine.h"

namespace orca {

void AddEngineFlags(Flags& flags);
absl::StatusOr<EngineOptions> EngineOptionsFromFlags(const Flags& flags);

}  // namespace orca
