// Element-wise activation functions over float32 or 16-bit matrices (computed in
// float32, rounded to the matrix's type): the gated MLP activation (act(gate) * up,
// SwiGLU for Llama) and an in-place activation (GPT-2's GELU).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/kernel_types.h"

namespace orca::kernels {

// out[r, j] = act(gate_up[r, j]) * gate_up[r, inter + j] for j < inter; gate_up and
// out are of `type`, gate_up rows `gate_up_ld` elements apart, out rows `out_ld`.
// Returns the launch error, if any.
cudaError_t LaunchGatedActivation(const void* gate_up, int64_t gate_up_ld, int64_t rows,
                                  int64_t inter, ActivationKind act, void* out, int64_t out_ld,
                                  cudaStream_t stream, ScalarType type = ScalarType::kF32);

// x[r, j] = act(x[r, j]) for a [rows, cols] matrix of `type` with rows `ld` elements
// apart.
cudaError_t LaunchActivationInPlace(void* x, int64_t ld, int64_t rows, int64_t cols,
                                    ActivationKind act, cudaStream_t stream,
                                    ScalarType type = ScalarType::kF32);

}  // namespace orca::kernels
