// Internals shared by the CUDA twin's runtime files (not for the library twins, which
// use streams.h): the calling thread's last error, stream and event objects, and the
// synchronisation points of the runtime API.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <vector>

namespace orca::cuda_twin {

// Records `err` (when not cudaSuccess) as the calling thread's last error and returns
// it: every runtime entry point returns through it, as cudaGetLastError expects.
cudaError_t Fail(cudaError_t err);
// cudaGetLastError / cudaPeekAtLastError.
cudaError_t TakeLastError();
cudaError_t PeekLastError();

// Whether `device` is an existing device ordinal.
bool ValidDevice(int device);
// Makes `device` the calling thread's current device.
void SetCurrentDevice(int device);

// Blocks until all work enqueued on `stream` so far has run; returns (and clears) the
// first failure recorded on it. cudaErrorInvalidResourceHandle for an unknown stream.
cudaError_t SynchronizeStream(cudaStream_t stream);
// cudaStreamQuery: cudaSuccess when idle, cudaErrorNotReady otherwise.
cudaError_t QueryStream(cudaStream_t stream);
// Synchronises every stream of `device`, the legacy one included.
cudaError_t SynchronizeDevice(int device);
cudaError_t CreateStream(unsigned flags, cudaStream_t* out);
cudaError_t DestroyStream(cudaStream_t stream);

cudaError_t CreateEvent(unsigned flags, cudaEvent_t* out);
cudaError_t DestroyEvent(cudaEvent_t event);
cudaError_t RecordEvent(cudaEvent_t event, cudaStream_t stream);
cudaError_t SynchronizeEvent(cudaEvent_t event);
cudaError_t QueryEvent(cudaEvent_t event);
cudaError_t EventElapsedMs(float* ms, cudaEvent_t start, cudaEvent_t end);
cudaError_t StreamWaitEvent(cudaStream_t stream, cudaEvent_t event);

// Stream capture: BeginCapture starts recording what is enqueued on `stream` (not the
// legacy stream); EndCapture stops and hands the recording over
// (cudaErrorStreamCaptureInvalidated when the stream was synchronised meanwhile, which
// fails with cudaErrorStreamCaptureUnsupported as on a GPU).
cudaError_t BeginCapture(cudaStream_t stream);
cudaError_t EndCapture(cudaStream_t stream, std::vector<std::function<cudaError_t()>>* work);
bool IsCapturing(cudaStream_t stream);
// Invalidates `stream`'s capture; returns cudaErrorStreamCaptureUnsupported.
cudaError_t RefuseInCapture(cudaStream_t stream);

// Enqueues `work` and waits for it (synchronous runtime calls).
cudaError_t RunAndWait(cudaStream_t stream, std::function<cudaError_t()> work);

}  // namespace orca::cuda_twin
