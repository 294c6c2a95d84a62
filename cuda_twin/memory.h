// Device and pinned host memory of the CUDA twin. Device memory is host memory that
// only device threads touch (streams.h); every allocation is registered, so the
// runtime can tell device pointers from host ones and check that a copy, memset,
// GEMM or collective stays inside one allocation, as a GPU's MMU would. New device
// allocations are poisoned (0xff bytes: NaN floats, -1 ints) unless
// ORCA_CUDA_TWIN_POISON=0. Each device has ORCA_CUDA_TWIN_DEVICE_MEMORY bytes;
// allocations round to 256 bytes (CUDA's alignment) and fail beyond it. Thread-safe.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

namespace orca::cuda_twin {

// Allocates `bytes` on `device`: cudaErrorMemoryAllocation when the device is full.
cudaError_t DeviceAllocate(int device, size_t bytes, void** out);
// Frees an allocation made by DeviceAllocate; cudaErrorInvalidValue for any other
// pointer (including one inside an allocation).
cudaError_t DeviceFree(void* ptr);
size_t DeviceBytesInUse(int device);
// The device of the allocation containing `p`; -1 when `p` is not device memory.
int DeviceOfPointer(const void* p);

// Page-locked host memory (cudaMallocHost / cudaHostAlloc): host memory the device may
// read asynchronously.
cudaError_t PinnedAllocate(size_t bytes, void** out);
cudaError_t PinnedFree(void* ptr);
// True when [p, p + bytes) lies inside one pinned allocation.
bool IsPinnedRange(const void* p, size_t bytes);

}  // namespace orca::cuda_twin
