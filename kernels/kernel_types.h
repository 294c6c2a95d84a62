// Plain types shared by the kernel launchers and their callers. Host-only C++; no CUDA
// headers, so the CUDA backend (compiled by the host compiler) can include it.
#pragma once

#include <cstdint>

namespace orca::kernels {

// Element type of a weight, an embedding table, a KV cache or an activation matrix
// (16-bit activations where a launcher says it takes them; arithmetic is float32's).
enum class ScalarType : int32_t { kF32, kF16, kBF16 };

// Element-wise activation functions (match orca::Activation of engine/backend).
enum class ActivationKind : int32_t { kSilu, kGeluTanh, kGeluErf };

}  // namespace orca::kernels
