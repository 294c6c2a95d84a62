// Helpers for the CUDA tests (label `gpu`): skipping without a GPU, random data,
// tensors mirrored on the CPU reference backend and the CUDA backend, NaN poisoning
// of outputs, and error measures.
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "engine/backend/backend.h"

namespace orca::testing {

// Returns "" when a CUDA device is usable, else why not (for GTEST_SKIP).
std::string GpuUnavailableReason();

// Whether the environment demands a GPU (ORCA_REQUIRE_GPU=1): then a missing GPU fails
// the test instead of skipping it, so a GPU runner cannot pass by skipping.
bool GpuRequired();

// Random floats uniform in [lo, hi), from a fixed-seed generator per call site.
std::vector<float> RandomFloats(std::mt19937& rng, size_t n, float lo = -1.0f, float hi = 1.0f);

// Rounds every value to `dtype` and back (what the GPU sees of a 16-bit weight).
std::vector<float> RoundTo(const std::vector<float>& v, DType dtype);

// A [rows, cols] tensor held by both backends: `cpu` in F32, `gpu` in `dtype` (same
// values after rounding to dtype).
struct Mirrored {
  std::unique_ptr<DeviceBuffer> cpu_buf, gpu_buf;
  Tensor cpu, gpu;
};

class BackendPair {
 public:
  // Creates both backends; gpu() is null when creation fails (error in status()).
  BackendPair();
  Backend& cpu() { return *cpu_; }
  Backend& gpu() { return *gpu_; }
  bool ok() const { return gpu_ != nullptr; }
  const std::string& error() const { return error_; }

  // Uploads `values` ([rows, cols], already rounded to dtype by the caller or not) to
  // both backends.
  Mirrored Upload(const std::vector<float>& values, int64_t rows, int64_t cols,
                  DType dtype = DType::kF32);
  // Uploads `values` to both backends as a KV cache of `dtype` (both hold the same
  // rounded elements; the tensors' dtype is `dtype`).
  Mirrored UploadCache(const std::vector<float>& values, int64_t rows, int64_t cols, DType dtype);
  // Returns the raw bytes of a contiguous mirrored tensor on the GPU or the CPU.
  std::vector<uint8_t> RawBytes(const Mirrored& m, bool gpu);
  // Uploads int32 values to both backends; returns {cpu pointer, gpu pointer}.
  std::pair<const int32_t*, const int32_t*> UploadInts(const std::vector<int32_t>& values);
  // Fills the GPU copy of `t` (its whole buffer) with NaN of any dtype.
  void Poison(const Mirrored& t);
  // Returns the GPU contents of a contiguous tensor (16-bit ones widened) and the CPU
  // contents of a contiguous F32 one.
  std::vector<float> GpuValues(const Tensor& t);
  std::vector<float> CpuValues(const Tensor& t);

 private:
  std::unique_ptr<Backend> cpu_, gpu_;
  std::string error_;
  std::vector<std::unique_ptr<DeviceBuffer>> int_buffers_;
};

struct Comparison {
  double max_abs_diff = 0;
  double max_abs_ref = 0;
  int64_t non_finite = 0;  // elements where the GPU value is NaN/Inf but the reference is finite
  double relative() const { return max_abs_ref > 0 ? max_abs_diff / max_abs_ref : max_abs_diff; }
};

// Compares `actual` (GPU) against `expected` (CPU) element-wise.
Comparison Compare(const std::vector<float>& actual, const std::vector<float>& expected);

}  // namespace orca::testing

// Skips the test without a usable GPU (fails instead when ORCA_REQUIRE_GPU=1).
#define ORCA_REQUIRE_GPU()                                                                     \
  do {                                                                                         \
    const std::string orca_gpu_reason_ = ::orca::testing::GpuUnavailableReason();              \
    if (!orca_gpu_reason_.empty()) {                                                           \
      if (::orca::testing::GpuRequired()) FAIL() << "no GPU: " << orca_gpu_reason_;            \
      GTEST_SKIP() << "no usable CUDA device (" << orca_gpu_reason_ << "); skipping GPU test"; \
    }                                                                                          \
  } while (0)

// Expects the GPU output to match the CPU reference within `tol` relative error
// (max |gpu - cpu| / max |cpu|) with every element written (no NaN left from poison).
#define ORCA_EXPECT_CONSISTENT(actual, expected, tol)                                              \
  do {                                                                                             \
    const ::orca::testing::Comparison orca_cmp_ = ::orca::testing::Compare(actual, expected);      \
    EXPECT_EQ(orca_cmp_.non_finite, 0) << "elements not written or not finite";                    \
    EXPECT_LT(orca_cmp_.relative(), tol)                                                           \
        << "max abs diff " << orca_cmp_.max_abs_diff << ", max abs ref " << orca_cmp_.max_abs_ref; \
  } while (0)
