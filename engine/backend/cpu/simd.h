// What the CPU the process runs on supports, for kernels that pick their path at run
// time (the binaries are built for the baseline x86-64 so that they run anywhere), and
// the vector helpers those kernels share. Include only from files whose vector
// functions carry __attribute__((target(...))) with at least the helpers' features.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "engine/backend/cpu/half.h"

namespace orca {

// The kernel paths, narrowest first. kAvx2: AVX2 + FMA + F16C (every CPU with AVX2 we
// know of has all three). kAvx512: AVX-512 F, BW, DQ and VL besides (Intel since
// Skylake-SP, AMD since Zen 4).
enum class SimdLevel { kScalar = 0, kAvx2 = 1, kAvx512 = 2 };

inline const char* SimdLevelName(SimdLevel l) {
  return l == SimdLevel::kAvx512 ? "avx512" : l == SimdLevel::kAvx2 ? "avx2" : "scalar";
}

// The widest level this CPU runs.
inline SimdLevel CpuMaxSimdLevel() {
  static const SimdLevel level = [] {
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma") ||
        !__builtin_cpu_supports("f16c")) {
      return SimdLevel::kScalar;
    }
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl")) {
      return SimdLevel::kAvx512;
    }
    return SimdLevel::kAvx2;
  }();
  return level;
}

// The level kernels use: CpuMaxSimdLevel(), capped by ORCA_CPU_SIMD=scalar|avx2 when set
// (benchmarks compare the paths in one build; a level the CPU lacks is never chosen).
inline SimdLevel CpuSimdLevel() {
  static const SimdLevel level = [] {
    SimdLevel l = CpuMaxSimdLevel();
    const char* cap = std::getenv("ORCA_CPU_SIMD");
    if (cap != nullptr && std::strcmp(cap, "scalar") == 0) l = SimdLevel::kScalar;
    if (cap != nullptr && std::strcmp(cap, "avx2") == 0 && l > SimdLevel::kAvx2) {
      l = SimdLevel::kAvx2;
    }
    return l;
  }();
  return level;
}

// The sum of the eight lanes of `v`.
__attribute__((target("avx2,fma"))) inline float Sum8(__m256 v) {
  __m128 lo = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  lo = _mm_add_ps(lo, _mm_movehl_ps(lo, lo));
  lo = _mm_add_ss(lo, _mm_shuffle_ps(lo, lo, 1));
  return _mm_cvtss_f32(lo);
}

#define ORCA_AVX2 __attribute__((target("avx2,fma,f16c")))

// Eight elements as float32 (16-bit ones widened exactly).
__attribute__((target("avx2,fma,f16c"))) inline __m256 Load8(const float* p) {
  return _mm256_loadu_ps(p);
}
__attribute__((target("avx2,fma,f16c"))) inline __m256 Load8(const Fp16* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}
__attribute__((target("avx2,fma,f16c"))) inline __m256 Load8(const Bf16* p) {
  const __m256i wide = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16));
}

// r[i][j] = r[j][i]: eight rows of eight floats transposed in registers (two rounds of
// in-lane unpacks and shuffles, then one of 128-bit permutes).
__attribute__((target("avx2,fma"))) inline void Transpose8x8(__m256 r[8]) {
  const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
  const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
  const __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
  const __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
  const __m256 s0 = _mm256_shuffle_ps(t0, t2, 0x44), s1 = _mm256_shuffle_ps(t0, t2, 0xEE);
  const __m256 s2 = _mm256_shuffle_ps(t1, t3, 0x44), s3 = _mm256_shuffle_ps(t1, t3, 0xEE);
  const __m256 s4 = _mm256_shuffle_ps(t4, t6, 0x44), s5 = _mm256_shuffle_ps(t4, t6, 0xEE);
  const __m256 s6 = _mm256_shuffle_ps(t5, t7, 0x44), s7 = _mm256_shuffle_ps(t5, t7, 0xEE);
  r[0] = _mm256_permute2f128_ps(s0, s4, 0x20);
  r[1] = _mm256_permute2f128_ps(s1, s5, 0x20);
  r[2] = _mm256_permute2f128_ps(s2, s6, 0x20);
  r[3] = _mm256_permute2f128_ps(s3, s7, 0x20);
  r[4] = _mm256_permute2f128_ps(s0, s4, 0x31);
  r[5] = _mm256_permute2f128_ps(s1, s5, 0x31);
  r[6] = _mm256_permute2f128_ps(s2, s6, 0x31);
  r[7] = _mm256_permute2f128_ps(s3, s7, 0x31);
}

#define ORCA_AVX512 __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma,f16c")))

// Sixteen elements as float32.
ORCA_AVX512 inline __m512 Load16(const float* p) { return _mm512_loadu_ps(p); }
ORCA_AVX512 inline __m512 Load16(const Fp16* p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}
ORCA_AVX512 inline __m512 Load16(const Bf16* p) {
  const __m512i wide =
      _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  return _mm512_castsi512_ps(_mm512_slli_epi32(wide, 16));
}

// The elements of p selected by `mask` as float32, the others zero; unselected elements
// are not read (AVX-512 masked loads do not fault on them).
ORCA_AVX512 inline __m512 LoadPart16(const float* p, __mmask16 mask) {
  return _mm512_maskz_loadu_ps(mask, p);
}
ORCA_AVX512 inline __m512 LoadPart16(const Fp16* p, __mmask16 mask) {
  return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(mask, p));
}
ORCA_AVX512 inline __m512 LoadPart16(const Bf16* p, __mmask16 mask) {
  const __m512i wide = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(mask, p));
  return _mm512_castsi512_ps(_mm512_slli_epi32(wide, 16));
}

#define ORCA_AVX512_BF16 \
  __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx512bf16,avx2,fma,f16c")))

// Whether the CPU multiplies bfloat16 pairs: AVX512_BF16's vdpbf16ps (every CPU with
// AMX-BF16 has it too), and its vcvtneps2bf16. Not implied by any SimdLevel.
inline bool CpuHasBf16Dots() {
  static const bool has = __builtin_cpu_supports("avx512bf16");
  return has;
}

// dst = the n floats of src as bfloat16 bits, rounded to nearest even (NaN stays NaN),
// sixteen at a time. Only where CpuHasBf16Dots().
ORCA_AVX512_BF16 inline void RoundToBf16(const float* src, int n, uint16_t* dst) {
  int i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256bh b = _mm512_cvtneps_pbh(_mm512_loadu_ps(src + i));
    std::memcpy(dst + i, &b, sizeof(b));
  }
  for (; i < n; ++i) dst[i] = F32ToBf16(src[i]);
}

// The mask selecting the first n (0..16) of sixteen lanes.
inline __mmask16 FirstLanes(int n) {
  return static_cast<__mmask16>(n >= 16 ? 0xffffu : (1u << n) - 1u);
}

}  // namespace orca
