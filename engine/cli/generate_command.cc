// `orca generate`: load a checkpoint and stream one completion to stdout, through the
// same Engine (scheduler, KV cache, detokenizer, stop checks) `orca serve` runs.
#include <chrono>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "engine/cli/commands.h"
#include "engine/cli/default_model.h"
#include "engine/common/status_macros.h"
#include "engine/config/config_loader.h"
#include "engine/core/engine.h"

namespace orca {
namespace {

void AddGenerateFlags(Flags& f) {
  f.Add("prompt", "Once upon a time", "prompt text")
      .Add("max-tokens", "128", "tokens to generate at most")
      .Add("temperature", "0", "sampling temperature; 0 = greedy")
      .Add("top-k", "0", "keep the k most likely tokens; 0 = off")
      .Add("top-p", "1", "nucleus sampling mass; 1 = off")
      .Add("min-p", "0", "drop tokens below min-p times the top probability; 0 = off")
      .Add("repetition-penalty", "1", "penalty on tokens already present; 1 = off")
      .Add("seed", "", "random seed (default: drawn at random)")
      .Add("ignore-eos", "", "keep generating after EOS", true)
      .Add("stats", "", "print timing statistics to stderr", true);
}

absl::StatusOr<GenerateParams> ParamsFromFlags(const Flags& flags) {
  GenerateParams p;
  ORCA_ASSIGN_OR_RETURN(int64_t max_tokens, flags.GetInt("max-tokens"));
  ORCA_ASSIGN_OR_RETURN(double temperature, flags.GetDouble("temperature"));
  ORCA_ASSIGN_OR_RETURN(int64_t top_k, flags.GetInt("top-k"));
  ORCA_ASSIGN_OR_RETURN(double top_p, flags.GetDouble("top-p"));
  ORCA_ASSIGN_OR_RETURN(double min_p, flags.GetDouble("min-p"));
  ORCA_ASSIGN_OR_RETURN(double penalty, flags.GetDouble("repetition-penalty"));
  if (max_tokens < 1 || max_tokens > (1 << 24) || temperature < 0 || top_k < 0 || top_p <= 0 ||
      top_p > 1 || min_p < 0 || min_p > 1 || penalty <= 0) {
    return absl::InvalidArgumentError(
        "flags out of range: max-tokens >= 1, temperature >= 0, top-k >= 0, 0 < top-p <= 1, "
        "0 <= min-p <= 1, repetition-penalty > 0");
  }
  p.max_tokens = static_cast<int32_t>(max_tokens);
  p.sampling.temperature = static_cast<float>(temperature);
  p.sampling.top_k = static_cast<int32_t>(top_k);
  p.sampling.top_p = static_cast<float>(top_p);
  p.sampling.min_p = static_cast<float>(min_p);
  p.sampling.repetition_penalty = static_cast<float>(penalty);
  if (!flags.GetString("seed").empty()) {
    ORCA_ASSIGN_OR_RETURN(int64_t seed, flags.GetInt("seed"));
    p.seed = static_cast<uint64_t>(seed);
  }
  p.ignore_eos = flags.GetBool("ignore-eos");
  return p;
}

absl::Status Generate(EngineConfig config, const Flags& flags) {
  if (config.model.dir.empty()) {
    ORCA_ASSIGN_OR_RETURN(config.model.dir, DefaultModelDir());
  }
  ORCA_ASSIGN_OR_RETURN(GenerateParams params, ParamsFromFlags(flags));
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  ORCA_ASSIGN_OR_RETURN(auto engine, Engine::Create(EngineOptions::From(config)));
  const auto t_loaded = Clock::now();
  const std::string prompt = flags.GetString("prompt");
  params.prompt_tokens = engine->tokenizer().Encode(prompt, /*add_special_tokens=*/true);
  // Leave room for the prompt: the completion stops at the context length.
  const int32_t room = engine->max_model_len() - static_cast<int32_t>(params.prompt_tokens.size());
  if (room >= 1 && params.max_tokens > room) params.max_tokens = room;
  engine->Start();
  ORCA_ASSIGN_OR_RETURN(auto stream, engine->Submit(params));
  std::cout << prompt << std::flush;
  double first_token_s = 0;
  StreamEvent ev;
  do {
    while (!stream->Pop(&ev, absl::Seconds(1))) {
    }
    if (first_token_s == 0 && !ev.token_ids.empty()) {
      first_token_s = std::chrono::duration<double>(Clock::now() - t_loaded).count();
    }
    std::cout << ev.text << std::flush;
  } while (!ev.finished);
  std::cout << std::endl;
  engine->Stop();
  if (ev.finish_reason == FinishReason::kError) return ev.status;
  if (flags.GetBool("stats")) {
    const double load_s = std::chrono::duration<double>(t_loaded - t0).count();
    const double gen_s = std::chrono::duration<double>(Clock::now() - t_loaded).count();
    const int32_t n = ev.completion_tokens;
    std::cerr << absl::StrCat("orca: load ", load_s, " s; prompt ", ev.prompt_tokens,
                              " tokens; generated ", n, " tokens in ", gen_s,
                              " s; time to first token ", first_token_s, " s; decode ",
                              n > 1 ? (n - 1) / (gen_s - first_token_s) : 0.0, " tokens/s\n");
  }
  return absl::OkStatus();
}

}  // namespace

int RunGenerateCommand(int argc, char** argv) {
  Flags flags;
  AddConfigFlags(Role::kGenerate, flags);
  AddGenerateFlags(flags);
  auto fail = [](int code, const absl::Status& s) {
    std::cerr << "orca generate: " << s.message() << "\n";
    return code;
  };
  if (auto s = flags.Parse(argc, argv, 0); !s.ok()) return fail(2, s);
  if (flags.GetBool("help")) {
    std::cout << "usage: orca generate [--model DIR] [--prompt TEXT] [flags]\n\n"
              << flags.Help() << SettingsHelp(Role::kGenerate);
    return 0;
  }
  auto config = ResolveConfig(Role::kGenerate, flags);
  if (!config.ok()) return fail(2, config.status());
  if (auto s = Generate(*config, flags); !s.ok()) return fail(1, s);
  return 0;
}

}  // namespace orca
