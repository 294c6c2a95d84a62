// The bfloat16 GEMM rate of this machine, for the engine benchmark's roofline: oneDNN's
// matmul of an [n, n] bfloat16 matrix by an [n, n] bfloat16 weight in oneDNN's own layout
// (reordered once), float32 sums, on `threads` OpenMP threads (0: oneDNN's default, every
// core). An independent library's peak, as sgemm's is OpenBLAS's: the roof the engine's
// bfloat16 GEMMs are measured against, not one of them.
#pragma once

namespace orca::bench {

// GFLOP/s over about `seconds` of repeated n x n x n products (after one warm-up); 0
// where the build has no oneDNN, the CPU does not multiply bfloat16 pairs (AVX512_BF16,
// AMX) or oneDNN refuses the shape.
double Bf16GemmGflops(int n, double seconds, int threads);

}  // namespace orca::bench
