// Row normalisations of the float32 residual stream: RMSNorm (Llama) and LayerNorm
// (GPT-2), each optionally fused with the residual add that precedes it, written as
// float32 or as a 16-bit GEMM input. One block per row; statistics accumulate in
// float32.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/kernel_types.h"

namespace orca::kernels {

// Row layout of a [rows, cols] matrix of `type`: `ld` elements between rows.
struct RowMatrix {
  void* data = nullptr;
  int64_t ld = 0;
  ScalarType type = ScalarType::kF32;
};

// For each row r: v = x[r] (+ residual[r] when residual.data is set, and then
// residual[r] = v); out[r] = v / sqrt(mean(v^2) + eps) * weight, rounded to out.type
// (float32, float16 or bfloat16). x and residual are float32. `out` may alias `x` (not
// `residual`). Returns cudaErrorInvalidValue for 16-bit x or residual, else the launch
// error.
cudaError_t LaunchRmsNorm(RowMatrix x, RowMatrix residual, const float* weight, float eps,
                          int64_t rows, int64_t cols, RowMatrix out, cudaStream_t stream);

// As LaunchRmsNorm with out[r] = (v - mean(v)) / sqrt(var(v) + eps) * weight + bias.
cudaError_t LaunchLayerNorm(RowMatrix x, RowMatrix residual, const float* weight, const float* bias,
                            float eps, int64_t rows, int64_t cols, RowMatrix out,
                            cudaStream_t stream);

}  // namespace orca::kernels
