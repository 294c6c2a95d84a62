// PackedGemm against a double-precision reference: row counts from one (decode) past
// the tiles' heights to prefill-sized batches, weight shapes that end mid-panel and
// mid-pair (n = 1, 17, 33, 100), k not a multiple of anything and k past one
// kPackedKBlock (so a tile resumes from the partial sums it stored), strided x and out,
// with and without bias, tasks run in any order, on every SIMD path this CPU runs.
#include "engine/backend/cpu/packed_gemm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "absl/strings/str_cat.h"
#include "tests/engine/backend/cpu_kernel_test_util.h"

namespace orca {
namespace {

using ::orca::testing::ExpectMatchesDoubleProduct;
using ::orca::testing::LevelsHere;
using ::orca::testing::Reversed;
using ::orca::testing::Serial;

void CheckShape(SimdLevel level, int m, int n, int k, bool with_bias, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-1, 1);
  const int64_t ldx = k + 3, ldo = n + 5;
  std::vector<float> x(m * ldx), w(static_cast<size_t>(n) * k), bias(n);
  for (float& v : x) v = u(rng);
  for (float& v : w) v = u(rng);
  for (float& v : bias) v = u(rng);
  std::vector<float> packed(PackedWeightFloats(n, k), -7.0f);
  PackWeights(w.data(), n, k, packed.data());
  std::vector<float> out(m * ldo, 12345.0f);
  PackedGemm(m, n, k, x.data(), ldx, packed.data(), with_bias ? bias.data() : nullptr, out.data(),
             ldo, m % 2 ? Serial : Reversed, level);
  ExpectMatchesDoubleProduct(m, n, k, x.data(), ldx, w.data(), with_bias ? bias.data() : nullptr,
                             out.data(), ldo, 12345.0f,
                             absl::StrCat(SimdLevelName(level), " m=", m, " n=", n, " k=", k));
}

TEST(PackedGemmTest, MatchesADoubleReference) {
  std::mt19937 rng(11);
  const int shapes[][2] = {{1, 1},    {17, 5},   {33, 31},
                           {100, 97}, {64, 768}, {40, 2 * kPackedKBlock + 3}};
  for (SimdLevel level : LevelsHere()) {
    for (const auto& [n, k] : shapes) {
      for (int m : {1, 2, 5, 6, 7, 8, 9, 13, 16, 17, 40}) {
        for (bool with_bias : {false, true}) CheckShape(level, m, n, k, with_bias, rng);
      }
    }
  }
}

TEST(PackedGemmTest, PrefillSizedBatches) {
  std::mt19937 rng(12);
  for (SimdLevel level : LevelsHere()) CheckShape(level, 203, 130, 300, true, rng);
}

TEST(PackedGemmTest, PacksPanelsOfSixteenRowsKMajorPaddedWithZeros) {
  const int n = 20, k = 3;
  std::vector<float> w(n * k);
  for (int i = 0; i < n * k; ++i) w[i] = static_cast<float>(i + 1);
  ASSERT_EQ(PackedWeightFloats(n, k), 32 * k);  // two panels: n rounds up to 32 rows
  std::vector<float> packed(PackedWeightFloats(n, k), -1.0f);
  PackWeights(w.data(), n, k, packed.data());
  for (int j = 0; j < 32; ++j) {
    for (int c = 0; c < k; ++c) {
      const float want = j < n ? w[j * k + c] : 0.0f;
      EXPECT_EQ(packed[((j / 16) * k + c) * 16 + j % 16], want) << "row " << j << " col " << c;
    }
  }
}

TEST(PackedGemmTest, NoInputColumnsGiveTheBias) {
  const float bias[3] = {1.5f, -2.0f, 0.25f};
  std::vector<float> packed(PackedWeightFloats(3, 0));
  PackWeights(nullptr, 3, 0, packed.data());
  for (SimdLevel level : LevelsHere()) {
    float out[2 * 3] = {9, 9, 9, 9, 9, 9};
    PackedGemm(2, 3, 0, nullptr, 0, packed.data(), bias, out, 3, Serial, level);
    for (int r = 0; r < 2; ++r) {
      for (int j = 0; j < 3; ++j) EXPECT_EQ(out[r * 3 + j], bias[j]) << SimdLevelName(level);
    }
  }
}

}  // namespace
}  // namespace orca
