#include "kernels/kv_write.cuh"

namespace orca::kernels {
namespace {

__global__ void KvWriteKernel(const float* __restrict__ k, int64_t k_ld,
                              const float* __restrict__ v, int64_t v_ld, int32_t kv_heads,
                              int32_t head_dim, int32_t block_size,
                              const int32_t* __restrict__ slot_mapping, float* __restrict__ k_cache,
                              float* __restrict__ v_cache, int64_t num_slots) {
  const int64_t t = blockIdx.x;
  const int64_t slot = slot_mapping[t];
  if (slot < 0 || slot >= num_slots) return;
  const float* ks = k + t * k_ld;
  const float* vs = v + t * v_ld;
  const int64_t block = slot / block_size, in_block = slot % block_size;
  const int64_t width = static_cast<int64_t>(kv_heads) * head_dim;
  for (int64_t j = threadIdx.x; j < width; j += blockDim.x) {
    const int64_t head = j / head_dim, c = j - head * head_dim;
    const int64_t at = ((block * kv_heads + head) * block_size + in_block) * head_dim + c;
    k_cache[at] = ks[j];
    v_cache[at] = vs[j];
  }
}

}  // namespace

cudaError_t LaunchKvWrite(const float* k, int64_t k_ld, const float* v, int64_t v_ld,
                          int64_t tokens, int32_t kv_heads, int32_t head_dim, int32_t block_size,
                          const int32_t* slot_mapping, float* k_cache, float* v_cache,
                          int64_t num_slots, cudaStream_t stream) {
  const int64_t width = static_cast<int64_t>(kv_heads) * head_dim;
  if (tokens == 0 || width == 0) return cudaSuccess;
  if (tokens < 0 || tokens > INT32_MAX || width < 0 || block_size <= 0 || head_dim <= 0) {
    return cudaErrorInvalidValue;
  }
  const int threads = width >= 256 ? 256 : static_cast<int>((width + 31) / 32 * 32);
  KvWriteKernel<<<static_cast<unsigned>(tokens), threads, 0, stream>>>(
      k, k_ld, v, v_ld, kv_heads, head_dim, block_size, slot_mapping, k_cache, v_cache, num_slots);
  return cudaGetLastError();
}

}  // namespace orca::kernels
