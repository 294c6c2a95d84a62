#include "tests/engine/runner/runner_test_util.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "tests/testutil/testutil.h"

namespace orca::testing {

LoadedModel LoadModel(const std::string& dir, int32_t num_blocks, int32_t block_size,
                      int32_t sampler_threads, DType kv_cache_dtype, WeightDType weight_dtype) {
  LoadedModel m;
  m.backend = CreateCpuBackend(2);
  ModelRunnerOptions opts;
  opts.num_kv_blocks = num_blocks;
  opts.block_size = block_size;
  opts.sampler_threads = sampler_threads;
  opts.kv_cache_dtype = kv_cache_dtype;
  opts.dtype = weight_dtype;
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

std::vector<PromptLogprob> ScorePrompt(ModelRunner& runner, const std::vector<int32_t>& tokens,
                                       int32_t chunk, int32_t top_n, int32_t scored_before) {
  KvBlockPool pool(runner.num_kv_blocks(), runner.block_size());
  BlockTable table;
  std::vector<PromptLogprob> got;
  const int32_t total = static_cast<int32_t>(tokens.size());
  int32_t computed = 0;
  while (computed < total) {
    ScheduledSequence s = NextChunk(1, tokens, computed, chunk, table, pool);
    const int32_t n = static_cast<int32_t>(s.token_ids.size());
    s.sampling.prompt_logprobs = top_n;
    const int32_t first = std::max(computed + 1, scored_before + 1);
    s.prompt_logprobs_from = std::max(0, first - 1 - computed);
    for (int32_t p = first; p < std::min(computed + n + 1, total); ++p)
      s.prompt_logprob_targets.push_back(tokens[p]);
    IterationPlan plan;
    plan.seqs.push_back(s);
    auto result = runner.Execute(plan);
    EXPECT_TRUE(result.ok()) << result.status();
    if (!result.ok()) break;
    if (s.prompt_logprob_targets.empty()) {
      EXPECT_TRUE(result->prompt_logprobs.empty());
    } else if (result->prompt_logprobs.size() != 1) {
      ADD_FAILURE() << result->prompt_logprobs.size() << " prompt logprob results for one chunk";
      break;
    } else {
      const SequencePromptLogprobs& scored = result->prompt_logprobs[0];
      EXPECT_EQ(scored.first_position, scored_before + 1 + static_cast<int32_t>(got.size()));
      got.insert(got.end(), scored.entries.begin(), scored.entries.end());
    }
    computed += n;
  }
  table.Release(pool);
  return got;
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

ReferencePrompt ReferencePromptLogprobs(const std::string& python, const std::string& model_dir,
                                        const std::vector<int32_t>& tokens, int32_t top_n,
                                        DType kv_dtype) {
  TempDir tmp;
  {
    std::ofstream f(tmp.file("tokens.json"));
    f << "[" << absl::StrJoin(tokens, ",") << "]";
  }
  const std::string script = SourceDir() + "/tests/engine/runner/reference_logprobs.py";
  const std::string cmd = absl::StrCat(
      python, " ", script, " '", model_dir, "' ", tmp.file("tokens.json"), " ", top_n,
      kv_dtype == DType::kF32 ? "" : absl::StrCat(" ", std::string(DTypeName(kv_dtype))),
      " 2>/dev/null");
  std::string output;
  const int rc = RunCommand(cmd, &output);
  EXPECT_EQ(rc, 0) << output;
  ReferencePrompt out;
  const nlohmann::json j = nlohmann::json::parse(output, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) {
    ADD_FAILURE() << "reference_logprobs.py printed no JSON: " << output.substr(0, 500);
    return out;
  }
  for (size_t i = 0; i < tokens.size(); ++i) {
    const bool first = i == 0;
    out.logprobs.push_back(first ? 0.0 : j["logprobs"][i].get<double>());
    out.ranks.push_back(first ? 0 : j["ranks"][i].get<int32_t>());
    out.rank_ranges.emplace_back(first ? 0 : j["rank_ranges"][i][0].get<int32_t>(),
                                 first ? 0 : j["rank_ranges"][i][1].get<int32_t>());
    auto& top = out.top.emplace_back();
    if (!first) {
      for (const auto& e : j["top"][i]) top.emplace_back(e[0].get<int32_t>(), e[1].get<double>());
    }
  }
  return out;
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
