// The CUDA twin's kernel executor (cuda_twin/kernel_launch.h) through real CUDA kernels
// (probe_kernels.cu, translated like kernels/): results a GPU defines, and the faults a
// GPU would punish reported as launch failures.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <vector>

#include "tests/cuda_twin/probe_kernels.cuh"

namespace orca::cuda_twin {
namespace {

template <typename T>
T* DeviceArray(size_t n) {
  void* p = nullptr;
  EXPECT_EQ(cudaMalloc(&p, n * sizeof(T)), cudaSuccess);
  return static_cast<T*>(p);
}

template <typename T>
std::vector<T> ToHost(const T* d, size_t n) {
  std::vector<T> h(n);
  EXPECT_EQ(cudaMemcpy(h.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
  return h;
}

TEST(KernelLaunch, ShufflesAndSharedMemoryComputeBlockSums) {
  float* out = DeviceArray<float>(3);
  ASSERT_EQ(probe::LaunchBlockSum(out, 3, 128, nullptr), cudaSuccess);
  const std::vector<float> got = ToHost(out, 3);
  for (int b = 0; b < 3; ++b) {
    // sum over t < 128 of (1000 b + t)
    EXPECT_EQ(got[b], 128.0f * 1000 * b + 127 * 128 / 2) << "block " << b;
  }
  EXPECT_EQ(cudaFree(out), cudaSuccess);
}

TEST(KernelLaunch, BlocksRunInAShuffledOrder) {
  constexpr int kBlocks = 64;
  int32_t* counter = DeviceArray<int32_t>(1);
  int32_t* order = DeviceArray<int32_t>(kBlocks);
  ASSERT_EQ(cudaMemset(counter, 0, sizeof(int32_t)), cudaSuccess);
  ASSERT_EQ(probe::LaunchRecordOrder(counter, order, kBlocks, nullptr), cudaSuccess);
  std::vector<int32_t> got = ToHost(order, kBlocks);
  EXPECT_FALSE(std::is_sorted(got.begin(), got.end())) << "blocks ran in index order";
  std::sort(got.begin(), got.end());
  std::vector<int32_t> all(kBlocks);
  std::iota(all.begin(), all.end(), 0);
  EXPECT_EQ(got, all) << "every block runs exactly once";
  EXPECT_EQ(cudaFree(counter), cudaSuccess);
  EXPECT_EQ(cudaFree(order), cudaSuccess);
}

TEST(KernelLaunch, SharedMemoryStartsPoisonedInEveryBlock) {
  uint32_t* out = DeviceArray<uint32_t>(128);
  for (bool dynamic : {false, true}) {
    for (int round = 0; round < 2; ++round) {
      ASSERT_EQ(probe::LaunchReadUnwrittenShared(out, 128, dynamic, nullptr), cudaSuccess);
      for (uint32_t w : ToHost(out, 128)) {
        ASSERT_EQ(w, 0xffffffffu) << (dynamic ? "dynamic" : "static") << " round " << round;
      }
    }
  }
  EXPECT_EQ(cudaFree(out), cudaSuccess);
}

TEST(KernelLaunch, BadConfigurationsFailAtLaunchAndNothingRuns) {
  EXPECT_EQ(probe::LaunchEmpty(1, 1025, 0, nullptr), cudaErrorInvalidConfiguration);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess) << "the launcher consumed the error";
  EXPECT_EQ(probe::LaunchEmpty(0, 32, 0, nullptr), cudaErrorInvalidConfiguration);
  EXPECT_EQ(probe::LaunchEmpty(1, 32, 48 * 1024 + 1, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(probe::LaunchEmpty(1, 1024, 48 * 1024, nullptr), cudaSuccess);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

TEST(KernelLaunch, DivergentBarrierIsALaunchFailureNotAHang) {
  float* out = DeviceArray<float>(32);
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreate(&s), cudaSuccess);
  ASSERT_EQ(probe::LaunchDivergentBarrier(16, out, s), cudaSuccess);
  EXPECT_EQ(cudaStreamSynchronize(s), cudaErrorLaunchFailure);
  EXPECT_EQ(cudaGetLastError(), cudaErrorLaunchFailure);
  // Every lane at the barrier: fine.
  ASSERT_EQ(probe::LaunchDivergentBarrier(32, out, s), cudaSuccess);
  EXPECT_EQ(cudaStreamSynchronize(s), cudaSuccess) << "the stream works after a failed launch";
  EXPECT_EQ(cudaStreamDestroy(s), cudaSuccess);
  EXPECT_EQ(cudaFree(out), cudaSuccess);
}

TEST(KernelLaunch, ShuffleNamingAnExitedLaneIsALaunchFailure) {
  float* out = DeviceArray<float>(32);
  ASSERT_EQ(probe::LaunchShuffleAfterExit(16, out, nullptr), cudaSuccess);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaErrorLaunchFailure);
  EXPECT_EQ(cudaGetLastError(), cudaErrorLaunchFailure) << "the synchronising call set it";
  ASSERT_EQ(probe::LaunchShuffleAfterExit(32, out, nullptr), cudaSuccess);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  for (float v : ToHost(out, 32)) EXPECT_EQ(v, 1.0f);
  EXPECT_EQ(cudaFree(out), cudaSuccess);
}

TEST(KernelLaunch, KernelsOrderWithCopiesOnTheirStream) {
  constexpr int64_t kN = 1000;
  float* x = DeviceArray<float>(kN);
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  std::vector<float> in(kN);
  std::iota(in.begin(), in.end(), 0.0f);
  ASSERT_EQ(cudaMemcpyAsync(x, in.data(), kN * sizeof(float), cudaMemcpyHostToDevice, s),
            cudaSuccess);
  ASSERT_EQ(probe::LaunchScale(x, kN, s), cudaSuccess);
  ASSERT_EQ(probe::LaunchScale(x, kN, s), cudaSuccess);
  std::vector<float> out(kN);
  ASSERT_EQ(cudaMemcpyAsync(out.data(), x, kN * sizeof(float), cudaMemcpyDeviceToHost, s),
            cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  for (int64_t i = 0; i < kN; ++i) ASSERT_EQ(out[i], (in[i] * 2 + 1) * 2 + 1) << i;
  EXPECT_EQ(cudaStreamDestroy(s), cudaSuccess);
  EXPECT_EQ(cudaFree(x), cudaSuccess);
}

}  // namespace
}  // namespace orca::cuda_twin
