#include "kernels/internal/device_utils.cuh"
#include "kernels/norm.cuh"

namespace orca::kernels {
namespace {

// Reads x (+ residual, written back) for element j of the current row.
__device__ __forceinline__ float LoadInput(const float* x, float* residual, int64_t j) {
  float v = x[j];
  if (residual != nullptr) {
    v += residual[j];
    residual[j] = v;
  }
  return v;
}

// After the first pass the row's input lives in residual (fused) or still in x.
__device__ __forceinline__ float Reload(const float* x, const float* residual, int64_t j) {
  return residual != nullptr ? residual[j] : x[j];
}

// Row r of a float32 matrix (null for an absent one).
__device__ __forceinline__ float* RowOf(const RowMatrix& m, int64_t r) {
  return m.data != nullptr ? static_cast<float*>(m.data) + r * m.ld : nullptr;
}

__global__ void RmsNormKernel(RowMatrix x, RowMatrix residual, const float* __restrict__ weight,
                              float eps, int64_t cols, RowMatrix out) {
  __shared__ float scratch[32];
  const int64_t r = blockIdx.x;
  const float* in = RowOf(x, r);
  float* res = RowOf(residual, r);
  float ss = 0.0f;
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
    const float v = LoadInput(in, res, j);
    ss += v * v;
  }
  ss = internal::BlockSum(ss, scratch);
  const float inv = rsqrtf(ss / static_cast<float>(cols) + eps);
  const int64_t o = r * out.ld;
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
    internal::StoreAs(out.data, out.type, o + j, Reload(in, res, j) * inv * weight[j]);
  }
}

__global__ void LayerNormKernel(RowMatrix x, RowMatrix residual, const float* __restrict__ weight,
                                const float* __restrict__ bias, float eps, int64_t cols,
                                RowMatrix out) {
  __shared__ float scratch[32];
  const int64_t r = blockIdx.x;
  const float* in = RowOf(x, r);
  float* res = RowOf(residual, r);
  float sum = 0.0f;
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) sum += LoadInput(in, res, j);
  const float mean = internal::BlockSum(sum, scratch) / static_cast<float>(cols);
  float var = 0.0f;
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
    const float d = Reload(in, res, j) - mean;
    var += d * d;
  }
  var = internal::BlockSum(var, scratch) / static_cast<float>(cols);
  const float inv = rsqrtf(var + eps);
  const int64_t o = r * out.ld;
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
    internal::StoreAs(out.data, out.type, o + j,
                      (Reload(in, res, j) - mean) * inv * weight[j] + bias[j]);
  }
}

int ThreadsFor(int64_t cols) {
  int64_t t = (cols / 4 + 31) / 32 * 32;
  if (t < 32) t = 32;
  if (t > 1024) t = 1024;
  return static_cast<int>(t);
}

// Shapes a block per row cannot take, and inputs that are not float32.
bool BadArguments(const RowMatrix& x, const RowMatrix& residual, int64_t rows, int64_t cols) {
  return rows < 0 || rows > INT32_MAX || cols <= 0 || x.type != ScalarType::kF32 ||
         (residual.data != nullptr && residual.type != ScalarType::kF32);
}

}  // namespace

cudaError_t LaunchRmsNorm(RowMatrix x, RowMatrix residual, const float* weight, float eps,
                          int64_t rows, int64_t cols, RowMatrix out, cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  if (BadArguments(x, residual, rows, cols)) return cudaErrorInvalidValue;
  RmsNormKernel<<<static_cast<unsigned>(rows), ThreadsFor(cols), 0, stream>>>(x, residual, weight,
                                                                              eps, cols, out);
  return cudaGetLastError();
}

cudaError_t LaunchLayerNorm(RowMatrix x, RowMatrix residual, const float* weight, const float* bias,
                            float eps, int64_t rows, int64_t cols, RowMatrix out,
                            cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  if (BadArguments(x, residual, rows, cols)) return cudaErrorInvalidValue;
  LayerNormKernel<<<static_cast<unsigned>(rows), ThreadsFor(cols), 0, stream>>>(
      x, residual, weight, bias, eps, cols, out);
  return cudaGetLastError();
}

}  // namespace orca::kernels
