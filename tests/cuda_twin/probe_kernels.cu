#include "tests/cuda_twin/probe_kernels.cuh"

namespace orca::cuda_twin::probe {
namespace {

__global__ void BlockSumKernel(float* out) {
  __shared__ float partial[32];
  float v = static_cast<float>(blockIdx.x * 1000 + threadIdx.x);
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  if (threadIdx.x == 0) {
    float total = 0.0f;
    for (int w = 0; w < static_cast<int>(blockDim.x >> 5); ++w) total += partial[w];
    out[blockIdx.x] = total;
  }
}

__global__ void RecordOrderKernel(int32_t* counter, int32_t* order) {
  if (threadIdx.x == 0) order[atomicAdd(counter, 1)] = static_cast<int32_t>(blockIdx.x);
}

__global__ void ReadStaticKernel(uint32_t* out) {
  __shared__ uint32_t words[64];
  out[threadIdx.x] = words[threadIdx.x % 64];
}

__global__ void ReadDynamicKernel(uint32_t* out) {
  extern __shared__ uint32_t dynamic_words[];
  out[threadIdx.x] = dynamic_words[threadIdx.x % 64];
}

__global__ void DivergentBarrierKernel(int first, float* out) {
  float v = 1.0f;
  if (static_cast<int>(threadIdx.x) < first) {
    __syncthreads();
  } else {
    v = __shfl_xor_sync(0xffffffffu, v, 1);
  }
  out[threadIdx.x] = v;
}

__global__ void ShuffleAfterExitKernel(int live, float* out) {
  if (static_cast<int>(threadIdx.x) >= live) return;
  out[threadIdx.x] = __shfl_xor_sync(0xffffffffu, 1.0f, 1);
}

__global__ void EmptyKernel() {}

__global__ void ScaleKernel(float* x, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    x[i] = x[i] * 2.0f + 1.0f;
  }
}

}  // namespace

cudaError_t LaunchBlockSum(float* out, int blocks, int threads, cudaStream_t stream) {
  BlockSumKernel<<<blocks, threads, 0, stream>>>(out);
  return cudaGetLastError();
}

cudaError_t LaunchRecordOrder(int32_t* counter, int32_t* order, int blocks, cudaStream_t stream) {
  RecordOrderKernel<<<blocks, 32, 0, stream>>>(counter, order);
  return cudaGetLastError();
}

cudaError_t LaunchReadUnwrittenShared(uint32_t* out, int threads, bool dynamic,
                                      cudaStream_t stream) {
  if (dynamic) {
    ReadDynamicKernel<<<1, threads, 64 * sizeof(uint32_t), stream>>>(out);
  } else {
    ReadStaticKernel<<<1, threads, 0, stream>>>(out);
  }
  return cudaGetLastError();
}

cudaError_t LaunchDivergentBarrier(int first, float* out, cudaStream_t stream) {
  DivergentBarrierKernel<<<1, 32, 0, stream>>>(first, out);
  return cudaGetLastError();
}

cudaError_t LaunchShuffleAfterExit(int live, float* out, cudaStream_t stream) {
  ShuffleAfterExitKernel<<<1, 32, 0, stream>>>(live, out);
  return cudaGetLastError();
}

cudaError_t LaunchEmpty(int grid, int threads, size_t dynamic_smem, cudaStream_t stream) {
  EmptyKernel<<<grid, threads, dynamic_smem, stream>>>();
  return cudaGetLastError();
}

cudaError_t LaunchScale(float* x, int64_t n, cudaStream_t stream) {
  ScaleKernel<<<4, 128, 0, stream>>>(x, n);
  return cudaGetLastError();
}

}  // namespace orca::cuda_twin::probe
