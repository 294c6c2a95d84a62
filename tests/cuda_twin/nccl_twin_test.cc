// NCCL twin across PROCESSES (cuda_twin/nccl_twin.cc): the test process is rank 0 and
// re-executes this binary (posix_spawn, so no child inherits a half-locked runtime) as
// the other ranks, each running a named scenario (NcclTwinRankProcess.Main). Every
// rank checks its own results against values computed here from closed formulas, so a
// failing child fails its exit status and the parent's test.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <nccl.h>
#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "tests/cuda_twin/nccl_twin_test_util.h"

namespace orca::cuda_twin::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// Rank r's contribution: integers, so sums over 3 ranks are exact in F32.
float Value(int rank, size_t i) {
  return static_cast<float>((rank + 1) * 1000 + static_cast<int>(i));
}

// Out-of-place sum, two back-to-back in-place sums, max.
void AllReduceScenario(RankSession& s) {
  const size_t count = 1001;
  const int n = s.nranks;
  std::vector<float> mine(count);
  for (size_t i = 0; i < count; ++i) mine[i] = Value(s.rank, i);
  float* send = Upload(mine, s.stream);
  float* recv = DeviceAlloc<float>(count);

  ASSERT_EQ(ncclAllReduce(send, recv, count, ncclFloat32, ncclSum, s.comm, s.stream), ncclSuccess);
  std::vector<float> got = Download(recv, count, s.stream);
  // sum over r of (r + 1) * 1000 + i = 1000 n (n + 1) / 2 + n i
  for (size_t i = 0; i < count; ++i) {
    ASSERT_EQ(got[i], static_cast<float>(500 * n * (n + 1) + n * static_cast<int>(i)))
        << "rank " << s.rank << " element " << i;
  }
  EXPECT_EQ(Download(send, count, s.stream), mine) << "the send buffer changed";

  // In place, twice without synchronising in between: n * (the sum).
  ASSERT_EQ(ncclAllReduce(send, send, count, ncclFloat32, ncclSum, s.comm, s.stream), ncclSuccess);
  ASSERT_EQ(ncclAllReduce(send, send, count, ncclFloat32, ncclSum, s.comm, s.stream), ncclSuccess);
  got = Download(send, count, s.stream);
  for (size_t i = 0; i < count; ++i) {
    ASSERT_EQ(got[i], static_cast<float>(n * (500 * n * (n + 1) + n * static_cast<int>(i))))
        << "in place, rank " << s.rank << " element " << i;
  }

  float* again = Upload(mine, s.stream);
  ASSERT_EQ(ncclAllReduce(again, recv, count, ncclFloat32, ncclMax, s.comm, s.stream), ncclSuccess);
  got = Download(recv, count, s.stream);
  for (size_t i = 0; i < count; ++i) ASSERT_EQ(got[i], Value(n - 1, i)) << "max, element " << i;

  ncclResult_t async = ncclInternalError;
  EXPECT_EQ(ncclCommGetAsyncError(s.comm, &async), ncclSuccess);
  EXPECT_EQ(async, ncclSuccess);
  EXPECT_EQ(ncclCommDestroy(s.comm), ncclSuccess);
  for (float* p : {send, recv, again}) EXPECT_EQ(cudaFree(p), cudaSuccess);
}

// Each rank receives from its predecessor and sends to its successor in one group —
// Recv first, which only completes if the group's ops run as one launch — then the same
// with nested groups.
void RingScenario(RankSession& s) {
  const size_t count = 257;
  const int next = (s.rank + 1) % s.nranks, prev = (s.rank + s.nranks - 1) % s.nranks;
  std::vector<float> mine(count);
  for (size_t i = 0; i < count; ++i)
    mine[i] = static_cast<float>(s.rank * 10000 + static_cast<int>(i));
  float* send = Upload(mine, s.stream);
  float* recv = DeviceAlloc<float>(count);
  for (int round = 0; round < 2; ++round) {
    ASSERT_EQ(ncclGroupStart(), ncclSuccess);
    ASSERT_EQ(ncclRecv(recv, count, ncclFloat32, prev, s.comm, s.stream), ncclSuccess);
    if (round == 1) {
      ASSERT_EQ(ncclGroupStart(), ncclSuccess);
    }
    ASSERT_EQ(ncclSend(send, count, ncclFloat32, next, s.comm, s.stream), ncclSuccess);
    if (round == 1) {
      ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
    }
    ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
    const std::vector<float> got = Download(recv, count, s.stream);
    for (size_t i = 0; i < count; ++i) {
      ASSERT_EQ(got[i], static_cast<float>(prev * 10000 + static_cast<int>(i)))
          << "round " << round << " rank " << s.rank << " element " << i;
    }
  }
  EXPECT_EQ(ncclCommDestroy(s.comm), ncclSuccess);
}

// Rank 0 reduces 8 elements, the others 16: a usage error on every rank.
void MismatchScenario(RankSession& s) {
  const size_t count = s.rank == 0 ? 8 : 16;
  float* buf = DeviceAlloc<float>(16);
  ASSERT_EQ(ncclAllReduce(buf, buf, count, ncclFloat32, ncclSum, s.comm, s.stream), ncclSuccess);
  EXPECT_NE(cudaStreamSynchronize(s.stream), cudaSuccess) << "rank " << s.rank;
  ncclResult_t async = ncclSuccess;
  EXPECT_EQ(ncclCommGetAsyncError(s.comm, &async), ncclSuccess);
  EXPECT_EQ(async, ncclInvalidUsage) << "rank " << s.rank;
  EXPECT_STRNE(ncclGetLastError(s.comm), "");
  // A failed communicator refuses new work.
  EXPECT_EQ(ncclAllReduce(buf, buf, count, ncclFloat32, ncclSum, s.comm, s.stream),
            ncclInvalidUsage);
  EXPECT_EQ(ncclCommDestroy(s.comm), ncclSuccess);  // aborts: the group is broken
  int n = 0;
  EXPECT_EQ(ncclCommCount(s.comm, &n), ncclInvalidUsage) << "a destroyed communicator";
}

// One good all-reduce, then wait to be killed.
void HangScenario(RankSession& s) {
  float* buf = Upload(std::vector<float>{1, 2, 3, 4}, s.stream);
  ASSERT_EQ(ncclAllReduce(buf, buf, 4, ncclFloat32, ncclSum, s.comm, s.stream), ncclSuccess);
  ASSERT_EQ(Download(buf, 4, s.stream), (std::vector<float>{11, 22, 33, 44}));
  for (;;) pause();
}

void RunScenario(const std::string& scenario, const ncclUniqueId& id, int rank, int nranks) {
  RankSession s(id, rank, nranks, /*device=*/0);
  ASSERT_EQ(s.init, ncclSuccess) << "rank " << rank << ": " << ncclGetLastError(nullptr);
  if (scenario == "allreduce") return AllReduceScenario(s);
  if (scenario == "ring") return RingScenario(s);
  if (scenario == "mismatch") return MismatchScenario(s);
  if (scenario == "hang") return HangScenario(s);
  FAIL() << "unknown scenario " << scenario;
}

// The body of every spawned rank process; skipped in the test process itself.
TEST(NcclTwinRankProcess, Main) {
  const char* scenario = std::getenv(kChildScenarioEnv);
  if (scenario == nullptr) GTEST_SKIP() << "runs only in the rank processes the tests spawn";
  Watchdog dog("rank process", seconds(20));
  ncclUniqueId id;
  ASSERT_TRUE(HexToId(std::getenv("ORCA_NCCL_TWIN_TEST_ID"), &id));
  RunScenario(scenario, id, std::atoi(std::getenv("ORCA_NCCL_TWIN_TEST_RANK")),
              std::atoi(std::getenv("ORCA_NCCL_TWIN_TEST_NRANKS")));
}

// Runs `scenario` on `nranks` processes (this one is rank 0) and expects all to pass.
void RunOnProcesses(const std::string& scenario, int nranks) {
  Watchdog dog(scenario.c_str(), seconds(20));
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  std::vector<pid_t> children;
  for (int r = 1; r < nranks; ++r) {
    const pid_t pid = SpawnRank(scenario, id, r, nranks);
    ASSERT_GT(pid, 0) << "spawning rank " << r;
    children.push_back(pid);
  }
  RunScenario(scenario, id, 0, nranks);
  for (size_t i = 0; i < children.size(); ++i) {
    EXPECT_EQ(WaitForExit(children[i], milliseconds(10000)), 0) << "rank " << i + 1 << " failed";
  }
}

TEST(NcclTwinProcessTest, AllReduceAcrossTwoProcesses) { RunOnProcesses("allreduce", 2); }

TEST(NcclTwinProcessTest, AllReduceAcrossThreeProcesses) { RunOnProcesses("allreduce", 3); }

TEST(NcclTwinProcessTest, GroupedSendRecvRingAcrossThreeProcesses) { RunOnProcesses("ring", 3); }

TEST(NcclTwinProcessTest, MismatchedCountIsAUsageErrorOnEveryRank) {
  RunOnProcesses("mismatch", 2);
}

TEST(NcclTwinProcessTest, KilledPeerIsARemoteErrorAndAbortUnblocksTheStream) {
  Watchdog dog("killed peer", seconds(20));
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  const pid_t child = SpawnRank("hang", id, 1, 2);
  ASSERT_GT(child, 0);
  RankSession s(id, 0, 2, /*device=*/0);
  ASSERT_EQ(s.init, ncclSuccess);
  float* buf = Upload(std::vector<float>{10, 20, 30, 40}, s.stream);
  ASSERT_EQ(ncclAllReduce(buf, buf, 4, ncclFloat32, ncclSum, s.comm, s.stream), ncclSuccess);
  ASSERT_EQ(Download(buf, 4, s.stream), (std::vector<float>{11, 22, 33, 44}));
  // Rank 1 checked the same sum and now waits to be killed (not exited on a failure).
  std::this_thread::sleep_for(milliseconds(50));
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, WNOHANG), 0) << "rank 1 exited early";

  // Rank 1 never joins this one: it waits on the stream, as a kernel would.
  ASSERT_EQ(ncclAllReduce(buf, buf, 4, ncclFloat32, ncclSum, s.comm, s.stream), ncclSuccess);
  ASSERT_EQ(kill(child, SIGKILL), 0);
  EXPECT_EQ(WaitForExit(child, milliseconds(5000)), -2);

  EXPECT_EQ(AwaitAsyncError(s.comm, ncclRemoteError, milliseconds(5000)), ncclRemoteError);
  EXPECT_STRNE(ncclGetLastError(s.comm), "");
  // Still blocked: NCCL does not give up on a peer by itself.
  std::this_thread::sleep_for(milliseconds(200));
  EXPECT_EQ(cudaStreamQuery(s.stream), cudaErrorNotReady);
  // New work is refused at once with the async error.
  EXPECT_EQ(ncclAllReduce(buf, buf, 4, ncclFloat32, ncclSum, s.comm, s.stream), ncclRemoteError);

  ASSERT_EQ(ncclCommAbort(s.comm), ncclSuccess);
  EXPECT_NE(cudaStreamSynchronize(s.stream), cudaSuccess) << "the aborted op reports an error";
  EXPECT_EQ(cudaStreamSynchronize(s.stream), cudaSuccess) << "and the stream works again";
  ncclResult_t async = ncclSuccess;
  EXPECT_EQ(ncclCommGetAsyncError(s.comm, &async), ncclInvalidUsage) << "an aborted communicator";
  EXPECT_EQ(ncclCommAbort(s.comm), ncclInvalidUsage);
  EXPECT_EQ(cudaFree(buf), cudaSuccess);
}

}  // namespace
}  // namespace orca::cuda_twin::testing
