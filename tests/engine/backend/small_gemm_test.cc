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

#include "engine/common/dtype.h"

namespace orca {
namespace {

void Serial(int64_t count, const std::function<void(int64_t)>& fn) {
  for (int64_t i = 0; i < count; ++i) fn(i);
}

// Runs tasks in reverse: the result must not depend on the order.
void Reversed(int64_t count, const std::function<void(int64_t)>& fn) {
  for (int64_t i = count - 1; i >= 0; --i) fn(i);
}

float Narrow(float v, float*) { return v; }
Fp16 Narrow(float v, Fp16*) { return Fp16{F32ToF16(v)}; }
Bf16 Narrow(float v, Bf16*) { return Bf16{F32ToBf16(v)}; }

std::vector<SimdLevel> LevelsHere() {
  std::vector<SimdLevel> levels = {SimdLevel::kScalar};
  if (CpuMaxSimdLevel() >= SimdLevel::kAvx2) levels.push_back(SimdLevel::kAvx2);
  if (CpuMaxSimdLevel() >= SimdLevel::kAvx512) levels.push_back(SimdLevel::kAvx512);
  return levels;
}

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
        for (int r = 0; r < m; ++r) {
          for (int j = 0; j < n; ++j) {
            double ref = with_bias ? bias[j] : 0.0, mag = std::abs(ref);
            for (int c = 0; c < k; ++c) {
              const double p = static_cast<double>(x[r * ldx + c]) *
                               static_cast<double>(ToF32(w[static_cast<size_t>(j) * k + c]));
              ref += p;
              mag += std::abs(p);
            }
            ASSERT_NEAR(out[r * ldo + j], ref, 1e-5 * mag + 1e-6)
                << SimdLevelName(level) << " m=" << m << " n=" << n << " k=" << k << " row " << r
                << " col " << j;
          }
          for (int j = n; j < ldo; ++j) {
            ASSERT_EQ(out[r * ldo + j], 12345.0f) << "wrote past n (m=" << m << " n=" << n << ")";
          }
        }
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
