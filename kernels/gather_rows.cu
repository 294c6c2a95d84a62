#include "kernels/gather_rows.cuh"

namespace orca::kernels {
namespace {

__global__ void GatherRowsKernel(const float* __restrict__ x, int64_t x_ld, int64_t x_rows,
                                 int64_t cols, const int32_t* __restrict__ rows,
                                 float* __restrict__ out, int64_t out_ld) {
  const int64_t i = blockIdx.x;
  const int64_t r = rows[i];
  const bool valid = r >= 0 && r < x_rows;
  const float* src = x + (valid ? r * x_ld : 0);
  float* dst = out + i * out_ld;
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
    dst[j] = valid ? src[j] : __int_as_float(0x7fc00000);
  }
}

}  // namespace

cudaError_t LaunchGatherRows(const float* x, int64_t x_ld, int64_t x_rows, int64_t cols,
                             const int32_t* rows, int64_t n, float* out, int64_t out_ld,
                             cudaStream_t stream) {
  if (n == 0 || cols == 0) return cudaSuccess;
  if (n < 0 || n > INT32_MAX || cols < 0) return cudaErrorInvalidValue;
  const int threads = cols >= 256 ? 256 : static_cast<int>((cols + 31) / 32 * 32);
  GatherRowsKernel<<<static_cast<unsigned>(n), threads, 0, stream>>>(x, x_ld, x_rows, cols, rows,
                                                                     out, out_ld);
  return cudaGetLastError();
}

}  // namespace orca::kernels
