// Additions on float32 matrices: the residual add (x += y) and the bias add that
// follows a GEMM (out[r, :] += bias, in place, or into a 16-bit output).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/kernel_types.h"

namespace orca::kernels {

// x[r, j] += y[r, j] for a [rows, cols] matrix; rows are x_ld / y_ld floats apart.
// Returns the launch error, if any.
cudaError_t LaunchAdd(float* x, int64_t x_ld, const float* y, int64_t y_ld, int64_t rows,
                      int64_t cols, cudaStream_t stream);

// out[r, j] += bias[j] for a [rows, cols] matrix with rows out_ld floats apart.
cudaError_t LaunchAddBias(float* out, int64_t out_ld, const float* bias, int64_t rows, int64_t cols,
                          cudaStream_t stream);

// out[r, j] = src[r, j] + bias[j], rounded once to `out_type` (a 16-bit GEMM output
// whose bias joins it before its rounding); src rows src_ld floats apart, out rows
// out_ld elements apart.
cudaError_t LaunchAddBiasInto(const float* src, int64_t src_ld, const float* bias, int64_t rows,
                              int64_t cols, void* out, int64_t out_ld, ScalarType out_type,
                              cudaStream_t stream);

}  // namespace orca::kernels
