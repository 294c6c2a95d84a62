// AttendOneHead against a double-precision causal softmax attention: head sizes that are
// and are not multiples of 8, 16 and 32, and over 128 (two AVX-512 passes), decode (one
// query) and prefill chunks, short and long histories, and scores spread far enough
// apart that most exponentials underflow; for float32, float16 and bfloat16 caches, on
// every path the CPU has (scalar, AVX2, AVX-512). The reference reads the same 16-bit
// values, widened by dtype.h's scalar conversions; StoreKvRow is checked against those
// conversions.
#include "engine/backend/cpu/attention_kernel.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "engine/backend/cpu/packed_gemm_amx.h"
#include "engine/common/dtype.h"

namespace orca {
namespace {

float Widen(float x) { return x; }
float Widen(Fp16 x) { return F16ToF32(x.bits); }
float Widen(Bf16 x) { return Bf16ToF32(x.bits); }
float Narrow(float x, float*) { return x; }
Fp16 Narrow(float x, Fp16*) { return Fp16{F32ToF16(x)}; }
Bf16 Narrow(float x, Bf16*) { return Bf16{F32ToBf16(x)}; }

// kBf16Allowed: the bound bfloat16 rounding allows. Queries and keys rounded (unit
// roundoff u = 2^-8 each) move a score by at most ds = scale * 2.01 u * sum_c |q_c k_c|;
// that moves each probability by a factor within exp(+-2 max ds), the probabilities'
// and values' own rounding by u each: |out - ref| <= sum_j p_j |v_j| (2.2 max ds + 2.2 u),
// plus float32 sums.
constexpr double kBf16Unit = 1.0 / 256;

template <typename T>
void CheckAgainstDoubleReference(SimdLevel level,
                                 AttentionProducts products = AttentionProducts::kFloat32) {
  const bool bf16 = products == AttentionProducts::kBf16Allowed;
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-1, 1);
  for (int d : {8, 12, 16, 64, 72, 80, 128, 136, 256}) {
    // 40 and 130 rows: the GEMM path on AVX2 and AVX-512 (kGemmAttentionMinRows), 130 in three
    // blocks of score rows, the last partial.
    // (16 and 33 with bfloat16 products: the AMX path's 32-row blocks, whole and not.)
    for (int q_len : bf16 ? std::vector<int>{16, 33, 40, 130} : std::vector<int>{1, 5, 40, 130}) {
      for (int kv_len : {q_len, q_len + 3, q_len + 37, q_len + 300}) {
        for (float scale : {0.125f, 30.0f}) {
          const int64_t ldq = d * 3 + 1, ldo = d + 4;
          std::vector<float> q(q_len * ldq);
          std::vector<T> cache(2 * kv_len * (d + 3));
          for (float& v : q) v = u(rng);
          for (T& v : cache) v = Narrow(u(rng), static_cast<T*>(nullptr));
          // Keys and values scattered through one buffer, as blocks of the paged cache are.
          std::vector<const T*> krow(kv_len), vrow(kv_len);
          std::vector<int> order(2 * kv_len);
          for (int i = 0; i < 2 * kv_len; ++i) order[i] = i;
          std::shuffle(order.begin(), order.end(), rng);
          for (int j = 0; j < kv_len; ++j) {
            krow[j] = cache.data() + order[2 * j] * (d + 3);
            vrow[j] = cache.data() + order[2 * j + 1] * (d + 3);
          }
          std::vector<float> scores(kv_len), out(q_len * ldo, 777.0f);
          AttendOneHead(d, q_len, kv_len, q.data(), ldq, krow.data(), vrow.data(), scale,
                        scores.data(), out.data(), ldo, level, products);
          for (int i = 0; i < q_len; ++i) {
            const int n = kv_len - q_len + i + 1;
            std::vector<double> s(n);
            double mx = -1e300, sum = 0, max_ds = 0;
            for (int j = 0; j < n; ++j) {
              double dot = 0, magnitude = 0;
              for (int c = 0; c < d; ++c) {
                dot += double{q[i * ldq + c]} * Widen(krow[j][c]);
                magnitude += std::abs(double{q[i * ldq + c]} * Widen(krow[j][c]));
              }
              s[j] = dot * scale;
              mx = std::max(mx, s[j]);
              max_ds = std::max(max_ds, scale * 2.01 * kBf16Unit * magnitude);
            }
            for (int j = 0; j < n; ++j) sum += (s[j] = std::exp(s[j] - mx));
            for (int c = 0; c < d; ++c) {
              double ref = 0, weighted_magnitude = 0;
              for (int j = 0; j < n; ++j) {
                ref += s[j] / sum * Widen(vrow[j][c]);
                weighted_magnitude += s[j] / sum * std::abs(Widen(vrow[j][c]));
              }
              // Large scores carry float rounding of ~1e-7 x |score| into the weights.
              const double tol = bf16 ? weighted_magnitude * (2.2 * max_ds + 2.2 * kBf16Unit) + 1e-5
                                      : (scale > 1 ? 2e-4 : 2e-5);
              ASSERT_NEAR(out[i * ldo + c], ref, tol)
                  << "d=" << d << " q_len=" << q_len << " kv_len=" << kv_len << " scale=" << scale
                  << " row " << i << " col " << c << " " << SimdLevelName(level);
            }
            for (int c = d; c < ldo; ++c) {
              ASSERT_EQ(out[i * ldo + c], 777.0f) << "wrote past d " << SimdLevelName(level);
            }
          }
        }
      }
    }
  }
}

// The levels this CPU runs (a test on an AVX2-only machine covers AVX2 and scalar).
std::vector<SimdLevel> Levels() {
  std::vector<SimdLevel> levels = {SimdLevel::kScalar};
  if (CpuMaxSimdLevel() >= SimdLevel::kAvx2) levels.push_back(SimdLevel::kAvx2);
  if (CpuMaxSimdLevel() >= SimdLevel::kAvx512) levels.push_back(SimdLevel::kAvx512);
  return levels;
}

TEST(AttentionKernelTest, Float32MatchesADoubleReference) {
  for (SimdLevel l : Levels()) CheckAgainstDoubleReference<float>(l);
}

TEST(AttentionKernelTest, Float16MatchesADoubleReference) {
  for (SimdLevel l : Levels()) CheckAgainstDoubleReference<Fp16>(l);
}

TEST(AttentionKernelTest, BFloat16MatchesADoubleReference) {
  for (SimdLevel l : Levels()) CheckAgainstDoubleReference<Bf16>(l);
}

// Prefill chunks with bfloat16 products allowed run on AMX tiles where the process has
// them; within the bound of bfloat16 rounding of the double reference.
TEST(AttentionKernelTest, Bf16ProductsOnAmxMatchADoubleReferenceWithinBf16Rounding) {
  if (!CpuHasAmxBf16()) GTEST_SKIP() << "no AMX-BF16 tiles here";
  CheckAgainstDoubleReference<float>(SimdLevel::kAvx512, AttentionProducts::kBf16Allowed);
  CheckAgainstDoubleReference<Fp16>(SimdLevel::kAvx512, AttentionProducts::kBf16Allowed);
  CheckAgainstDoubleReference<Bf16>(SimdLevel::kAvx512, AttentionProducts::kBf16Allowed);
}

// AttendDecodeHeads (a decode step's heads of one sequence, read block by block) against
// AttendOneHead over the same rows, head by head: equal results (the same products in the
// same order) on every path; and against a double-precision reference. Paged layouts as
// KvCacheShape::Offset makes them (a block's rows of each kv head one after another),
// blocks drawn at random from a pool; grouped queries; block sizes 8, 16 and 64; histories
// shorter than a block, ending mid-block and spanning many blocks.
template <typename T>
void CheckDecodeHeads(SimdLevel level) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-1, 1);
  for (int d : {12, 16, 64, 72, 136}) {
    for (int kv_heads : {1, 3}) {
      for (int group : {1, 2}) {
        for (int block_size : {8, 16, 64}) {
          for (int kv_len : {1, 15, 16, 17, 100, 300}) {
            const int heads = kv_heads * group;
            const int blocks = (kv_len + block_size - 1) / block_size;
            const int pool = blocks + 5;
            const int64_t head_stride = int64_t{block_size} * d;
            const int64_t block_elems = head_stride * kv_heads;
            std::vector<T> kc(static_cast<size_t>(pool * block_elems));
            std::vector<T> vc(kc.size());
            for (T& v : kc) v = Narrow(u(rng), static_cast<T*>(nullptr));
            for (T& v : vc) v = Narrow(u(rng), static_cast<T*>(nullptr));
            std::vector<int> table(static_cast<size_t>(pool));
            for (int b = 0; b < pool; ++b) table[static_cast<size_t>(b)] = b;
            std::shuffle(table.begin(), table.end(), rng);
            std::vector<const T*> kblock(static_cast<size_t>(blocks)), vblock(kblock.size());
            for (int b = 0; b < blocks; ++b) {
              kblock[static_cast<size_t>(b)] =
                  kc.data() + table[static_cast<size_t>(b)] * block_elems;
              vblock[static_cast<size_t>(b)] =
                  vc.data() + table[static_cast<size_t>(b)] * block_elems;
            }
            std::vector<float> q(static_cast<size_t>(heads * d));
            for (float& v : q) v = u(rng);
            std::vector<float> out(q.size() + 8, 777.0f),
                scores(static_cast<size_t>(heads * kv_len));
            DecodeHeads<T> a;
            a.head_dim = d;
            a.num_heads = heads;
            a.group = group;
            a.kv_len = kv_len;
            a.block_size = block_size;
            a.kblock = kblock.data();
            a.vblock = vblock.data();
            a.head_stride = head_stride;
            a.q = q.data();
            a.scale = 0.125f;
            a.out = out.data();
            AttendDecodeHeads(a, scores.data(), level);
            const std::string where =
                "d=" + std::to_string(d) + " kv_heads=" + std::to_string(kv_heads) +
                " group=" + std::to_string(group) + " block=" + std::to_string(block_size) +
                " kv_len=" + std::to_string(kv_len) + " " + SimdLevelName(level);
            for (size_t i = q.size(); i < out.size(); ++i) {
              ASSERT_EQ(out[i], 777.0f) << "wrote past the heads " << where;
            }
            for (int h = 0; h < heads; ++h) {
              const int g = h / group;
              std::vector<const T*> krow(static_cast<size_t>(kv_len)), vrow(krow.size());
              for (int j = 0; j < kv_len; ++j) {
                const int64_t at = g * head_stride + int64_t{j % block_size} * d;
                krow[static_cast<size_t>(j)] = kblock[static_cast<size_t>(j / block_size)] + at;
                vrow[static_cast<size_t>(j)] = vblock[static_cast<size_t>(j / block_size)] + at;
              }
              std::vector<float> one(static_cast<size_t>(d)), s1(static_cast<size_t>(kv_len));
              AttendOneHead(d, 1, kv_len, q.data() + h * d, d, krow.data(), vrow.data(), 0.125f,
                            s1.data(), one.data(), d, level);
              // The double reference: softmax of the scores, then the weighted values.
              std::vector<double> w(static_cast<size_t>(kv_len));
              double mx = -1e300, sum = 0;
              for (int j = 0; j < kv_len; ++j) {
                double dot = 0;
                for (int c = 0; c < d; ++c) {
                  dot += double{q[static_cast<size_t>(h * d + c)]} *
                         Widen(krow[static_cast<size_t>(j)][c]);
                }
                w[static_cast<size_t>(j)] = dot * 0.125;
                mx = std::max(mx, w[static_cast<size_t>(j)]);
              }
              for (double& x : w) sum += (x = std::exp(x - mx));
              for (int c = 0; c < d; ++c) {
                const float got = out[static_cast<size_t>(h * d + c)];
                ASSERT_EQ(got, one[static_cast<size_t>(c)])
                    << where << " head " << h << " col " << c;
                double ref = 0;
                for (int j = 0; j < kv_len; ++j) {
                  ref += w[static_cast<size_t>(j)] / sum * Widen(vrow[static_cast<size_t>(j)][c]);
                }
                ASSERT_NEAR(got, ref, 2e-5) << where << " head " << h << " col " << c;
              }
            }
          }
        }
      }
    }
  }
}

TEST(AttentionKernelTest, DecodeHeadsEqualOneHeadAtATime) {
  for (SimdLevel l : Levels()) {
    CheckDecodeHeads<float>(l);
    CheckDecodeHeads<Fp16>(l);
    CheckDecodeHeads<Bf16>(l);
  }
}

// Rows of every length 0..40 (the vector body and the scalar tail), values that round
// both ways, ties, subnormals, out-of-range and special values.
std::vector<float> Awkward() {
  std::vector<float> v = {0.0f,
                          -0.0f,
                          1.0f,
                          -1.5f,
                          1.0009765625f,   // 1 + 2^-10
                          1.00048828125f,  // tie in F16
                          3.1415927f,
                          65504.0f,
                          65519.0f,
                          70000.0f,
                          -1e30f,
                          1e-8f,
                          6e-8f,
                          std::numeric_limits<float>::infinity(),
                          -std::numeric_limits<float>::infinity(),
                          std::numeric_limits<float>::quiet_NaN()};
  std::mt19937 rng(3);
  std::normal_distribution<float> g(0, 100);
  while (v.size() < 40) v.push_back(g(rng));
  return v;
}

template <typename T>
void CheckStores(bool portable, uint16_t (*expect)(float)) {
  const std::vector<float> src = Awkward();
  for (int n = 0; n <= static_cast<int>(src.size()); ++n) {
    std::vector<T> dst(n + 1, T{0x5555});
    if (portable) {
      internal::StoreKvRowPortable(src.data(), n, dst.data());
    } else {
      StoreKvRow(src.data(), n, dst.data());
    }
    for (int i = 0; i < n; ++i) {
      ASSERT_EQ(dst[i].bits, expect(src[i]))
          << "n=" << n << " element " << i << " = " << src[i] << (portable ? " (portable)" : "");
    }
    ASSERT_EQ(dst[n].bits, 0x5555) << "wrote past n";
  }
}

TEST(AttentionKernelTest, Float16StoresRoundToNearestEvenAndSaturate) {
  // The scalar conversion after clamping (std::clamp keeps NaN: F32ToF16 gives 0x7e00,
  // as vcvtps2ph does for the positive quiet NaN).
  auto expect = [](float x) { return F32ToF16(std::clamp(x, -65504.0f, 65504.0f)); };
  CheckStores<Fp16>(false, expect);
  CheckStores<Fp16>(true, expect);
  // Hand-worked values: 65519 and 70000 saturate to 65504 (0x7bff), not inf; 1 + 2^-11
  // ties to even (1.0, 0x3c00).
  std::vector<float> src = {65519.0f, 70000.0f, -1e30f, 1.00048828125f};
  std::vector<Fp16> dst(4);
  StoreKvRow(src.data(), 4, dst.data());
  EXPECT_EQ(dst[0].bits, 0x7bff);
  EXPECT_EQ(dst[1].bits, 0x7bff);
  EXPECT_EQ(dst[2].bits, 0xfbff);
  EXPECT_EQ(dst[3].bits, 0x3c00);
}

TEST(AttentionKernelTest, BFloat16StoresRoundToNearestEven) {
  auto expect = [](float x) { return F32ToBf16(x); };
  CheckStores<Bf16>(false, expect);
  CheckStores<Bf16>(true, expect);
}

}  // namespace
}  // namespace orca
