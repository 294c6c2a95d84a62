// Small-batch GEMM for decode iterations: out[m, n] = dot(x[m, :], w[n, :]) (+ bias[n])
// for a few rows m (decode batches). BLAS sgemm packs the whole weight matrix for every
// call, which for a handful of rows costs several times a matrix-vector product; this
// kernel streams each weight row once and reuses it for all rows of x (kept in cache),
// so a small batch costs about what one sequence costs. The model's float32 linear
// weights are packed at load and go through packed_gemm.h instead (faster from 2 rows);
// this kernel serves 16-bit weights and row-major float32 ones.
//
// Weights may be float32, float16 or bfloat16 (Fp16, Bf16): 16-bit rows are widened to
// float32 in registers, exactly, so the products and sums are float32 whatever the
// weights' type and only the bytes streamed halve. Paths by SimdLevel: AVX-512 (16
// lanes, up to 8 rows of x per pass, masked tails), AVX2+FMA+F16C (8 lanes, up to 4
// rows), and a portable loop. Thread-safe; `parallel_for` spreads the rows of w.
#pragma once

#include <cstdint>
#include <functional>

#include "engine/backend/cpu/half.h"
#include "engine/backend/cpu/simd.h"

namespace orca {

// Largest number of x rows the kernel is used for.
inline constexpr int kSmallGemmMaxRows = 16;

using ParallelForFn = std::function<void(int64_t, const std::function<void(int64_t)>&)>;

// x: [m, k] with row stride ldx; w: [n, k] contiguous; out: [m, n] with row stride ldo.
// bias may be null. parallel_for(count, fn) must run fn(i) for i in [0, count). W is
// float, Fp16 or Bf16; `level` above the CPU's (CpuMaxSimdLevel) is lowered to it.
template <typename W>
void SmallGemm(int m, int n, int k, const float* x, int64_t ldx, const W* w, const float* bias,
               float* out, int64_t ldo, const ParallelForFn& parallel_for,
               SimdLevel level = CpuSimdLevel());

// dst[i] = src[i] as float32 for i in [0, n) (exact; W is float, Fp16 or Bf16).
template <typename W>
void WidenToF32(const W* src, int64_t n, float* dst, SimdLevel level = CpuSimdLevel());

}  // namespace orca
