#include "kernels/kv_write.cuh"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "kernels/internal/device_utils.cuh"

namespace orca::kernels {
namespace {

__device__ __forceinline__ void Store(float x, float* dst) { *dst = x; }
__device__ __forceinline__ void Store(float x, __half* dst) {
  // Saturate as the CPU backend does; NaN passes (the comparisons are false).
  if (x > 65504.0f) x = 65504.0f;
  if (x < -65504.0f) x = -65504.0f;
  *dst = __float2half_rn(x);
}
__device__ __forceinline__ void Store(float x, __nv_bfloat16* dst) {
  *dst = __float2bfloat16_rn(x);
}

template <typename T>
__global__ void KvWriteKernel(const void* __restrict__ k, int64_t k_ld, const void* __restrict__ v,
                              int64_t v_ld, ScalarType input, int32_t kv_heads, int32_t head_dim,
                              int32_t block_size, const int32_t* __restrict__ slot_mapping,
                              T* __restrict__ k_cache, T* __restrict__ v_cache, int64_t num_slots) {
  const int64_t t = blockIdx.x;
  const int64_t slot = slot_mapping[t];
  if (slot < 0 || slot >= num_slots) return;
  const int64_t block = slot / block_size, in_block = slot % block_size;
  const int64_t width = static_cast<int64_t>(kv_heads) * head_dim;
  for (int64_t j = threadIdx.x; j < width; j += blockDim.x) {
    const int64_t head = j / head_dim, c = j - head * head_dim;
    const int64_t at = ((block * kv_heads + head) * block_size + in_block) * head_dim + c;
    Store(internal::LoadAs(k, input, t * k_ld + j), k_cache + at);
    Store(internal::LoadAs(v, input, t * v_ld + j), v_cache + at);
  }
}

template <typename T>
cudaError_t Launch(const void* k, int64_t k_ld, const void* v, int64_t v_ld, ScalarType input,
                   int64_t tokens, int32_t kv_heads, int32_t head_dim, int32_t block_size,
                   const int32_t* slot_mapping, void* k_cache, void* v_cache, int64_t num_slots,
                   cudaStream_t stream) {
  const int64_t width = static_cast<int64_t>(kv_heads) * head_dim;
  const int threads = width >= 256 ? 256 : static_cast<int>((width + 31) / 32 * 32);
  KvWriteKernel<T><<<static_cast<unsigned>(tokens), threads, 0, stream>>>(
      k, k_ld, v, v_ld, input, kv_heads, head_dim, block_size, slot_mapping,
      static_cast<T*>(k_cache), static_cast<T*>(v_cache), num_slots);
  return cudaGetLastError();
}

}  // namespace

cudaError_t LaunchKvWrite(const void* k, int64_t k_ld, const void* v, int64_t v_ld, int64_t tokens,
                          int32_t kv_heads, int32_t head_dim, int32_t block_size,
                          const int32_t* slot_mapping, ScalarType elem, void* k_cache,
                          void* v_cache, int64_t num_slots, cudaStream_t stream, ScalarType input) {
  const int64_t width = static_cast<int64_t>(kv_heads) * head_dim;
  if (tokens == 0 || width == 0) return cudaSuccess;
  if (tokens < 0 || tokens > INT32_MAX || width < 0 || block_size <= 0 || head_dim <= 0) {
    return cudaErrorInvalidValue;
  }
  switch (elem) {
    case ScalarType::kF16:
      return Launch<__half>(k, k_ld, v, v_ld, input, tokens, kv_heads, head_dim, block_size,
                            slot_mapping, k_cache, v_cache, num_slots, stream);
    case ScalarType::kBF16:
      return Launch<__nv_bfloat16>(k, k_ld, v, v_ld, input, tokens, kv_heads, head_dim, block_size,
                                   slot_mapping, k_cache, v_cache, num_slots, stream);
    case ScalarType::kF32:
      return Launch<float>(k, k_ld, v, v_ld, input, tokens, kv_heads, head_dim, block_size,
                           slot_mapping, k_cache, v_cache, num_slots, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace orca::kernels
