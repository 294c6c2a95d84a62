// The inner loop of the CPU backend's paged attention: one (sequence, head) pair.
// AVX2+FMA when the CPU has them (dot products, a vectorized exp, and the weighted sum
// of values with the accumulators in registers), a portable loop otherwise. The scalar
// dot product cannot be vectorized by the compiler (it would reorder a float sum), and
// left scalar it made attention the largest cost of a long prefill.
#pragma once

#include <cstdint>

namespace orca {

// For query row i in [0, q_len), at position p = kv_len - q_len + i, writes
//   out[i] = softmax_j(scale * q[i] . k[j]) weighted sum of v[j], j in [0, p]
// (causal). q rows have stride ldq and out rows ldo; krow[j] and vrow[j] point to the
// head_dim floats of cached key and value j. scores: scratch of at least kv_len floats.
void AttendOneHead(int head_dim, int q_len, int kv_len, const float* q, int64_t ldq,
                   const float* const* krow, const float* const* vrow, float scale, float* scores,
                   float* out, int64_t ldo);

}  // namespace orca
