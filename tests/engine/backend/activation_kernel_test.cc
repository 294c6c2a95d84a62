// ActivationRow on every SIMD path this CPU has, against float64 formulas (not the
// kernel's own scalar path): SiLU gated and in place, lengths that end mid-vector, large
// magnitudes on both sides, NaN.
#include "engine/backend/cpu/activation_kernel.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "tests/engine/backend/cpu_kernel_test_util.h"

namespace orca {
namespace {

using testing::LevelsHere;

double Silu(double x) { return x / (1.0 + std::exp(-x)); }

// Inputs over the range activations see, plus the exp clamps' neighbourhoods.
std::vector<float> Inputs(int n, std::mt19937& rng) {
  std::normal_distribution<float> nd(0.0f, 4.0f);
  std::vector<float> x(n);
  for (float& v : x) v = nd(rng);
  const float edges[] = {0.0f,  -0.0f,  1e-30f, -1e-30f, 86.0f,  -86.0f,  87.5f, -87.5f,
                         88.5f, -88.5f, 100.0f, -100.0f, 200.0f, -200.0f, 1e30f, -1e30f};
  for (int i = 0; i < n && i < static_cast<int>(std::size(edges)); ++i) x[i] = edges[i];
  return x;
}

TEST(ActivationKernelTest, SiluMatchesFloat64) {
  std::mt19937 rng(3);
  for (SimdLevel level : LevelsHere()) {
    for (int n : {1, 7, 8, 15, 16, 17, 33, 2048, 2051}) {
      const std::vector<float> g = Inputs(n, rng);
      std::vector<float> u(n), gated(n + 1, 777.0f), inplace = g;
      std::uniform_real_distribution<float> uu(-2, 2);
      for (float& v : u) v = uu(rng);
      ActivationRow(g.data(), u.data(), n, Activation::kSilu, gated.data(), level);
      ActivationRow(inplace.data(), nullptr, n, Activation::kSilu, inplace.data(), level);
      for (int j = 0; j < n; ++j) {
        const double want = Silu(g[j]);
        const double tol = 4e-7 * std::abs(want) + 1e-36;  // below 1e-36: zero
        EXPECT_NEAR(inplace[j], want, tol) << SimdLevelName(level) << " n=" << n << " x=" << g[j];
        EXPECT_NEAR(gated[j], want * u[j], tol * std::abs(u[j]))
            << SimdLevelName(level) << " n=" << n << " x=" << g[j];
      }
      EXPECT_EQ(gated[n], 777.0f) << "wrote past the row";
    }
  }
}

TEST(ActivationKernelTest, SiluKeepsNan) {
  for (SimdLevel level : LevelsHere()) {
    std::vector<float> x(19, 1.0f);
    x[3] = x[18] = std::numeric_limits<float>::quiet_NaN();
    ActivationRow(x.data(), nullptr, 19, Activation::kSilu, x.data(), level);
    EXPECT_TRUE(std::isnan(x[3])) << SimdLevelName(level);
    EXPECT_TRUE(std::isnan(x[18])) << SimdLevelName(level);
    EXPECT_NEAR(x[0], Silu(1.0), 1e-6);
  }
}

TEST(ActivationKernelTest, GelusFollowTheirFormulas) {
  for (SimdLevel level : LevelsHere()) {
    const std::vector<float> x = {-3.0f, -0.5f, 0.0f, 0.7f, 2.5f};
    std::vector<float> tanh_out(x.size()), erf_out(x.size());
    ActivationRow(x.data(), nullptr, 5, Activation::kGeluTanh, tanh_out.data(), level);
    ActivationRow(x.data(), nullptr, 5, Activation::kGeluErf, erf_out.data(), level);
    for (size_t j = 0; j < x.size(); ++j) {
      const double v = x[j];
      const double t = 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
      const double e = 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)));
      EXPECT_NEAR(tanh_out[j], t, 1e-6) << v;
      EXPECT_NEAR(erf_out[j], e, 1e-6) << v;
    }
  }
}

}  // namespace
}  // namespace orca
