// The CPU backend's row kernels for normalization and rotary position embedding
// (Backend::RmsNorm, LayerNorm, their fused residual-add forms, and Rope), one row at a
// time; the backend spreads rows over its threads.
//
// Norm sums run in float64 (a float running sum over 4096-wide rows loses ~1e-4
// relative), on AVX-512 or AVX2 lanes where the CPU has them: sixteen (AVX2: eight) floats
// widened to doubles per step into independent partial sums; the scaling pass is float32.
// Compiled for the baseline ISA, the portable loops ran at ~2 ns an element: a 16 x 512
// prefill of llama-110m spent 0.16 s in norms and 0.08 s in RoPE against 1.8 s in all
// (Xeon, docs/benchmarks.md section 24).
#pragma once

#include <cstdint>

#include "engine/backend/cpu/simd.h"

namespace orca {

// x[j] += delta[j] when delta is given (the residual add), then
//   RMSNorm (bias == nullptr):  out[j] = x[j] / sqrt(mean(x^2) + eps) * w[j]
//   LayerNorm:                  out[j] = (x[j] - mean(x)) / sqrt(var(x) + eps) * w[j] + bias[j]
// for j in [0, n). out may be delta (the fused forms write over it) but not x. Within
// ~2 float32 roundings of the float64 value (the sums are float64; the order of their
// terms depends on the level). `level` above the CPU's is lowered to it.
void NormRow(float* x, const float* delta, const float* w, const float* bias, float eps, int64_t n,
             float* out, SimdLevel level = CpuSimdLevel());

// Rotate-half RoPE of one token's num_heads heads of head_dim (even) values, in place:
// for each head v and i in [0, head_dim / 2), with c = cos_sin[i], s = cos_sin[half + i],
//   (v[i], v[i + half]) <- (v[i] c - v[i + half] s, v[i + half] c + v[i] s).
// Heads lie head_dim apart from row. Each output within one float32 rounding of the
// exact value of its two products' sum (fused multiply-adds where the CPU has them).
void RopeRow(float* row, int num_heads, int head_dim, const float* cos_sin,
             SimdLevel level = CpuSimdLevel());

}  // namespace orca
