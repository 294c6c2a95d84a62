// SmallGemm against a double-precision reference, for every row count it serves, odd
// and tiny weight shapes (the odd last weight row, k not a multiple of 8 or 16, blocks
// that end mid-matrix), strided x and out, with and without bias, for float32,
// float16 and bfloat16 weights, on every SIMD path this CPU runs (scalar, AVX2,
// AVX-512).
#include "engine/backend/cpu/small_gemm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/common/dtype.h"
#include "tests/engine/backend/cpu_kernel_test_util.h"

namespace orca {
namespace {

using ::orca::testing::ExpectMatchesDoubleProduct;
using ::orca::testing::LevelsHere;
using ::orca::testing::Reversed;
using ::orca::testing::Serial;

float Narrow(float v, float*) { return v; }
Fp16 Narrow(float v, Fp16*) { return Fp16{F32ToF16(v)}; }
Bf16 Narrow(float v, Bf16*) { return Bf16{F32ToBf16(v)}; }

template <typename W>
void CheckAgainstDoubles(SimdLevel level) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1, 1);
  const int shapes[][2] = {{1, 1}, {3, 5}, {33, 17}, {64, 768}, {97, 100}, {130, 2048}, {5, 31}};
  for (const auto& shape : shapes) {
    const int n = shape[0], k = shape[1];
    for (int m = 1; m <= kSmallGemmMaxRows; ++m) {
      for (bool with_bias : {false, true}) {
        const int64_t ldx = k + 3, ldo = n + 5;
        std::vector<float> x(m * ldx), bias(n);
        std::vector<W> w(static_cast<size_t>(n) * k);
        for (float& v : x) v = u(rng);
        for (W& v : w) v = Narrow(u(rng), static_cast<W*>(nullptr));
        for (float& v : bias) v = u(rng);
        std::vector<float> out(m * ldo, 12345.0f);
        SmallGemm(m, n, k, x.data(), ldx, w.data(), with_bias ? bias.data() : nullptr, out.data(),
                  ldo, m % 2 ? Serial : Reversed, level);
        std::vector<float> wide(w.size());  // the same values, exactly
        for (size_t i = 0; i < w.size(); ++i) wide[i] = ToF32(w[i]);
        ExpectMatchesDoubleProduct(
            m, n, k, x.data(), ldx, wide.data(), with_bias ? bias.data() : nullptr, out.data(), ldo,
            12345.0f, absl::StrCat(SimdLevelName(level), " m=", m, " n=", n, " k=", k));
      }
    }
  }
}

TEST(SmallGemmTest, MatchesADoubleReference) {
  for (SimdLevel level : LevelsHere()) CheckAgainstDoubles<float>(level);
}

TEST(SmallGemmTest, SixteenBitWeightsMatchADoubleReference) {
  for (SimdLevel level : LevelsHere()) {
    CheckAgainstDoubles<Fp16>(level);
    CheckAgainstDoubles<Bf16>(level);
  }
}

TEST(SmallGemmTest, WideningIsExact) {
  std::mt19937 rng(3);
  std::uniform_int_distribution<int> bits(0, 0xffff);
  std::vector<Bf16> b(1001);
  std::vector<Fp16> h(1001);
  for (auto& v : b) v.bits = static_cast<uint16_t>(bits(rng));
  for (auto& v : h) v.bits = static_cast<uint16_t>(bits(rng));
  for (SimdLevel level : LevelsHere()) {
    std::vector<float> wb(b.size()), wh(h.size());
    WidenToF32(b.data(), static_cast<int64_t>(b.size()), wb.data(), level);
    WidenToF32(h.data(), static_cast<int64_t>(h.size()), wh.data(), level);
    for (size_t i = 0; i < b.size(); ++i) {
      const float eb = Bf16ToF32(b[i].bits), eh = F16ToF32(h[i].bits);
      // Same bits, NaN included (NaN payloads are kept by both widenings).
      ASSERT_EQ(std::memcmp(&wb[i], &eb, 4), 0) << SimdLevelName(level) << " bf16 " << b[i].bits;
      if (std::isnan(eh)) {
        ASSERT_TRUE(std::isnan(wh[i])) << SimdLevelName(level);
      } else {
        ASSERT_EQ(wh[i], eh) << SimdLevelName(level) << " f16 " << h[i].bits;
      }
    }
  }
}

}  // namespace
}  // namespace orca
