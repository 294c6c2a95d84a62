// Device helpers shared by the kernels: warp and block reductions, loads of any weight
// type as float. Include from .cu files only.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "kernels/kernel_types.h"

namespace orca::kernels::internal {

constexpr unsigned kFullMask = 0xffffffffu;

__device__ __forceinline__ float WarpSum(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(kFullMask, v, offset);
  return v;
}

__device__ __forceinline__ float WarpMax(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1)
    v = fmaxf(v, __shfl_xor_sync(kFullMask, v, offset));
  return v;
}

// Returns the sum of `v` over the block to every thread. blockDim.x must be a multiple
// of 32; `scratch` holds 32 floats of shared memory. Safe to call repeatedly.
__device__ __forceinline__ float BlockSum(float v, float* scratch) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int num_warps = blockDim.x >> 5;
  v = WarpSum(v);
  __syncthreads();  // an earlier call may still be reading scratch
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  float total = 0.0f;
  for (int w = 0; w < num_warps; ++w) total += scratch[w];
  return total;
}

__device__ __forceinline__ float ToFloat(float v) { return v; }
__device__ __forceinline__ float ToFloat(__half v) { return __half2float(v); }
__device__ __forceinline__ float ToFloat(__nv_bfloat16 v) { return __bfloat162float(v); }

// Element i of an activation array of `type` (float, float16 or bfloat16), as float.
// `type` is the same for every thread, so the branch costs no divergence.
__device__ __forceinline__ float LoadAs(const void* base, ScalarType type, int64_t i) {
  switch (type) {
    case ScalarType::kF16:
      return __half2float(static_cast<const __half*>(base)[i]);
    case ScalarType::kBF16:
      return __bfloat162float(static_cast<const __nv_bfloat16*>(base)[i]);
    default:
      return static_cast<const float*>(base)[i];
  }
}

// Stores v as element i of an activation array of `type`, rounded to nearest even (a
// float16 beyond +-65504 becomes infinite, as a cast makes it).
__device__ __forceinline__ void StoreAs(void* base, ScalarType type, int64_t i, float v) {
  switch (type) {
    case ScalarType::kF16:
      static_cast<__half*>(base)[i] = __float2half_rn(v);
      return;
    case ScalarType::kBF16:
      static_cast<__nv_bfloat16*>(base)[i] = __float2bfloat16_rn(v);
      return;
    default:
      static_cast<float*>(base)[i] = v;
  }
}

// Returns a block count for a grid-stride loop over `n` elements.
inline unsigned GridFor(int64_t n, int threads) {
  int64_t blocks = (n + threads - 1) / threads;
  if (blocks > 65536) blocks = 65536;
  return static_cast<unsigned>(blocks < 1 ? 1 : blocks);
}

}  // namespace orca::kernels::internal
