// NCCL twin with ranks as THREADS of this process (one twin device each), and the
// API's argument checking: reduction types and ops, usage errors between ranks,
// ncclCommDestroy's waiting and aborting, and the bootstrap's refusals and timeout.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <nccl.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

#include "tests/cuda_twin/nccl_twin_test_util.h"

namespace orca::cuda_twin::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// Runs `body(session)` for ranks 0..nranks-1 on their own threads and devices.
void RunOnThreads(int nranks, const std::function<void(RankSession&)>& body) {
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  std::vector<std::thread> threads;
  for (int r = 0; r < nranks; ++r) {
    threads.emplace_back([&, r] {
      RankSession s(id, r, nranks, /*device=*/r);
      ASSERT_EQ(s.init, ncclSuccess) << "rank " << r << ": " << ncclGetLastError(nullptr);
      body(s);
    });
  }
  for (std::thread& t : threads) t.join();
}

// Encodes small integers (exact) as F16 / BF16 — the test's own encoders.
uint16_t SmallIntF16(int v) {
  if (v == 0) return 0;
  const uint16_t sign = v < 0 ? 0x8000 : 0;
  unsigned mag = static_cast<unsigned>(v < 0 ? -v : v);
  int exp = 0;
  while ((mag >> exp) > 1) ++exp;
  const unsigned mant = (mag << (10 - exp)) & 0x3ffu;
  return static_cast<uint16_t>(sign | (exp + 15) << 10 | mant);
}
uint16_t SmallIntBf16(int v) {
  const float f = static_cast<float>(v);
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  return static_cast<uint16_t>(bits >> 16);
}

template <typename T>
std::vector<T> ReduceOnAllRanks(RankSession& s, const std::vector<T>& mine, ncclDataType_t type,
                                ncclRedOp_t op) {
  T* buf = Upload(mine, s.stream);
  EXPECT_EQ(ncclAllReduce(buf, buf, mine.size(), type, op, s.comm, s.stream), ncclSuccess);
  std::vector<T> got = Download(buf, mine.size(), s.stream);
  EXPECT_EQ(cudaFree(buf), cudaSuccess);
  return got;
}

TEST(NcclTwinThreadTest, AllReduceTypesAndOpsAcrossThreeDevices) {
  Watchdog dog("types and ops", seconds(20));
  RunOnThreads(3, [](RankSession& s) {
    const int r = s.rank;  // ranks contribute r + 1 and -(r + 1): {1, 2, 3}, {-1, -2, -3}
    EXPECT_EQ(ReduceOnAllRanks(s, std::vector<float>{float(r + 1), float(-(r + 1))}, ncclFloat32,
                               ncclSum),
              (std::vector<float>{6, -6}));
    EXPECT_EQ(ReduceOnAllRanks(s, std::vector<float>{float(r + 1), float(-(r + 1))}, ncclFloat32,
                               ncclProd),
              (std::vector<float>{6, -6}));
    EXPECT_EQ(ReduceOnAllRanks(s, std::vector<int32_t>{r + 1, -(r + 1)}, ncclInt32, ncclMax),
              (std::vector<int32_t>{3, -1}));
    EXPECT_EQ(ReduceOnAllRanks(s, std::vector<int32_t>{r + 1, -(r + 1)}, ncclInt32, ncclMin),
              (std::vector<int32_t>{1, -3}));
    EXPECT_EQ(ReduceOnAllRanks(s, std::vector<int32_t>{2147483647, 5}, ncclInt32, ncclSum),
              (std::vector<int32_t>{2147483645, 15}))
        << "int32 sums wrap around";
    EXPECT_EQ(ReduceOnAllRanks(s, std::vector<uint16_t>{SmallIntF16(r + 1), SmallIntF16(-(r + 1))},
                               ncclFloat16, ncclSum),
              (std::vector<uint16_t>{SmallIntF16(6), SmallIntF16(-6)}));
    EXPECT_EQ(
        ReduceOnAllRanks(s, std::vector<uint16_t>{SmallIntBf16(r + 1), SmallIntBf16(-(r + 1))},
                         ncclBfloat16, ncclSum),
        (std::vector<uint16_t>{SmallIntBf16(6), SmallIntBf16(-6)}));
    EXPECT_EQ(ncclCommDestroy(s.comm), ncclSuccess);
  });
}

TEST(NcclTwinThreadTest, BroadcastFromEveryRoot) {
  Watchdog dog("broadcast", seconds(20));
  RunOnThreads(3, [](RankSession& s) {
    for (int root = 0; root < s.nranks; ++root) {
      float* buf = Upload(std::vector<float>{float(s.rank), float(s.rank * 10)}, s.stream);
      ASSERT_EQ(ncclBroadcast(buf, buf, 2, ncclFloat32, root, s.comm, s.stream), ncclSuccess);
      EXPECT_EQ(Download(buf, 2, s.stream), (std::vector<float>{float(root), float(root * 10)}));
      EXPECT_EQ(cudaFree(buf), cudaSuccess);
    }
    EXPECT_EQ(ncclCommDestroy(s.comm), ncclSuccess);
  });
}

TEST(NcclTwinThreadTest, PeerCallingAllReduceWhileWeReceiveFailsBothRanks) {
  Watchdog dog("kind mismatch", seconds(20));
  RunOnThreads(2, [](RankSession& s) {
    float* buf = DeviceAlloc<float>(4);
    if (s.rank == 0) {
      ASSERT_EQ(ncclAllReduce(buf, buf, 4, ncclFloat32, ncclSum, s.comm, s.stream), ncclSuccess);
    } else {
      ASSERT_EQ(ncclRecv(buf, 4, ncclFloat32, 0, s.comm, s.stream), ncclSuccess);
    }
    EXPECT_NE(cudaStreamSynchronize(s.stream), cudaSuccess) << "rank " << s.rank;
    ncclResult_t async = ncclSuccess;
    EXPECT_EQ(ncclCommGetAsyncError(s.comm, &async), ncclSuccess);
    EXPECT_EQ(async, ncclInvalidUsage) << "rank " << s.rank;
    EXPECT_EQ(ncclCommDestroy(s.comm), ncclSuccess);
    EXPECT_EQ(cudaFree(buf), cudaSuccess);
  });
}

TEST(NcclTwinThreadTest, DestroyWaitsForEnqueuedOps) {
  Watchdog dog("destroy waits", seconds(20));
  RunOnThreads(2, [](RankSession& s) {
    float* buf = Upload(std::vector<float>{float(s.rank + 1)}, s.stream);
    // Rank 1 comes late: rank 0's destroy must wait for its all-reduce, not cut it off.
    if (s.rank == 1) std::this_thread::sleep_for(milliseconds(300));
    ASSERT_EQ(ncclAllReduce(buf, buf, 1, ncclFloat32, ncclSum, s.comm, s.stream), ncclSuccess);
    ASSERT_EQ(ncclCommDestroy(s.comm), ncclSuccess);
    // Had destroy closed the communicator under the op, the op would have failed.
    EXPECT_EQ(cudaStreamSynchronize(s.stream), cudaSuccess) << "rank " << s.rank;
    EXPECT_EQ(Download(buf, 1, s.stream), (std::vector<float>{3}));
    EXPECT_EQ(cudaFree(buf), cudaSuccess);
  });
}

TEST(NcclTwinThreadTest, AbortedPeerFailsTheSurvivorAndDestroyUnblocksIt) {
  Watchdog dog("aborted peer", seconds(20));
  std::atomic<bool> enqueued{false};
  RunOnThreads(2, [&](RankSession& s) {
    float* buf = DeviceAlloc<float>(4);
    if (s.rank == 1) {
      while (!enqueued) std::this_thread::sleep_for(milliseconds(1));
      ASSERT_EQ(ncclCommAbort(s.comm), ncclSuccess);  // as if the process died
      EXPECT_EQ(cudaFree(buf), cudaSuccess);
      return;
    }
    ASSERT_EQ(ncclAllReduce(buf, buf, 4, ncclFloat32, ncclSum, s.comm, s.stream), ncclSuccess);
    enqueued = true;
    EXPECT_EQ(AwaitAsyncError(s.comm, ncclRemoteError, milliseconds(5000)), ncclRemoteError);
    std::this_thread::sleep_for(milliseconds(100));
    EXPECT_EQ(cudaStreamQuery(s.stream), cudaErrorNotReady) << "the op gave up by itself";
    EXPECT_EQ(ncclCommDestroy(s.comm), ncclSuccess);  // a failed communicator: aborts
    EXPECT_NE(cudaStreamSynchronize(s.stream), cudaSuccess);
    EXPECT_EQ(cudaFree(buf), cudaSuccess);
  });
}

TEST(NcclTwinThreadTest, PeerDestroyedWhileWeWaitIsAUsageErrorNotAHang) {
  Watchdog dog("destroyed peer", seconds(20));
  std::atomic<bool> enqueued{false};
  RunOnThreads(2, [&](RankSession& s) {
    if (s.rank == 1) {
      while (!enqueued) std::this_thread::sleep_for(milliseconds(1));
      EXPECT_EQ(ncclCommDestroy(s.comm), ncclSuccess);  // clean: says goodbye
      return;
    }
    float* buf = DeviceAlloc<float>(4);
    ASSERT_EQ(ncclRecv(buf, 4, ncclFloat32, 1, s.comm, s.stream), ncclSuccess);
    enqueued = true;
    EXPECT_NE(cudaStreamSynchronize(s.stream), cudaSuccess);
    ncclResult_t async = ncclSuccess;
    EXPECT_EQ(ncclCommGetAsyncError(s.comm, &async), ncclSuccess);
    EXPECT_EQ(async, ncclInvalidUsage) << "a clean goodbye is not a remote failure";
    EXPECT_EQ(ncclCommDestroy(s.comm), ncclSuccess);
    EXPECT_EQ(cudaFree(buf), cudaSuccess);
  });
}

TEST(NcclTwinThreadTest, BootstrapRefusesMismatchedNranksAndDuplicateRanks) {
  Watchdog dog("bootstrap refusals", seconds(20));
  struct Case {
    int rank_a, nranks_a, rank_b, nranks_b;
  };
  for (const Case& c : {Case{0, 2, 1, 3}, Case{0, 2, 0, 2}}) {
    ncclUniqueId id;
    ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
    ncclResult_t a = ncclSuccess, b = ncclSuccess;
    ncclComm_t ca = nullptr, cb = nullptr;
    std::thread ta([&] { a = ncclCommInitRank(&ca, c.nranks_a, id, c.rank_a); });
    std::thread tb([&] { b = ncclCommInitRank(&cb, c.nranks_b, id, c.rank_b); });
    ta.join();
    tb.join();
    EXPECT_EQ(a, ncclInvalidUsage) << "rank " << c.rank_a << " of " << c.nranks_a;
    EXPECT_EQ(b, ncclInvalidUsage) << "rank " << c.rank_b << " of " << c.nranks_b;
  }
}

TEST(NcclTwinThreadTest, InitGivesUpAfterTheTimeout) {
  Watchdog dog("init timeout", seconds(20));
  ASSERT_EQ(setenv("ORCA_NCCL_TWIN_INIT_TIMEOUT_S", "0.5", 1), 0);
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  ncclComm_t comm = nullptr;
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(ncclCommInitRank(&comm, 2, id, 0), ncclSystemError);  // rank 1 never comes
  EXPECT_LT(std::chrono::steady_clock::now() - start, seconds(5));
  EXPECT_STRNE(ncclGetLastError(nullptr), "");
  ASSERT_EQ(unsetenv("ORCA_NCCL_TWIN_INIT_TIMEOUT_S"), 0);
}

TEST(NcclTwinApiTest, ChecksArgumentsAtCallTime) {
  Watchdog dog("argument checks", seconds(20));
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  RankSession s(id, 0, 1, /*device=*/0);
  ASSERT_EQ(s.init, ncclSuccess);
  int value = -1;
  EXPECT_EQ(ncclCommCount(s.comm, &value), ncclSuccess);
  EXPECT_EQ(value, 1);
  EXPECT_EQ(ncclCommUserRank(s.comm, &value), ncclSuccess);
  EXPECT_EQ(value, 0);
  EXPECT_EQ(ncclCommCuDevice(s.comm, &value), ncclSuccess);
  EXPECT_EQ(value, 0);

  float* buf = Upload(std::vector<float>{1, 2, 3, 4}, s.stream);
  std::vector<float> host(4);
  EXPECT_EQ(ncclAllReduce(host.data(), buf, 4, ncclFloat32, ncclSum, s.comm, s.stream),
            ncclInvalidArgument);
  EXPECT_EQ(ncclAllReduce(buf, buf, 5, ncclFloat32, ncclSum, s.comm, s.stream), ncclInvalidArgument)
      << "past the end of the allocation";
  EXPECT_EQ(ncclAllReduce(buf, buf, 4, ncclFloat8e4m3, ncclSum, s.comm, s.stream),
            ncclInvalidArgument);
  EXPECT_EQ(ncclAllReduce(buf, buf, 4, ncclFloat32, ncclAvg, s.comm, s.stream),
            ncclInvalidArgument);
  EXPECT_EQ(ncclSend(buf, 4, ncclFloat32, 1, s.comm, s.stream), ncclInvalidArgument);
  EXPECT_EQ(ncclRecv(buf, 4, ncclFloat32, -1, s.comm, s.stream), ncclInvalidArgument);
  EXPECT_EQ(ncclAllReduce(buf, buf, 4, ncclFloat32, ncclSum, nullptr, s.stream),
            ncclInvalidArgument);
  // Memory and streams of another device.
  ASSERT_EQ(cudaSetDevice(1), cudaSuccess);
  float* other = DeviceAlloc<float>(4);
  cudaStream_t other_stream = nullptr;
  ASSERT_EQ(cudaStreamCreate(&other_stream), cudaSuccess);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  EXPECT_EQ(ncclAllReduce(other, other, 4, ncclFloat32, ncclSum, s.comm, s.stream),
            ncclInvalidArgument);
  EXPECT_EQ(ncclAllReduce(buf, buf, 4, ncclFloat32, ncclSum, s.comm, other_stream),
            ncclInvalidArgument);
  EXPECT_STRNE(ncclGetLastError(s.comm), "");

  // One rank: an all-reduce is a copy; Send/Recv to itself matches inside a group.
  float* out = DeviceAlloc<float>(4);
  ASSERT_EQ(ncclAllReduce(buf, out, 4, ncclFloat32, ncclSum, s.comm, s.stream), ncclSuccess);
  EXPECT_EQ(Download(out, 4, s.stream), (std::vector<float>{1, 2, 3, 4}));
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  ASSERT_EQ(ncclRecv(out, 2, ncclFloat32, 0, s.comm, s.stream), ncclSuccess);
  ASSERT_EQ(ncclSend(buf + 2, 2, ncclFloat32, 0, s.comm, s.stream), ncclSuccess);
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  EXPECT_EQ(Download(out, 4, s.stream), (std::vector<float>{3, 4, 3, 4}));
  EXPECT_EQ(ncclGroupEnd(), ncclInvalidUsage) << "no group is open";

  EXPECT_EQ(ncclCommDestroy(s.comm), ncclSuccess);
  EXPECT_EQ(ncclCommCount(s.comm, &value), ncclInvalidUsage);
  EXPECT_EQ(ncclAllReduce(buf, buf, 4, ncclFloat32, ncclSum, s.comm, s.stream), ncclInvalidUsage);
  EXPECT_EQ(ncclCommDestroy(s.comm), ncclInvalidUsage);

  ncclComm_t comm = nullptr;
  EXPECT_EQ(ncclCommInitRank(&comm, 2, id, 2), ncclInvalidArgument);
  ncclUniqueId garbage;
  std::memset(&garbage, 0x5a, sizeof(garbage));
  EXPECT_EQ(ncclCommInitRank(&comm, 1, garbage, 0), ncclInvalidArgument);
  for (float* p : {buf, other, out}) EXPECT_EQ(cudaFree(p), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(other_stream), cudaSuccess);
}

TEST(NcclTwinApiTest, VersionAndErrorStringsAreNccls) {
  int version = 0;
  ASSERT_EQ(ncclGetVersion(&version), ncclSuccess);
  EXPECT_EQ(version, NCCL_VERSION_CODE);
  EXPECT_STREQ(ncclGetErrorString(ncclSuccess), "no error");
  EXPECT_STREQ(ncclGetErrorString(ncclInvalidUsage),
               "invalid usage (run with NCCL_DEBUG=WARN for details)");
  EXPECT_STREQ(ncclGetErrorString(ncclRemoteError),
               "remote process exited or there was a network error");
  EXPECT_STREQ(ncclGetErrorString(ncclSystemError),
               "unhandled system error (run with NCCL_DEBUG=INFO for details)");
}

}  // namespace
}  // namespace orca::cuda_twin::testing
