#include "tests/engine/runner/runner_test_util.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "tests/testutil/testutil.h"

namespace orca::testing {

LoadedModel LoadModel(const std::string& dir, int32_t num_blocks, int32_t block_size,
                      int32_t sampler_threads, DType kv_cache_dtype) {
  LoadedModel m;
  m.backend = CreateCpuBackend(2);
  ModelRunnerOptions opts;
  opts.num_kv_blocks = num_blocks;
  opts.block_size = block_size;
  opts.sampler_threads = sampler_threads;
  opts.kv_cache_dtype = kv_cache_dtype;
  auto runner = ModelRunner::Create(dir, m.backend.get(), opts);
  EXPECT_TRUE(runner.ok()) << runner.status();
  if (runner.ok()) m.runner = std::move(*runner);
  return m;
}

std::vector<float> PrefillLogits(ModelRunner& runner, const std::vector<int32_t>& tokens,
                                 int32_t chunk) {
  KvBlockPool pool(runner.num_kv_blocks(), runner.block_size());
  BlockTable table;
  std::vector<float> out;
  for (size_t done = 0; done < tokens.size();) {
    size_t n = std::min<size_t>(chunk, tokens.size() - done);
    EXPECT_TRUE(table.EnsureCapacity(pool, static_cast<int64_t>(done + n)).ok());
    IterationPlan plan;
    ScheduledSequence s;
    s.seq_id = 7;
    s.start_pos = static_cast<int32_t>(done);
    s.token_ids.assign(tokens.begin() + done, tokens.begin() + done + n);
    s.block_table = table.blocks();
    plan.seqs.push_back(s);
    auto logits = runner.Forward(plan, /*all_rows=*/true);
    EXPECT_TRUE(logits.ok()) << logits.status();
    if (!logits.ok()) return {};
    out.insert(out.end(), logits->values.begin(), logits->values.end());
    done += n;
  }
  table.Release(pool);
  EXPECT_EQ(pool.num_free(), pool.num_blocks());
  return out;
}

ScheduledSequence NextChunk(uint64_t seq_id, const std::vector<int32_t>& tokens, int32_t computed,
                            int32_t chunk, BlockTable& table, KvBlockPool& pool) {
  const int32_t n = std::min(static_cast<int32_t>(tokens.size()) - computed, chunk);
  EXPECT_TRUE(table.EnsureCapacity(pool, computed + n).ok());
  ScheduledSequence ss;
  ss.seq_id = seq_id;
  ss.start_pos = computed;
  ss.token_ids.assign(tokens.begin() + computed, tokens.begin() + computed + n);
  ss.block_table = table.blocks();
  ss.sample = computed + n == static_cast<int32_t>(tokens.size());
  ss.sampling.temperature = 0;
  return ss;
}

std::vector<int32_t> GreedyAlone(ModelRunner& runner, const std::vector<int32_t>& prompt,
                                 int32_t n) {
  KvBlockPool pool(runner.num_kv_blocks(), runner.block_size());
  BlockTable table;
  std::vector<int32_t> tokens = prompt;
  int32_t computed = 0;
  std::vector<int32_t> out;
  while (static_cast<int32_t>(out.size()) < n) {
    ScheduledSequence s;
    s.seq_id = 1;
    s.start_pos = computed;
    s.token_ids.assign(tokens.begin() + computed, tokens.end());
    s.sample = true;
    s.sampling.temperature = 0;
    EXPECT_TRUE(table.EnsureCapacity(pool, static_cast<int64_t>(tokens.size())).ok());
    s.block_table = table.blocks();
    IterationPlan plan;
    plan.seqs.push_back(s);
    auto result = runner.Execute(plan);
    EXPECT_TRUE(result.ok()) << result.status();
    if (!result.ok()) break;
    computed = static_cast<int32_t>(tokens.size());
    tokens.push_back(result->tokens[0].token_id);
    out.push_back(result->tokens[0].token_id);
  }
  table.Release(pool);
  return out;
}

std::vector<double> ReferenceLogits(const std::string& python, const std::string& model_dir,
                                    const std::vector<int32_t>& tokens, DType kv_dtype) {
  TempDir tmp;
  {
    std::ofstream f(tmp.file("tokens.json"));
    f << "[" << absl::StrJoin(tokens, ",") << "]";
  }
  std::string script = SourceDir() + "/tests/engine/runner/reference_forward.py";
  std::string cmd = absl::StrCat(
      python, " ", script, " '", model_dir, "' ", tmp.file("tokens.json"), " ",
      tmp.file("logits.bin"),
      kv_dtype == DType::kF32 ? "" : absl::StrCat(" ", std::string(DTypeName(kv_dtype))), " 2>&1");
  std::string output;
  int rc = RunCommand(cmd, &output);
  EXPECT_EQ(rc, 0) << output;
  std::ifstream in(tmp.file("logits.bin"), std::ios::binary | std::ios::ate);
  std::vector<double> logits(static_cast<size_t>(in.tellg()) / sizeof(double));
  in.seekg(0);
  in.read(reinterpret_cast<char*>(logits.data()),
          static_cast<std::streamsize>(logits.size() * sizeof(double)));
  return logits;
}

double RowRelativeError(const float* a, const double* b, int32_t vocab) {
  double max_diff = 0, max_ref = 0;
  for (int32_t i = 0; i < vocab; ++i) {
    max_diff = std::max(max_diff, std::abs(static_cast<double>(a[i]) - b[i]));
    max_ref = std::max(max_ref, std::abs(b[i]));
  }
  return max_ref > 0 ? max_diff / max_ref : max_diff;
}

}  // namespace orca::testing
