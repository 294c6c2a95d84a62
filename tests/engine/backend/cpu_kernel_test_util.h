// Helpers shared by the CPU GEMM kernels' tests (small_gemm_test, packed_gemm_test): the
// SIMD paths this CPU runs, ParallelForFn stand-ins that run tasks in order or reversed
// (a kernel's result must not depend on the order of its tasks), and the float64
// reference their outputs are checked against.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "engine/backend/cpu/simd.h"

namespace orca::testing {

inline void Serial(int64_t count, const std::function<void(int64_t)>& fn) {
  for (int64_t i = 0; i < count; ++i) fn(i);
}

inline void Reversed(int64_t count, const std::function<void(int64_t)>& fn) {
  for (int64_t i = count - 1; i >= 0; --i) fn(i);
}

// Scalar, then AVX2 and AVX-512 where this CPU has them.
inline std::vector<SimdLevel> LevelsHere() {
  std::vector<SimdLevel> levels = {SimdLevel::kScalar};
  if (CpuMaxSimdLevel() >= SimdLevel::kAvx2) levels.push_back(SimdLevel::kAvx2);
  if (CpuMaxSimdLevel() >= SimdLevel::kAvx512) levels.push_back(SimdLevel::kAvx512);
  return levels;
}

// Checks out [m, n] (row stride ldo) = x [m, k] (row stride ldx) . w [n, k]^T (+ bias)
// against a float64 product, each output within 1e-5 of the sum of its products'
// magnitudes, and that columns [n, ldo) still hold `untouched`. `what` names the case.
inline void ExpectMatchesDoubleProduct(int m, int n, int k, const float* x, int64_t ldx,
                                       const float* w, const float* bias, const float* out,
                                       int64_t ldo, float untouched, const std::string& what) {
  for (int r = 0; r < m; ++r) {
    for (int j = 0; j < n; ++j) {
      double ref = bias != nullptr ? bias[j] : 0.0, mag = std::abs(ref);
      for (int c = 0; c < k; ++c) {
        const double p = static_cast<double>(x[r * ldx + c]) * w[static_cast<int64_t>(j) * k + c];
        ref += p;
        mag += std::abs(p);
      }
      ASSERT_NEAR(out[r * ldo + j], ref, 1e-5 * mag + 1e-6) << what << " row " << r << " col " << j;
    }
    for (int64_t j = n; j < ldo; ++j) {
      ASSERT_EQ(out[r * ldo + j], untouched) << what << ": wrote past n";
    }
  }
}

}  // namespace orca::testing
