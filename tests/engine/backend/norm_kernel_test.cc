// NormRow and RopeRow on every SIMD path this CPU has, against float64 evaluations of
// their definitions (not the kernels' own scalar path): RMSNorm and LayerNorm with and
// without the residual add, widths that end mid-vector on each path (1, 7, 15, 17, 33,
// 771) and a 4096-wide row; rows with a large offset (LayerNorm's two-pass variance);
// RoPE with half widths that are and are not multiples of 8 and 16. The backend-level
// test (cpu_norm_rope_test) checks the threads and strided views around them.
#include "engine/backend/cpu/norm_kernel.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "tests/engine/backend/cpu_kernel_test_util.h"

namespace orca {
namespace {

using testing::LevelsHere;

std::vector<float> Random(int n, float scale, float offset, std::mt19937& rng) {
  std::normal_distribution<float> nd(0, 1);
  std::vector<float> v(n);
  for (float& x : v) x = nd(rng) * scale + offset;
  return v;
}

TEST(NormKernelTest, NormRowMatchesFloat64) {
  std::mt19937 rng(7);
  const float eps = 1e-5f;
  for (SimdLevel level : LevelsHere()) {
    for (int n : {1, 7, 8, 15, 16, 17, 33, 771, 4096}) {
      for (bool layer_norm : {false, true}) {
        for (bool add : {false, true}) {
          const std::string what = std::string(SimdLevelName(level)) + " n=" + std::to_string(n) +
                                   (layer_norm ? " LayerNorm" : " RMSNorm") +
                                   (add ? " after the add" : "");
          // An offset of 100 against a spread of 1: a one-pass variance in float loses it.
          std::vector<float> x = Random(n, 1.0f, layer_norm ? 100.0f : 0.0f, rng);
          const std::vector<float> delta = Random(n, 0.5f, 0.0f, rng), w = Random(n, 1.0f, 0, rng),
                                   b = Random(n, 0.5f, 0.0f, rng);
          std::vector<double> in(n);
          for (int j = 0; j < n; ++j) in[j] = add ? double{float(x[j] + delta[j])} : x[j];
          double mean = 0, var = 0;
          for (int j = 0; j < n; ++j) mean += in[j];
          mean /= n;
          for (int j = 0; j < n; ++j) {
            const double c = layer_norm ? in[j] - mean : in[j];
            var += c * c;
          }
          const double inv = 1.0 / std::sqrt(var / n + eps);
          std::vector<float> out(n + 1, 777.0f);
          NormRow(x.data(), add ? delta.data() : nullptr, w.data(), layer_norm ? b.data() : nullptr,
                  eps, n, out.data(), level);
          for (int j = 0; j < n; ++j) {
            if (add) {
              ASSERT_EQ(x[j], float(in[j])) << what << " residual " << j;
            }
            const double want =
                layer_norm ? (in[j] - mean) * inv * w[j] + b[j] : in[j] * inv * w[j];
            // Float32 scaling: a few roundings (u = 2^-24) of the normalized value and the
            // bias, and LayerNorm's mean rounded to float32 before it is subtracted.
            const double u = std::ldexp(1.0, -24);
            const double scaled = std::abs(layer_norm ? (in[j] - mean) * inv * w[j] : want);
            const double tol =
                6 * u * scaled +
                (layer_norm ? 2 * u * (std::abs(b[j]) + std::abs(mean * inv * w[j])) : 0.0) + 1e-30;
            ASSERT_NEAR(out[j], want, tol) << what << " at " << j;
          }
          EXPECT_EQ(out[n], 777.0f) << what << ": wrote past the row";
        }
      }
    }
  }
}

TEST(NormKernelTest, NormRowWritesOverTheDelta) {
  // The fused forms' out is their delta: each element read before it is written.
  std::mt19937 rng(8);
  for (SimdLevel level : LevelsHere()) {
    const int n = 37;
    std::vector<float> x = Random(n, 1, 0, rng), x2 = x, delta = Random(n, 1, 0, rng),
                       w = Random(n, 1, 0, rng), separate(n);
    NormRow(x2.data(), delta.data(), w.data(), nullptr, 1e-6f, n, separate.data(), level);
    NormRow(x.data(), delta.data(), w.data(), nullptr, 1e-6f, n, delta.data(), level);
    EXPECT_EQ(delta, separate) << SimdLevelName(level);
  }
}

TEST(NormKernelTest, RopeRowMatchesFloat64) {
  std::mt19937 rng(9);
  std::uniform_real_distribution<double> angle(-10, 10);
  for (SimdLevel level : LevelsHere()) {
    for (int head_dim : {2, 6, 16, 34, 64, 80, 128, 256}) {
      const int half = head_dim / 2, heads = 3;
      std::vector<float> cos_sin(2 * half);
      for (int i = 0; i < half; ++i) {
        const double a = angle(rng);
        cos_sin[i] = static_cast<float>(std::cos(a));
        cos_sin[half + i] = static_cast<float>(std::sin(a));
      }
      std::vector<float> row = Random(heads * head_dim + 1, 2.0f, 0.0f, rng);
      row.back() = 777.0f;
      const std::vector<float> in = row;
      RopeRow(row.data(), heads, head_dim, cos_sin.data(), level);
      for (int h = 0; h < heads; ++h) {
        for (int i = 0; i < half; ++i) {
          const double a = in[h * head_dim + i], b = in[h * head_dim + half + i];
          const double c = cos_sin[i], s = cos_sin[half + i];
          // One float32 rounding (u = 2^-24) of each product and of their sum (or fewer,
          // through an FMA): within 2u of the products' magnitudes.
          const double u = std::ldexp(1.0, -24);
          ASSERT_NEAR(row[h * head_dim + i], a * c - b * s,
                      2 * u * (std::abs(a * c) + std::abs(b * s)) + 1e-30)
              << SimdLevelName(level) << " head_dim=" << head_dim << " head " << h << " i=" << i;
          ASSERT_NEAR(row[h * head_dim + half + i], b * c + a * s,
                      2 * u * (std::abs(b * c) + std::abs(a * s)) + 1e-30)
              << SimdLevelName(level) << " head_dim=" << head_dim << " head " << h << " i=" << i;
        }
      }
      EXPECT_EQ(row.back(), 777.0f) << "wrote past the heads";
    }
  }
}

}  // namespace
}  // namespace orca
