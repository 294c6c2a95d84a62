// The GEMM rates of this machine, for the engine benchmark's roofline: independent
// libraries' peaks, the roofs the engine's own GEMMs are measured against, not theirs.
//
//   SgemmGflops     OpenBLAS's sgemm of two [n, n] float32 matrices, on OpenBLAS's
//                   threads (the CPU backend sets their number: engine_sweep.cc creates
//                   it first);
//   Bf16GemmGflops  oneDNN's matmul of an [n, n] bfloat16 matrix by an [n, n] bfloat16
//                   weight in oneDNN's own layout (reordered once), float32 sums, on
//                   `threads` OpenMP threads (0: oneDNN's default, every core).
//
// Both time the same way (GflopsOfRuns): one warm-up call, then calls for about
// `seconds`, 2 n^3 FLOPs each.
#pragma once

#include <functional>

namespace orca::bench {

// GFLOP/s of calls to `run`, each 2 n^3 FLOPs: one untimed warm-up call (thread start,
// page faults, kernel generation), then calls until `seconds` have passed (one at least).
double GflopsOfRuns(int n, double seconds, const std::function<void()>& run);

// GFLOP/s of repeated n x n x n sgemm calls over about `seconds`.
double SgemmGflops(int n, double seconds);

// GFLOP/s of repeated n x n x n bfloat16 products over about `seconds`; 0 where the build
// has no oneDNN, the CPU does not multiply bfloat16 pairs (AVX512_BF16, AMX) or oneDNN
// refuses the shape.
double Bf16GemmGflops(int n, double seconds, int threads);

}  // namespace orca::bench
