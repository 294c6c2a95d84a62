// Row gather of float32 activations (the rows that sample, before the LM head).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace orca::kernels {

// out[i, :] = x[rows[i], :] for i < n; x rows are x_ld floats apart, out rows out_ld.
// A row index outside [0, x_rows) fills its output row with NaN. Returns the launch
// error, if any.
cudaError_t LaunchGatherRows(const float* x, int64_t x_ld, int64_t x_rows, int64_t cols,
                             const int32_t* rows, int64_t n, float* out, int64_t out_ld,
                             cudaStream_t stream);

}  // namespace orca::kernels
