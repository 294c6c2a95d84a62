// The backend registry: the one place that knows which backends this build of orca
// has (chosen at compile time, as ggml-backend-reg does: the CPU backend always, the
// CUDA backend when built with CUDA). Everything above it — the local executor, the
// workers, `orca generate` — creates backends through CreateBackend and never tests
// for CUDA itself. Thread-safe.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/backend/backend.h"
#include "engine/config/engine_config.h"

namespace orca {

// Creates the backend `device.type` names on device `device.index + rank_offset`
// (CUDA: memory_fraction bounds what it may allocate; CPU: `device.threads` threads, 0 =
// the process's CPU limit). FailedPrecondition when this build lacks that backend.
absl::StatusOr<std::unique_ptr<Backend>> CreateBackend(const DeviceOptions& device,
                                                       int32_t rank_offset = 0);

// Returns OK when devices device.index .. device.index + count - 1 of `device.type` are
// there to run on (the CPU always is); FailedPrecondition naming what is missing
// otherwise, e.g. before a process starts workers for a group the machine cannot hold.
absl::Status CheckDevicesAvailable(const DeviceOptions& device, int32_t count);

// Returns the devices this build can run on ("cpu", and "cuda" when built with CUDA).
std::vector<std::string> AvailableDevices();

}  // namespace orca
