// The text of parallelism.pipeline_layers (--pipeline-layers): how many layers each
// pipeline stage holds, first to last. The engine's config library parses it, so that
// `orca config check`, the scheduler's start-up and orca-controller (which writes it
// from an InferenceDeployment's parallelism.pipelineLayers) read one syntax. Whether the
// counts add up to the model's layers is checked once the model is known
// (model_shard.h PipelineStageLayers).
#pragma once

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace orca {

// Parses layer counts separated by commas ("8,4", spaces allowed around each); "" or
// "auto" give none (the scheduler balances the stages). InvalidArgument, quoting the
// text, for anything else (a count below 1, an empty part, a non-number).
absl::StatusOr<std::vector<int32_t>> ParseStageLayers(absl::string_view text);

// Checks `text` parses and, unless it is auto, names exactly `pipeline` stages.
absl::Status CheckStageLayers(absl::string_view text, int32_t pipeline);

}  // namespace orca
