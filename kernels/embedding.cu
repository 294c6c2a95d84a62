#include "kernels/embedding.cuh"
#include "kernels/internal/device_utils.cuh"

namespace orca::kernels {
namespace {

template <typename T>
__global__ void EmbeddingKernel(const int32_t* __restrict__ ids, const T* __restrict__ table,
                                int64_t vocab, int64_t hidden, float* __restrict__ out,
                                int64_t out_ld, bool accumulate) {
  const int64_t row = blockIdx.x;
  const int32_t id = ids[row];
  const bool valid = id >= 0 && id < vocab;
  const T* src = table + (valid ? static_cast<int64_t>(id) * hidden : 0);
  float* dst = out + row * out_ld;
  for (int64_t j = threadIdx.x; j < hidden; j += blockDim.x) {
    const float v = valid ? internal::ToFloat(src[j]) : __int_as_float(0x7fc00000);
    dst[j] = accumulate ? dst[j] + v : v;
  }
}

template <typename T>
cudaError_t Launch(const int32_t* ids, int64_t n, const void* table, int64_t vocab, int64_t hidden,
                   float* out, int64_t out_ld, bool accumulate, cudaStream_t stream) {
  const int threads = hidden >= 512 ? 256 : 128;
  EmbeddingKernel<T><<<static_cast<unsigned>(n), threads, 0, stream>>>(
      ids, static_cast<const T*>(table), vocab, hidden, out, out_ld, accumulate);
  return cudaGetLastError();
}

}  // namespace

cudaError_t LaunchEmbedding(const int32_t* ids, int64_t n, const void* table, ScalarType type,
                            int64_t vocab, int64_t hidden, float* out, int64_t out_ld,
                            bool accumulate, cudaStream_t stream) {
  if (n == 0 || hidden == 0) return cudaSuccess;
  if (n < 0 || n > INT32_MAX) return cudaErrorInvalidValue;
  switch (type) {
    case ScalarType::kF32:
      return Launch<float>(ids, n, table, vocab, hidden, out, out_ld, accumulate, stream);
    case ScalarType::kF16:
      return Launch<__half>(ids, n, table, vocab, hidden, out, out_ld, accumulate, stream);
    case ScalarType::kBF16:
      return Launch<__nv_bfloat16>(ids, n, table, vocab, hidden, out, out_ld, accumulate, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace orca::kernels
