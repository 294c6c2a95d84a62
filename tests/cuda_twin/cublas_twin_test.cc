// cuBLAS twin (cuda_twin/cublas_twin.cc): GemmEx against a naive column-major reference
// written from cuBLAS's documented formula
//   C = alpha * op(A) * op(B) + beta * C,  op(A) m x k,  op(B) k x n,  C m x n,
//   X(i, j) = X[i + j * ldx],  op(X) = X or X^T,
// for every transpose pair, padded leading dimensions (padding holds NaN), F32/F16/BF16
// inputs and TF32 rounding; plus argument checking and the stream semantics.
//
// The inputs are small multiples of 1/2 and alpha/beta dyadic, so every product and sum
// is exact in F32 (and every result exact in F16/BF16): results compare with ==, and a
// wrong element, layout or scalar cannot hide inside a tolerance.
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <future>
#include <limits>
#include <string>
#include <vector>

#include "cuda_twin/streams.h"

namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// Encodes a float that F16 represents exactly (normal or zero) — the test's own
// encoder, independent of the twin's conversions.
uint16_t ExactF16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  const uint32_t sign = (bits >> 16) & 0x8000u;
  if ((bits & 0x7fffffffu) == 0) return static_cast<uint16_t>(sign);
  if ((bits & 0x7f800000u) == 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u);  // NaN
  const int exp = static_cast<int>((bits >> 23) & 0xff) - 127 + 15;
  EXPECT_TRUE(exp > 0 && exp < 31 && (bits & 0x1fffu) == 0) << f << " is not exact in F16";
  return static_cast<uint16_t>(sign | static_cast<uint32_t>(exp) << 10 | ((bits >> 13) & 0x3ffu));
}
float FromF16(uint16_t h) {
  if ((h & 0x7fffu) == 0) return (h & 0x8000u) ? -0.0f : 0.0f;
  const int exp = (h >> 10) & 0x1f;
  EXPECT_TRUE(exp > 0 && exp < 31) << "unexpected F16 " << h;
  const float mag = std::ldexp(1.0f + static_cast<float>(h & 0x3ffu) / 1024.0f, exp - 15);
  return (h & 0x8000u) ? -mag : mag;
}
uint16_t ExactBf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  EXPECT_TRUE((bits & 0xffffu) == 0 || std::isnan(f)) << f << " is not exact in BF16";
  return static_cast<uint16_t>(bits >> 16);
}
float FromBf16(uint16_t h) {
  uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// A column-major matrix stored with leading dimension `ld` >= rows; the padding rows
// hold NaN so that reading them shows in the result.
struct Matrix {
  int rows, cols, ld;
  std::vector<float> data;
  Matrix(int r, int c, int ld_) : rows(r), cols(c), ld(ld_), data(size_t(ld_) * c, kNaN) {}
  float& at(int i, int j) { return data[size_t(i) + size_t(j) * ld]; }
  float at(int i, int j) const { return data[size_t(i) + size_t(j) * ld]; }
};

// Fills the stored block with multiples of 1/2 in [-2, 2] (exact in every input type).
void FillExact(Matrix* m, int seed) {
  for (int j = 0; j < m->cols; ++j) {
    for (int i = 0; i < m->rows; ++i) {
      m->at(i, j) = static_cast<float>((i * 7 + j * 3 + seed * 5) % 9 - 4) * 0.5f;
    }
  }
}

// The documented formula, in double, straight loops.
void ReferenceGemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const Matrix& a,
                   const Matrix& b, float beta, Matrix* c) {
  for (int j = 0; j < n; ++j) {
    for (int i = 0; i < m; ++i) {
      double sum = 0;
      for (int l = 0; l < k; ++l) {
        const double op_a = trans_a ? a.at(l, i) : a.at(i, l);
        const double op_b = trans_b ? b.at(j, l) : b.at(l, j);
        sum += op_a * op_b;
      }
      const double prior = beta == 0.0f ? 0.0 : double{beta} * c->at(i, j);
      c->at(i, j) = static_cast<float>(double{alpha} * sum + prior);
    }
  }
}

size_t ElementSize(cudaDataType t) { return t == CUDA_R_32F ? 4 : 2; }

// Encodes a host matrix's whole storage (padding included) as `type`.
std::vector<uint8_t> Encode(const Matrix& m, cudaDataType type) {
  std::vector<uint8_t> bytes(m.data.size() * ElementSize(type));
  for (size_t i = 0; i < m.data.size(); ++i) {
    if (type == CUDA_R_32F) {
      std::memcpy(&bytes[i * 4], &m.data[i], 4);
    } else {
      const uint16_t h = type == CUDA_R_16F ? ExactF16(m.data[i]) : ExactBf16(m.data[i]);
      std::memcpy(&bytes[i * 2], &h, 2);
    }
  }
  return bytes;
}

float Decode(const uint8_t* p, cudaDataType type) {
  if (type == CUDA_R_32F) {
    float f;
    std::memcpy(&f, p, 4);
    return f;
  }
  uint16_t h;
  std::memcpy(&h, p, 2);
  if (type == CUDA_R_16BF) return FromBf16(h);
  if ((h & 0x7c00u) == 0x7c00u) return kNaN;
  return FromF16(h);
}

// A device allocation holding a copy of a host matrix.
class DeviceMatrix {
 public:
  DeviceMatrix(const Matrix& m, cudaDataType type) : type_(type), count_(m.data.size()) {
    const std::vector<uint8_t> bytes = Encode(m, type);
    EXPECT_EQ(cudaMalloc(&ptr_, bytes.size()), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(ptr_, bytes.data(), bytes.size(), cudaMemcpyHostToDevice), cudaSuccess);
  }
  ~DeviceMatrix() { (void)cudaFree(ptr_); }
  DeviceMatrix(const DeviceMatrix&) = delete;
  DeviceMatrix& operator=(const DeviceMatrix&) = delete;

  void* get() const { return ptr_; }
  // Reads the whole storage back as floats (after synchronising the stream).
  std::vector<float> Download() const {
    std::vector<uint8_t> bytes(count_ * ElementSize(type_));
    EXPECT_EQ(cudaMemcpy(bytes.data(), ptr_, bytes.size(), cudaMemcpyDeviceToHost), cudaSuccess);
    std::vector<float> out(count_);
    for (size_t i = 0; i < count_; ++i) out[i] = Decode(&bytes[i * ElementSize(type_)], type_);
    return out;
  }

 private:
  cudaDataType type_;
  size_t count_;
  void* ptr_ = nullptr;
};

// Expects `got` (whole storage of C) to equal `want` in the m x n block and NaN — the
// untouched padding — elsewhere.
void ExpectMatrix(const std::vector<float>& got, const Matrix& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.data.size());
  for (int j = 0; j < want.cols; ++j) {
    for (int i = 0; i < want.ld; ++i) {
      const float g = got[size_t(i) + size_t(j) * want.ld];
      if (i < want.rows) {
        ASSERT_EQ(g, want.at(i, j)) << what << " at (" << i << ", " << j << ")";
      } else {
        ASSERT_TRUE(std::isnan(g)) << what << ": padding at (" << i << ", " << j << ") written";
      }
    }
  }
}

class CublasTwinTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(cudaStreamCreate(&stream_), cudaSuccess);
    ASSERT_EQ(cublasCreate(&handle_), CUBLAS_STATUS_SUCCESS);
    ASSERT_EQ(cublasSetStream(handle_, stream_), CUBLAS_STATUS_SUCCESS);
  }
  void TearDown() override {
    if (handle_ != nullptr) {
      EXPECT_EQ(cublasDestroy(handle_), CUBLAS_STATUS_SUCCESS);
    }
    EXPECT_EQ(cudaStreamDestroy(stream_), cudaSuccess);
  }

  // Runs C = alpha op(A) op(B) + beta C on the twin with padded operands and checks it
  // against the reference, element for element.
  void CheckGemm(bool trans_a, bool trans_b, int m, int n, int k, cudaDataType ab_type,
                 cudaDataType c_type, float alpha, float beta) {
    const std::string what = "transa=" + std::to_string(trans_a) +
                             " transb=" + std::to_string(trans_b) +
                             " ab=" + std::to_string(ab_type) + " c=" + std::to_string(c_type);
    const int a_rows = trans_a ? k : m, a_cols = trans_a ? m : k;
    const int b_rows = trans_b ? n : k, b_cols = trans_b ? k : n;
    Matrix a(a_rows, a_cols, a_rows + 3), b(b_rows, b_cols, b_rows + 2), c(m, n, m + 1);
    FillExact(&a, 1);
    FillExact(&b, 2);
    FillExact(&c, 3);
    DeviceMatrix da(a, ab_type), db(b, ab_type), dc(c, c_type);
    ReferenceGemm(trans_a, trans_b, m, n, k, alpha, a, b, beta, &c);
    ASSERT_EQ(cublasGemmEx(handle_, trans_a ? CUBLAS_OP_T : CUBLAS_OP_N,
                           trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, m, n, k, &alpha, da.get(), ab_type,
                           a.ld, db.get(), ab_type, b.ld, &beta, dc.get(), c_type, c.ld,
                           CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
              CUBLAS_STATUS_SUCCESS)
        << what;
    ASSERT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
    ExpectMatrix(dc.Download(), c, what);
  }

  // C (1 x 1) = a * b with compute type `compute`; returns C.
  float Product(float a, float b, cublasComputeType_t compute) {
    Matrix ma(1, 1, 1), mb(1, 1, 1), mc(1, 1, 1);
    ma.at(0, 0) = a;
    mb.at(0, 0) = b;
    DeviceMatrix da(ma, CUDA_R_32F), db(mb, CUDA_R_32F), dc(mc, CUDA_R_32F);
    const float alpha = 1.0f, beta = 0.0f;
    EXPECT_EQ(cublasGemmEx(handle_, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, &alpha, da.get(), CUDA_R_32F,
                           1, db.get(), CUDA_R_32F, 1, &beta, dc.get(), CUDA_R_32F, 1, compute,
                           CUBLAS_GEMM_DEFAULT),
              CUBLAS_STATUS_SUCCESS);
    EXPECT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
    return dc.Download()[0];
  }

  cudaStream_t stream_ = nullptr;
  cublasHandle_t handle_ = nullptr;
};

TEST_F(CublasTwinTest, MatchesTheDocumentedFormulaForEveryTransposePair) {
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      CheckGemm(ta, tb, 5, 4, 3, CUDA_R_32F, CUDA_R_32F, 1.5f, -0.5f);
    }
  }
}

TEST_F(CublasTwinTest, WidensHalfAndBfloat16InputsToF32) {
  for (cudaDataType t : {CUDA_R_16F, CUDA_R_16BF}) {
    for (bool ta : {false, true}) {
      for (bool tb : {false, true}) CheckGemm(ta, tb, 3, 6, 5, t, CUDA_R_32F, 1.0f, 0.0f);
    }
  }
}

TEST_F(CublasTwinTest, WritesHalfAndBfloat16OutputsInsideTheBlockOnly) {
  CheckGemm(false, true, 4, 3, 2, CUDA_R_16F, CUDA_R_16F, 1.5f, -0.5f);
  CheckGemm(true, false, 4, 3, 2, CUDA_R_16BF, CUDA_R_16BF, 1.5f, -0.5f);
  CheckGemm(true, false, 4, 3, 2, CUDA_R_16BF, CUDA_R_16BF, 1.0f, 0.0f);  // beta = 0
}

TEST_F(CublasTwinTest, OrcasLinearCallShape) {
  // engine/backend/cuda Linear: out^T[N, M] = W^T x^T with W [N, K] row-major (op T,
  // lda = K) and x [M, K] row-major (op N, ldb = K), C ld = N.
  CheckGemm(true, false, 7, 2, 5, CUDA_R_16BF, CUDA_R_32F, 1.0f, 0.0f);
  CheckGemm(true, false, 7, 2, 5, CUDA_R_32F, CUDA_R_32F, 1.0f, 0.0f);
}

TEST_F(CublasTwinTest, BetaZeroDoesNotReadC) {
  // CheckGemm's C storage is NaN outside the block; here the block is NaN too.
  Matrix a(2, 2, 2), b(2, 2, 2), c(2, 2, 2);
  FillExact(&a, 4);
  FillExact(&b, 5);
  DeviceMatrix da(a, CUDA_R_32F), db(b, CUDA_R_32F), dc(c, CUDA_R_32F);
  const float alpha = 1.0f, beta = 0.0f;
  ASSERT_EQ(cublasGemmEx(handle_, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, &alpha, da.get(), CUDA_R_32F,
                         2, db.get(), CUDA_R_32F, 2, &beta, dc.get(), CUDA_R_32F, 2,
                         CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
            CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
  ReferenceGemm(false, false, 2, 2, 2, alpha, a, b, beta, &c);
  ExpectMatrix(dc.Download(), c, "beta = 0 over NaN");
}

TEST_F(CublasTwinTest, KZeroScalesC) {
  Matrix a(3, 1, 3), b(1, 2, 1), c(3, 2, 4);
  FillExact(&c, 6);
  DeviceMatrix da(a, CUDA_R_32F), db(b, CUDA_R_32F), dc(c, CUDA_R_32F);
  const float alpha = 1.0f, beta = 2.0f;
  ASSERT_EQ(cublasGemmEx(handle_, CUBLAS_OP_N, CUBLAS_OP_N, 3, 2, 0, &alpha, da.get(), CUDA_R_32F,
                         3, db.get(), CUDA_R_32F, 1, &beta, dc.get(), CUDA_R_32F, 4,
                         CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
            CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
  ReferenceGemm(false, false, 3, 2, 0, alpha, a, b, beta, &c);
  ExpectMatrix(dc.Download(), c, "k = 0");
}

TEST_F(CublasTwinTest, Tf32RoundsInputsToTenMantissaBitsNearestEven) {
  const float tie_down = 1.0f + std::ldexp(1.0f, -11);    // halfway, even below
  const float tie_up = 1.0f + 3 * std::ldexp(1.0f, -11);  // halfway, even above
  const float below_half = 1.0f + std::ldexp(1.0f, -12);  // rounds down
  const float above_half = 1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20);  // up
  EXPECT_EQ(Product(below_half, 1.0f, CUBLAS_COMPUTE_32F), below_half);
  EXPECT_EQ(Product(below_half, 1.0f, CUBLAS_COMPUTE_32F_FAST_TF32), 1.0f);
  EXPECT_EQ(Product(tie_down, 1.0f, CUBLAS_COMPUTE_32F_FAST_TF32), 1.0f);
  EXPECT_EQ(Product(tie_up, 1.0f, CUBLAS_COMPUTE_32F_FAST_TF32), 1.0f + std::ldexp(1.0f, -9));
  EXPECT_EQ(Product(above_half, 1.0f, CUBLAS_COMPUTE_32F_FAST_TF32), 1.0f + std::ldexp(1.0f, -10));
  // Both operands are rounded, not only A.
  EXPECT_EQ(Product(1.0f, below_half, CUBLAS_COMPUTE_32F_FAST_TF32), 1.0f);
  // The TF32 math mode does the same to plain F32 compute, but not to the pedantic one.
  ASSERT_EQ(cublasSetMathMode(handle_, CUBLAS_TF32_TENSOR_OP_MATH), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(Product(below_half, 1.0f, CUBLAS_COMPUTE_32F), 1.0f);
  EXPECT_EQ(Product(below_half, 1.0f, CUBLAS_COMPUTE_32F_PEDANTIC), below_half);
  cublasMath_t mode;
  ASSERT_EQ(cublasGetMathMode(handle_, &mode), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(mode, CUBLAS_TF32_TENSOR_OP_MATH);
}

TEST_F(CublasTwinTest, RejectsLeadingDimensionsBelowTheDocumentedMinimum) {
  Matrix big(8, 8, 8);
  DeviceMatrix d(big, CUDA_R_32F);
  const float alpha = 1.0f, beta = 0.0f;
  struct Case {
    cublasOperation_t ta, tb;
    int lda, ldb, ldc;
    cublasStatus_t want;
  };
  // m = 4, n = 3, k = 2: lda >= (N ? m : k), ldb >= (N ? k : n), ldc >= m.
  const Case cases[] = {
      {CUBLAS_OP_N, CUBLAS_OP_N, 4, 2, 4, CUBLAS_STATUS_SUCCESS},
      {CUBLAS_OP_N, CUBLAS_OP_N, 3, 2, 4, CUBLAS_STATUS_INVALID_VALUE},
      {CUBLAS_OP_T, CUBLAS_OP_N, 2, 2, 4, CUBLAS_STATUS_SUCCESS},
      {CUBLAS_OP_T, CUBLAS_OP_N, 1, 2, 4, CUBLAS_STATUS_INVALID_VALUE},
      {CUBLAS_OP_N, CUBLAS_OP_N, 4, 1, 4, CUBLAS_STATUS_INVALID_VALUE},
      {CUBLAS_OP_N, CUBLAS_OP_T, 4, 3, 4, CUBLAS_STATUS_SUCCESS},
      {CUBLAS_OP_N, CUBLAS_OP_T, 4, 2, 4, CUBLAS_STATUS_INVALID_VALUE},
      {CUBLAS_OP_N, CUBLAS_OP_N, 4, 2, 3, CUBLAS_STATUS_INVALID_VALUE},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(cublasGemmEx(handle_, c.ta, c.tb, 4, 3, 2, &alpha, d.get(), CUDA_R_32F, c.lda,
                           d.get(), CUDA_R_32F, c.ldb, &beta, d.get(), CUDA_R_32F, c.ldc,
                           CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
              c.want)
        << "ta=" << c.ta << " tb=" << c.tb << " lda=" << c.lda << " ldb=" << c.ldb
        << " ldc=" << c.ldc;
  }
  EXPECT_EQ(cublasGemmEx(handle_, CUBLAS_OP_N, CUBLAS_OP_N, -1, 3, 2, &alpha, d.get(), CUDA_R_32F,
                         4, d.get(), CUDA_R_32F, 2, &beta, d.get(), CUDA_R_32F, 4,
                         CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
            CUBLAS_STATUS_INVALID_VALUE);
  ASSERT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
}

TEST_F(CublasTwinTest, RejectsHostAndOverrunningPointers) {
  Matrix m(4, 4, 4);
  DeviceMatrix d(m, CUDA_R_32F);
  std::vector<float> host(16, 1.0f);
  const float alpha = 1.0f, beta = 0.0f;
  const auto gemm = [&](const void* a, const void* b, void* c, int ld) {
    return cublasGemmEx(handle_, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, &alpha, a, CUDA_R_32F, ld, b,
                        CUDA_R_32F, ld, &beta, c, CUDA_R_32F, ld, CUBLAS_COMPUTE_32F,
                        CUBLAS_GEMM_DEFAULT);
  };
  EXPECT_EQ(gemm(d.get(), d.get(), d.get(), 4), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(gemm(host.data(), d.get(), d.get(), 4), CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_EQ(gemm(d.get(), host.data(), d.get(), 4), CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_EQ(gemm(d.get(), d.get(), host.data(), 4), CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_EQ(gemm(d.get(), d.get(), nullptr, 4), CUBLAS_STATUS_INVALID_VALUE);
  // ld 5 makes every matrix span 3 * 5 + 4 = 19 floats of a 16-float allocation.
  EXPECT_EQ(gemm(d.get(), d.get(), d.get(), 5), CUBLAS_STATUS_INVALID_VALUE);
  ASSERT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
}

TEST_F(CublasTwinTest, ReportsUnsupportedTypeAndComputeCombinations) {
  Matrix m(2, 2, 2);
  DeviceMatrix d(m, CUDA_R_32F);
  const float alpha = 1.0f, beta = 0.0f;
  const auto gemm = [&](cudaDataType a, cudaDataType b, cudaDataType c,
                        cublasComputeType_t compute) {
    return cublasGemmEx(handle_, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, &alpha, d.get(), a, 2, d.get(),
                        b, 2, &beta, d.get(), c, 2, compute, CUBLAS_GEMM_DEFAULT);
  };
  EXPECT_EQ(gemm(CUDA_R_16F, CUDA_R_16BF, CUDA_R_32F, CUBLAS_COMPUTE_32F),
            CUBLAS_STATUS_NOT_SUPPORTED);
  EXPECT_EQ(gemm(CUDA_R_16F, CUDA_R_16F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32),
            CUBLAS_STATUS_NOT_SUPPORTED);
  EXPECT_EQ(gemm(CUDA_R_32F, CUDA_R_32F, CUDA_R_16F, CUBLAS_COMPUTE_32F),
            CUBLAS_STATUS_NOT_SUPPORTED);
  EXPECT_EQ(gemm(CUDA_R_64F, CUDA_R_64F, CUDA_R_64F, CUBLAS_COMPUTE_64F),
            CUBLAS_STATUS_NOT_SUPPORTED);
  EXPECT_EQ(gemm(CUDA_R_16F, CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F), CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
}

TEST_F(CublasTwinTest, RunsAsynchronouslyOnTheHandlesStreamWithScalarsReadAtCallTime) {
  Matrix a(2, 2, 2), b(2, 2, 2), c(2, 2, 2);
  FillExact(&a, 7);
  FillExact(&b, 8);
  FillExact(&c, 9);
  DeviceMatrix da(a, CUDA_R_32F), db(b, CUDA_R_32F), dc(c, CUDA_R_32F);
  // Hold the stream: the GEMM queued behind this must not run before it is released.
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  ASSERT_EQ(orca::cuda_twin::Enqueue(stream_,
                                     [released]() {
                                       released.wait();
                                       return cudaSuccess;
                                     }),
            cudaSuccess);
  float alpha = 2.0f, beta = 1.0f;
  ASSERT_EQ(cublasGemmEx(handle_, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, &alpha, da.get(), CUDA_R_32F,
                         2, db.get(), CUDA_R_32F, 2, &beta, dc.get(), CUDA_R_32F, 2,
                         CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
            CUBLAS_STATUS_SUCCESS);
  alpha = 100.0f;  // host pointer mode: the call already copied the scalars
  beta = 100.0f;
  // Twin device memory is host memory: peek at C without synchronising.
  const float* raw_c = static_cast<const float*>(dc.get());
  EXPECT_EQ(raw_c[0], c.at(0, 0)) << "GemmEx ran before its stream reached it";
  EXPECT_EQ(cudaStreamQuery(stream_), cudaErrorNotReady);
  release.set_value();
  ASSERT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
  ReferenceGemm(false, false, 2, 2, 2, 2.0f, a, b, 1.0f, &c);
  ExpectMatrix(dc.Download(), c, "after synchronize");
}

TEST_F(CublasTwinTest, DefaultStreamWorksToo) {
  ASSERT_EQ(cublasSetStream(handle_, nullptr), CUBLAS_STATUS_SUCCESS);
  cudaStream_t got = stream_;
  ASSERT_EQ(cublasGetStream(handle_, &got), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(got, nullptr);
  Matrix a(2, 3, 2), b(3, 2, 3), c(2, 2, 2);
  FillExact(&a, 10);
  FillExact(&b, 11);
  DeviceMatrix da(a, CUDA_R_32F), db(b, CUDA_R_32F), dc(c, CUDA_R_32F);
  const float alpha = 1.0f, beta = 0.0f;
  ASSERT_EQ(cublasGemmEx(handle_, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 3, &alpha, da.get(), CUDA_R_32F,
                         2, db.get(), CUDA_R_32F, 3, &beta, dc.get(), CUDA_R_32F, 2,
                         CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
            CUBLAS_STATUS_SUCCESS);
  ReferenceGemm(false, false, 2, 2, 3, alpha, a, b, beta, &c);
  ExpectMatrix(dc.Download(), c, "legacy stream");  // cudaMemcpy orders after it
}

TEST_F(CublasTwinTest, HandlesAndModes) {
  cublasPointerMode_t pm = CUBLAS_POINTER_MODE_DEVICE;
  ASSERT_EQ(cublasGetPointerMode(handle_, &pm), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(pm, CUBLAS_POINTER_MODE_HOST);
  EXPECT_EQ(cublasSetPointerMode(handle_, CUBLAS_POINTER_MODE_DEVICE), CUBLAS_STATUS_NOT_SUPPORTED);
  EXPECT_EQ(cublasSetPointerMode(handle_, CUBLAS_POINTER_MODE_HOST), CUBLAS_STATUS_SUCCESS);
  cudaStream_t got = nullptr;
  ASSERT_EQ(cublasGetStream(handle_, &got), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(got, stream_);
  EXPECT_EQ(cublasSetMathMode(handle_, static_cast<cublasMath_t>(7)), CUBLAS_STATUS_INVALID_VALUE);

  EXPECT_EQ(cublasSetStream(nullptr, stream_), CUBLAS_STATUS_NOT_INITIALIZED);
  const float one = 1.0f;
  EXPECT_EQ(cublasGemmEx(nullptr, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, &one, nullptr, CUDA_R_32F, 1,
                         nullptr, CUDA_R_32F, 1, &one, nullptr, CUDA_R_32F, 1, CUBLAS_COMPUTE_32F,
                         CUBLAS_GEMM_DEFAULT),
            CUBLAS_STATUS_NOT_INITIALIZED);
  cublasHandle_t doomed = nullptr;
  ASSERT_EQ(cublasCreate(&doomed), CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cublasDestroy(doomed), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(cublasDestroy(doomed), CUBLAS_STATUS_NOT_INITIALIZED);
  EXPECT_EQ(cublasSetStream(doomed, stream_), CUBLAS_STATUS_NOT_INITIALIZED);
}

TEST(CublasTwinStatusTest, NamesAndStringsAreCublass) {
  EXPECT_STREQ(cublasGetStatusName(CUBLAS_STATUS_SUCCESS), "CUBLAS_STATUS_SUCCESS");
  EXPECT_STREQ(cublasGetStatusName(CUBLAS_STATUS_INVALID_VALUE), "CUBLAS_STATUS_INVALID_VALUE");
  EXPECT_STREQ(cublasGetStatusName(CUBLAS_STATUS_NOT_SUPPORTED), "CUBLAS_STATUS_NOT_SUPPORTED");
  EXPECT_STREQ(cublasGetStatusName(CUBLAS_STATUS_NOT_INITIALIZED), "CUBLAS_STATUS_NOT_INITIALIZED");
  EXPECT_STREQ(cublasGetStatusName(CUBLAS_STATUS_EXECUTION_FAILED),
               "CUBLAS_STATUS_EXECUTION_FAILED");
  EXPECT_STREQ(cublasGetStatusString(CUBLAS_STATUS_INVALID_VALUE),
               "an invalid numeric value was used as an argument");
}

}  // namespace
