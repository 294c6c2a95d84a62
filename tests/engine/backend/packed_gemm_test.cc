// PackedGemm, PackedGemmF16 and PackedGemmBf16 against a double-precision reference:
// row counts from one (decode) past the tiles' heights to prefill-sized batches, weight
// shapes that end mid-panel and mid-pair (n = 1, 17, 33, 100), k odd, not a multiple of
// anything and past one kPackedKBlock (so a tile resumes from the partial sums it
// stored), strided x and out, with and without bias, tasks run in any order, on every
// SIMD path this CPU runs. The 16-bit references take the weights' exact values, and x
// rounded to bfloat16 where PackedGemmBf16 says it rounds (its bfloat16 products).
// And a row's sums are the same bit for bit whatever the batch around it.
#include "engine/backend/cpu/packed_gemm.h"

#include "engine/backend/cpu/packed_gemm_amx.h"
#include "engine/backend/cpu/packed_gemm_bf16.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <utility>
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

// Random operands of an [m, k] x [n, k]^T product with 16-bit weights (x strided by
// ldx, out by ldo): w16 the weights' bits, w their exact values (the reference's).
struct Operands16 {
  int64_t ldx, ldo;
  std::vector<float> x, w, bias;
  std::vector<uint16_t> w16;
};

Operands16 RandomOperands16(int m, int n, int k, uint16_t (*narrow)(float),
                            float (*widen)(uint16_t), std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-1, 1);
  Operands16 o{k + 3, n + 5, {}, {}, {}, {}};
  o.x.resize(m * o.ldx);
  o.w.resize(static_cast<size_t>(n) * k);
  o.w16.resize(o.w.size());
  o.bias.resize(n);
  for (float& v : o.x) v = u(rng);
  for (size_t i = 0; i < o.w.size(); ++i) {
    o.w16[i] = narrow(u(rng));
    o.w[i] = widen(o.w16[i]);
  }
  for (float& v : o.bias) v = u(rng);
  return o;
}

void CheckShapeBf16(SimdLevel level, Bf16Products products, int m, int n, int k, bool with_bias,
                    std::mt19937& rng) {
  auto [ldx, ldo, x, w, bias, w16] = RandomOperands16(m, n, k, F32ToBf16, Bf16ToF32, rng);
  std::vector<uint16_t> packed(PackedWeightBf16Elements(n, k), 0x7fc0);  // NaN where unwritten
  PackWeightsBf16(w16.data(), n, k, packed.data());
  std::vector<float> out(m * ldo, 12345.0f);
  PackedGemmBf16(m, n, k, x.data(), ldx, packed.data(), with_bias ? bias.data() : nullptr,
                 out.data(), ldo, m % 2 ? Serial : Reversed, level, products);
  const Bf16Products by = PackedGemmBf16Products(m, level, products);
  const bool rounds = by != Bf16Products::kOff;
  std::vector<float> xr = x;
  if (rounds) {
    for (float& v : xr) v = Bf16ToF32(F32ToBf16(v));
  }
  ExpectMatchesDoubleProduct(m, n, k, xr.data(), ldx, w.data(), with_bias ? bias.data() : nullptr,
                             out.data(), ldo, 12345.0f,
                             absl::StrCat("bf16 ", SimdLevelName(level), " products ",
                                          Bf16ProductsName(by), " m=", m, " n=", n, " k=", k));
}

// float16 panels: against the float64 product of the weights' exact values, and bit for
// bit against PackedGemm over the same weights widened (both of PackedGemmF16's paths,
// widening in the tiles below kF16WidenMinRows = 64 rows and a block at a time from it,
// must take the products in PackedGemm's order).
void CheckShapeF16(SimdLevel level, int m, int n, int k, bool with_bias, std::mt19937& rng) {
  auto [ldx, ldo, x, w, bias, w16] = RandomOperands16(m, n, k, F32ToF16, F16ToF32, rng);
  const float* b = with_bias ? bias.data() : nullptr;
  std::vector<uint16_t> packed(PackedWeightFloats(n, k), 0x7e00);  // NaN where unwritten
  PackWeightsF16(w16.data(), n, k, packed.data());
  std::vector<float> out(m * ldo, 12345.0f);
  PackedGemmF16(m, n, k, x.data(), ldx, packed.data(), b, out.data(), ldo,
                m % 2 ? Serial : Reversed, level);
  const std::string what = absl::StrCat("f16 ", SimdLevelName(level), " m=", m, " n=", n, " k=", k);
  ExpectMatchesDoubleProduct(m, n, k, x.data(), ldx, w.data(), b, out.data(), ldo, 12345.0f, what);
  std::vector<float> packed32(PackedWeightFloats(n, k));
  PackWeights(w.data(), n, k, packed32.data());
  std::vector<float> out32(m * ldo, 12345.0f);
  PackedGemm(m, n, k, x.data(), ldx, packed32.data(), b, out32.data(), ldo, Serial, level);
  for (int64_t i = 0; i < m * ldo; ++i) {
    ASSERT_EQ(out[i], out32[i]) << what << ": not PackedGemm's sums, at row " << i / ldo << " col "
                                << i % ldo;
  }
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

// A row's outputs do not depend on the rows that share the call (a sequence's logits on
// what else is in the batch): m rows together sum each row bit for bit as that row alone
// does, though they run in tiles of other heights. gemm(m, x, out) multiplies m rows of
// x (stride ldx) into out (stride ldo).
template <typename Gemm>
void ExpectRowSumsIndependentOfTheBatch(int n, int64_t ldx, int64_t ldo, const float* x,
                                        const Gemm& gemm, const std::string& what) {
  for (int m : {5, 9, 16, 17, 40}) {
    std::vector<float> together(m * ldo), alone(m * ldo);
    gemm(m, x, together.data());
    for (int r = 0; r < m; ++r) gemm(1, x + r * ldx, alone.data() + r * ldo);
    for (int64_t i = 0; i < m * ldo; ++i) {
      if (i % ldo >= n) continue;
      ASSERT_EQ(together[i], alone[i])
          << what << " m=" << m << ": row " << i / ldo << " col " << i % ldo;
    }
  }
}

TEST(PackedGemmTest, RowSumsDoNotDependOnTheRowsBesideThem) {
  std::mt19937 rng(15);
  for (SimdLevel level : LevelsHere()) {
    for (const auto& [n, k] : {std::pair{100, 97}, std::pair{40, 2 * kPackedKBlock + 3}}) {
      const std::string what = absl::StrCat(SimdLevelName(level), " n=", n, " k=", k);
      auto [ldx, ldo, x, w, bias, w16] = RandomOperands16(40, n, k, F32ToF16, F16ToF32, rng);
      std::vector<float> packed(PackedWeightFloats(n, k));
      PackWeights(w.data(), n, k, packed.data());
      ExpectRowSumsIndependentOfTheBatch(
          n, ldx, ldo, x.data(),
          [&](int m, const float* xm, float* out) {
            PackedGemm(m, n, k, xm, ldx, packed.data(), bias.data(), out, ldo, Serial, level);
          },
          "f32 " + what);
      std::vector<uint16_t> packed16(PackedWeightFloats(n, k));
      PackWeightsF16(w16.data(), n, k, packed16.data());
      ExpectRowSumsIndependentOfTheBatch(
          n, ldx, ldo, x.data(),
          [&](int m, const float* xm, float* out) {
            PackedGemmF16(m, n, k, xm, ldx, packed16.data(), bias.data(), out, ldo, Serial, level);
          },
          "f16 " + what);
      auto b = RandomOperands16(40, n, k, F32ToBf16, Bf16ToF32, rng);
      std::vector<uint16_t> packed_bf16(PackedWeightBf16Elements(n, k));
      PackWeightsBf16(b.w16.data(), n, k, packed_bf16.data());
      ExpectRowSumsIndependentOfTheBatch(  // products off: with them 8+ rows round x
          n, b.ldx, b.ldo, b.x.data(),
          [&](int m, const float* xm, float* out) {
            PackedGemmBf16(m, n, k, xm, b.ldx, packed_bf16.data(), b.bias.data(), out, b.ldo,
                           Serial, level, Bf16Products::kOff);
          },
          "bf16 " + what);
    }
  }
}

// A prefix of the input columns (causal attention's P V over the keys a block sees): the
// sums of PackedGemm over the whole packed weight with x zero past the prefix, bit for
// bit, and within the float64 product of the prefix; columns past n untouched.
TEST(PackedGemmTest, PrefixOfTheInputColumnsEqualsZerosPastIt) {
  std::mt19937 rng(16);
  std::normal_distribution<float> nd(0, 1);
  for (SimdLevel level : LevelsHere()) {
    for (const auto& [n, packed_k] : {std::pair{64, 512}, std::pair{33, 2 * kPackedKBlock + 5}}) {
      std::vector<float> w(static_cast<size_t>(n) * packed_k);
      for (float& v : w) v = nd(rng);
      std::vector<float> packed(PackedWeightFloats(n, packed_k));
      PackWeights(w.data(), n, packed_k, packed.data());
      for (int k : {1, 17, 64, packed_k / 2 + 3, packed_k}) {
        const std::string what =
            absl::StrCat(SimdLevelName(level), " n=", n, " k=", k, " of ", packed_k);
        const int m = 37;
        const int64_t ldx = packed_k, ldo = n + 4;
        std::vector<float> x(static_cast<size_t>(m) * ldx, 0.0f);
        for (int r = 0; r < m; ++r) {
          for (int c = 0; c < k; ++c) x[r * ldx + c] = nd(rng);
        }
        std::vector<float> got(m * ldo, 777.0f), whole(m * ldo, 777.0f);
        PackedGemmPrefix(m, n, k, packed_k, x.data(), ldx, packed.data(), got.data(), ldo, Reversed,
                         level);
        PackedGemm(m, n, packed_k, x.data(), ldx, packed.data(), nullptr, whole.data(), ldo, Serial,
                   level);
        ASSERT_EQ(got, whole) << what;
        // The prefix's own product: the weight's first k columns, row-major.
        std::vector<float> wk(static_cast<size_t>(n) * k);
        for (int j = 0; j < n; ++j) {
          std::copy_n(w.begin() + int64_t{j} * packed_k, k, wk.begin() + int64_t{j} * k);
        }
        ExpectMatchesDoubleProduct(m, n, k, x.data(), ldx, wk.data(), nullptr, got.data(), ldo,
                                   777.0f, what);
      }
    }
  }
}

TEST(PackedGemmTest, PrefillSizedBatches) {
  std::mt19937 rng(12);
  for (SimdLevel level : LevelsHere()) CheckShape(level, 203, 130, 300, true, rng);
}

TEST(PackedGemmTest, F16MatchesADoubleReferenceAndFloat32PanelsBitForBit) {
  std::mt19937 rng(14);
  const int shapes[][2] = {{1, 1}, {17, 5}, {33, 31}, {100, 97}, {40, 2 * kPackedKBlock + 3}};
  for (SimdLevel level : LevelsHere()) {
    for (const auto& [n, k] : shapes) {
      for (int m : {1, 2, 5, 6, 7, 8, 9, 16, 17, 40, 63, 64, 65}) {
        for (bool with_bias : {false, true}) CheckShapeF16(level, m, n, k, with_bias, rng);
      }
    }
    CheckShapeF16(level, 203, 130, 300, true, rng);
  }
}

TEST(PackedGemmTest, F16PacksAsFloat32PanelsAndUnpacksRowsExactly) {
  const int n = 20, k = 3;
  std::vector<uint16_t> w(n * k);
  for (int i = 0; i < n * k; ++i) w[i] = F32ToF16(static_cast<float>(i + 1) / 8);
  std::vector<uint16_t> packed(PackedWeightFloats(n, k), 0xffff);
  PackWeightsF16(w.data(), n, k, packed.data());
  for (int j = 0; j < 32; ++j) {
    for (int c = 0; c < k; ++c) {
      const uint16_t want = j < n ? w[j * k + c] : 0;
      EXPECT_EQ(packed[((j / 16) * k + c) * 16 + j % 16], want) << "row " << j << " col " << c;
    }
  }
  std::vector<float> row(k);
  for (int j : {0, 15, 16, 19}) {
    UnpackWeightRowF16(packed.data(), k, j, row.data());
    for (int c = 0; c < k; ++c) EXPECT_EQ(row[c], F16ToF32(w[j * k + c])) << j << " " << c;
  }
}

TEST(PackedGemmTest, Bf16MatchesADoubleReference) {
  std::mt19937 rng(13);
  const int shapes[][2] = {{1, 1},    {17, 5},   {33, 31},
                           {100, 96}, {64, 768}, {40, 2 * kPackedKBlock + 3}};
  // Every arithmetic, whichever this CPU's timing chose (kDots is kOff without
  // AVX512_BF16, kAmx without AMX-BF16). m = 40: AMX's two 16-row blocks and a third;
  // k = 31, 301, 2 * kPackedKBlock + 3: a last AMX step of fewer than 16 pairs.
  for (Bf16Products products : {Bf16Products::kDots, Bf16Products::kAmx, Bf16Products::kOff}) {
    for (SimdLevel level : LevelsHere()) {
      for (const auto& [n, k] : shapes) {
        for (int m : {1, 2, 5, 7, 8, 9, 13, 16, 17, 40}) {
          for (bool with_bias : {false, true}) {
            CheckShapeBf16(level, products, m, n, k, with_bias, rng);
          }
        }
      }
    }
    for (SimdLevel level : LevelsHere()) {
      CheckShapeBf16(level, products, 203, 130, 301, true, rng);
      // AMX in chunks of 96 rows (the last of 12) past every panel pair, three k blocks.
      CheckShapeBf16(level, products, 300, 70, 2 * kPackedKBlock + 3, true, rng);
    }
  }
}

TEST(PackedGemmTest, Bf16ProductsAreAmxTilesOrTakenOnlyWhereTheyAreFaster) {
  const Bf16DotsTiming& t = CpuBf16DotsTiming();
  if (!CpuHasBf16Dots() || CpuMaxSimdLevel() != SimdLevel::kAvx512) {
    EXPECT_EQ(t.dots_ns, 0);
    EXPECT_EQ(t.amx_ns, 0);
    EXPECT_FALSE(CpuHasAmxBf16());
    EXPECT_EQ(CpuBf16Products(), Bf16Products::kOff);
    return;
  }
  EXPECT_GT(t.dots_ns, 0);
  EXPECT_GT(t.widen_ns, 0);
  EXPECT_EQ(t.amx_ns > 0, CpuHasAmxBf16());
  if (std::getenv("ORCA_CPU_BF16_DOTS") == nullptr) {
    if (CpuHasAmxBf16()) {
      EXPECT_EQ(CpuBf16Products(), Bf16Products::kAmx);
    } else {
      EXPECT_EQ(CpuBf16Products(),
                t.dots_ns * 1.1 <= t.widen_ns ? Bf16Products::kDots : Bf16Products::kOff)
          << "vdpbf16ps " << t.dots_ns << " ns, widening " << t.widen_ns << " ns";
    }
  }
  EXPECT_EQ(PackedGemmBf16Products(16, SimdLevel::kAvx512), CpuBf16Products());
  EXPECT_EQ(PackedGemmBf16Products(16, SimdLevel::kAvx512, Bf16Products::kDots),
            Bf16Products::kDots);
  EXPECT_EQ(PackedGemmBf16Products(16, SimdLevel::kAvx512, Bf16Products::kAmx),
            CpuHasAmxBf16() ? Bf16Products::kAmx : Bf16Products::kOff);
  EXPECT_FALSE(PackedGemmBf16RoundsActivations(16, SimdLevel::kAvx512, Bf16Products::kOff));
  EXPECT_FALSE(PackedGemmBf16RoundsActivations(7, SimdLevel::kAvx512, Bf16Products::kDots));
  EXPECT_FALSE(PackedGemmBf16RoundsActivations(7, SimdLevel::kAvx512, Bf16Products::kAmx));
  EXPECT_FALSE(PackedGemmBf16RoundsActivations(16, SimdLevel::kAvx2, Bf16Products::kAmx));
  std::printf(
      "vdpbf16ps %.0f ns, AMX %.0f ns, widened float32 FMAs %.0f ns a tile: products by %s\n",
      t.dots_ns, t.amx_ns, t.widen_ns, Bf16ProductsName(CpuBf16Products()));
}

TEST(PackedGemmTest, Bf16PacksColumnPairsOfSixteenRowsPaddedWithZeros) {
  const int n = 20, k = 3;  // two panels (n rounds up to 32 rows), two pairs (k to 4)
  std::vector<uint16_t> w(n * k);
  for (int i = 0; i < n * k; ++i) w[i] = static_cast<uint16_t>(i + 1);
  ASSERT_EQ(PackedWeightBf16Elements(n, k), 32 * 4);
  std::vector<uint16_t> packed(PackedWeightBf16Elements(n, k), 0xffff);
  PackWeightsBf16(w.data(), n, k, packed.data());
  for (int j = 0; j < 32; ++j) {
    for (int c = 0; c < 4; ++c) {
      const uint16_t want = j < n && c < k ? w[j * k + c] : 0;
      EXPECT_EQ(packed[((j / 16) * 2 + c / 2) * 32 + (j % 16) * 2 + c % 2], want)
          << "row " << j << " col " << c;
    }
  }
  std::vector<float> row(k);
  for (int j : {0, 15, 16, 19}) {
    UnpackWeightRowBf16(packed.data(), k, j, row.data());
    for (int c = 0; c < k; ++c) EXPECT_EQ(row[c], Bf16ToF32(w[j * k + c])) << j << " " << c;
  }
}

// UnpackWeightRows (whole panels transposed in registers on AVX2) gives the weight's
// rows exactly, from any first row, whole panels and parts of them, and k a multiple of
// 8 (the panel path) or not (row by row); float16 widened exactly.
TEST(PackedGemmTest, UnpacksRowRangesExactly) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-1, 1);
  const int n = 53;
  for (int k : {8, 24, 768, 13}) {
    std::vector<float> w(n * k);
    std::vector<uint16_t> w16(n * k);
    for (int i = 0; i < n * k; ++i) {
      w[i] = u(rng);
      w16[i] = F32ToF16(w[i]);
    }
    std::vector<float> packed(PackedWeightFloats(n, k));
    std::vector<uint16_t> packed16(PackedWeightFloats(n, k));
    PackWeights(w.data(), n, k, packed.data());
    PackWeightsF16(w16.data(), n, k, packed16.data());
    const int ranges[][2] = {{0, 16}, {0, 53}, {16, 32}, {3, 40}, {48, 5}, {17, 1}};
    for (const auto& [first, count] : ranges) {
      std::vector<float> rows(count * k, -9.0f), rows16(count * k, -9.0f);
      UnpackWeightRows(packed.data(), k, first, count, rows.data());
      UnpackWeightRowsF16(packed16.data(), k, first, count, rows16.data());
      for (int j = 0; j < count; ++j) {
        for (int c = 0; c < k; ++c) {
          ASSERT_EQ(rows[j * k + c], w[(first + j) * k + c])
              << "k " << k << " rows " << first << "+" << count << ": row " << first + j << " col "
              << c;
          ASSERT_EQ(rows16[j * k + c], F16ToF32(w16[(first + j) * k + c]))
              << "k " << k << " rows " << first << "+" << count << ": row " << first + j << " col "
              << c;
        }
      }
    }
  }
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
    float out16[9 * 3];
    std::fill(out16, out16 + 27, 9.0f);
    PackedGemmBf16(9, 3, 0, nullptr, 0, nullptr, bias, out16, 3, Serial, level);
    for (int r = 0; r < 9; ++r) {
      for (int j = 0; j < 3; ++j) EXPECT_EQ(out16[r * 3 + j], bias[j]) << SimdLevelName(level);
    }
  }
}

}  // namespace
}  // namespace orca
