// The norm kernels' fused residual form (residual += x; out = norm(residual)), which
// the Backend interface does not expose yet, against the CPU backend's Add + norm.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <random>

#include "kernels/norm.cuh"
#include "tests/kernels/gpu_test_util.h"

namespace orca {
namespace {

float* ToDevice(const std::vector<float>& v) {
  void* p = nullptr;
  EXPECT_EQ(cudaMalloc(&p, v.size() * sizeof(float)), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(p, v.data(), v.size() * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
  return static_cast<float*>(p);
}

std::vector<float> ToHost(const float* p, size_t n) {
  std::vector<float> v(n);
  EXPECT_EQ(cudaMemcpy(v.data(), p, n * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
  return v;
}

TEST(FusedNormKernelTest, ResidualAddThenNormMatchesCpu) {
  ORCA_REQUIRE_GPU();
  std::mt19937 rng(31);
  auto cpu = CreateCpuBackend(1);
  for (bool layer_norm : {false, true}) {
    SCOPED_TRACE(layer_norm ? "LayerNorm" : "RMSNorm");
    const int64_t rows = 11, cols = 2048;
    const size_t n = static_cast<size_t>(rows * cols);
    std::vector<float> x = testing::RandomFloats(rng, n, -2, 2),
                       res = testing::RandomFloats(rng, n, -2, 2);
    std::vector<float> w = testing::RandomFloats(rng, cols, 0.5f, 1.5f),
                       b = testing::RandomFloats(rng, cols);
    // CPU: res += x; out = norm(res).
    std::vector<float> res_cpu = res, out_cpu(n);
    Tensor rc{res_cpu.data(), DType::kF32, rows, cols, 0},
        oc{out_cpu.data(), DType::kF32, rows, cols, 0};
    cpu->Add(rc, Tensor{x.data(), DType::kF32, rows, cols, 0});
    if (layer_norm) {
      cpu->LayerNorm(rc, Tensor{w.data(), DType::kF32, 1, cols, 0},
                     Tensor{b.data(), DType::kF32, 1, cols, 0}, 1e-5f, oc);
    } else {
      cpu->RmsNorm(rc, Tensor{w.data(), DType::kF32, 1, cols, 0}, 1e-5f, oc);
    }
    float *dx = ToDevice(x), *dres = ToDevice(res), *dw = ToDevice(w), *db = ToDevice(b);
    float* dout = ToDevice(std::vector<float>(n, std::nanf("")));
    const cudaError_t err = layer_norm
                                ? kernels::LaunchLayerNorm({dx, cols}, {dres, cols}, dw, db, 1e-5f,
                                                           rows, cols, {dout, cols}, nullptr)
                                : kernels::LaunchRmsNorm({dx, cols}, {dres, cols}, dw, 1e-5f, rows,
                                                         cols, {dout, cols}, nullptr);
    ASSERT_EQ(err, cudaSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    ORCA_EXPECT_CONSISTENT(ToHost(dres, n), res_cpu, 1e-6);
    ORCA_EXPECT_CONSISTENT(ToHost(dout, n), out_cpu, 1e-3);
    for (float* p : {dx, dres, dw, db, dout}) (void)cudaFree(p);
  }
}

}  // namespace
}  // namespace orca
