// Conversions between the engine's iteration structs (engine/runner/iteration.h)
// and their control-plane messages (proto/orca/v1/control.proto). Lossless both ways.
#pragma once

#include "engine/runner/iteration.h"
#include "orca/v1/control.pb.h"

namespace orca {

void ToProto(const IterationPlan& plan, v1::IterationPlan* out);
IterationPlan FromProto(const v1::IterationPlan& plan);
void ToProto(const IterationResult& result, v1::IterationDone* out);
IterationResult FromProto(const v1::IterationDone& done);

}  // namespace orca
