// Additions: the residual add of float32 matrices (x += y) and the bias add that
// follows a GEMM (out[r, :] += bias, out float32 or 16-bit).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/kernel_types.h"

namespace orca::kernels {

// x[r, j] += y[r, j] for a [rows, cols] matrix; rows are x_ld / y_ld floats apart.
// Returns the launch error, if any.
cudaError_t LaunchAdd(float* x, int64_t x_ld, const float* y, int64_t y_ld, int64_t rows,
                      int64_t cols, cudaStream_t stream);

// out[r, j] += bias[j] for a [rows, cols] matrix of `out_type` with rows out_ld
// elements apart (the sum in float32, rounded to out_type).
cudaError_t LaunchAddBias(void* out, int64_t out_ld, const float* bias, int64_t rows, int64_t cols,
                          cudaStream_t stream, ScalarType out_type = ScalarType::kF32);

}  // namespace orca::kernels
