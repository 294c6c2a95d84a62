// Row normalisations of float32 activations: RMSNorm (Llama) and LayerNorm (GPT-2),
// each optionally fused with the residual add that precedes it. One block per row;
// statistics accumulate in float32.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace orca::kernels {

// Row layout of a [rows, cols] float32 matrix: `ld` elements between rows.
struct RowMatrix {
  float* data = nullptr;
  int64_t ld = 0;
};

// For each row r: v = x[r] (+ residual[r] when residual.data is set, and then
// residual[r] = v); out[r] = v / sqrt(mean(v^2) + eps) * weight. `out` may alias `x`
// (not `residual`). Returns the launch error, if any.
cudaError_t LaunchRmsNorm(RowMatrix x, RowMatrix residual, const float* weight, float eps,
                          int64_t rows, int64_t cols, RowMatrix out, cudaStream_t stream);

// As LaunchRmsNorm with out[r] = (v - mean(v)) / sqrt(var(v) + eps) * weight + bias.
cudaError_t LaunchLayerNorm(RowMatrix x, RowMatrix residual, const float* weight, const float* bias,
                            float eps, int64_t rows, int64_t cols, RowMatrix out,
                            cudaStream_t stream);

}  // namespace orca::kernels
