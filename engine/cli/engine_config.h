// The engine configuration file orca-controller writes for every InferenceDeployment
// (controller/build_workloads.cc, EngineConfigYaml) and mounts at
// /etc/orca/engine.yaml: `orca scheduler --config` and `orca worker --config` read it
// as defaults for their flags (the command line wins):
//
//   model:       {name, dir, dtype}
//   parallelism: {tensor, pipeline, gpus_per_pod, device}
//   engine:      {max_batch_size, max_batched_tokens, kv_policy, block_size,
//                 chunked_prefill, prefix_caching, memory_fraction, scheduling_policy}
//
// Unknown keys are ignored (a newer controller may add some); a malformed file or a
// value of the wrong type is an error naming the file and the key.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "engine/cli/flags.h"

namespace orca {

// Applies `path` to the flags `flags` declares (those it does not declare are skipped).
absl::Status ApplyEngineConfig(const std::string& path, Flags& flags);

}  // namespace orca
