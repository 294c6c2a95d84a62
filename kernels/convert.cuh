// Conversion of float32 activations to a 16-bit GEMM input type (F16 or BF16), so
// cuBLAS can multiply them with 16-bit weights while accumulating in float32.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/kernel_types.h"

namespace orca::kernels {

// Writes the [rows, cols] float32 matrix `src` (rows `src_ld` apart) to `dst` as a
// contiguous [rows, cols] matrix of `type` (kF16 or kBF16), rounding to nearest even.
// Returns cudaErrorInvalidValue for other types, else the launch error.
cudaError_t LaunchConvertF32(const float* src, int64_t src_ld, int64_t rows, int64_t cols,
                             ScalarType type, void* dst, cudaStream_t stream);

}  // namespace orca::kernels
