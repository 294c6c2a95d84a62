// The CUDA twin's runtime (cuda_twin/): devices, memory and its budget, poison, and
// CUDA's ordering rules for streams, events and copies. Runs with
// ORCA_CUDA_TWIN_DEVICES=2 and ORCA_CUDA_TWIN_DEVICE_MEMORY=64Mi,48Mi (CMakeLists.txt):
// device 0 has 64 MiB, device 1 48 MiB.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <future>
#include <thread>
#include <vector>

#include "cuda_twin/host_guard.h"
#include "cuda_twin/streams.h"
#include "cuda_twin/twin_config.h"

namespace orca::cuda_twin {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

// Holds a stream at a point until Open(): the work after it cannot have run before.
class Gate {
 public:
  explicit Gate(cudaStream_t s) {
    EXPECT_EQ(
        cudaLaunchHostFunc(
            s, [](void* self) { static_cast<Gate*>(self)->opened_.get_future().wait(); }, this),
        cudaSuccess);
  }
  void Open() { opened_.set_value(); }

 private:
  std::promise<void> opened_;
};

bool Eventually(const std::atomic<bool>& flag) {
  for (int i = 0; i < 2000 && !flag.load(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return flag.load();
}

TEST(Runtime, DevicesAndProperties) {
  int count = 0;
  ASSERT_EQ(cudaGetDeviceCount(&count), cudaSuccess);
  EXPECT_EQ(count, 2);
  cudaDeviceProp prop;
  ASSERT_EQ(cudaGetDeviceProperties(&prop, 0), cudaSuccess);
  EXPECT_EQ(prop.totalGlobalMem, 64 * kMiB);
  ASSERT_EQ(cudaGetDeviceProperties(&prop, 1), cudaSuccess);
  EXPECT_EQ(prop.totalGlobalMem, 48 * kMiB) << "a size of its own";
  EXPECT_EQ(prop.maxThreadsPerBlock, 1024);
  EXPECT_EQ(prop.sharedMemPerBlock, 48u * 1024);
  EXPECT_EQ(cudaSetDevice(2), cudaErrorInvalidDevice);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidDevice);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess) << "cudaGetLastError resets";
  ASSERT_EQ(cudaSetDevice(1), cudaSuccess);
  int device = -1;
  ASSERT_EQ(cudaGetDevice(&device), cudaSuccess);
  EXPECT_EQ(device, 1);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
}

TEST(Runtime, NewAllocationsArePoisonedWithNaN) {
  void* p = nullptr;
  ASSERT_EQ(cudaMalloc(&p, 64 * sizeof(float)), cudaSuccess);
  std::vector<float> h(64, 0.0f);
  ASSERT_EQ(cudaMemcpy(h.data(), p, 64 * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
  for (float v : h) EXPECT_TRUE(std::isnan(v));
  EXPECT_EQ(cudaFree(p), cudaSuccess);
}

TEST(Runtime, MemoryIsBudgetedPerDevice) {
  size_t free0 = 0, total = 0;
  ASSERT_EQ(cudaMemGetInfo(&free0, &total), cudaSuccess);
  EXPECT_EQ(total, 64 * kMiB);
  void* a = nullptr;
  ASSERT_EQ(cudaMalloc(&a, 40 * kMiB), cudaSuccess);
  size_t free1 = 0;
  ASSERT_EQ(cudaMemGetInfo(&free1, &total), cudaSuccess);
  EXPECT_EQ(free0 - free1, 40 * kMiB);
  void* b = nullptr;
  EXPECT_EQ(cudaMalloc(&b, 30 * kMiB), cudaErrorMemoryAllocation);
  EXPECT_EQ(cudaGetLastError(), cudaErrorMemoryAllocation);
  // Device 1 has its own memory, of its own size.
  ASSERT_EQ(cudaSetDevice(1), cudaSuccess);
  ASSERT_EQ(cudaMemGetInfo(&free1, &total), cudaSuccess);
  EXPECT_EQ(total, 48 * kMiB);
  EXPECT_EQ(free1, 48 * kMiB);
  ASSERT_EQ(cudaMalloc(&b, 30 * kMiB), cudaSuccess);
  void* c = nullptr;
  EXPECT_EQ(cudaMalloc(&c, 20 * kMiB), cudaErrorMemoryAllocation);
  EXPECT_EQ(cudaGetLastError(), cudaErrorMemoryAllocation);
  EXPECT_EQ(cudaFree(b), cudaSuccess);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  EXPECT_EQ(cudaFree(a), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&b, 30 * kMiB), cudaSuccess);
  EXPECT_EQ(cudaFree(b), cudaSuccess);
  EXPECT_EQ(cudaFree(reinterpret_cast<char*>(b) + 8), cudaErrorInvalidValue) << "not an allocation";
}

TEST(Runtime, CopiesCheckWherePointersLive) {
  void* d = nullptr;
  ASSERT_EQ(cudaMalloc(&d, 256), cudaSuccess);
  std::vector<char> h(512);
  EXPECT_EQ(cudaMemcpy(d, h.data(), 512, cudaMemcpyHostToDevice), cudaErrorInvalidValue)
      << "runs past the allocation";
  EXPECT_EQ(cudaMemcpy(h.data(), h.data() + 256, 16, cudaMemcpyHostToDevice), cudaErrorInvalidValue)
      << "the destination of a host-to-device copy is host memory";
  EXPECT_EQ(cudaMemcpy(h.data(), d, 16, cudaMemcpyHostToDevice), cudaErrorInvalidValue)
      << "the kind contradicts the pointers";
  EXPECT_EQ(cudaMemset(h.data(), 0, 16), cudaErrorInvalidValue) << "memset of host memory";
  EXPECT_EQ(cudaMemcpy(h.data(), d, 16, cudaMemcpyDefault), cudaSuccess);
  (void)cudaGetLastError();
  EXPECT_EQ(cudaFree(d), cudaSuccess);
}

TEST(Runtime, PageableSourceIsStagedAtTheCallAndPinnedReadLater) {
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  int32_t* d = nullptr;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&d), 2 * sizeof(int32_t)), cudaSuccess);
  int32_t* pinned = nullptr;
  ASSERT_EQ(cudaMallocHost(reinterpret_cast<void**>(&pinned), sizeof(int32_t)), cudaSuccess);
  int32_t pageable = 1;
  *pinned = 1;
  {
    Gate gate(s);
    ASSERT_EQ(cudaMemcpyAsync(d, &pageable, sizeof(int32_t), cudaMemcpyHostToDevice, s),
              cudaSuccess);
    ASSERT_EQ(cudaMemcpyAsync(d + 1, pinned, sizeof(int32_t), cudaMemcpyHostToDevice, s),
              cudaSuccess);
    pageable = 2;  // allowed: the pageable source was staged
    *pinned = 2;   // a race on a GPU: the copy reads pinned memory when it runs
    gate.Open();
    ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  }
  int32_t got[2];
  ASSERT_EQ(cudaMemcpy(got, d, sizeof(got), cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(got[0], 1);
  EXPECT_EQ(got[1], 2);
  EXPECT_EQ(cudaFreeHost(pinned), cudaSuccess);
  EXPECT_EQ(cudaFree(d), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(s), cudaSuccess);
}

TEST(Runtime, DeviceToPageableCopyReturnsComplete) {
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  int32_t* d = nullptr;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&d), sizeof(int32_t)), cudaSuccess);
  ASSERT_EQ(cudaMemsetAsync(d, 0x01, sizeof(int32_t), s), cudaSuccess);
  int32_t got = 0;
  ASSERT_EQ(cudaMemcpyAsync(&got, d, sizeof(got), cudaMemcpyDeviceToHost, s), cudaSuccess);
  EXPECT_EQ(got, 0x01010101) << "no synchronisation needed for pageable destinations";
  EXPECT_EQ(cudaFree(d), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(s), cudaSuccess);
}

TEST(Runtime, EventsOrderOneStreamAfterAnother) {
  cudaStream_t a, b;
  ASSERT_EQ(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking), cudaSuccess);
  cudaEvent_t written, start;
  ASSERT_EQ(cudaEventCreate(&written), cudaSuccess);
  ASSERT_EQ(cudaEventCreate(&start), cudaSuccess);
  int32_t* d = nullptr;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&d), 2 * sizeof(int32_t)), cudaSuccess);
  Gate gate(a);
  ASSERT_EQ(cudaEventRecord(start, a), cudaSuccess);
  ASSERT_EQ(cudaMemsetAsync(d, 0x02, sizeof(int32_t), a), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(written, a), cudaSuccess);
  EXPECT_EQ(cudaEventQuery(written), cudaErrorNotReady);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess) << "NotReady is not an error";
  ASSERT_EQ(cudaStreamWaitEvent(b, written, 0), cudaSuccess);
  ASSERT_EQ(cudaMemcpyAsync(d + 1, d, sizeof(int32_t), cudaMemcpyDeviceToDevice, b), cudaSuccess);
  std::atomic<bool> b_done{false};
  ASSERT_EQ(cudaLaunchHostFunc(
                b, [](void* f) { static_cast<std::atomic<bool>*>(f)->store(true); }, &b_done),
            cudaSuccess);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(b_done.load()) << "b ran past an event a has not reached";
  gate.Open();
  ASSERT_EQ(cudaStreamSynchronize(b), cudaSuccess);
  ASSERT_EQ(cudaEventSynchronize(written), cudaSuccess);
  float ms = -1;
  ASSERT_EQ(cudaEventElapsedTime(&ms, start, written), cudaSuccess);
  EXPECT_GE(ms, 0.0f);
  int32_t got[2];
  ASSERT_EQ(cudaMemcpy(got, d, sizeof(got), cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(got[1], 0x02020202);
  EXPECT_EQ(cudaEventDestroy(written), cudaSuccess);
  EXPECT_EQ(cudaEventDestroy(start), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(a), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(b), cudaSuccess);
  EXPECT_EQ(cudaFree(d), cudaSuccess);
}

TEST(Runtime, LegacyStreamOrdersWithBlockingStreamsOnly) {
  cudaStream_t blocking, nonblocking;
  ASSERT_EQ(cudaStreamCreate(&blocking), cudaSuccess);
  ASSERT_EQ(cudaStreamCreateWithFlags(&nonblocking, cudaStreamNonBlocking), cudaSuccess);
  std::atomic<bool> blocking_ran{false}, nonblocking_ran{false};
  auto set = [](void* f) { static_cast<std::atomic<bool>*>(f)->store(true); };
  Gate gate(nullptr);  // the legacy default stream
  ASSERT_EQ(cudaLaunchHostFunc(blocking, set, &blocking_ran), cudaSuccess);
  ASSERT_EQ(cudaLaunchHostFunc(nonblocking, set, &nonblocking_ran), cudaSuccess);
  EXPECT_TRUE(Eventually(nonblocking_ran));
  EXPECT_FALSE(blocking_ran.load()) << "a blocking stream ran past the legacy stream's work";
  gate.Open();
  ASSERT_EQ(cudaStreamSynchronize(blocking), cudaSuccess);
  EXPECT_TRUE(blocking_ran.load());
  EXPECT_EQ(cudaStreamDestroy(blocking), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(nonblocking), cudaSuccess);
}

TEST(Runtime, StreamOrderedFreeWaitsForEarlierWork) {
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  void* p = nullptr;
  ASSERT_EQ(cudaMallocAsync(&p, 1024, s), cudaSuccess);
  Gate gate(s);
  ASSERT_EQ(cudaFreeAsync(p, s), cudaSuccess);
  EXPECT_TRUE(IsDeviceRange(p, 1024)) << "freed before the work queued ahead of it";
  gate.Open();
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  EXPECT_FALSE(IsDeviceRange(p, 1024));
  EXPECT_EQ(cudaStreamDestroy(s), cudaSuccess);
  EXPECT_EQ(cudaStreamSynchronize(s), cudaErrorInvalidResourceHandle);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidResourceHandle);
}

// Stream capture records the work instead of running it; each launch of the graph runs
// it again on what memory holds then. Synchronising, or copying pageable host memory,
// while capturing fails as on a GPU and loses the capture; an event recorded in a
// capture cannot be waited for.
TEST(Runtime, CapturedGraphsReplayTheirWork) {
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  float *src, *dst;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&src), 4 * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&dst), 4 * sizeof(float)), cudaSuccess);
  std::vector<float> host = {1, 2, 3, 4}, out(4, 0);
  ASSERT_EQ(cudaMemcpy(src, host.data(), sizeof(float) * 4, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemset(dst, 0, sizeof(float) * 4), cudaSuccess);

  ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  cudaStreamCaptureStatus status;
  ASSERT_EQ(cudaStreamIsCapturing(s, &status), cudaSuccess);
  EXPECT_EQ(status, cudaStreamCaptureStatusActive);
  ASSERT_EQ(cudaMemcpyAsync(dst, src, sizeof(float) * 4, cudaMemcpyDeviceToDevice, s), cudaSuccess);
  cudaGraph_t graph;
  ASSERT_EQ(cudaStreamEndCapture(s, &graph), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(out.data(), dst, sizeof(float) * 4, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(out, std::vector<float>(4, 0)) << "captured work must not run";
  cudaGraphExec_t exec;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  for (float base : {10.0f, 20.0f}) {
    host = {base, base + 1, base + 2, base + 3};
    ASSERT_EQ(cudaMemcpy(src, host.data(), sizeof(float) * 4, cudaMemcpyHostToDevice), cudaSuccess);
    ASSERT_EQ(cudaGraphLaunch(exec, s), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(out.data(), dst, sizeof(float) * 4, cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT_EQ(out, host);
  }
  EXPECT_EQ(cudaGraphExecDestroy(exec), cudaSuccess);
  EXPECT_EQ(cudaGraphDestroy(graph), cudaSuccess);

  // Not capturable: a synchronisation, a pageable copy.
  ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  EXPECT_EQ(cudaStreamSynchronize(s), cudaErrorStreamCaptureUnsupported);
  EXPECT_EQ(cudaStreamEndCapture(s, &graph), cudaErrorStreamCaptureInvalidated);
  ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  EXPECT_EQ(cudaMemcpyAsync(src, host.data(), sizeof(float) * 4, cudaMemcpyHostToDevice, s),
            cudaErrorStreamCaptureUnsupported);
  EXPECT_EQ(cudaStreamEndCapture(s, &graph), cudaErrorStreamCaptureInvalidated);
  (void)cudaGetLastError();
  EXPECT_EQ(cudaStreamIsCapturing(s, &status), cudaSuccess);
  EXPECT_EQ(status, cudaStreamCaptureStatusNone);

  // An event recorded while the stream captures is a node of the graph, no point on the
  // stream: querying or waiting for it fails, during the capture and after, until it is
  // recorded again (so host code cannot wait for work that only a replay will run).
  cudaEvent_t ev;
  ASSERT_EQ(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming), cudaSuccess);
  ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(ev, s), cudaSuccess);
  EXPECT_EQ(cudaEventQuery(ev), cudaErrorCapturedEvent);
  if (cudaStreamEndCapture(s, &graph) == cudaSuccess) {
    EXPECT_EQ(cudaGraphDestroy(graph), cudaSuccess);
  }
  EXPECT_EQ(cudaEventSynchronize(ev), cudaErrorCapturedEvent);
  (void)cudaGetLastError();
  ASSERT_EQ(cudaEventRecord(ev, s), cudaSuccess);
  EXPECT_EQ(cudaEventSynchronize(ev), cudaSuccess);
  EXPECT_EQ(cudaEventQuery(ev), cudaSuccess);
  EXPECT_EQ(cudaEventDestroy(ev), cudaSuccess);
  EXPECT_EQ(cudaFree(src), cudaSuccess);
  EXPECT_EQ(cudaFree(dst), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(s), cudaSuccess);
}

TEST(RuntimeDeathTest, HostDereferenceOfADevicePointerIsNamed) {
  if (!HostGuardEnabled()) GTEST_SKIP() << "ORCA_CUDA_TWIN_HOST_GUARD is off (or under ASan)";
  // The child re-runs this test from the start: the stream threads are not forked.
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  float* d = nullptr;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&d), 64 * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaMemset(d, 0, 64 * sizeof(float)), cudaSuccess);  // device work opens it
  EXPECT_DEATH(
      {
        volatile float v = d[3];
        (void)v;
      },
      "the host touched memory at");
  // Through the runtime it is fine.
  float h = -1;
  ASSERT_EQ(cudaMemcpy(&h, d + 3, sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(h, 0.0f);
  EXPECT_EQ(cudaFree(d), cudaSuccess);
}

TEST(Runtime, SizesParseAsDocumented) {
  size_t v = 0;
  EXPECT_TRUE(ParseBytes("64Mi", &v));
  EXPECT_EQ(v, 64 * kMiB);
  EXPECT_TRUE(ParseBytes("2G", &v));
  EXPECT_EQ(v, size_t{2000000000});
  EXPECT_TRUE(ParseBytes("4096", &v));
  EXPECT_EQ(v, 4096u);
  EXPECT_FALSE(ParseBytes("", &v));
  EXPECT_FALSE(ParseBytes("12 GiB", &v));
  EXPECT_FALSE(ParseBytes("99999999999999999999Gi", &v));
}

}  // namespace
}  // namespace orca::cuda_twin
