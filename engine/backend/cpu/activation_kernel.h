// The CPU backend's activations over rows of float32 (Backend::GatedActivation and
// ActivationInPlace): out[j] = act(gate[j]) * up[j], or x[j] = act(x[j]).
//
// SiLU, x / (1 + exp(-x)), runs on AVX-512 or AVX2 lanes where the CPU has them
// (vec_exp.h's exp, an IEEE division: within 4e-7 of the float64 value relative to
// it, or 1e-36 absolute: below x = -88 the result is 0; NaN stays NaN); the GELUs, and every
// activation without AVX2, use the scalar formulas of ActivationScalar (std::exp, std::tanh,
// std::erf). A SiLU over std::exp took 3-4 % of a prefill's time (docs/benchmarks.md section 15).
#pragma once

#include <cstdint>

#include "engine/backend/backend.h"
#include "engine/backend/cpu/simd.h"

namespace orca {

float ActivationScalar(float x, Activation act);

// out[j] = act(gate[j]) * up[j] for j in [0, n); up == nullptr: out[j] = act(gate[j])
// (out may be gate then). `level` above the CPU's is lowered to it.
void ActivationRow(const float* gate, const float* up, int64_t n, Activation act, float* out,
                   SimdLevel level = CpuSimdLevel());

}  // namespace orca
