// Embedding gather: out[i, :] (+)= table[ids[i], :] converted to float32.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/kernel_types.h"

namespace orca::kernels {

// Gathers `n` rows of `table` ([vocab, hidden] of `type`, contiguous) into `out`
// (float32 rows `out_ld` apart). With `accumulate`, adds to out instead. An id outside
// [0, vocab) fills its row with NaN (the caller validates ids; this keeps the kernel
// from reading out of bounds). Returns the launch error, if any.
cudaError_t LaunchEmbedding(const int32_t* ids, int64_t n, const void* table, ScalarType type,
                            int64_t vocab, int64_t hidden, float* out, int64_t out_ld,
                            bool accumulate, cudaStream_t stream);

}  // namespace orca::kernels
