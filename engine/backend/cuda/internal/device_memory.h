// DeviceMemory: the device context a CudaBackend and all its buffers share (device
// ordinal, stream, stream-ordered caching memory pool, the memory budget). Buffers hold
// a shared_ptr to it, so they may outlive the backend. Allocation and freeing are
// thread-safe (an atomic byte count); everything else follows the backend's
// one-thread rule.
#pragma once

#include <cuda_runtime_api.h>

#include <atomic>
#include <cstddef>
#include <memory>

#include "absl/status/statusor.h"
#include "engine/backend/backend.h"

namespace orca::cuda_internal {

class DeviceMemory : public std::enable_shared_from_this<DeviceMemory> {
 public:
  // Creates the stream and memory pool on `device` with a budget of
  // `memory_fraction` of its total memory.
  static absl::StatusOr<std::shared_ptr<DeviceMemory>> Create(int device, double memory_fraction);
  ~DeviceMemory();

  // Allocates `bytes` (stream-ordered on stream()). Fails with ResourceExhausted when
  // the budget or the device is exhausted.
  absl::StatusOr<std::unique_ptr<DeviceBuffer>> Allocate(size_t bytes);
  // Returns memory to the pool (called by the buffers).
  void Free(void* ptr, size_t bytes);

  int device() const { return device_; }
  cudaStream_t stream() const { return stream_; }
  size_t budget() const { return budget_; }
  size_t allocated() const { return allocated_.load(); }

 private:
  DeviceMemory() = default;

  int device_ = 0;
  cudaStream_t stream_ = nullptr;
  cudaMemPool_t pool_ = nullptr;  // null when the device lacks memory pools: cudaMalloc
  size_t budget_ = 0;
  std::atomic<size_t> allocated_{0};
};

}  // namespace orca::cuda_internal
