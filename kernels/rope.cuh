// Rotary position embedding, rotate-half (Hugging Face) layout, in place.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/kernel_types.h"

namespace orca::kernels {

// Rotates the first `num_heads` heads of each of the `tokens` rows of x (of `type`:
// float32, or 16-bit rotated in float32 and rounded back; rows `ld` elements apart; head h occupies
// columns [h * head_dim, (h + 1) * head_dim)). Dims i and i + head_dim / 2 form a pair rotated by
// positions[t] * theta^(-2i / head_dim). The angles, their sines and cosines are computed in double
// precision once per token, as the CPU reference does, so large positions keep full float accuracy.
// head_dim must be even and at most 1024. Returns the launch error, if any.
cudaError_t LaunchRope(void* x, int64_t ld, int64_t tokens, const int32_t* positions,
                       int32_t num_heads, int32_t head_dim, double theta, cudaStream_t stream,
                       ScalarType type = ScalarType::kF32);

}  // namespace orca::kernels
