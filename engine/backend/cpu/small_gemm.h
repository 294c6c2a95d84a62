// Small-batch GEMM for decode iterations: out[m, n] = dot(x[m, :], w[n, :]) (+ bias[n])
// for a few rows m (decode batches). BLAS sgemm packs the whole weight matrix for every
// call, which for a handful of rows costs several times a matrix-vector product; this
// kernel streams each weight row once and reuses it for all rows of x (kept in cache),
// so a small batch costs about what one sequence costs. AVX2+FMA when the CPU has them,
// a portable loop otherwise. Thread-safe; `parallel_for` spreads the rows of w.
#pragma once

#include <cstdint>
#include <functional>

namespace orca {

// Largest number of x rows the kernel is used for.
inline constexpr int kSmallGemmMaxRows = 16;

// x: [m, k] with row stride ldx; w: [n, k] contiguous; out: [m, n] with row stride ldo.
// bias may be null. parallel_for(count, fn) must run fn(i) for i in [0, count).
void SmallGemm(
    int m, int n, int k, const float* x, int64_t ldx, const float* w, const float* bias, float* out,
    int64_t ldo,
    const std::function<void(int64_t, const std::function<void(int64_t)>&)>& parallel_for);

}  // namespace orca
