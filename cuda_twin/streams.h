// Streams and events of the CUDA twin (cuda_twin/README.md): the ordering half of the
// host implementation of the CUDA runtime, and the one way the library twins (cuBLAS,
// NCCL) and kernel launches put work "on the device".
//
// - Every stream is a FIFO run by its own host thread ("the stream's device thread"):
//   work enqueued on it runs after all work enqueued on it before, and concurrently with
//   other streams and with the host. Device memory is touched only by device threads.
// - The legacy default stream (cudaStream_t 0) orders with every blocking stream of its
//   device, as CUDA's does: its work waits for earlier work of those streams, and their
//   later work waits for it. Streams made with cudaStreamNonBlocking do not.
// - A work item returns cudaError_t. A failure is recorded on its stream: the next
//   synchronising call on that stream (cudaStreamSynchronize, cudaEventSynchronize on a
//   later event, a synchronous cudaMemcpy, cudaDeviceSynchronize) returns it, and so does
//   cudaGetLastError of the thread that synchronises. Later work still runs.
//
// Thread-safe.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <functional>

namespace orca::cuda_twin {

// A unit of device work; runs on a device thread.
using DeviceWork = std::function<cudaError_t()>;

// Enqueues `work` on `stream` (0: the legacy default stream of the calling thread's
// current device). Returns cudaErrorInvalidResourceHandle for a destroyed or unknown
// stream; otherwise cudaSuccess, at once (the work runs later).
cudaError_t Enqueue(cudaStream_t stream, DeviceWork work);

// The calling thread's current device (cudaSetDevice; 0 by default).
int CurrentDevice();

// The device whose stream `stream` is (0: the current device); -1 when unknown.
int StreamDevice(cudaStream_t stream);

// True when [p, p + bytes) lies inside one live device allocation (of any device).
bool IsDeviceRange(const void* p, size_t bytes);

}  // namespace orca::cuda_twin
