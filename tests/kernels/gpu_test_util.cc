#include "tests/kernels/gpu_test_util.h"

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <limits>

#include "engine/backend/cuda/cuda_backend.h"

namespace orca::testing {

std::string GpuUnavailableReason() {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    return std::string("cudaGetDeviceCount: ") + cudaGetErrorName(err) + ": " +
           cudaGetErrorString(err);
  }
  if (count == 0) return "cudaGetDeviceCount returned 0 devices";
  return "";
}

bool GpuRequired() {
  const char* v = std::getenv("ORCA_REQUIRE_GPU");
  return v != nullptr && std::string(v) == "1";
}

std::vector<float> RandomFloats(std::mt19937& rng, size_t n, float lo, float hi) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

std::vector<float> RoundTo(const std::vector<float>& v, DType dtype) {
  if (dtype == DType::kF32) return v;
  std::vector<uint16_t> half(v.size());
  ConvertFromF32(v.data(), v.size(), dtype, half.data());
  std::vector<float> out(v.size());
  ConvertToF32(half.data(), dtype, v.size(), out.data());
  return out;
}

BackendPair::BackendPair() : cpu_(CreateCpuBackend(2)) {
  auto gpu = CreateCudaBackend();
  if (gpu.ok()) {
    gpu_ = std::move(*gpu);
  } else {
    error_ = gpu.status().ToString();
  }
}

Mirrored BackendPair::Upload(const std::vector<float>& values, int64_t rows, int64_t cols,
                             DType dtype) {
  Mirrored m;
  const size_t n = static_cast<size_t>(rows * cols);
  EXPECT_EQ(values.size(), n);
  std::vector<float> rounded = RoundTo(values, dtype);
  auto c = cpu_->Allocate(n * sizeof(float));
  auto g = gpu_->Allocate(n * DTypeSize(dtype));
  EXPECT_TRUE(c.ok() && g.ok());
  if (!c.ok() || !g.ok()) return m;
  m.cpu_buf = std::move(*c);
  m.gpu_buf = std::move(*g);
  EXPECT_TRUE(cpu_->CopyToDevice(m.cpu_buf->data(), rounded.data(), n * sizeof(float)).ok());
  if (dtype == DType::kF32) {
    EXPECT_TRUE(gpu_->CopyToDevice(m.gpu_buf->data(), rounded.data(), n * sizeof(float)).ok());
  } else {
    std::vector<uint16_t> half(n);
    ConvertFromF32(values.data(), n, dtype, half.data());
    EXPECT_TRUE(gpu_->CopyToDevice(m.gpu_buf->data(), half.data(), n * sizeof(uint16_t)).ok());
  }
  m.cpu = Tensor{m.cpu_buf->data(), DType::kF32, rows, cols, 0};
  m.gpu = Tensor{m.gpu_buf->data(), dtype, rows, cols, 0};
  return m;
}

Mirrored BackendPair::UploadCache(const std::vector<float>& values, int64_t rows, int64_t cols,
                                  DType dtype) {
  Mirrored m;
  const size_t n = static_cast<size_t>(rows * cols), bytes = n * DTypeSize(dtype);
  EXPECT_EQ(values.size(), n);
  std::vector<uint8_t> raw(bytes);
  ConvertFromF32(values.data(), n, dtype, raw.data());
  auto c = cpu_->Allocate(bytes);
  auto g = gpu_->Allocate(bytes);
  EXPECT_TRUE(c.ok() && g.ok());
  if (!c.ok() || !g.ok()) return m;
  m.cpu_buf = std::move(*c);
  m.gpu_buf = std::move(*g);
  EXPECT_TRUE(cpu_->CopyToDevice(m.cpu_buf->data(), raw.data(), bytes).ok());
  EXPECT_TRUE(gpu_->CopyToDevice(m.gpu_buf->data(), raw.data(), bytes).ok());
  m.cpu = Tensor{m.cpu_buf->data(), dtype, rows, cols, 0};
  m.gpu = Tensor{m.gpu_buf->data(), dtype, rows, cols, 0};
  return m;
}

std::vector<uint8_t> BackendPair::RawBytes(const Mirrored& m, bool gpu) {
  const Tensor& t = gpu ? m.gpu : m.cpu;
  std::vector<uint8_t> v(t.nbytes());
  absl::Status s = (gpu ? gpu_ : cpu_)->CopyToHost(v.data(), t.data, v.size());
  EXPECT_TRUE(s.ok()) << s;
  return v;
}

std::pair<const int32_t*, const int32_t*> BackendPair::UploadInts(
    const std::vector<int32_t>& values) {
  const size_t bytes = std::max<size_t>(values.size(), 1) * sizeof(int32_t);
  auto c = cpu_->Allocate(bytes);
  auto g = gpu_->Allocate(bytes);
  EXPECT_TRUE(c.ok() && g.ok());
  if (!c.ok() || !g.ok()) return {nullptr, nullptr};
  EXPECT_TRUE(
      cpu_->CopyToDevice((*c)->data(), values.data(), values.size() * sizeof(int32_t)).ok());
  EXPECT_TRUE(
      gpu_->CopyToDevice((*g)->data(), values.data(), values.size() * sizeof(int32_t)).ok());
  std::pair<const int32_t*, const int32_t*> p{static_cast<const int32_t*>((*c)->data()),
                                              static_cast<const int32_t*>((*g)->data())};
  int_buffers_.push_back(std::move(*c));
  int_buffers_.push_back(std::move(*g));
  return p;
}

void BackendPair::Poison(const Mirrored& t) {
  // All-ones bytes: a NaN in float32, float16 and bfloat16 alike.
  std::vector<uint8_t> nan(t.gpu_buf->size(), 0xff);
  EXPECT_TRUE(gpu_->CopyToDevice(t.gpu_buf->data(), nan.data(), nan.size()).ok());
}

std::vector<float> BackendPair::GpuValues(const Tensor& t) {
  const size_t n = static_cast<size_t>(t.rows * t.cols);
  std::vector<uint8_t> raw(n * DTypeSize(t.dtype));
  absl::Status s = gpu_->CopyToHost(raw.data(), t.data, raw.size());
  EXPECT_TRUE(s.ok()) << s;
  std::vector<float> v(n);
  ConvertToF32(raw.data(), t.dtype, n, v.data());
  return v;
}

std::vector<float> BackendPair::CpuValues(const Tensor& t) {
  std::vector<float> v(static_cast<size_t>(t.rows * t.cols));
  EXPECT_TRUE(cpu_->CopyToHost(v.data(), t.data, v.size() * sizeof(float)).ok());
  return v;
}

Comparison Compare(const std::vector<float>& actual, const std::vector<float>& expected) {
  Comparison c;
  EXPECT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size() && i < expected.size(); ++i) {
    const double e = expected[i], a = actual[i];
    if (!std::isfinite(e)) continue;
    if (!std::isfinite(a)) {
      ++c.non_finite;
      continue;
    }
    c.max_abs_diff = std::max(c.max_abs_diff, std::abs(a - e));
    c.max_abs_ref = std::max(c.max_abs_ref, std::abs(e));
  }
  return c;
}

}  // namespace orca::testing
