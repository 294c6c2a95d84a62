#include "kernels/add.cuh"
#include "kernels/internal/device_utils.cuh"

namespace orca::kernels {
namespace {

constexpr int kThreads = 256;

// out = x + y, rounded to out_type; y_ld == 0 broadcasts row 0 of y (a bias) to every
// row. out may be x (each element is read and written by one thread).
__global__ void AddKernel(const float* x, int64_t x_ld, const float* __restrict__ y, int64_t y_ld,
                          int64_t rows, int64_t cols, void* out, int64_t out_ld,
                          ScalarType out_type) {
  const int64_t n = rows * cols;
  for (int64_t idx = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; idx < n;
       idx += int64_t{gridDim.x} * blockDim.x) {
    const int64_t r = idx / cols, j = idx - r * cols;
    internal::StoreAs(out, out_type, r * out_ld + j, x[r * x_ld + j] + y[r * y_ld + j]);
  }
}

cudaError_t Add(const float* x, int64_t x_ld, const float* y, int64_t y_ld, int64_t rows,
                int64_t cols, void* out, int64_t out_ld, ScalarType out_type, cudaStream_t stream) {
  if (rows == 0 || cols == 0) return cudaSuccess;
  if (rows < 0 || cols < 0) return cudaErrorInvalidValue;
  AddKernel<<<internal::GridFor(rows * cols, kThreads), kThreads, 0, stream>>>(
      x, x_ld, y, y_ld, rows, cols, out, out_ld, out_type);
  return cudaGetLastError();
}

}  // namespace

cudaError_t LaunchAdd(float* x, int64_t x_ld, const float* y, int64_t y_ld, int64_t rows,
                      int64_t cols, cudaStream_t stream) {
  return Add(x, x_ld, y, y_ld, rows, cols, x, x_ld, ScalarType::kF32, stream);
}

cudaError_t LaunchAddBias(float* out, int64_t out_ld, const float* bias, int64_t rows, int64_t cols,
                          cudaStream_t stream) {
  return Add(out, out_ld, bias, 0, rows, cols, out, out_ld, ScalarType::kF32, stream);
}

cudaError_t LaunchAddBiasInto(const float* src, int64_t src_ld, const float* bias, int64_t rows,
                              int64_t cols, void* out, int64_t out_ld, ScalarType out_type,
                              cudaStream_t stream) {
  return Add(src, src_ld, bias, 0, rows, cols, out, out_ld, out_type, stream);
}

}  // namespace orca::kernels
