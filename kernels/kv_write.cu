#include "kernels/kv_write.cuh"

namespace orca::kernels {
namespace {

__global__ void KvWriteKernel(const float* __restrict__ k, int64_t k_ld,
                              const float* __restrict__ v, int64_t v_ld, int64_t width,
                              const int32_t* __restrict__ slot_mapping, float* __restrict__ k_cache,
                              float* __restrict__ v_cache, int64_t num_slots) {
  const int64_t t = blockIdx.x;
  const int64_t slot = slot_mapping[t];
  if (slot < 0 || slot >= num_slots) return;
  const float* ks = k + t * k_ld;
  const float* vs = v + t * v_ld;
  float* kd = k_cache + slot * width;
  float* vd = v_cache + slot * width;
  for (int64_t j = threadIdx.x; j < width; j += blockDim.x) {
    kd[j] = ks[j];
    vd[j] = vs[j];
  }
}

}  // namespace

cudaError_t LaunchKvWrite(const float* k, int64_t k_ld, const float* v, int64_t v_ld,
                          int64_t tokens, int64_t width, const int32_t* slot_mapping,
                          float* k_cache, float* v_cache, int64_t num_slots, cudaStream_t stream) {
  if (tokens == 0 || width == 0) return cudaSuccess;
  if (tokens < 0 || tokens > INT32_MAX || width < 0) return cudaErrorInvalidValue;
  const int threads = width >= 256 ? 256 : static_cast<int>((width + 31) / 32 * 32);
  KvWriteKernel<<<static_cast<unsigned>(tokens), threads, 0, stream>>>(
      k, k_ld, v, v_ld, width, slot_mapping, k_cache, v_cache, num_slots);
  return cudaGetLastError();
}

}  // namespace orca::kernels
