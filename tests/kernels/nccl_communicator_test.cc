// The NCCL communicator on the CUDA backend's stream: a one-rank group on any GPU (its
// operations called and replayed from a CUDA graph), and all-reduce plus send/recv
// across two ranks (threads) where two GPUs exist.
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "engine/backend/cuda/cuda_backend.h"
#include "engine/comm/nccl/nccl_communicator.h"
#include "tests/kernels/gpu_test_util.h"

namespace orca {
namespace {

TEST(NcclCommunicatorTest, RejectsMalformedIds) {
  auto comm = CreateNcclCommunicator("short", 0, 1, 0, nullptr);
  EXPECT_EQ(comm.status().code(), absl::StatusCode::kInvalidArgument) << comm.status();
}

// A one-rank communicator on device 0's backend.
struct OneRank {
  std::unique_ptr<CudaBackend> backend;
  std::unique_ptr<Communicator> comm;
};

void MakeOneRank(OneRank& out) {
  auto backend = CudaBackend::Create({});
  ASSERT_TRUE(backend.ok()) << backend.status();
  out.backend = std::move(*backend);
  auto id = NewNcclUniqueId();
  ASSERT_TRUE(id.ok()) << id.status();
  auto comm = CreateNcclCommunicator(*id, 0, 1, out.backend->device(), out.backend->stream());
  ASSERT_TRUE(comm.ok()) << comm.status();
  out.comm = std::move(*comm);
}

TEST(NcclCommunicatorTest, SingleRankAllReduceIsIdentity) {
  ORCA_REQUIRE_GPU();
  OneRank rank;
  ASSERT_NO_FATAL_FAILURE(MakeOneRank(rank));
  EXPECT_EQ(rank.comm->world_size(), 1);
  std::vector<float> host(1000);
  for (size_t i = 0; i < host.size(); ++i) host[i] = static_cast<float>(i) * 0.5f;
  auto buf = rank.backend->Allocate(host.size() * sizeof(float));
  ASSERT_TRUE(buf.ok());
  ASSERT_TRUE(
      rank.backend->CopyToDevice((*buf)->data(), host.data(), host.size() * sizeof(float)).ok());
  ASSERT_TRUE(rank.comm->AllReduceSum(static_cast<float*>((*buf)->data()), host.size()).ok());
  std::vector<float> out(host.size());
  ASSERT_TRUE(
      rank.backend->CopyToHost(out.data(), (*buf)->data(), out.size() * sizeof(float)).ok());
  EXPECT_EQ(out, host);
  EXPECT_EQ(rank.comm->Send(static_cast<float*>((*buf)->data()), 1, 0).code(),
            absl::StatusCode::kInvalidArgument);
}

// The communicator's operations recorded into a CUDA graph with the backend's: recording
// waits for nothing (a wait on a captured event is an error on a GPU), each replay runs
// the recording again, and AwaitEnqueued sees it through.
TEST(NcclCommunicatorTest, SingleRankOperationsReplayFromAGraph) {
  ORCA_REQUIRE_GPU();
  OneRank rank;
  ASSERT_NO_FATAL_FAILURE(MakeOneRank(rank));
  ASSERT_TRUE(rank.comm->SupportsCapture());
  std::vector<float> host(1024);
  for (size_t i = 0; i < host.size(); ++i) host[i] = static_cast<float>(i);
  auto buf = rank.backend->Allocate(host.size() * sizeof(float));
  ASSERT_TRUE(buf.ok());
  ASSERT_TRUE(
      rank.backend->CopyToDevice((*buf)->data(), host.data(), host.size() * sizeof(float)).ok());
  Tensor t;
  t.data = (*buf)->data();
  t.rows = 1;
  t.cols = static_cast<int64_t>(host.size());
  ASSERT_TRUE(rank.backend->BeginCapture().ok());
  rank.backend->Add(t, t);  // doubles
  absl::Status recorded = rank.comm->AllReduceSum(t.f32(), host.size());
  auto graph = rank.backend->EndCapture();
  ASSERT_TRUE(recorded.ok()) << recorded;
  ASSERT_TRUE(graph.ok()) << graph.status();
  std::vector<float> out(host.size());
  ASSERT_TRUE(rank.backend->CopyToHost(out.data(), t.data, out.size() * sizeof(float)).ok());
  EXPECT_EQ(out, host) << "recording ran the operations";
  for (float factor : {2.0f, 4.0f}) {
    ASSERT_TRUE(rank.backend->Replay(**graph).ok());
    absl::Status awaited = rank.comm->AwaitEnqueued();
    ASSERT_TRUE(awaited.ok()) << awaited;
    ASSERT_TRUE(rank.backend->CopyToHost(out.data(), t.data, out.size() * sizeof(float)).ok());
    for (size_t i = 0; i < host.size(); ++i) ASSERT_EQ(out[i], host[i] * factor) << i;
  }
  // The communicator is intact: an ordinary call still completes.
  EXPECT_TRUE(rank.comm->AllReduceSum(t.f32(), host.size()).ok());
}

TEST(NcclCommunicatorTest, TwoRanksAllReduceAndSendRecv) {
  ORCA_REQUIRE_GPU();
  if (CudaDeviceCount() < 2) GTEST_SKIP() << "needs two GPUs";
  auto id = NewNcclUniqueId();
  ASSERT_TRUE(id.ok()) << id.status();
  constexpr size_t kCount = 4096;
  std::vector<std::vector<float>> reduced(2), received(2);
  std::vector<absl::Status> status(2);
  auto rank_main = [&](int rank) {
    auto backend = CudaBackend::Create({.device = rank});
    if (!backend.ok()) {
      status[rank] = backend.status();
      return;
    }
    auto comm = CreateNcclCommunicator(*id, rank, 2, rank, (*backend)->stream());
    if (!comm.ok()) {
      status[rank] = comm.status();
      return;
    }
    std::vector<float> host(kCount, static_cast<float>(rank + 1));
    auto buf = (*backend)->Allocate(kCount * sizeof(float));
    auto msg = (*backend)->Allocate(kCount * sizeof(float));
    if (!buf.ok() || !msg.ok()) {
      status[rank] = absl::InternalError("allocation failed");
      return;
    }
    float* data = static_cast<float*>((*buf)->data());
    float* m = static_cast<float*>((*msg)->data());
    absl::Status s = (*backend)->CopyToDevice(data, host.data(), kCount * sizeof(float));
    if (s.ok()) s = (*comm)->AllReduceSum(data, kCount);
    if (s.ok()) s = rank == 0 ? (*comm)->Send(data, kCount, 1) : (*comm)->Recv(m, kCount, 0);
    reduced[rank].resize(kCount);
    received[rank].resize(kCount);
    if (s.ok()) s = (*backend)->CopyToHost(reduced[rank].data(), data, kCount * sizeof(float));
    if (s.ok() && rank == 1)
      s = (*backend)->CopyToHost(received[rank].data(), m, kCount * sizeof(float));
    status[rank] = s;
  };
  std::thread t0(rank_main, 0), t1(rank_main, 1);
  t0.join();
  t1.join();
  ASSERT_TRUE(status[0].ok()) << status[0];
  ASSERT_TRUE(status[1].ok()) << status[1];
  EXPECT_EQ(reduced[0], std::vector<float>(kCount, 3.0f));
  EXPECT_EQ(reduced[1], std::vector<float>(kCount, 3.0f));
  EXPECT_EQ(received[1], std::vector<float>(kCount, 3.0f));
}

}  // namespace
}  // namespace orca
