#include "kernels/add.cuh"
#include "kernels/internal/device_utils.cuh"

namespace orca::kernels {
namespace {

constexpr int kThreads = 256;

// y_ld == 0 broadcasts row 0 of y (a bias) to every row. x is of `x_type`.
__global__ void AddKernel(void* __restrict__ x, int64_t x_ld, ScalarType x_type,
                          const float* __restrict__ y, int64_t y_ld, int64_t rows, int64_t cols) {
  const int64_t n = rows * cols;
  for (int64_t idx = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; idx < n;
       idx += int64_t{gridDim.x} * blockDim.x) {
    const int64_t r = idx / cols, j = idx - r * cols;
    const int64_t at = r * x_ld + j;
    internal::StoreAs(x, x_type, at, internal::LoadAs(x, x_type, at) + y[r * y_ld + j]);
  }
}

cudaError_t Add(void* x, int64_t x_ld, ScalarType x_type, const float* y, int64_t y_ld,
                int64_t rows, int64_t cols, cudaStream_t stream) {
  if (rows == 0 || cols == 0) return cudaSuccess;
  if (rows < 0 || cols < 0) return cudaErrorInvalidValue;
  AddKernel<<<internal::GridFor(rows * cols, kThreads), kThreads, 0, stream>>>(x, x_ld, x_type, y,
                                                                               y_ld, rows, cols);
  return cudaGetLastError();
}

}  // namespace

cudaError_t LaunchAdd(float* x, int64_t x_ld, const float* y, int64_t y_ld, int64_t rows,
                      int64_t cols, cudaStream_t stream) {
  return Add(x, x_ld, ScalarType::kF32, y, y_ld, rows, cols, stream);
}

cudaError_t LaunchAddBias(void* out, int64_t out_ld, const float* bias, int64_t rows, int64_t cols,
                          cudaStream_t stream, ScalarType out_type) {
  return Add(out, out_ld, out_type, bias, 0, rows, cols, stream);
}

}  // namespace orca::kernels
