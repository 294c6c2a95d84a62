// What the CPU the process runs on supports, for kernels that pick an AVX2 path at run
// time (the binaries are built for the baseline x86-64 so that they run anywhere), and
// the AVX2 helpers those kernels share. Include only from files whose AVX2 functions
// carry __attribute__((target("avx2,fma"))) (or a superset).
#pragma once

#include <immintrin.h>

namespace orca {

inline bool CpuHasAvx2Fma() {
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return has;
}

// F16C: the vcvtph2ps / vcvtps2ph conversions between float16 and float32 (every CPU
// with AVX2 that we know of has it, but it is a separate CPUID bit).
inline bool CpuHasF16c() {
  static const bool has = __builtin_cpu_supports("f16c");
  return has;
}

// The sum of the eight lanes of `v`.
__attribute__((target("avx2,fma"))) inline float Sum8(__m256 v) {
  __m128 lo = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  lo = _mm_add_ps(lo, _mm_movehl_ps(lo, lo));
  lo = _mm_add_ss(lo, _mm_shuffle_ps(lo, lo, 1));
  return _mm_cvtss_f32(lo);
}

}  // namespace orca
