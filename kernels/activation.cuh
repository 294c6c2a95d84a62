// Element-wise activations of float32 activations: the gated MLP activation
// (act(gate) * up, SwiGLU for Llama) and an in-place activation (GPT-2's GELU).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/kernel_types.h"

namespace orca::kernels {

// out[r, j] = act(gate_up[r, j]) * gate_up[r, inter + j] for j < inter; gate_up rows
// are `gate_up_ld` floats apart, out rows `out_ld`. Returns the launch error, if any.
cudaError_t LaunchGatedActivation(const float* gate_up, int64_t gate_up_ld, int64_t rows,
                                  int64_t inter, ActivationKind act, float* out, int64_t out_ld,
                                  cudaStream_t stream);

// x[r, j] = act(x[r, j]) for a [rows, cols] matrix with rows `ld` floats apart.
cudaError_t LaunchActivationInPlace(float* x, int64_t ld, int64_t rows, int64_t cols,
                                    ActivationKind act, cudaStream_t stream);

}  // namespace orca::kernels
