// Gloo communicator over loopback TCP: the ranks of a group are threads of this process
// sharing one in-memory rendezvous store.
#include "engine/comm/gloo/gloo_communicator.h"

#include <gloo/rendezvous/hash_store.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace orca {
namespace {

GlooOptions Loopback(absl::Duration timeout) {
  GlooOptions options;
  options.hostname = "127.0.0.1";
  options.timeout = timeout;
  return options;
}

// Runs `fn(rank)` on one thread per rank and waits for all of them.
void RunRanks(int world_size, const std::function<void(int)>& fn) {
  std::vector<std::thread> threads;
  for (int rank = 0; rank < world_size; ++rank) threads.emplace_back(fn, rank);
  for (std::thread& t : threads) t.join();
}

// Joins `world_size` ranks concurrently; fails the test if any rank cannot join.
std::vector<std::unique_ptr<Communicator>> MakeGroup(gloo::rendezvous::Store& store,
                                                     const std::string& prefix, int world_size,
                                                     absl::Duration timeout = absl::Seconds(30)) {
  std::vector<std::unique_ptr<Communicator>> comms(world_size);
  std::vector<absl::Status> statuses(world_size);
  RunRanks(world_size, [&](int rank) {
    auto comm = CreateGlooCommunicator(store, prefix, rank, world_size, Loopback(timeout));
    if (comm.ok()) {
      comms[rank] = std::move(*comm);
    } else {
      statuses[rank] = comm.status();
    }
  });
  for (int rank = 0; rank < world_size; ++rank) {
    EXPECT_TRUE(statuses[rank].ok()) << "rank " << rank << ": " << statuses[rank];
  }
  return comms;
}

// A value distinct per rank and index whose sums over a few ranks are exact in float32.
float Value(int rank, size_t i) {
  return static_cast<float>(rank * 1000 + static_cast<int>(i % 251));
}

// Counts the indices where `got` differs from `want`.
size_t Mismatches(const std::vector<float>& got, const std::vector<float>& want) {
  if (got.size() != want.size()) return std::max(got.size(), want.size());
  size_t bad = 0;
  for (size_t i = 0; i < got.size(); ++i) bad += got[i] != want[i];
  return bad;
}

std::vector<float> Iota(size_t count, float start) {
  std::vector<float> v(count);
  for (size_t i = 0; i < count; ++i) v[i] = start + static_cast<float>(i);
  return v;
}

// 2, 3 and 4 ranks take the direct exchange, 10 Gloo's ring all-reduce.
TEST(GlooCommunicatorTest, AllReduceSumsDistinctValuesOfTwoToTenRanks) {
  const std::vector<size_t> sizes = {1, 7, 1000, (size_t{1} << 20) + 3};
  for (int world_size : {2, 3, 4, 10}) {
    SCOPED_TRACE(testing::Message() << "world_size " << world_size);
    gloo::rendezvous::HashStore store;
    std::vector<std::unique_ptr<Communicator>> comms = MakeGroup(store, "allreduce", world_size);
    ASSERT_EQ(comms.size(), static_cast<size_t>(world_size));
    for (int rank = 0; rank < world_size; ++rank) {
      ASSERT_NE(comms[rank], nullptr);
      EXPECT_EQ(comms[rank]->rank(), rank);
      EXPECT_EQ(comms[rank]->world_size(), world_size);
    }
    for (size_t count : sizes) {
      SCOPED_TRACE(testing::Message() << "count " << count);
      std::vector<float> want(count, 0.0f);
      for (int rank = 0; rank < world_size; ++rank) {
        for (size_t i = 0; i < count; ++i) want[i] += Value(rank, i);
      }
      std::vector<std::vector<float>> data(world_size, std::vector<float>(count));
      std::vector<absl::Status> statuses(world_size);
      RunRanks(world_size, [&](int rank) {
        for (size_t i = 0; i < count; ++i) data[rank][i] = Value(rank, i);
        statuses[rank] = comms[rank]->AllReduceSum(data[rank].data(), count);
      });
      for (int rank = 0; rank < world_size; ++rank) {
        EXPECT_TRUE(statuses[rank].ok()) << "rank " << rank << ": " << statuses[rank];
        EXPECT_EQ(Mismatches(data[rank], want), 0u) << "rank " << rank;
        // Tensor-parallel ranks must stay in lockstep: the same bits everywhere.
        EXPECT_EQ(data[rank], data[0]) << "rank " << rank << " differs from rank 0";
      }
    }
  }
}

TEST(GlooCommunicatorTest, SendRecvMatchInOrderInBothDirections) {
  gloo::rendezvous::HashStore store;
  std::vector<std::unique_ptr<Communicator>> comms = MakeGroup(store, "p2p", 2);
  ASSERT_TRUE(comms[0] && comms[1]);
  const std::vector<std::vector<float>> forward = {Iota(5, 100), Iota(3, 200), Iota(100000, 300)};
  const std::vector<float> backward = Iota(17, -50);
  std::vector<std::vector<float>> got(forward.size());
  std::vector<float> got_back(backward.size());
  std::vector<std::vector<absl::Status>> statuses(2);
  RunRanks(2, [&](int rank) {
    Communicator& comm = *comms[rank];
    for (size_t m = 0; m < forward.size(); ++m) {
      if (rank == 0) {
        statuses[0].push_back(comm.Send(forward[m].data(), forward[m].size(), 1));
      } else {
        got[m].resize(forward[m].size());
        statuses[1].push_back(comm.Recv(got[m].data(), got[m].size(), 0));
      }
    }
    if (rank == 1) {
      statuses[1].push_back(comm.Send(backward.data(), backward.size(), 0));
    } else {
      statuses[0].push_back(comm.Recv(got_back.data(), got_back.size(), 1));
    }
  });
  for (int rank = 0; rank < 2; ++rank) {
    for (const absl::Status& s : statuses[rank])
      EXPECT_TRUE(s.ok()) << "rank " << rank << ": " << s;
  }
  for (size_t m = 0; m < forward.size(); ++m) {
    EXPECT_EQ(Mismatches(got[m], forward[m]), 0u) << "message " << m;
  }
  EXPECT_EQ(Mismatches(got_back, backward), 0u);
}

// Pipeline parallelism: stage 0 -> 1 -> 2 hands on a distinct activation per step, and
// tensor-parallel all-reduces of the whole group interleave with the hand-offs.
TEST(GlooCommunicatorTest, PipelineHandOffsInterleaveWithAllReduces) {
  constexpr int kRanks = 3;
  constexpr int kSteps = 4;
  constexpr size_t kWidth = 33;
  gloo::rendezvous::HashStore store;
  std::vector<std::unique_ptr<Communicator>> comms = MakeGroup(store, "pipeline", kRanks);
  for (const auto& comm : comms) ASSERT_NE(comm, nullptr);

  std::vector<std::vector<float>> at_last_stage(kSteps);
  std::vector<std::vector<std::vector<float>>> reduced(kRanks,
                                                       std::vector<std::vector<float>>(kSteps));
  std::vector<std::vector<absl::Status>> statuses(kRanks);
  RunRanks(kRanks, [&](int rank) {
    Communicator& comm = *comms[rank];
    for (int step = 0; step < kSteps; ++step) {
      std::vector<float> act(kWidth);
      if (rank == 0) {
        act = Iota(kWidth, 1000.0f * step);
        statuses[rank].push_back(comm.Send(act.data(), kWidth, 1));
      } else {
        statuses[rank].push_back(comm.Recv(act.data(), kWidth, rank - 1));
        for (float& x : act) x += static_cast<float>(rank);  // this stage's "layer"
        if (rank == 1) {
          statuses[rank].push_back(comm.Send(act.data(), kWidth, 2));
        } else {
          at_last_stage[step] = act;
        }
      }
      std::vector<float>& sum = reduced[rank][step];
      sum.assign(kWidth + step, static_cast<float>(rank + 10 * step));
      statuses[rank].push_back(comm.AllReduceSum(sum.data(), sum.size()));
    }
  });
  for (int rank = 0; rank < kRanks; ++rank) {
    for (const absl::Status& s : statuses[rank])
      EXPECT_TRUE(s.ok()) << "rank " << rank << ": " << s;
  }
  for (int step = 0; step < kSteps; ++step) {
    std::vector<float> want = Iota(kWidth, 1000.0f * step);
    for (float& x : want) x += 1 + 2;  // stages 1 and 2
    EXPECT_EQ(Mismatches(at_last_stage[step], want), 0u) << "step " << step;
    const float sum = 0 + 1 + 2 + 3 * 10.0f * step;
    for (int rank = 0; rank < kRanks; ++rank) {
      EXPECT_EQ(Mismatches(reduced[rank][step], std::vector<float>(kWidth + step, sum)), 0u)
          << "rank " << rank << " step " << step;
    }
  }
}

TEST(GlooCommunicatorTest, RejectsInvalidPeersAndRanks) {
  gloo::rendezvous::HashStore store;
  std::vector<std::unique_ptr<Communicator>> comms = MakeGroup(store, "invalid", 2);
  ASSERT_TRUE(comms[0] && comms[1]);
  float x[4] = {1, 2, 3, 4};
  for (int peer : {-1, 0, 2}) {  // 0 is rank 0 itself
    EXPECT_EQ(comms[0]->Send(x, 4, peer).code(), absl::StatusCode::kInvalidArgument) << peer;
    EXPECT_EQ(comms[0]->Recv(x, 4, peer).code(), absl::StatusCode::kInvalidArgument) << peer;
  }
  // Zero-count calls move nothing and need no partner.
  EXPECT_TRUE(comms[0]->Send(x, 0, 1).ok());
  EXPECT_TRUE(comms[1]->Recv(x, 0, 0).ok());
  EXPECT_TRUE(comms[0]->AllReduceSum(x, 0).ok());

  // The rejected calls used no message slot: the next real message still matches.
  std::vector<float> got(4, 0.0f);
  absl::Status sent, received;
  RunRanks(2, [&](int rank) {
    if (rank == 0) {
      sent = comms[0]->Send(x, 4, 1);
    } else {
      received = comms[1]->Recv(got.data(), 4, 0);
    }
  });
  EXPECT_TRUE(sent.ok()) << sent;
  EXPECT_TRUE(received.ok()) << received;
  EXPECT_EQ(Mismatches(got, {1, 2, 3, 4}), 0u);

  EXPECT_EQ(CreateGlooCommunicator(store, "bad", 2, 2, Loopback(absl::Seconds(1))).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CreateGlooCommunicator(store, "bad", 0, 0, Loopback(absl::Seconds(1))).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      CreateGlooCommunicator(store, "bad", 0, 2, Loopback(absl::ZeroDuration())).status().code(),
      absl::StatusCode::kInvalidArgument);
}

TEST(GlooCommunicatorTest, SingleRankAllReduceIsIdentity) {
  gloo::rendezvous::HashStore store;
  auto comm = CreateGlooCommunicator(store, "solo", 0, 1, Loopback(absl::Seconds(1)));
  ASSERT_TRUE(comm.ok()) << comm.status();
  std::vector<float> data = Iota(9, 1.5f);
  ASSERT_TRUE((*comm)->AllReduceSum(data.data(), data.size()).ok());
  EXPECT_EQ(Mismatches(data, Iota(9, 1.5f)), 0u);
  EXPECT_EQ((*comm)->Send(data.data(), 1, 0).code(), absl::StatusCode::kInvalidArgument);
}

TEST(GlooCommunicatorTest, JoiningFailsWithinTimeoutWhenAPeerNeverJoins) {
  gloo::rendezvous::HashStore store;
  const absl::Time start = absl::Now();
  auto comm = CreateGlooCommunicator(store, "lonely", 0, 2, Loopback(absl::Seconds(1)));
  const absl::Duration elapsed = absl::Now() - start;
  ASSERT_FALSE(comm.ok());
  EXPECT_EQ(comm.status().code(), absl::StatusCode::kDeadlineExceeded) << comm.status();
  EXPECT_LT(elapsed, absl::Seconds(10));
}

TEST(GlooCommunicatorTest, RecvFailsWithinTimeoutWhenThePeerNeverSends) {
  gloo::rendezvous::HashStore store;
  std::vector<std::unique_ptr<Communicator>> comms =
      MakeGroup(store, "silent", 2, absl::Seconds(1));
  ASSERT_TRUE(comms[0] && comms[1]);
  std::vector<float> buf(8);
  // Rank 1 stays alive but silent, so the failure is rank 0's own timeout.
  const absl::Time start = absl::Now();
  absl::Status status = comms[0]->Recv(buf.data(), buf.size(), 1);
  const absl::Duration elapsed = absl::Now() - start;
  EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded) << status;
  EXPECT_GE(elapsed, absl::Milliseconds(900));
  EXPECT_LT(elapsed, absl::Seconds(10));
  // The group is broken from now on.
  EXPECT_EQ(comms[0]->AllReduceSum(buf.data(), buf.size()).code(),
            absl::StatusCode::kFailedPrecondition);
}

// Gloo's TCP send is a rendezvous: it completes only once the peer has posted the receive.
TEST(GlooCommunicatorTest, SendWaitsForTheMatchingRecv) {
  gloo::rendezvous::HashStore store;
  std::vector<std::unique_ptr<Communicator>> comms =
      MakeGroup(store, "rendezvous", 2, absl::Seconds(1));
  ASSERT_TRUE(comms[0] && comms[1]);
  std::vector<float> buf = Iota(8, 0);
  const absl::Time start = absl::Now();
  absl::Status status = comms[0]->Send(buf.data(), buf.size(), 1);
  EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded) << status;
  EXPECT_LT(absl::Now() - start, absl::Seconds(10));
}

TEST(GlooCommunicatorTest, LateRecvStillCompletesTheSend) {
  gloo::rendezvous::HashStore store;
  std::vector<std::unique_ptr<Communicator>> comms = MakeGroup(store, "late", 2, absl::Seconds(10));
  ASSERT_TRUE(comms[0] && comms[1]);
  const std::vector<float> sent = Iota(1000, 7);
  std::vector<float> got(sent.size());
  absl::Status send_status, recv_status;
  RunRanks(2, [&](int rank) {
    if (rank == 0) {
      send_status = comms[0]->Send(sent.data(), sent.size(), 1);
    } else {
      absl::SleepFor(absl::Milliseconds(300));
      recv_status = comms[1]->Recv(got.data(), got.size(), 0);
    }
  });
  EXPECT_TRUE(send_status.ok()) << send_status;
  EXPECT_TRUE(recv_status.ok()) << recv_status;
  EXPECT_EQ(Mismatches(got, sent), 0u);
}

TEST(GlooCommunicatorTest, MismatchedCountsFailInsteadOfMatching) {
  // Sender longer, then sender shorter, each in a fresh group (a failure breaks the group).
  for (auto [send_count, recv_count] : {std::pair<size_t, size_t>{16, 8}, {8, 16}}) {
    SCOPED_TRACE(testing::Message() << "send " << send_count << ", recv " << recv_count);
    gloo::rendezvous::HashStore store;
    std::vector<std::unique_ptr<Communicator>> comms =
        MakeGroup(store, "mismatch", 2, absl::Seconds(1));
    ASSERT_TRUE(comms[0] && comms[1]);
    std::vector<float> out = Iota(send_count, 0), in(recv_count);
    absl::Status sent, received;
    RunRanks(2, [&](int rank) {
      if (rank == 0) {
        sent = comms[0]->Send(out.data(), out.size(), 1);
      } else {
        received = comms[1]->Recv(in.data(), in.size(), 0);
      }
    });
    // Whichever side times out first closes the connections under the other one.
    EXPECT_FALSE(sent.ok());
    EXPECT_FALSE(received.ok());
    EXPECT_TRUE(sent.code() == absl::StatusCode::kDeadlineExceeded ||
                received.code() == absl::StatusCode::kDeadlineExceeded)
        << sent << " / " << received;
  }
}

TEST(GlooCommunicatorTest, RecvFailsAtOnceWhenThePeerIsGone) {
  gloo::rendezvous::HashStore store;
  std::vector<std::unique_ptr<Communicator>> comms = MakeGroup(store, "gone", 2);
  ASSERT_TRUE(comms[0] && comms[1]);
  comms[1].reset();  // closes rank 1's connections, as a crashed process would
  std::vector<float> buf(8);
  const absl::Time start = absl::Now();
  absl::Status status = comms[0]->Recv(buf.data(), buf.size(), 1);
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;
  EXPECT_LT(absl::Now() - start, absl::Seconds(10));  // well inside the 30 s timeout
}

}  // namespace
}  // namespace orca
