// SmallGemm against a double-precision reference, for every row count it serves, odd
// and tiny weight shapes (the odd last weight row, k not a multiple of 8, blocks that
// end mid-matrix), strided x and out, and with and without bias.
#include "engine/backend/cpu/small_gemm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace orca {
namespace {

void Serial(int64_t count, const std::function<void(int64_t)>& fn) {
  for (int64_t i = 0; i < count; ++i) fn(i);
}

// Runs tasks in reverse: the result must not depend on the order.
void Reversed(int64_t count, const std::function<void(int64_t)>& fn) {
  for (int64_t i = count - 1; i >= 0; --i) fn(i);
}

TEST(SmallGemmTest, MatchesADoubleReference) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1, 1);
  const int shapes[][2] = {{1, 1}, {3, 5}, {33, 17}, {64, 768}, {97, 100}, {130, 2048}};
  for (const auto& shape : shapes) {
    const int n = shape[0], k = shape[1];
    for (int m = 1; m <= kSmallGemmMaxRows; ++m) {
      for (bool with_bias : {false, true}) {
        const int64_t ldx = k + 3, ldo = n + 5;
        std::vector<float> x(m * ldx), w(static_cast<size_t>(n) * k), bias(n);
        for (float& v : x) v = u(rng);
        for (float& v : w) v = u(rng);
        for (float& v : bias) v = u(rng);
        std::vector<float> out(m * ldo, 12345.0f);
        SmallGemm(m, n, k, x.data(), ldx, w.data(), with_bias ? bias.data() : nullptr, out.data(),
                  ldo, m % 2 ? Serial : Reversed);
        for (int r = 0; r < m; ++r) {
          for (int j = 0; j < n; ++j) {
            double ref = with_bias ? bias[j] : 0.0, mag = std::abs(ref);
            for (int c = 0; c < k; ++c) {
              ref += static_cast<double>(x[r * ldx + c]) * w[static_cast<size_t>(j) * k + c];
              mag +=
                  std::abs(static_cast<double>(x[r * ldx + c]) * w[static_cast<size_t>(j) * k + c]);
            }
            ASSERT_NEAR(out[r * ldo + j], ref, 1e-5 * mag + 1e-6)
                << "m=" << m << " n=" << n << " k=" << k << " row " << r << " col " << j;
          }
          for (int j = n; j < ldo; ++j) {
            ASSERT_EQ(out[r * ldo + j], 12345.0f) << "wrote past n (m=" << m << " n=" << n << ")";
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace orca
