#include "kernels/convert.cuh"
#include "kernels/internal/device_utils.cuh"

namespace orca::kernels {
namespace {

__device__ __forceinline__ void Store(__half* p, float v) { *p = __float2half_rn(v); }
__device__ __forceinline__ void Store(__nv_bfloat16* p, float v) { *p = __float2bfloat16_rn(v); }

template <typename T>
__global__ void ConvertKernel(const float* __restrict__ src, int64_t src_ld, int64_t rows,
                              int64_t cols, T* __restrict__ dst) {
  const int64_t n = rows * cols;
  for (int64_t idx = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; idx < n;
       idx += int64_t{gridDim.x} * blockDim.x) {
    const int64_t r = idx / cols, j = idx - r * cols;
    Store(dst + idx, src[r * src_ld + j]);
  }
}

constexpr int kThreads = 256;

}  // namespace

cudaError_t LaunchConvertF32(const float* src, int64_t src_ld, int64_t rows, int64_t cols,
                             ScalarType type, void* dst, cudaStream_t stream) {
  if (rows < 0 || cols < 0) return cudaErrorInvalidValue;
  if (rows == 0 || cols == 0) return cudaSuccess;
  const unsigned grid = internal::GridFor(rows * cols, kThreads);
  switch (type) {
    case ScalarType::kF16:
      ConvertKernel<<<grid, kThreads, 0, stream>>>(src, src_ld, rows, cols,
                                                   static_cast<__half*>(dst));
      return cudaGetLastError();
    case ScalarType::kBF16:
      ConvertKernel<<<grid, kThreads, 0, stream>>>(src, src_ld, rows, cols,
                                                   static_cast<__nv_bfloat16*>(dst));
      return cudaGetLastError();
    case ScalarType::kF32:
      break;
  }
  return cudaErrorInvalidValue;
}

}  // namespace orca::kernels
