// `orca generate`: load a checkpoint and stream one completion to stdout.
#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <random>

#include "absl/strings/str_cat.h"
#include "engine/backend/backend.h"
#include "engine/cli/commands.h"
#include "engine/cli/flags.h"
#include "engine/common/file_util.h"
#include "engine/common/status_macros.h"
#include "engine/executor/model_runner.h"
#include "engine/kv/kv_block_pool.h"
#include "engine/model/random_checkpoint.h"
#include "engine/tokenizer/tokenizer.h"

namespace orca {
namespace {

constexpr char kDefaultModel[] = "models-local/tiny";

Flags GenerateFlags() {
  Flags f;
  f.Add("model", "",
        "Hugging Face checkpoint directory (default: a random tiny model in models-local/tiny)")
      .Add("prompt", "Once upon a time", "prompt text")
      .Add("max-tokens", "128", "tokens to generate at most")
      .Add("temperature", "0", "sampling temperature; 0 = greedy")
      .Add("top-k", "0", "keep the k most likely tokens; 0 = off")
      .Add("top-p", "1", "nucleus sampling mass; 1 = off")
      .Add("min-p", "0", "drop tokens below min-p times the top probability; 0 = off")
      .Add("repetition-penalty", "1", "penalty on tokens already present; 1 = off")
      .Add("seed", "", "random seed (default: drawn at random)")
      .Add("ignore-eos", "", "keep generating after EOS", true)
      .Add("prefill-chunk", "512", "prompt tokens per iteration (chunked prefill)")
      .Add("block-size", "16", "KV cache block size in tokens")
      .Add("threads", "0", "CPU threads for attention and element-wise work; 0 = all cores")
      .Add("stats", "", "print timing statistics to stderr", true)
      .Add("help", "", "show this help", true);
  return f;
}

absl::Status Generate(const Flags& flags) {
  std::string model_dir = flags.GetString("model");
  if (model_dir.empty()) {
    model_dir = kDefaultModel;
    if (!FileExists(JoinPath(model_dir, "config.json"))) {
      std::cerr << "orca: no --model given; writing a random-weight tiny model to " << model_dir
                << "\n";
      ORCA_ASSIGN_OR_RETURN(ModelConfig preset, PresetConfig("tiny"));
      ::mkdir("models-local", 0755);
      ORCA_RETURN_IF_ERROR(WriteRandomCheckpoint(preset, model_dir, 1));
    }
  }
  ORCA_ASSIGN_OR_RETURN(int64_t max_tokens, flags.GetInt("max-tokens"));
  ORCA_ASSIGN_OR_RETURN(int64_t chunk, flags.GetInt("prefill-chunk"));
  ORCA_ASSIGN_OR_RETURN(int64_t block_size, flags.GetInt("block-size"));
  ORCA_ASSIGN_OR_RETURN(int64_t threads, flags.GetInt("threads"));
  if (max_tokens < 1 || chunk < 1)
    return absl::InvalidArgumentError("--max-tokens and --prefill-chunk must be >= 1");
  SamplingParams sp;
  ORCA_ASSIGN_OR_RETURN(double temperature, flags.GetDouble("temperature"));
  ORCA_ASSIGN_OR_RETURN(int64_t top_k, flags.GetInt("top-k"));
  ORCA_ASSIGN_OR_RETURN(double top_p, flags.GetDouble("top-p"));
  ORCA_ASSIGN_OR_RETURN(double min_p, flags.GetDouble("min-p"));
  ORCA_ASSIGN_OR_RETURN(double penalty, flags.GetDouble("repetition-penalty"));
  if (temperature < 0 || top_k < 0 || top_p <= 0 || top_p > 1 || min_p < 0 || min_p > 1 ||
      penalty <= 0) {
    return absl::InvalidArgumentError(
        "sampling flags out of range: temperature >= 0, top-k >= 0, 0 < top-p <= 1, 0 <= min-p <= "
        "1, "
        "repetition-penalty > 0");
  }
  sp.temperature = static_cast<float>(temperature);
  sp.top_k = static_cast<int32_t>(top_k);
  sp.top_p = static_cast<float>(top_p);
  sp.min_p = static_cast<float>(min_p);
  sp.repetition_penalty = static_cast<float>(penalty);
  if (flags.GetString("seed").empty()) {
    sp.seed = std::random_device{}();
  } else {
    ORCA_ASSIGN_OR_RETURN(int64_t seed, flags.GetInt("seed"));
    sp.seed = static_cast<uint64_t>(seed);
  }

  auto t0 = std::chrono::steady_clock::now();
  std::unique_ptr<Backend> backend = CreateCpuBackend(static_cast<int>(threads));
  ORCA_ASSIGN_OR_RETURN(auto tokenizer, Tokenizer::FromDirectory(model_dir));
  ModelRunnerOptions opts;
  opts.block_size = static_cast<int32_t>(block_size);
  ORCA_ASSIGN_OR_RETURN(auto runner, ModelRunner::Create(model_dir, backend.get(), opts));
  const ModelConfig& config = runner->config();
  auto t_loaded = std::chrono::steady_clock::now();

  std::vector<int32_t> tokens =
      tokenizer->Encode(flags.GetString("prompt"), /*add_special_tokens=*/true);
  if (tokens.empty()) return absl::InvalidArgumentError("the prompt encodes to no tokens");
  const int64_t context = config.max_position_embeddings;
  if (static_cast<int64_t>(tokens.size()) >= context) {
    return absl::InvalidArgumentError(
        absl::StrCat("the prompt has ", tokens.size(), " tokens; the context length is ", context));
  }
  KvBlockPool pool(runner->num_kv_blocks(), runner->block_size());
  BlockTable table;
  StreamingDetokenizer detok(*tokenizer);
  std::cout << flags.GetString("prompt") << std::flush;

  const size_t prompt_len = tokens.size();
  int32_t computed = 0;
  int32_t generated = 0;
  bool ignore_eos = flags.GetBool("ignore-eos");
  double first_token_s = 0;
  uint64_t iteration = 0;
  while (generated < max_tokens && static_cast<int64_t>(tokens.size()) <= context) {
    ScheduledSequence seq;
    seq.seq_id = 1;
    seq.start_pos = computed;
    const int64_t remaining = static_cast<int64_t>(tokens.size()) - computed;
    const int64_t n = std::min<int64_t>(remaining, chunk);
    seq.token_ids.assign(tokens.begin() + computed, tokens.begin() + computed + n);
    seq.sample = computed + n == static_cast<int64_t>(tokens.size());
    seq.sampling = sp;
    seq.output_index = generated;
    if (sp.needs_history()) {
      seq.penalty_history = tokens;
      seq.penalty_prompt_len = static_cast<int32_t>(prompt_len);
    }
    ORCA_RETURN_IF_ERROR(table.EnsureCapacity(pool, computed + n));
    seq.block_table = table.blocks();
    IterationPlan plan;
    plan.iteration = iteration++;
    plan.seqs.push_back(std::move(seq));
    ORCA_ASSIGN_OR_RETURN(IterationResult result, runner->Execute(plan));
    computed += static_cast<int32_t>(n);
    if (result.tokens.empty()) continue;
    if (generated == 0) {
      first_token_s =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t_loaded).count();
    }
    int32_t token = result.tokens[0].token_id;
    ++generated;
    bool is_eos = false;
    for (int32_t e : config.eos_token_ids) is_eos |= token == e;
    if (is_eos && !ignore_eos) break;
    std::cout << detok.Push(token) << std::flush;
    tokens.push_back(token);
    if (static_cast<int64_t>(tokens.size()) >= context) break;
  }
  std::cout << detok.Flush() << std::endl;
  table.Release(pool);
  auto t_end = std::chrono::steady_clock::now();
  if (flags.GetBool("stats")) {
    double load_s = std::chrono::duration<double>(t_loaded - t0).count();
    double gen_s = std::chrono::duration<double>(t_end - t_loaded).count();
    std::cerr << absl::StrCat(
        "orca: load ", load_s, " s; prompt ", prompt_len, " tokens; generated ", generated,
        " tokens in ", gen_s, " s; time to first token ", first_token_s, " s; decode ",
        generated > 1 ? (generated - 1) / (gen_s - first_token_s) : 0.0, " tokens/s\n");
  }
  return absl::OkStatus();
}

}  // namespace

int RunGenerateCommand(int argc, char** argv) {
  Flags flags = GenerateFlags();
  if (auto s = flags.Parse(argc, argv, 0); !s.ok()) {
    std::cerr << "orca generate: " << s.message() << "\n";
    return 2;
  }
  if (flags.GetBool("help")) {
    std::cout << "usage: orca generate [--model DIR] [--prompt TEXT] [flags]\n\n" << flags.Help();
    return 0;
  }
  if (auto s = Generate(flags); !s.ok()) {
    std::cerr << "orca generate: " << s.message() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace orca
