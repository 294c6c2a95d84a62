// Multi-rank CUDA serving groups over NCCL (DESIGN.md section 4, docs/distributed.md).
//
// Everywhere: the scheduler hands every rank of a CUDA group the same NCCL unique ids in
// GroupInit (one for the whole group when pipeline > 1, one per stage when tensor > 1),
// fresh ones every generation; a build without NCCL refuses such a group with
// FailedPrecondition. Ranks here are bare gRPC clients, so no GPU is needed.
//
// With NCCL and enough CUDA devices (a multi-GPU machine, or the CUDA twin with
// ORCA_CUDA_TWIN_DEVICES): an engine over a CUDA group of WorkerRank threads generates
// exactly the local CPU engine's greedy tokens for layouts 1x2, 2x1 and 2x2 (chunked
// prefill and prefix caching on; decode-only iterations replayed from CUDA graphs, and
// 2x2 again without), a bfloat16 checkpoint on a 2x2 group (16-bit activations on every
// rank) answers as it does on one GPU, a rank lost mid-request fails the request
// retriably, after which the group re-forms and answers again, and operations recorded
// into a graph run at each replay and are awaited with the failure watch of a call.
// Skipped otherwise.
#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/core/engine.h"
#include "engine/group/group_executor.h"
#include "engine/runner/model_runner.h"
#include "orca/v1/control.grpc.pb.h"
#include "tests/engine/group/group_test_util.h"
#include "tests/testutil/testutil.h"
#ifdef ORCA_HAVE_NCCL
#include <nccl.h>

#include "engine/backend/cuda/cuda_backend.h"
#include "engine/comm/nccl/nccl_communicator.h"
#include "tests/kernels/gpu_test_util.h"
#endif

namespace orca {
namespace {

using testing::Collect;
using testing::Collected;
using testing::Eventually;
using testing::Ranks;
using testing::RunRequests;
using testing::TestRequest;

constexpr int32_t kNumKvBlocks = 64;
constexpr int32_t kBlockSize = 4;  // small, so the prompts fill blocks the prefix cache shares
constexpr double kCommTimeoutS = 20;

GroupExecutorOptions CudaGroupOptions(const std::string& dir, int32_t pipeline, int32_t tensor) {
  GroupExecutorOptions go;
  go.model_dir = dir;
  go.parallel.pipeline = pipeline;
  go.parallel.tensor = tensor;
  go.device = Device::kCuda;
  go.listen = "127.0.0.1:0";
  go.kv_cache.block_size = kBlockSize;
  go.kv_cache.num_blocks = kNumKvBlocks;
  go.comm_timeout_s = kCommTimeoutS;
  go.iteration_timeout_s = 120;
  return go;
}

// A rank that joins over the control plane as a bare gRPC client and only reads what the
// scheduler sends. Every read is bounded by the call's 60 s deadline.
class FakeRank {
 public:
  FakeRank(int port, int32_t stage, int32_t tp_rank)
      : stub_(v1::ControlPlane::NewStub(grpc::CreateChannel(absl::StrCat("127.0.0.1:", port),
                                                            grpc::InsecureChannelCredentials()))) {
    ctx_.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
    stream_ = stub_->Join(&ctx_);
    v1::WorkerMessage m;
    m.mutable_hello()->set_stage(stage);
    m.mutable_hello()->set_tp_rank(tp_rank);
    m.mutable_hello()->set_device("cuda");
    m.mutable_hello()->set_worker(absl::StrCat("fake stage ", stage, " tp ", tp_rank));
    EXPECT_TRUE(stream_->Write(m));
  }
  ~FakeRank() {
    ctx_.TryCancel();
    v1::SchedulerMessage m;
    while (stream_->Read(&m)) {
    }
    (void)stream_->Finish();
  }

  // Returns the GroupInit the scheduler sends once every rank has joined.
  std::optional<v1::GroupInit> ReadInit() {
    v1::SchedulerMessage m;
    if (!stream_->Read(&m) || !m.has_init()) return std::nullopt;
    return m.init();
  }
  // Waits for the scheduler to end the session; false when it sent something instead.
  bool Ended() {
    v1::SchedulerMessage m;
    return !stream_->Read(&m);
  }
  void Leave() { ctx_.TryCancel(); }
  bool Send(const v1::WorkerMessage& m) { return stream_->Write(m); }
  // Returns the block count of the scheduler's next message, a KvCacheSize; -1 otherwise.
  int32_t ReadKvCacheSize() {
    v1::SchedulerMessage m;
    if (!stream_->Read(&m) || !m.has_kv_cache_size()) return -1;
    return m.kv_cache_size().num_blocks();
  }

 private:
  std::unique_ptr<v1::ControlPlane::Stub> stub_;
  grpc::ClientContext ctx_;
  std::unique_ptr<grpc::ClientReaderWriter<v1::WorkerMessage, v1::SchedulerMessage>> stream_;
};

// Joins every rank of a pipeline x tensor group as FakeRanks and returns their
// GroupInits (in rank order); empty when one did not arrive.
std::vector<v1::GroupInit> JoinAll(int port, int32_t pipeline, int32_t tensor,
                                   std::vector<std::unique_ptr<FakeRank>>& ranks) {
  ranks.clear();
  for (int32_t r = 0; r < pipeline * tensor; ++r) {
    ranks.push_back(std::make_unique<FakeRank>(port, r / tensor, r % tensor));
  }
  std::vector<v1::GroupInit> inits;
  for (auto& rank : ranks) {
    std::optional<v1::GroupInit> init = rank->ReadInit();
    if (!init) {
      ADD_FAILURE() << "rank " << inits.size() << " received no GroupInit";
      return {};
    }
    inits.push_back(std::move(*init));
  }
  return inits;
}

#ifdef ORCA_HAVE_NCCL

// Checks what every rank of a generation received: the same message, comm "nccl", and
// well-formed, mutually distinct ids where the layout needs them. Returns the ids.
std::vector<std::string> ExpectNcclInit(const std::vector<v1::GroupInit>& inits, int32_t pipeline,
                                        int32_t tensor) {
  EXPECT_EQ(inits.size(), static_cast<size_t>(pipeline * tensor));
  if (inits.empty()) return {};
  const v1::GroupInit& init = inits[0];
  for (size_t r = 1; r < inits.size(); ++r) {
    EXPECT_EQ(inits[r].SerializeAsString(), init.SerializeAsString())
        << "rank " << r << " got another GroupInit than rank 0";
  }
  EXPECT_EQ(init.comm(), "nccl");
  EXPECT_EQ(init.pipeline(), pipeline);
  EXPECT_EQ(init.tensor(), tensor);
  EXPECT_EQ(init.comm_timeout_s(), kCommTimeoutS);
  std::vector<std::string> ids;
  if (pipeline > 1) {
    EXPECT_EQ(init.nccl_unique_id().size(), size_t{NCCL_UNIQUE_ID_BYTES});
    ids.push_back(init.nccl_unique_id());
  } else {
    EXPECT_TRUE(init.nccl_unique_id().empty()) << "one stage needs no group communicator";
  }
  if (tensor > 1) {
    EXPECT_EQ(init.nccl_tp_unique_ids_size(), pipeline) << "one id per stage";
    for (const std::string& id : init.nccl_tp_unique_ids()) {
      EXPECT_EQ(id.size(), size_t{NCCL_UNIQUE_ID_BYTES});
      ids.push_back(id);
    }
  } else {
    EXPECT_EQ(init.nccl_tp_unique_ids_size(), 0) << "one rank per stage needs no all-reduce";
  }
  EXPECT_EQ(std::set<std::string>(ids.begin(), ids.end()).size(), ids.size())
      << "two communicators share an NCCL unique id";
  return ids;
}

TEST(NcclGroupInitTest, EveryRankGetsTheSameFreshIdsEachGeneration) {
  ORCA_REQUIRE_SHARED_MODEL(dir, "stories260K");
  auto group = GroupExecutor::Create(CudaGroupOptions(dir, 2, 2));
  ASSERT_TRUE(group.ok()) << group.status();
  GroupExecutor& exec = **group;
  std::vector<std::unique_ptr<FakeRank>> ranks;
  std::vector<v1::GroupInit> inits = JoinAll(exec.port(), 2, 2, ranks);
  ASSERT_EQ(inits.size(), 4u);
  EXPECT_EQ(inits[0].generation(), 1u);
  const std::vector<std::string> first = ExpectNcclInit(inits, 2, 2);
  ASSERT_EQ(first.size(), 3u);

  // A rank leaves: the scheduler ends the others' sessions; all rejoin.
  ranks[3]->Leave();
  for (int r = 0; r < 3; ++r) EXPECT_TRUE(ranks[r]->Ended()) << "rank " << r;
  ASSERT_TRUE(Eventually([&] { return exec.group_status().ranks_joined == 0; }, absl::Seconds(10)));
  inits = JoinAll(exec.port(), 2, 2, ranks);
  ASSERT_EQ(inits.size(), 4u);
  EXPECT_EQ(inits[0].generation(), 2u);
  const std::vector<std::string> second = ExpectNcclInit(inits, 2, 2);
  for (const std::string& id : second) {
    EXPECT_EQ(std::count(first.begin(), first.end(), id), 0)
        << "generation 2 reuses an NCCL unique id of generation 1";
  }
}

TEST(NcclGroupInitTest, IdsMatchTheLayout) {
  ORCA_REQUIRE_SHARED_MODEL(dir, "stories260K");
  for (const auto& [pipeline, tensor] : {std::pair{1, 2}, std::pair{2, 1}}) {
    SCOPED_TRACE(absl::StrCat(pipeline, "x", tensor));
    auto group = GroupExecutor::Create(CudaGroupOptions(dir, pipeline, tensor));
    ASSERT_TRUE(group.ok()) << group.status();
    std::vector<std::unique_ptr<FakeRank>> ranks;
    ExpectNcclInit(JoinAll((*group)->port(), pipeline, tensor, ranks), pipeline, tensor);
  }
}

// A CUDA group without a KV cache size (kv_cache.size_mib and num_blocks 0) sizes it by
// the ranks' memory: GroupInit asks each rank to profile the scheduler's largest
// iteration, the ranks report what their devices hold, every rank is told the smallest
// count and the executor reports it; a re-formed group reuses that count.
TEST(NcclGroupInitTest, RanksSizeTheKvCacheByMemoryAndTheGroupTakesTheSmallest) {
  ORCA_REQUIRE_SHARED_MODEL(dir, "stories260K");
  GroupExecutorOptions go = CudaGroupOptions(dir, 1, 2);
  go.kv_cache.num_blocks = 0;
  go.kv_cache.size_mib = 0;
  go.scheduler.max_batched_tokens = 96;
  go.scheduler.max_batch_size = 5;
  go.max_model_len = 200;
  auto group = GroupExecutor::Create(go);
  ASSERT_TRUE(group.ok()) << group.status();
  GroupExecutor& exec = **group;
  EXPECT_EQ(exec.num_kv_blocks(), 0) << "unknown until the group forms";
  std::vector<std::unique_ptr<FakeRank>> ranks;
  std::vector<v1::GroupInit> inits = JoinAll(exec.port(), 1, 2, ranks);
  ASSERT_EQ(inits.size(), 2u);
  for (const v1::GroupInit& init : inits) {
    EXPECT_EQ(init.num_kv_blocks(), 0);
    ASSERT_TRUE(init.has_kv_sizing());
    EXPECT_EQ(init.kv_sizing().profile_tokens(), 96);
    EXPECT_EQ(init.kv_sizing().profile_seqs(), 5);
    EXPECT_EQ(init.kv_sizing().max_model_len(), 200);
  }
  const uint64_t generation = inits[0].generation();
  auto capacity = [&](uint64_t gen, int32_t blocks) {
    v1::WorkerMessage m;
    m.mutable_kv_capacity()->set_generation(gen);
    m.mutable_kv_capacity()->set_num_blocks(blocks);
    m.mutable_kv_capacity()->set_arithmetic("test");
    return m;
  };
  EXPECT_TRUE(ranks[1]->Send(capacity(generation + 7, 10)));  // another generation's: ignored
  EXPECT_TRUE(ranks[0]->Send(capacity(generation, 900)));
  EXPECT_TRUE(ranks[1]->Send(capacity(generation, 700)));
  EXPECT_EQ(ranks[0]->ReadKvCacheSize(), 700);
  EXPECT_EQ(ranks[1]->ReadKvCacheSize(), 700);
  EXPECT_EQ(exec.num_kv_blocks(), 700);
  EXPECT_FALSE(exec.ready()) << "ready only once the ranks have allocated it";
  auto config = LoadModelConfig(dir);
  ASSERT_TRUE(config.ok());
  auto dtype = ResolveKvCacheDType(go.kv_cache.dtype, Device::kCuda);
  ASSERT_TRUE(dtype.ok());
  for (int32_t r = 0; r < 2; ++r) {
    v1::WorkerMessage ready;
    ready.mutable_ready()->set_generation(generation);
    ready.mutable_ready()->set_kv_cache_bytes(
        ModelRunner::KvBytesPerBlock(*config, ModelShard{1, 2, 0, r}, kBlockSize, *dtype) * 700);
    EXPECT_TRUE(ranks[r]->Send(ready));
  }
  EXPECT_TRUE(Eventually([&] { return exec.ready(); }, absl::Seconds(10)));

  // The group breaks and re-forms: the count stays, and nobody profiles again.
  ranks[1]->Leave();
  EXPECT_TRUE(ranks[0]->Ended());
  ASSERT_TRUE(Eventually([&] { return exec.group_status().ranks_joined == 0; }, absl::Seconds(10)));
  inits = JoinAll(exec.port(), 1, 2, ranks);
  ASSERT_EQ(inits.size(), 2u);
  EXPECT_EQ(inits[0].generation(), generation + 1);
  EXPECT_EQ(inits[0].num_kv_blocks(), 700);
  EXPECT_FALSE(inits[0].has_kv_sizing());
  EXPECT_EQ(exec.num_kv_blocks(), 700);
}

#else  // !ORCA_HAVE_NCCL

TEST(NcclGroupInitTest, WithoutNcclMultiRankCudaGroupsAreRefused) {
  ORCA_REQUIRE_SHARED_MODEL(dir, "stories260K");
  auto refused = GroupExecutor::Create(CudaGroupOptions(dir, 1, 2));
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition) << refused.status();
  EXPECT_THAT(std::string(refused.status().message()), ::testing::HasSubstr("NCCL"));
  // One rank needs no communicator.
  auto single = GroupExecutor::Create(CudaGroupOptions(dir, 1, 1));
  EXPECT_TRUE(single.ok()) << single.status();
}

#endif  // ORCA_HAVE_NCCL

// --- groups of WorkerRank threads on CUDA devices -----------------------------------

// Skips unless this build has NCCL and `n` usable CUDA devices.
#ifdef ORCA_HAVE_NCCL
#define ORCA_REQUIRE_CUDA_DEVICES(n)                                            \
  do {                                                                          \
    ORCA_REQUIRE_GPU();                                                         \
    if (CudaDeviceCount() < (n)) {                                              \
      GTEST_SKIP() << "needs " << (n) << " CUDA devices; " << CudaDeviceCount() \
                   << " present (the CUDA twin: set ORCA_CUDA_TWIN_DEVICES)";   \
    }                                                                           \
  } while (0)
#else
#define ORCA_REQUIRE_CUDA_DEVICES(n) GTEST_SKIP() << "this orca was built without NCCL"
#endif

// Concurrent requests, one prompt longer than a few KV blocks (its prefix is cached
// and, with max_batched_tokens = 8, its prefill chunked).
const std::vector<TestRequest>& Requests() {
  static const auto* r = new std::vector<TestRequest>{
      {"Once upon a time", 12},
      {"The little dog ran to the park and saw a big red ball. He wanted to", 12},
      {"Lily and Ben were friends. They liked to play", 10},
  };
  return *r;
}

EngineOptions EngineOptionsFor(const std::string& dir) {
  EngineOptions eo;
  eo.model.dir = dir;
  eo.kv_cache.num_blocks = kNumKvBlocks;
  eo.kv_cache.block_size = kBlockSize;
  eo.device.threads = 1;
  eo.scheduler.prefix_caching = true;
  eo.scheduler.chunked_prefill = true;
  eo.scheduler.max_batched_tokens = 8;
  return eo;
}

// The tokens of Requests() on an engine over the local CPU executor (computed once).
const std::vector<std::vector<int32_t>>& CpuTokens(const std::string& dir) {
  static const auto* tokens = [&] {
    auto engine = Engine::Create(EngineOptionsFor(dir));
    EXPECT_TRUE(engine.ok()) << engine.status();
    if (!engine.ok()) return new std::vector<std::vector<int32_t>>();
    (*engine)->Start();
    auto* t = new std::vector<std::vector<int32_t>>(RunRequests(**engine, Requests()));
    (*engine)->Stop();
    return t;
  }();
  return *tokens;
}

// (pipeline, tensor, CUDA graphs): with graphs, every rank replays its decode-only
// iterations, all-reduces and sends/receives included, from graphs.
class NcclGroupLayoutTest : public ::testing::TestWithParam<std::tuple<int32_t, int32_t, bool>> {};

// Runs `requests` (and the second one again, its prefix then cached) on an engine over
// a CUDA group of WorkerRank threads serving `dir`; every rank must replay graphs when
// `graphs` is on and none otherwise.
std::vector<std::vector<int32_t>> CudaGroupTokens(const std::string& dir, int32_t pipeline,
                                                  int32_t tensor, bool graphs,
                                                  const std::vector<TestRequest>& requests,
                                                  DType activations = DType::kF32) {
  const int32_t world = pipeline * tensor;
  auto group = GroupExecutor::Create(CudaGroupOptions(dir, pipeline, tensor));
  EXPECT_TRUE(group.ok()) << group.status();
  if (!group.ok()) return {};
  GroupExecutor* exec = group->get();
  Ranks ranks(dir, exec->port(), tensor);
  for (int32_t rank = 0; rank < world; ++rank) {
    WorkerOptions options = ranks.Options(rank, Device::kCuda);
    options.device.cuda_graphs = graphs;
    ranks.Start(rank, std::move(options));
  }
  EXPECT_TRUE(exec->WaitReady(absl::Seconds(120))) << "the CUDA group did not form in 120 s";
  auto engine = Engine::Create(EngineOptionsFor(dir), std::move(*group));
  EXPECT_TRUE(engine.ok()) << engine.status();
  if (!engine.ok()) return {};
  (*engine)->Start();
  std::vector<std::vector<int32_t>> got = RunRequests(**engine, requests, absl::Seconds(180));
  const std::vector<std::vector<int32_t>> again =
      RunRequests(**engine, {requests[1]}, absl::Seconds(180));
  got.insert(got.end(), again.begin(), again.end());
  (*engine)->Stop();
  for (int32_t rank = 0; rank < world; ++rank) {
    EXPECT_EQ(ranks.worker(rank).activation_dtype(), activations) << "rank " << rank;
    const int64_t replays = ranks.worker(rank).graph_replays();
    if (graphs) {
      EXPECT_GT(replays, 0) << "rank " << rank << " replayed no graph";
    } else {
      EXPECT_EQ(replays, 0) << "rank " << rank;
    }
  }
  return got;
}

TEST_P(NcclGroupLayoutTest, EngineOverCudaGroupMatchesLocalCpuEngine) {
  ORCA_REQUIRE_SHARED_MODEL(dir, "stories260K");
  const auto [pipeline, tensor, graphs] = GetParam();
  ORCA_REQUIRE_CUDA_DEVICES(pipeline * tensor);
  std::vector<std::vector<int32_t>> cpu = CpuTokens(dir);
  ASSERT_EQ(cpu.size(), Requests().size());
  cpu.push_back(cpu[1]);  // the second request again, its prefix from the cache
  const std::vector<std::vector<int32_t>> got =
      CudaGroupTokens(dir, pipeline, tensor, graphs, Requests());
  ASSERT_EQ(got.size(), cpu.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i], cpu[i]) << "request " << i << " (" << Requests()[i % 3].prompt << ")";
  }
}

INSTANTIATE_TEST_SUITE_P(Layouts, NcclGroupLayoutTest,
                         ::testing::Values(std::make_tuple(1, 2, true), std::make_tuple(2, 1, true),
                                           std::make_tuple(2, 2, true),
                                           std::make_tuple(2, 2, false)),
                         [](const auto& info) {
                           return absl::StrCat("pp", std::get<0>(info.param), "_tp",
                                               std::get<1>(info.param),
                                               std::get<2>(info.param) ? "" : "_eager");
                         });

// 16-bit activations in a group: stories260K converted to bfloat16 by PyTorch
// (to_16bit_checkpoint.py), so every rank computes its layers in bfloat16 (the block
// outputs all-reduced and the activations sent between stages in float32). A 2x2 group
// with graphs answers as one GPU does (the local CUDA executor, which the group's
// layout only changes by the order of the float32 sums of the row-parallel GEMMs).
TEST(NcclGroupSixteenBitTest, TwoByTwoGroupAnswersAsOneGpu) {
  ORCA_REQUIRE_SHARED_MODEL(shared, "stories260K");
  ORCA_REQUIRE_CUDA_DEVICES(4);
  ORCA_REQUIRE_TORCH(python);
  testing::TempDir tmp;
  std::string output;
  ASSERT_EQ(testing::RunCommand(absl::StrCat(python, " ", testing::SourceDir(),
                                             "/tests/engine/runner/to_16bit_checkpoint.py '",
                                             shared, "' '", tmp.path(), "' BF16 2>&1"),
                                &output),
            0)
      << output;
  const std::string dir = tmp.path();
  std::vector<TestRequest> requests = Requests();
  requests.push_back({"Once upon a time", 100});
  EngineOptions one_gpu = EngineOptionsFor(dir);
  one_gpu.device.type = Device::kCuda;
  auto engine = Engine::Create(one_gpu);
  ASSERT_TRUE(engine.ok()) << engine.status();
  (*engine)->Start();
  std::vector<std::vector<int32_t>> want = RunRequests(**engine, requests, absl::Seconds(180));
  (*engine)->Stop();
  engine->reset();
  ASSERT_EQ(want.size(), requests.size());
  want.push_back(want[1]);
  const std::vector<std::vector<int32_t>> got =
      CudaGroupTokens(dir, 2, 2, /*graphs=*/true, requests, DType::kBF16);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i], want[i]) << "request " << i;
  }
}

// A group that sizes its KV cache by its ranks' memory, with the engine created before
// any rank joins (as the `orca scheduler` pod does): the ranks profile, the smallest
// capacity wins (device 1 has less memory: ORCA_CUDA_TWIN_DEVICE_MEMORY, CMakeLists.txt),
// the engine adopts it when the group forms, and the answers are the CPU engine's.
TEST(NcclGroupMemoryTest, EngineAdoptsTheKvCacheTheRanksSizedByTheirMemory) {
  ORCA_REQUIRE_SHARED_MODEL(dir, "stories260K");
  ORCA_REQUIRE_CUDA_DEVICES(2);
  const auto& cpu = CpuTokens(dir);
  ASSERT_EQ(cpu.size(), Requests().size());
  EngineOptions eo = EngineOptionsFor(dir);
  eo.kv_cache.num_blocks = 0;
  eo.kv_cache.size_mib = 0;
  eo.model.max_model_len = 64;
  GroupExecutorOptions go = CudaGroupOptions(dir, 1, 2);
  go.kv_cache = eo.kv_cache;
  go.scheduler = eo.scheduler;
  go.max_model_len = eo.model.max_model_len;
  auto group = GroupExecutor::Create(go);
  ASSERT_TRUE(group.ok()) << group.status();
  GroupExecutor* exec = group->get();
  auto engine = Engine::Create(eo, std::move(*group));
  ASSERT_TRUE(engine.ok()) << engine.status();
  EXPECT_EQ((*engine)->num_kv_blocks(), 0);
  (*engine)->Start();
  Ranks ranks(dir, exec->port(), 2);
  ranks.StartRank(0, Device::kCuda);
  ranks.StartRank(1, Device::kCuda);
  ASSERT_TRUE(exec->WaitReady(absl::Seconds(120))) << "the CUDA group did not form in 120 s";
  const int32_t blocks = exec->num_kv_blocks();
  // Device 1's 48 MiB at the backend's memory fraction (0.9), less 2% reserve, holds a
  // KV cache of this many blocks; weights and workspaces take a few hundred KiB more.
  auto config = LoadModelConfig(dir);
  ASSERT_TRUE(config.ok());
  auto dtype = ResolveKvCacheDType(eo.kv_cache.dtype, Device::kCuda);
  ASSERT_TRUE(dtype.ok());
  const double per_block = static_cast<double>(
      ModelRunner::KvBytesPerBlock(*config, ModelShard{1, 2, 0, 0}, kBlockSize, *dtype));
  const double room = 48.0 * (1 << 20) * 0.9 * 0.98;
  EXPECT_LE(blocks * per_block, room);
  EXPECT_GE(blocks * per_block, room - 8.0 * (1 << 20)) << blocks << " blocks";
  const std::vector<std::vector<int32_t>> got =
      RunRequests(**engine, Requests(), absl::Seconds(180));
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i], cpu[i]) << "request " << i << " (" << Requests()[i].prompt << ")";
  }
  EXPECT_EQ((*engine)->num_kv_blocks(), blocks);
  EXPECT_EQ((*engine)->Snapshot().kv_cache_blocks, blocks) << "the engine's pool adopted it";
  (*engine)->Stop();
}

// TP=2: the rank that stops while a request runs leaves its peer inside an NCCL
// all-reduce that can never complete; the request fails retriably (the peer's wait is
// abandoned, not left to hang), and a replacement re-forms the group.
TEST(NcclGroupFailureTest, LostRankFailsRequestRetriablyAndGroupReforms) {
  ORCA_REQUIRE_SHARED_MODEL(dir, "stories260K");
  ORCA_REQUIRE_CUDA_DEVICES(2);
  const auto& cpu = CpuTokens(dir);
  ASSERT_EQ(cpu.size(), Requests().size());
  auto group = GroupExecutor::Create(CudaGroupOptions(dir, 1, 2));
  ASSERT_TRUE(group.ok()) << group.status();
  GroupExecutor* exec = group->get();
  Ranks ranks(dir, exec->port(), 2);
  ranks.StartRank(0, Device::kCuda);
  ranks.StartRank(1, Device::kCuda);
  ASSERT_TRUE(exec->WaitReady(absl::Seconds(120)));
  const uint64_t gen = exec->generation();
  auto created = Engine::Create(EngineOptionsFor(dir), std::move(*group));
  ASSERT_TRUE(created.ok()) << created.status();
  Engine& engine = **created;
  engine.Start();

  GenerateParams p;
  p.prompt_tokens = engine.tokenizer().Encode("Once upon a time", true);
  p.max_tokens = 200;
  p.ignore_eos = true;
  p.sampling.temperature = 0;
  auto stream = engine.Submit(std::move(p));
  ASSERT_TRUE(stream.ok()) << stream.status();
  Collected c = Collect(**stream, absl::Seconds(120), /*min_tokens=*/2);
  ASSERT_GE(c.tokens.size(), 2u) << "the request made no progress";
  ASSERT_FALSE(c.finished);
  EXPECT_TRUE(ranks.StopRank(1).ok());
  c = Collect(**stream, absl::Seconds(kCommTimeoutS + 30), -1, std::move(c));
  ASSERT_TRUE(c.finished) << "the request did not end after losing a rank";
  EXPECT_EQ(c.last.finish_reason, FinishReason::kError);
  EXPECT_TRUE(absl::IsUnavailable(c.last.status)) << c.last.status;  // retriable
  for (size_t i = 0; i < std::min(c.tokens.size(), cpu[0].size()); ++i) {
    ASSERT_EQ(c.tokens[i], cpu[0][i]) << "token " << i;
  }

  ranks.StartRank(1, Device::kCuda);
  ASSERT_TRUE(Eventually([&] { return engine.ready(); }, absl::Seconds(120)))
      << "the group did not re-form";
  EXPECT_GT(exec->generation(), gen);
  EXPECT_EQ(RunRequests(engine, Requests(), absl::Seconds(180)), cpu);
  engine.Stop();
}

#ifdef ORCA_HAVE_NCCL

// --- the NCCL communicator when a peer stalls ---------------------------------------
// (What a rank of a group lives through when its peer hangs without an NCCL error, as a
// dead peer over NVLink does; these belong with tests/kernels/nccl_communicator_test.cc.)

// Two ranks of one NCCL communicator on devices 0 and 1, each on its own CUDA backend,
// rank 0 with `timeout` and `cancel`.
struct TwoRanks {
  std::unique_ptr<CudaBackend> backend[2];
  std::unique_ptr<Communicator> comm[2];
  std::unique_ptr<DeviceBuffer> buf;   // 64 floats on rank 0
  std::unique_ptr<DeviceBuffer> buf1;  // 64 floats on rank 1
};

void MakeTwoRanks(absl::Duration timeout, const std::atomic<bool>* cancel, TwoRanks& out) {
  for (int r = 0; r < 2; ++r) {
    auto b = CudaBackend::Create({.device = r});
    ASSERT_TRUE(b.ok()) << b.status();
    out.backend[r] = std::move(*b);
  }
  auto id = NewNcclUniqueId();
  ASSERT_TRUE(id.ok()) << id.status();
  absl::Status status[2];
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      NcclCommOptions o;
      o.device = r;
      o.stream = out.backend[r]->stream();
      o.timeout = r == 0 ? timeout : absl::Seconds(30);
      o.cancel = r == 0 ? cancel : nullptr;
      auto comm = CreateNcclCommunicator(*id, r, 2, o);
      status[r] = comm.status();
      if (comm.ok()) out.comm[r] = std::move(*comm);
    });
  }
  for (auto& t : threads) t.join();
  ASSERT_TRUE(status[0].ok()) << status[0];
  ASSERT_TRUE(status[1].ok()) << status[1];
  auto buf = out.backend[0]->Allocate(64 * sizeof(float));
  ASSERT_TRUE(buf.ok()) << buf.status();
  out.buf = std::move(*buf);
  auto buf1 = out.backend[1]->Allocate(64 * sizeof(float));
  ASSERT_TRUE(buf1.ok()) << buf1.status();
  out.buf1 = std::move(*buf1);
}

// `first` waits out rank 0's 1 s timeout and fails UNAVAILABLE naming `what`; the
// communicator is then aborted, so `later` fails at once.
void ExpectTimesOutThenFailsFast(const std::function<absl::Status()>& first,
                                 const std::string& what,
                                 const std::function<absl::Status()>& later) {
  absl::Time t0 = absl::Now();
  absl::Status s = first();
  const absl::Duration waited = absl::Now() - t0;
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  EXPECT_THAT(std::string(s.message()), ::testing::HasSubstr(what));
  EXPECT_GE(waited, absl::Milliseconds(900));
  EXPECT_LT(waited, absl::Seconds(15)) << "the wait outlived its timeout";
  t0 = absl::Now();
  s = later();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  EXPECT_THAT(std::string(s.message()), ::testing::HasSubstr("aborted after an earlier failure"));
  EXPECT_LT(absl::Now() - t0, absl::Milliseconds(500));
}

// Records rank r's all-reduce of its 64 floats into a CUDA graph of its backend.
std::unique_ptr<BackendGraph> RecordAllReduce(TwoRanks& ranks, int r) {
  float* data = static_cast<float*>((r == 0 ? ranks.buf : ranks.buf1)->data());
  EXPECT_TRUE(ranks.comm[r]->SupportsCapture());
  absl::Status began = ranks.backend[r]->BeginCapture();
  EXPECT_TRUE(began.ok()) << began;
  if (!began.ok()) return nullptr;
  // Only recorded: returns at once although the peer has not joined.
  absl::Status recorded = ranks.comm[r]->AllReduceSum(data, 64);
  EXPECT_TRUE(recorded.ok()) << recorded;
  auto graph = ranks.backend[r]->EndCapture();
  EXPECT_TRUE(graph.ok()) << graph.status();
  return graph.ok() ? std::move(*graph) : nullptr;
}

// Both ranks record an all-reduce into a graph; nothing runs until they replay it, and
// each replay sums again once AwaitEnqueued has seen it through.
TEST(NcclCommunicatorFailureTest, RecordedOperationsRunAtEachReplay) {
  ORCA_REQUIRE_CUDA_DEVICES(2);
  TwoRanks ranks;
  ASSERT_NO_FATAL_FAILURE(MakeTwoRanks(absl::Seconds(30), nullptr, ranks));
  float* data[2] = {static_cast<float*>(ranks.buf->data()),
                    static_cast<float*>(ranks.buf1->data())};
  for (int r = 0; r < 2; ++r) {
    const std::vector<float> init(64, r == 0 ? 1.0f : 2.0f);
    ASSERT_TRUE(ranks.backend[r]->CopyToDevice(data[r], init.data(), 64 * sizeof(float)).ok());
  }
  std::unique_ptr<BackendGraph> graph[2] = {RecordAllReduce(ranks, 0), RecordAllReduce(ranks, 1)};
  ASSERT_TRUE(graph[0] != nullptr && graph[1] != nullptr);
  std::vector<float> back(64);
  ASSERT_TRUE(ranks.backend[0]->CopyToHost(back.data(), data[0], 64 * sizeof(float)).ok());
  EXPECT_EQ(back, std::vector<float>(64, 1.0f)) << "recording ran the all-reduce";
  for (float want : {3.0f, 6.0f}) {
    absl::Status status[2];
    std::vector<std::thread> threads;
    for (int r = 0; r < 2; ++r) {
      threads.emplace_back([&, r] {
        status[r] = ranks.backend[r]->Replay(*graph[r]);
        if (status[r].ok()) status[r] = ranks.comm[r]->AwaitEnqueued();
      });
    }
    for (auto& t : threads) t.join();
    for (int r = 0; r < 2; ++r) {
      ASSERT_TRUE(status[r].ok()) << "rank " << r << ": " << status[r];
      ASSERT_TRUE(ranks.backend[r]->CopyToHost(back.data(), data[r], 64 * sizeof(float)).ok());
      EXPECT_EQ(back, std::vector<float>(64, want)) << "rank " << r;
    }
  }
}

// A rank that replays a recorded all-reduce its peer never runs: AwaitEnqueued gives up
// after the timeout as the call itself would, aborts, and later calls fail at once.
TEST(NcclCommunicatorFailureTest, AReplayThePeerNeverJoinsTimesOutAndAborts) {
  ORCA_REQUIRE_CUDA_DEVICES(2);
  TwoRanks ranks;
  ASSERT_NO_FATAL_FAILURE(MakeTwoRanks(absl::Seconds(1), nullptr, ranks));
  std::unique_ptr<BackendGraph> graph = RecordAllReduce(ranks, 0);
  ASSERT_TRUE(graph != nullptr);
  ASSERT_TRUE(ranks.backend[0]->Replay(*graph).ok());
  auto await = [&] { return ranks.comm[0]->AwaitEnqueued(); };
  ExpectTimesOutThenFailsFast(await, "replayed CUDA graph", await);
  graph.reset();
  EXPECT_TRUE(ranks.backend[0]->Synchronize().ok());
}

TEST(NcclCommunicatorFailureTest, StalledPeerTimesOutAbortsAndLaterCallsFailFast) {
  ORCA_REQUIRE_CUDA_DEVICES(2);
  TwoRanks ranks;
  ASSERT_NO_FATAL_FAILURE(MakeTwoRanks(absl::Seconds(1), nullptr, ranks));
  float* data = static_cast<float*>(ranks.buf->data());
  // Rank 1 never joins the all-reduce; broken, every later call fails at once.
  ExpectTimesOutThenFailsFast([&] { return ranks.comm[0]->AllReduceSum(data, 64); },
                              "all-reduce of 64 floats",
                              [&] { return ranks.comm[0]->Send(data, 64, 1); });
  // The backend's stream is clean and usable (the next generation reuses it).
  std::vector<float> host(64, 2.5f), back(64);
  EXPECT_TRUE(ranks.backend[0]->Synchronize().ok());
  EXPECT_TRUE(ranks.backend[0]->CopyToDevice(data, host.data(), 64 * sizeof(float)).ok());
  EXPECT_TRUE(ranks.backend[0]->CopyToHost(back.data(), data, 64 * sizeof(float)).ok());
  EXPECT_EQ(back, host);
}

TEST(NcclCommunicatorFailureTest, CancellationEndsAWaitAtOnce) {
  ORCA_REQUIRE_CUDA_DEVICES(2);
  std::atomic<bool> cancel{false};
  TwoRanks ranks;
  ASSERT_NO_FATAL_FAILURE(MakeTwoRanks(absl::Seconds(60), &cancel, ranks));
  float* data = static_cast<float*>(ranks.buf->data());
  absl::Status s;
  std::thread waiter([&] { s = ranks.comm[0]->Recv(data, 64, 1); });  // rank 1 never sends
  absl::SleepFor(absl::Milliseconds(300));
  const absl::Time t0 = absl::Now();
  cancel = true;
  waiter.join();
  EXPECT_LT(absl::Now() - t0, absl::Seconds(5)) << "the cancelled wait went on";
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  EXPECT_THAT(std::string(s.message()), ::testing::HasSubstr("receive of 64 floats from rank 1"));
  EXPECT_THAT(std::string(s.message()), ::testing::HasSubstr("reset"));
}

#endif  // ORCA_HAVE_NCCL

}  // namespace
}  // namespace orca
