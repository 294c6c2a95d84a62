// CpuBackend::Linear over float32, float16 and bfloat16 weights, for row counts that
// take each of its paths (sgemv, SmallGemm, sgemm, the widened sgemm, oneDNN's
// bfloat16 products where this CPU has them), with and without bias and with strided
// activations and outputs, against a float64 product over the same values: the weights
// widened exactly, and the activations rounded to bfloat16 where the path says it does
// (onednn_gemm.h, packed_gemm_bf16.h); every weight also as UploadLinearWeight stores
// it (float32 packed, float16 where the CPU has AVX2, bfloat16 where it has AVX-512).
// Embedding over 16-bit tables and over packed tables (a tied LM head).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/backend/cpu/onednn_gemm.h"
#include "engine/backend/cpu/packed_gemm_bf16.h"
#include "engine/common/dtype.h"

namespace orca {
namespace {

// v as 16-bit `dtype` bits.
std::vector<uint16_t> Narrow(const std::vector<float>& v, DType dtype) {
  std::vector<uint16_t> out(v.size());
  ConvertFromF32(v.data(), v.size(), dtype, out.data());
  return out;
}

TEST(CpuLinearTest, EveryPathMatchesAFloat64Product) {
  auto backend = CreateCpuBackend(2);
  std::mt19937 rng(11);
  std::normal_distribution<float> nd(0, 1);
  const int n = 300, k = 200;  // k: not a multiple of 16 (tails)
  for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16}) {
    std::vector<float> wf(static_cast<size_t>(n) * k), bias(n);
    for (float& v : wf) v = nd(rng) * 0.05f;
    for (float& v : bias) v = nd(rng);
    std::vector<uint16_t> w16;
    if (dtype != DType::kF32) {
      w16 = Narrow(wf, dtype);
      ConvertToF32(w16.data(), dtype, wf.size(), wf.data());  // the same values, exactly
    }
    const Tensor row_major{dtype == DType::kF32 ? static_cast<void*>(wf.data()) : w16.data(), dtype,
                           n, k, 0};
    // As the model loader stores it (float32: packed panels).
    std::unique_ptr<DeviceBuffer> storage;
    auto uploaded = backend->UploadLinearWeight(row_major.data, dtype, n, k, &storage);
    ASSERT_TRUE(uploaded.ok()) << uploaded.status();
    const bool packs = dtype == DType::kF32 || CpuSimdLevel() >= SimdLevel::kAvx2;
    ASSERT_EQ(uploaded->layout, packs ? TensorLayout::kPackedPanels : TensorLayout::kRowMajor);
    const Tensor b{bias.data(), DType::kF32, 1, n, 0};
    for (const Tensor& w : {row_major, *uploaded})
      for (int m : {1, 2, 5, 7, 8, 16, 17, 64, 150}) {
        for (bool with_bias : {false, true}) {
          const int64_t ldx = k + 5, ldo = n + 3;
          std::vector<float> x(m * ldx), out(m * ldo, 777.0f);
          for (float& v : x) v = nd(rng);
          backend->Linear(Tensor{x.data(), DType::kF32, m, k, ldx}, w, with_bias ? &b : nullptr,
                          Tensor{out.data(), DType::kF32, m, n, ldo});
          const bool packed = w.layout == TensorLayout::kPackedPanels;
          const bool bf16_products =
              dtype == DType::kBF16 &&
              (packed ? PackedGemmBf16RoundsActivations(m)
                      : m >= kOneDnnBf16MinRows && OneDnnBf16Gemm::Available());
          for (int r = 0; r < m; ++r) {
            for (int j = 0; j < n; ++j) {
              double ref = with_bias ? bias[j] : 0.0, mag = std::abs(ref);
              for (int c = 0; c < k; ++c) {
                float xv = x[r * ldx + c];
                if (bf16_products) xv = Bf16ToF32(F32ToBf16(xv));
                const double p = static_cast<double>(xv) * wf[static_cast<size_t>(j) * k + c];
                ref += p;
                mag += std::abs(p);
              }
              ASSERT_NEAR(out[r * ldo + j], ref, 2e-6 * mag + 1e-6)
                  << DTypeName(dtype) << (w.layout == TensorLayout::kPackedPanels ? " packed" : "")
                  << " m=" << m << " bias " << with_bias << " row " << r << " col " << j
                  << (bf16_products ? " (bf16 products)" : "");
            }
            ASSERT_EQ(out[r * ldo + n], 777.0f) << "wrote past n";
          }
        }
      }
  }
}

TEST(CpuLinearTest, EmbeddingWidensSixteenBitTables) {
  auto backend = CreateCpuBackend(1);
  const int rows = 10, h = 37;
  std::vector<float> table(rows * h);
  for (size_t i = 0; i < table.size(); ++i) table[i] = 0.01f * static_cast<float>(i) - 1.5f;
  for (DType dtype : {DType::kF16, DType::kBF16}) {
    std::vector<uint16_t> t16 = Narrow(table, dtype);
    const int32_t ids[] = {3, 0, 9, 3};
    std::vector<float> out(4 * h, 1.0f);
    backend->Embedding(ids, 4, Tensor{t16.data(), dtype, rows, h, 0},
                       Tensor{out.data(), DType::kF32, 4, h, 0}, /*accumulate=*/true);
    for (int i = 0; i < 4; ++i) {
      for (int j = 0; j < h; ++j) {
        const uint16_t bits = t16[static_cast<size_t>(ids[i]) * h + j];
        const float e = dtype == DType::kF16 ? F16ToF32(bits) : Bf16ToF32(bits);
        ASSERT_EQ(out[i * h + j], 1.0f + e) << DTypeName(dtype) << " " << i << " " << j;
      }
    }
  }
}

TEST(CpuLinearTest, EmbeddingReadsAPackedTable) {
  auto backend = CreateCpuBackend(1);
  const int rows = 40, h = 37;  // rows: two panels and a part of a third; h odd
  std::vector<float> table(rows * h);
  for (size_t i = 0; i < table.size(); ++i) table[i] = 0.01f * static_cast<float>(i) - 1.5f;
  const std::vector<uint16_t> tb = Narrow(table, DType::kBF16), th = Narrow(table, DType::kF16);
  for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16}) {
    const std::vector<uint16_t>& t16 = dtype == DType::kF16 ? th : tb;
    const void* host = dtype == DType::kF32 ? static_cast<const void*>(table.data()) : t16.data();
    std::unique_ptr<DeviceBuffer> storage;
    auto packed = backend->UploadLinearWeight(host, dtype, rows, h, &storage);
    ASSERT_TRUE(packed.ok()) << packed.status();
    if (packed->layout != TensorLayout::kPackedPanels) {
      ASSERT_NE(dtype, DType::kF32);  // 16-bit: packed only on AVX2 / AVX-512 CPUs
      continue;
    }
    const int32_t ids[] = {3, 0, 39, 17, 16, 3};
    std::vector<float> out(6 * h, 1.0f);
    backend->Embedding(ids, 6, *packed, Tensor{out.data(), DType::kF32, 6, h, 0},
                       /*accumulate=*/true);
    for (int i = 0; i < 6; ++i) {
      for (int j = 0; j < h; ++j) {
        const size_t e = static_cast<size_t>(ids[i]) * h + j;
        const float want = dtype == DType::kF32   ? table[e]
                           : dtype == DType::kF16 ? F16ToF32(t16[e])
                                                  : Bf16ToF32(t16[e]);
        ASSERT_EQ(out[i * h + j], 1.0f + want)
            << DTypeName(dtype) << " id " << ids[i] << " col " << j;
      }
    }
  }
}

}  // namespace
}  // namespace orca
