#include "kernels/activation.cuh"
#include "kernels/internal/device_utils.cuh"

namespace orca::kernels {
namespace {

// Accurate (non-intrinsic) math, matching the CPU reference's formulas.
template <ActivationKind kAct>
__device__ __forceinline__ float Apply(float x) {
  if constexpr (kAct == ActivationKind::kSilu) {
    return x / (1.0f + expf(-x));
  } else if constexpr (kAct == ActivationKind::kGeluTanh) {
    constexpr float kC = 0.7978845608028654f;  // sqrt(2/pi)
    return 0.5f * x * (1.0f + tanhf(kC * (x + 0.044715f * x * x * x)));
  } else {
    return 0.5f * x * (1.0f + erff(x * 0.7071067811865476f));
  }
}

template <ActivationKind kAct>
__global__ void GatedKernel(const void* __restrict__ gate_up, int64_t gate_up_ld, int64_t rows,
                            int64_t inter, void* __restrict__ out, int64_t out_ld,
                            ScalarType type) {
  const int64_t n = rows * inter;
  for (int64_t idx = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; idx < n;
       idx += int64_t{gridDim.x} * blockDim.x) {
    const int64_t r = idx / inter, j = idx - r * inter;
    const int64_t g = r * gate_up_ld + j;
    internal::StoreAs(out, type, r * out_ld + j,
                      Apply<kAct>(internal::LoadAs(gate_up, type, g)) *
                          internal::LoadAs(gate_up, type, g + inter));
  }
}

template <ActivationKind kAct>
__global__ void InPlaceKernel(void* __restrict__ x, int64_t ld, int64_t rows, int64_t cols,
                              ScalarType type) {
  const int64_t n = rows * cols;
  for (int64_t idx = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; idx < n;
       idx += int64_t{gridDim.x} * blockDim.x) {
    const int64_t r = idx / cols, j = idx - r * cols;
    const int64_t at = r * ld + j;
    internal::StoreAs(x, type, at, Apply<kAct>(internal::LoadAs(x, type, at)));
  }
}

constexpr int kThreads = 256;

template <ActivationKind kAct>
cudaError_t Gated(const void* gate_up, int64_t gate_up_ld, int64_t rows, int64_t inter, void* out,
                  int64_t out_ld, ScalarType type, cudaStream_t stream) {
  GatedKernel<kAct><<<internal::GridFor(rows * inter, kThreads), kThreads, 0, stream>>>(
      gate_up, gate_up_ld, rows, inter, out, out_ld, type);
  return cudaGetLastError();
}

template <ActivationKind kAct>
cudaError_t InPlace(void* x, int64_t ld, int64_t rows, int64_t cols, ScalarType type,
                    cudaStream_t stream) {
  InPlaceKernel<kAct>
      <<<internal::GridFor(rows * cols, kThreads), kThreads, 0, stream>>>(x, ld, rows, cols, type);
  return cudaGetLastError();
}

}  // namespace

cudaError_t LaunchGatedActivation(const void* gate_up, int64_t gate_up_ld, int64_t rows,
                                  int64_t inter, ActivationKind act, void* out, int64_t out_ld,
                                  cudaStream_t stream, ScalarType type) {
  if (rows <= 0 || inter <= 0) return rows < 0 || inter < 0 ? cudaErrorInvalidValue : cudaSuccess;
  switch (act) {
    case ActivationKind::kSilu:
      return Gated<ActivationKind::kSilu>(gate_up, gate_up_ld, rows, inter, out, out_ld, type,
                                          stream);
    case ActivationKind::kGeluTanh:
      return Gated<ActivationKind::kGeluTanh>(gate_up, gate_up_ld, rows, inter, out, out_ld, type,
                                              stream);
    case ActivationKind::kGeluErf:
      return Gated<ActivationKind::kGeluErf>(gate_up, gate_up_ld, rows, inter, out, out_ld, type,
                                             stream);
  }
  return cudaErrorInvalidValue;
}

cudaError_t LaunchActivationInPlace(void* x, int64_t ld, int64_t rows, int64_t cols,
                                    ActivationKind act, cudaStream_t stream, ScalarType type) {
  if (rows <= 0 || cols <= 0) return rows < 0 || cols < 0 ? cudaErrorInvalidValue : cudaSuccess;
  switch (act) {
    case ActivationKind::kSilu:
      return InPlace<ActivationKind::kSilu>(x, ld, rows, cols, type, stream);
    case ActivationKind::kGeluTanh:
      return InPlace<ActivationKind::kGeluTanh>(x, ld, rows, cols, type, stream);
    case ActivationKind::kGeluErf:
      return InPlace<ActivationKind::kGeluErf>(x, ld, rows, cols, type, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace orca::kernels
