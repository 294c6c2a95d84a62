// Small CUDA kernels that probe the CUDA twin's executor (tests/cuda_twin/): each does
// one thing a real GPU defines (or punishes), so the twin's answer can be checked.
// Compiled for the twin by cmake/OrcaCuda.cmake like kernels/.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace orca::cuda_twin::probe {

// out[b] = sum over the block's threads of (b * 1000 + t), by warp shuffles then shared
// memory; blocks of `threads` threads (a multiple of 32).
cudaError_t LaunchBlockSum(float* out, int blocks, int threads, cudaStream_t stream);
// order[atomicAdd(counter)] = linear block index: the order in which blocks started.
cudaError_t LaunchRecordOrder(int32_t* counter, int32_t* order, int blocks, cudaStream_t stream);
// out[t] = a word of static (dynamic when `dynamic`) shared memory read before any
// thread wrote it (bit pattern), for `threads` threads.
cudaError_t LaunchReadUnwrittenShared(uint32_t* out, int threads, bool dynamic,
                                      cudaStream_t stream);
// One warp: lanes below `first` wait at __syncthreads, the others at a full-mask shuffle
// (on a GPU: undefined, usually a hang); out[32].
cudaError_t LaunchDivergentBarrier(int first, float* out, cudaStream_t stream);
// Lanes >= `live` return; the rest shuffle with the full mask.
cudaError_t LaunchShuffleAfterExit(int live, float* out, cudaStream_t stream);
// A launch with the given block size and dynamic shared memory (a no-op kernel).
cudaError_t LaunchEmpty(int grid, int threads, size_t dynamic_smem, cudaStream_t stream);
// x[i] = x[i] * 2 + 1 for i < n (a grid-stride loop): work that orders with copies.
cudaError_t LaunchScale(float* x, int64_t n, cudaStream_t stream);

}  // namespace orca::cuda_twin::probe
