// Additions on float32 matrices: the residual add (x += y) and the bias add that
// follows a GEMM (out[r, :] += bias).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace orca::kernels {

// x[r, j] += y[r, j] for a [rows, cols] matrix; rows are x_ld / y_ld floats apart.
// Returns the launch error, if any.
cudaError_t LaunchAdd(float* x, int64_t x_ld, const float* y, int64_t y_ld, int64_t rows,
                      int64_t cols, cudaStream_t stream);

// out[r, j] += bias[j] for a [rows, cols] matrix with rows out_ld floats apart.
cudaError_t LaunchAddBias(float* out, int64_t out_ld, const float* bias, int64_t rows, int64_t cols,
                          cudaStream_t stream);

}  // namespace orca::kernels
