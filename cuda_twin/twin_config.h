// Settings of the CUDA twin, read once from the environment:
//   ORCA_CUDA_TWIN_DEVICES        devices this process sees (default 8; 0: none, as on a
//                                 machine without a GPU)
//   ORCA_CUDA_TWIN_DEVICE_MEMORY  memory of each device in bytes, or with a K/M/G/Ki/Mi/Gi
//                                 suffix (default 1Gi: poisoned memory is real host memory
//                                 once allocated): what cudaMemGetInfo reports and
//                                 where cudaMalloc starts failing. A comma-separated list
//                                 gives devices 0, 1, ... their own sizes, the last one
//                                 standing for the devices beyond it ("96Mi,64Mi")
//   ORCA_CUDA_TWIN_SMS            multiprocessors each device reports (default 132, an H100
//                                 SXM's count, so launch heuristics that size grids by
//                                 the SM count take the paths they take on a GPU)
//   ORCA_CUDA_TWIN_SEED           seed of the shuffled block order (default 1)
//   ORCA_CUDA_TWIN_POISON         0 turns off the NaN poison of new device allocations and
//                                 shared memory (default 1)
//   ORCA_CUDA_TWIN_HOST_GUARD     1: device memory is inaccessible outside device work, so a
//                                 host dereference of a device pointer faults (host_guard.h;
//                                 default 0; ignored under AddressSanitizer)
// A malformed value is reported on stderr once and leaves the process without devices
// (every call then fails with cudaErrorInitializationError). Thread-safe.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace orca::cuda_twin {

struct TwinConfig {
  int devices = 8;
  std::vector<size_t> device_memory = {size_t{1} << 30};  // per device; the last repeats
  int sms = 132;
  uint64_t seed = 1;
  bool poison = true;
  bool host_guard = false;
  std::string error;  // non-empty: the environment was malformed

  // The memory of `device` (>= 0).
  size_t DeviceMemory(int device) const {
    return device_memory[std::min<size_t>(static_cast<size_t>(device), device_memory.size() - 1)];
  }
};

const TwinConfig& Config();

// Parses "1024", "64Mi", "16G" (SI) or "16Gi" (binary); false on anything else.
bool ParseBytes(const std::string& text, size_t* out);

}  // namespace orca::cuda_twin
