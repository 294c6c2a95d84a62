// The CUDA twin's kernel executor (cuda_twin/README.md): runs a translated kernel's
// grid on the stream's device thread, every CUDA thread of a block a fiber on that host
// thread. The calls below are what cu_to_cc.py and device_env.h turn CUDA syntax into;
// nothing else calls them.
//
// Rules it enforces, as a GPU would punish their violation:
//   - launch configurations within the limits of a real device (1024 threads per block,
//     block dims 1024 x 1024 x 64, grid y/z <= 65535, 48 KiB of shared memory per
//     block, static and dynamic together): cudaErrorInvalidConfiguration /
//     cudaErrorInvalidValue from the launch (cudaGetLastError), and the kernel never runs;
//   - blocks run in a shuffled order (ORCA_CUDA_TWIN_SEED), so no kernel can rely on it;
//   - shared memory, static and dynamic, is poisoned (0xff bytes: NaN floats, -1 ints)
//     at the start of every block;
//   - __syncthreads is a barrier of every thread of the block that has not exited; warp
//     shuffles and votes are barriers of the warp. A shuffle whose mask names a lane that
//     has exited or does not exist, or a barrier that can never be released (threads
//     waiting at different barriers), fails the launch: the stream's next synchronising
//     call returns cudaErrorLaunchFailure and stderr names the kernel, block and thread.
// Not shown: memory races between blocks or threads (the fibers of a block interleave
// only at barriers), timing, and what nvcc's code generation would do differently.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <functional>

namespace orca::cuda_twin {

// The built-ins of the running fiber (valid inside a kernel body only). Functions, not
// thread_local variables: UBSan misreads thread_local addresses taken across libraries.
const uint3& ThreadIdx();
const uint3& BlockIdx();
const dim3& BlockDim();
const dim3& GridDim();

// kernel<<<grid, block, dynamic_smem, stream>>>(args) becomes
// LaunchKernel("kernel", grid, block, dynamic_smem, stream, [=] { kernel(args); }).
// Sets the calling thread's last error on a bad configuration (the kernel does not run);
// otherwise enqueues the grid on `stream`.
void LaunchKernel(const char* name, dim3 grid, dim3 block, size_t dynamic_smem, cudaStream_t stream,
                  std::function<void()> body);

// The block's dynamic shared memory (`extern __shared__ T name[];`), 16-byte aligned.
void* DynamicShared();
// The block's storage for the static `__shared__` declaration identified by `site`.
void* StaticSharedAt(const void* site, size_t bytes, size_t align);
template <typename T, typename Site>
T& StaticShared(Site) {
  static const char site = 0;
  return *static_cast<T*>(StaticSharedAt(&site, sizeof(T), alignof(T)));
}

// __syncthreads() and __syncwarp(mask).
void SyncThreads();
void SyncWarp(unsigned mask);
// Every lane of the warp named in `mask` deposits `value`; returns the 32 values of this
// exchange (lanes outside the mask: unspecified). The primitive of shuffles and votes.
const uint64_t* WarpExchange(unsigned mask, uint64_t value);
// The calling fiber's lane (threadIdx linearised, mod 32).
int LaneId();

}  // namespace orca::cuda_twin
