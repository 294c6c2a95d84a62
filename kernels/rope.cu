#include "kernels/internal/device_utils.cuh"
#include "kernels/rope.cuh"

namespace orca::kernels {
namespace {

__global__ void RopeKernel(void* __restrict__ x, int64_t ld, ScalarType type,
                           const int32_t* __restrict__ positions, int32_t num_heads,
                           int32_t head_dim, double theta) {
  extern __shared__ float cos_sin[];  // [half] cosines, then [half] sines
  const int32_t half = head_dim / 2;
  const int64_t t = blockIdx.x;
  const double pos = static_cast<double>(positions[t]);
  for (int32_t i = threadIdx.x; i < half; i += blockDim.x) {
    const double inv_freq = pow(theta, -2.0 * i / head_dim);
    double s, c;
    sincos(pos * inv_freq, &s, &c);
    cos_sin[i] = static_cast<float>(c);
    cos_sin[half + i] = static_cast<float>(s);
  }
  __syncthreads();
  const int32_t pairs = num_heads * half;
  for (int32_t idx = threadIdx.x; idx < pairs; idx += blockDim.x) {
    const int32_t h = idx / half, i = idx - h * half;
    const int64_t at = t * ld + static_cast<int64_t>(h) * head_dim + i;
    const float a = internal::LoadAs(x, type, at), b = internal::LoadAs(x, type, at + half);
    const float c = cos_sin[i], s = cos_sin[half + i];
    internal::StoreAs(x, type, at, a * c - b * s);
    internal::StoreAs(x, type, at + half, b * c + a * s);
  }
}

}  // namespace

cudaError_t LaunchRope(void* x, int64_t ld, int64_t tokens, const int32_t* positions,
                       int32_t num_heads, int32_t head_dim, double theta, cudaStream_t stream,
                       ScalarType type) {
  if (tokens == 0 || num_heads == 0) return cudaSuccess;
  if (tokens < 0 || tokens > INT32_MAX || head_dim <= 0 || head_dim % 2 != 0 || head_dim > 1024 ||
      num_heads < 0) {
    return cudaErrorInvalidValue;
  }
  const int32_t pairs = num_heads * (head_dim / 2);
  const int threads = pairs >= 256 ? 256 : (pairs + 31) / 32 * 32;
  const size_t smem = sizeof(float) * static_cast<size_t>(head_dim);
  RopeKernel<<<static_cast<unsigned>(tokens), threads, smem, stream>>>(x, ld, type, positions,
                                                                       num_heads, head_dim, theta);
  return cudaGetLastError();
}

}  // namespace orca::kernels
