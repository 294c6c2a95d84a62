// Tensor- and pipeline-parallel model runners (DESIGN.md section 4) are exact: every rank
// of a group runs as a thread of this process with its own CPU backend and ModelRunner,
// talking over loopback Gloo, and all are given the same iteration plans (selective
// batches mixing prefill chunks and decodes of several sequences). The sampling rank's
// logits must match the unsharded runner's to 1e-4 of the row's largest logit, and every
// other rank must return nothing. Covered: stories260K (a trained Llama with grouped-query
// attention and tied embeddings), a random GPT-2 (fused c_attn, Conv1D weights, biases
// everywhere) and a random Llama with attention biases and an untied LM head.
#include <gloo/rendezvous/hash_store.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <functional>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "engine/backend/backend.h"
#include "engine/comm/gloo/gloo_communicator.h"
#include "engine/kv/kv_block_pool.h"
#include "engine/model/model_config.h"
#include "engine/model/random_checkpoint.h"
#include "engine/runner/model_runner.h"
#include "engine/runner/model_shard.h"
#include "tests/engine/runner/runner_test_util.h"
#include "tests/testutil/testutil.h"

namespace orca {
namespace {

constexpr int32_t kNumBlocks = 64;
constexpr int32_t kBlockSize = 8;
constexpr double kTolerance = 1e-4;

// The plans of a short multi-sequence run and what the unsharded runner computed for
// them: every token row's logits (Forward with all_rows) and the sampled tokens.
struct Trace {
  int32_t vocab = 0;
  std::vector<IterationPlan> plans;
  std::vector<std::vector<float>> logits;  // per plan: [num_tokens * vocab]
  std::vector<IterationResult> results;    // per plan: Execute on the unsharded runner
};

// Deterministic prompt tokens in [3, vocab).
std::vector<int32_t> PromptTokens(int32_t len, int32_t vocab, uint32_t seed) {
  std::vector<int32_t> t;
  uint32_t x = seed * 2654435761u + 12345u;
  for (int32_t i = 0; i < len; ++i) {
    x = x * 1664525u + 1013904223u;
    t.push_back(3 + static_cast<int32_t>((x >> 8) % static_cast<uint32_t>(vocab - 3)));
  }
  return t;
}

// Simulates a selective-batching schedule with the unsharded `runner`: four sequences with
// different prompt lengths and prefill chunk sizes join at different iterations, so
// iterations mix prefill chunks with decodes. Greedy tokens come from the all-rows logits.
Trace MakeTrace(ModelRunner& runner) {
  Trace trace;
  const int32_t vocab = runner.config().vocab_size;
  trace.vocab = vocab;
  struct Seq {
    uint64_t id = 0;
    std::vector<int32_t> tokens;
    int32_t join = 0, chunk = 1, computed = 0, generated = 0;
    BlockTable table;
  };
  constexpr int32_t kSteps = 6;
  const int32_t lens[] = {13, 5, 22, 3};
  const int32_t joins[] = {0, 0, 1, 3};
  const int32_t chunks[] = {64, 2, 7, 1};
  std::vector<Seq> seqs;
  for (int i = 0; i < 4; ++i) {
    Seq s;
    s.id = static_cast<uint64_t>(40 + i);
    s.tokens = PromptTokens(lens[i], vocab, i + 1);
    s.join = joins[i];
    s.chunk = chunks[i];
    seqs.push_back(std::move(s));
  }
  KvBlockPool pool(runner.num_kv_blocks(), runner.block_size());
  for (int32_t it = 0; it < 100; ++it) {
    IterationPlan plan;
    plan.iteration = 1000 + it;
    std::vector<Seq*> in_plan;
    for (Seq& s : seqs) {
      if (it < s.join || s.generated == kSteps) continue;
      ScheduledSequence ss =
          orca::testing::NextChunk(s.id, s.tokens, s.computed, s.chunk, s.table, pool);
      ss.output_index = s.generated;
      plan.seqs.push_back(ss);
      in_plan.push_back(&s);
    }
    if (plan.seqs.empty()) break;
    auto logits = runner.Forward(plan, /*all_rows=*/true);
    EXPECT_TRUE(logits.ok()) << logits.status();
    if (!logits.ok()) return trace;
    auto result = runner.Execute(plan);
    EXPECT_TRUE(result.ok()) << result.status();
    if (!result.ok()) return trace;
    size_t row = 0;
    for (size_t i = 0; i < plan.seqs.size(); ++i) {
      Seq& s = *in_plan[i];
      row += plan.seqs[i].token_ids.size();
      s.computed += static_cast<int32_t>(plan.seqs[i].token_ids.size());
      if (!plan.seqs[i].sample) continue;
      const float* r = logits->row(row - 1);
      s.tokens.push_back(static_cast<int32_t>(std::max_element(r, r + vocab) - r));
      if (++s.generated == kSteps) s.table.Release(pool);
    }
    trace.plans.push_back(std::move(plan));
    trace.logits.push_back(std::move(logits->values));
    trace.results.push_back(std::move(*result));
  }
  return trace;
}

// Checks that the trace exercises what selective batching is about.
void ExpectMixedTrace(const Trace& trace) {
  bool mixed = false;
  for (const IterationPlan& p : trace.plans) {
    bool prefill = false, decode = false;
    for (const auto& s : p.seqs) (s.token_ids.size() > 1 ? prefill : decode) = true;
    mixed |= prefill && decode && p.seqs.size() >= 3;
  }
  EXPECT_TRUE(mixed) << "no iteration mixed a prefill chunk with decodes of other sequences";
  EXPECT_GE(trace.plans.size(), 8u);
}

// What one rank computed for every plan of a trace.
struct RankRun {
  absl::Status status;  // the first failure (creation, Forward or Execute)
  ModelShard shard;
  size_t kv_cache_bytes = 0, kv_cache_bytes_expected = 0;
  std::vector<std::vector<float>> logits;  // Forward(plan, all_rows)
  std::vector<IterationResult> results;    // Execute(plan)
};

std::atomic<int> g_group_counter{0};

// Runs `trace`'s plans on a pipeline x tensor group of ranks, one thread each.
std::vector<RankRun> RunGroup(const std::string& dir, int32_t pipeline, int32_t tensor,
                              const Trace& trace) {
  const int32_t world = pipeline * tensor;
  std::vector<RankRun> runs(static_cast<size_t>(world));
  gloo::rendezvous::HashStore store;
  const std::string prefix = absl::StrCat("sharded", g_group_counter.fetch_add(1), "/");
  std::vector<std::thread> threads;
  for (int32_t rank = 0; rank < world; ++rank) {
    threads.emplace_back([&, rank] {
      RankRun& run = runs[static_cast<size_t>(rank)];
      run.shard = ModelShard{pipeline, tensor, rank / tensor, rank % tensor};
      GlooOptions go;
      go.hostname = "127.0.0.1";
      go.timeout = absl::Seconds(10);
      // As a worker does: the stage's tensor-parallel ranks, then the whole group.
      // Declared before the runner, so the runner (which uses them) goes first; a rank
      // that fails closes its connections and its peers fail at once instead of waiting.
      std::unique_ptr<Communicator> tp_comm, pp_comm;
      if (tensor > 1) {
        auto c = CreateGlooCommunicator(store, absl::StrCat(prefix, "tp", run.shard.stage, "/"),
                                        run.shard.tp_rank, tensor, go);
        if (!c.ok()) {
          run.status = c.status();
          return;
        }
        tp_comm = std::move(*c);
      }
      if (pipeline > 1) {
        auto c = CreateGlooCommunicator(store, prefix + "pp/", rank, world, go);
        if (!c.ok()) {
          run.status = c.status();
          return;
        }
        pp_comm = std::move(*c);
      }
      std::unique_ptr<Backend> backend = CreateCpuBackend(1);
      ModelRunnerOptions ro;
      ro.num_kv_blocks = kNumBlocks;
      ro.block_size = kBlockSize;
      ro.shard = run.shard;
      ro.tp_comm = tp_comm.get();
      ro.pp_comm = pp_comm.get();
      auto runner = ModelRunner::Create(dir, backend.get(), ro);
      if (!runner.ok()) {
        run.status = runner.status();
        return;
      }
      run.kv_cache_bytes = (*runner)->kv_cache_bytes();
      run.kv_cache_bytes_expected =
          ModelRunner::KvBytesPerBlock((*runner)->config(), run.shard, kBlockSize, DType::kF32) *
          kNumBlocks;
      for (const IterationPlan& plan : trace.plans) {
        auto logits = (*runner)->Forward(plan, /*all_rows=*/true);
        if (!logits.ok()) {
          run.status = logits.status();
          return;
        }
        run.logits.push_back(std::move(logits->values));
        auto result = (*runner)->Execute(plan);
        if (!result.ok()) {
          run.status = result.status();
          return;
        }
        run.results.push_back(std::move(*result));
      }
    });
  }
  for (std::thread& t : threads) t.join();
  return runs;
}

// Largest |a - b| over a row divided by the row's largest |b|.
double RowError(const float* a, const float* b, int32_t vocab) {
  double diff = 0, ref = 0;
  for (int32_t v = 0; v < vocab; ++v) {
    diff = std::max(diff, std::abs(static_cast<double>(a[v]) - b[v]));
    ref = std::max(ref, std::abs(static_cast<double>(b[v])));
  }
  return ref > 0 ? diff / ref : diff;
}

// Runs `trace` on the layout and compares every rank with the unsharded reference.
void ExpectGroupMatches(const std::string& dir, int32_t pipeline, int32_t tensor,
                        const Trace& trace) {
  SCOPED_TRACE(::testing::Message() << "pipeline " << pipeline << " x tensor " << tensor);
  ASSERT_FALSE(trace.plans.empty());
  const absl::Time start = absl::Now();
  std::vector<RankRun> runs = RunGroup(dir, pipeline, tensor, trace);
  const int32_t vocab = trace.vocab;
  int sampling_ranks = 0;
  for (const RankRun& run : runs) {
    SCOPED_TRACE(::testing::Message() << "rank " << run.shard.rank() << " (stage "
                                      << run.shard.stage << ", tp " << run.shard.tp_rank << ")");
    ASSERT_TRUE(run.status.ok()) << run.status;
    EXPECT_EQ(run.kv_cache_bytes, run.kv_cache_bytes_expected);
    ASSERT_EQ(run.logits.size(), trace.plans.size());
    ASSERT_EQ(run.results.size(), trace.plans.size());
    if (!run.shard.samples()) {
      for (size_t p = 0; p < trace.plans.size(); ++p) {
        EXPECT_TRUE(run.logits[p].empty()) << "plan " << p << ": a non-sampling rank returned "
                                           << run.logits[p].size() << " logits";
        EXPECT_TRUE(run.results[p].tokens.empty())
            << "plan " << p << ": a non-sampling rank returned tokens";
      }
      continue;
    }
    ++sampling_ranks;
    double worst = 0;
    int checked_tokens = 0;
    for (size_t p = 0; p < trace.plans.size(); ++p) {
      const IterationPlan& plan = trace.plans[p];
      ASSERT_EQ(run.logits[p].size(), trace.logits[p].size()) << "plan " << p;
      for (int64_t r = 0; r < plan.num_tokens(); ++r) {
        const double err =
            RowError(run.logits[p].data() + r * vocab, trace.logits[p].data() + r * vocab, vocab);
        worst = std::max(worst, err);
        ASSERT_LT(err, kTolerance) << "plan " << p << " row " << r;
      }
      // The sampled tokens: the same sequences in order; the same greedy token wherever the
      // reference's best logit leads the runner-up clearly (a near-tie may flip).
      const IterationResult& got = run.results[p];
      const IterationResult& want = trace.results[p];
      EXPECT_EQ(got.iteration, plan.iteration);
      ASSERT_EQ(got.tokens.size(), want.tokens.size()) << "plan " << p;
      int64_t row = 0;
      size_t sampled = 0;
      for (const ScheduledSequence& s : plan.seqs) {
        row += static_cast<int64_t>(s.token_ids.size());
        if (!s.sample) continue;
        const float* ref = trace.logits[p].data() + (row - 1) * vocab;
        std::vector<float> sorted(ref, ref + vocab);
        std::partial_sort(sorted.begin(), sorted.begin() + 2, sorted.end(), std::greater<>());
        const double scale = std::max(std::abs(sorted[0]), std::abs(sorted[1]));
        EXPECT_EQ(got.tokens[sampled].seq_id, s.seq_id);
        if (sorted[0] - sorted[1] > 1e-3 * scale) {
          EXPECT_EQ(got.tokens[sampled].token_id, want.tokens[sampled].token_id)
              << "plan " << p << " sequence " << s.seq_id;
          ++checked_tokens;
        }
        ++sampled;
      }
    }
    EXPECT_GT(checked_tokens, 0);
    std::cout << "[ layout ] " << pipeline << "x" << tensor << ": " << trace.plans.size()
              << " plans, worst row error " << worst << ", "
              << absl::ToDoubleMilliseconds(absl::Now() - start) << " ms\n";
  }
  EXPECT_EQ(sampling_ranks, 1);
}

// Writes the random checkpoints once for the whole suite.
class ShardedRunnerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    tmp_ = new orca::testing::TempDir();
    // GPT-2: fused c_attn split by heads, Conv1D (transposed) weights, every bias.
    auto gpt2 = PresetConfig("gpt2-tiny");
    ASSERT_TRUE(gpt2.ok()) << gpt2.status();
    gpt2->num_layers = 4;
    gpt2->vocab_size = 300;
    gpt2->intermediate_size = 256;
    ASSERT_TRUE(WriteRandomCheckpoint(*gpt2, tmp_->file("gpt2"), 7).ok());
    // Llama with attention biases (q/k/v and o_proj), grouped-query attention and an
    // untied LM head.
    auto llama = PresetConfig("tiny");
    ASSERT_TRUE(llama.ok()) << llama.status();
    llama->num_layers = 3;
    llama->num_heads = 4;
    llama->num_kv_heads = 2;
    llama->head_dim = 16;
    llama->intermediate_size = 128;
    llama->vocab_size = 300;
    llama->tie_word_embeddings = false;
    llama->qkv_bias = llama->out_proj_bias = true;
    ASSERT_TRUE(WriteRandomCheckpoint(*llama, tmp_->file("llama_bias"), 11).ok());
  }
  static void TearDownTestSuite() {
    delete tmp_;
    tmp_ = nullptr;
  }
  static std::string Gpt2Dir() { return tmp_->file("gpt2"); }
  static std::string LlamaBiasDir() { return tmp_->file("llama_bias"); }

  // The unsharded run of `dir`.
  static Trace Reference(const std::string& dir) {
    auto m = orca::testing::LoadModel(dir, kNumBlocks, kBlockSize);
    EXPECT_NE(m.runner, nullptr);
    if (m.runner == nullptr) return {};
    Trace t = MakeTrace(*m.runner);
    ExpectMixedTrace(t);
    return t;
  }

  static orca::testing::TempDir* tmp_;
};
orca::testing::TempDir* ShardedRunnerTest::tmp_ = nullptr;

TEST_F(ShardedRunnerTest, Stories260KTensorParallelMatchesUnsharded) {
  ORCA_REQUIRE_SHARED_MODEL(dir, "stories260K");
  const Trace trace = Reference(dir);
  ExpectGroupMatches(dir, 1, 2, trace);
  ExpectGroupMatches(dir, 1, 4, trace);  // one KV head per rank
}

TEST_F(ShardedRunnerTest, Stories260KPipelineParallelMatchesUnsharded) {
  ORCA_REQUIRE_SHARED_MODEL(dir, "stories260K");
  const Trace trace = Reference(dir);
  ExpectGroupMatches(dir, 2, 1, trace);  // layers 0-2 | 3-4
  ExpectGroupMatches(dir, 3, 1, trace);  // layers 0-1 | 2-3 | 4
}

TEST_F(ShardedRunnerTest, Stories260KPipelineTimesTensorMatchesUnsharded) {
  ORCA_REQUIRE_SHARED_MODEL(dir, "stories260K");
  const Trace trace = Reference(dir);
  ExpectGroupMatches(dir, 2, 2, trace);
}

TEST_F(ShardedRunnerTest, RandomGpt2ShardsMatchUnsharded) {
  const Trace trace = Reference(Gpt2Dir());
  ExpectGroupMatches(Gpt2Dir(), 1, 2, trace);
  ExpectGroupMatches(Gpt2Dir(), 1, 4, trace);
  ExpectGroupMatches(Gpt2Dir(), 2, 1, trace);
  ExpectGroupMatches(Gpt2Dir(), 2, 2, trace);
}

TEST_F(ShardedRunnerTest, RandomLlamaWithAttentionBiasesShardsMatchUnsharded) {
  auto config = LoadModelConfig(LlamaBiasDir());
  ASSERT_TRUE(config.ok()) << config.status();
  ASSERT_TRUE(config->qkv_bias && config->out_proj_bias && !config->tie_word_embeddings);
  const Trace trace = Reference(LlamaBiasDir());
  ExpectGroupMatches(LlamaBiasDir(), 1, 2, trace);
  ExpectGroupMatches(LlamaBiasDir(), 3, 1, trace);  // the untied LM head on the last stage
  ExpectGroupMatches(LlamaBiasDir(), 2, 2, trace);
}

TEST_F(ShardedRunnerTest, ShardsHoldTheirShareOfTheKvCache) {
  ORCA_REQUIRE_SHARED_MODEL(dir, "stories260K");
  auto config = LoadModelConfig(dir);
  ASSERT_TRUE(config.ok()) << config.status();
  const size_t full = ModelRunner::KvBytesPerBlock(*config, ModelShard{}, 16, DType::kF32);
  EXPECT_EQ(full, size_t{2} * 5 * 16 * 4 * 8 * sizeof(float));
  EXPECT_EQ(ModelRunner::KvBytesPerBlock(*config, ModelShard{1, 2, 0, 1}, 16, DType::kF32),
            full / 2);
  EXPECT_EQ(ModelRunner::KvBytesPerBlock(*config, ModelShard{1, 4, 0, 3}, 16, DType::kF32),
            full / 4);
  EXPECT_EQ(ModelRunner::KvBytesPerBlock(*config, ModelShard{2, 1, 0, 0}, 16, DType::kF32),
            full / 5 * 3);
  EXPECT_EQ(ModelRunner::KvBytesPerBlock(*config, ModelShard{2, 1, 1, 0}, 16, DType::kF32),
            full / 5 * 2);
  // Stages of 5 layers: earlier stages take the extra ones, every layer exactly once.
  for (int32_t pipeline = 1; pipeline <= 5; ++pipeline) {
    int32_t next = 0;
    for (int32_t stage = 0; stage < pipeline; ++stage) {
      auto [first, end] = ModelShard{pipeline, 1, stage, 0}.Layers(5);
      EXPECT_EQ(first, next) << pipeline << " stages, stage " << stage;
      EXPECT_GE(end - first, 5 / pipeline);
      EXPECT_LE(end - first, 5 / pipeline + 1);
      next = end;
    }
    EXPECT_EQ(next, 5) << pipeline << " stages";
  }
  EXPECT_EQ(ModelShard({3, 1, 0, 0}).Layers(5), std::make_pair(0, 2));
  EXPECT_EQ(ModelShard({3, 1, 1, 0}).Layers(5), std::make_pair(2, 4));
  EXPECT_EQ(ModelShard({3, 1, 2, 0}).Layers(5), std::make_pair(4, 5));
}

TEST_F(ShardedRunnerTest, ValidateModelShardNamesTheDimensionThatDoesNotDivide) {
  ORCA_REQUIRE_SHARED_MODEL(dir, "stories260K");
  auto config = LoadModelConfig(dir);
  ASSERT_TRUE(config.ok()) << config.status();
  const ModelConfig& c = *config;
  for (const ModelShard& ok :
       {ModelShard{1, 1, 0, 0}, ModelShard{1, 2, 0, 1}, ModelShard{1, 4, 0, 3},
        ModelShard{5, 1, 4, 0}, ModelShard{2, 2, 1, 1}}) {
    EXPECT_TRUE(ValidateModelShard(c, ok).ok())
        << ok.pipeline << "x" << ok.tensor << ": " << ValidateModelShard(c, ok);
  }
  auto expect_invalid = [&](const ModelConfig& cfg, const ModelShard& s,
                            const std::vector<std::string>& words) {
    absl::Status st = ValidateModelShard(cfg, s);
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument)
        << s.pipeline << "x" << s.tensor << " stage " << s.stage << " tp " << s.tp_rank << ": "
        << st;
    for (const std::string& w : words) {
      EXPECT_NE(st.message().find(w), std::string::npos)
          << "'" << st.message() << "' does not mention '" << w << "'";
    }
  };
  expect_invalid(c, ModelShard{1, 3, 0, 0}, {"3", "8", "attention heads"});
  expect_invalid(c, ModelShard{1, 8, 0, 0}, {"8", "4", "key/value heads"});
  ModelConfig odd_mlp = c;
  odd_mlp.intermediate_size = 170;
  expect_invalid(odd_mlp, ModelShard{1, 4, 0, 0}, {"170", "intermediate_size"});
  expect_invalid(c, ModelShard{6, 1, 0, 0}, {"6", "5 layers"});
  expect_invalid(c, ModelShard{2, 1, 2, 0}, {"stage 2"});
  expect_invalid(c, ModelShard{1, 2, 0, 2}, {"tp rank 2"});
  expect_invalid(c, ModelShard{1, 2, 0, -1}, {});
  expect_invalid(c, ModelShard{0, 1, 0, 0}, {});
  expect_invalid(c, ModelShard{1, 0, 0, 0}, {});
}

TEST_F(ShardedRunnerTest, CreateRejectsBadShardsAndMissingCommunicators) {
  ORCA_REQUIRE_SHARED_MODEL(dir, "stories260K");
  std::unique_ptr<Backend> backend = CreateCpuBackend(1);
  ModelRunnerOptions ro;
  ro.num_kv_blocks = 8;
  // Tensor- or pipeline-parallel ranks without their communicator.
  ro.shard = ModelShard{1, 2, 0, 0};
  auto r = ModelRunner::Create(dir, backend.get(), ro);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
  ro.shard = ModelShard{2, 1, 1, 0};
  r = ModelRunner::Create(dir, backend.get(), ro);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
  // Communicators of the wrong size (a one-rank group needs no store traffic).
  gloo::rendezvous::HashStore store;
  GlooOptions go;
  go.hostname = "127.0.0.1";
  go.timeout = absl::Seconds(5);
  auto solo = CreateGlooCommunicator(store, "solo/", 0, 1, go);
  ASSERT_TRUE(solo.ok()) << solo.status();
  ro.shard = ModelShard{1, 2, 0, 0};
  ro.tp_comm = solo->get();
  r = ModelRunner::Create(dir, backend.get(), ro);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
  ro.shard = ModelShard{2, 1, 0, 0};
  ro.tp_comm = nullptr;
  ro.pp_comm = solo->get();
  r = ModelRunner::Create(dir, backend.get(), ro);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
  ro.pp_comm = nullptr;
  // A layout the model cannot split fails before anything is loaded, communicator or not.
  ro.shard = ModelShard{1, 3, 0, 0};
  r = ModelRunner::Create(dir, backend.get(), ro);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
  EXPECT_NE(r.status().message().find("attention heads"), std::string::npos) << r.status();
  ro.shard = ModelShard{6, 1, 0, 0};
  r = ModelRunner::Create(dir, backend.get(), ro);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
  // One rank needs none.
  ro.shard = ModelShard{};
  r = ModelRunner::Create(dir, backend.get(), ro);
  EXPECT_TRUE(r.ok()) << r.status();
}

}  // namespace
}  // namespace orca
