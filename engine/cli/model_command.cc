// `orca model inspect DIR` and `orca model random --preset NAME --out DIR`.
#include <cstdio>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "engine/cli/commands.h"
#include "engine/common/status_macros.h"
#include "engine/config/flags.h"
#include "engine/model/checkpoint.h"
#include "engine/model/model_config.h"
#include "engine/model/random_checkpoint.h"
#include "engine/model/safetensors.h"
#include "engine/tokenizer/tokenizer.h"

namespace orca {
namespace {

constexpr char kUsage[] =
    "usage: orca model inspect DIR [--tensors]\n"
    "       orca model random --preset NAME --out DIR [--dtype F32|F16|BF16] [--seed N]\n"
    "                         [--layers N] [--vocab N] [--hidden N] [--context N]\n";

std::string HumanBytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) {
    b /= 1024;
    ++u;
  }
  return absl::StrFormat("%.1f %s", b, units[u]);
}

// Checks `dir` as `orca serve` does before it allocates anything, in the same functions
// (config.json bounds, the checkpoint's tensors against it, the tokenizer), so inspect
// fails, with the same message, on every directory serve refuses; then describes it.
absl::Status Inspect(const std::string& dir, bool list_tensors) {
  ORCA_ASSIGN_OR_RETURN(auto tok, Tokenizer::FromDirectory(dir));  // Engine::Create's order
  ORCA_ASSIGN_OR_RETURN(ModelConfig c, LoadModelConfig(dir));
  ORCA_ASSIGN_OR_RETURN(auto ckpt, Checkpoint::Open(dir));
  std::cout << absl::StrFormat(
      "architecture       %s\nhidden_size        %d\nintermediate_size  %d\nlayers             %d\n"
      "attention heads    %d (kv heads %d, head_dim %d)\nvocab_size         %d\ncontext            "
      "%d\n"
      "norm eps           %g\nrope_theta         %g\nactivation         %s\ntied embeddings    %s\n"
      "dtype              %s\neos_token_ids      [%s]\nparameters         %d (%.1fM)\n",
      c.architecture, c.hidden_size, c.intermediate_size, c.num_layers, c.num_heads, c.num_kv_heads,
      c.head_dim, c.vocab_size, c.max_position_embeddings, c.norm_eps, c.rope_theta, c.hidden_act,
      c.tie_word_embeddings ? "yes" : "no", DTypeName(c.dtype),
      absl::StrJoin(c.eos_token_ids, ", "), CountParameters(c), CountParameters(c) / 1e6);
  std::cout << "files              " << ckpt->Describe() << "\n";
  size_t bytes = 0;
  for (const auto& [n, v] : ckpt->tensors()) bytes += v->nbytes;
  std::cout << "tensors            " << ckpt->tensors().size() << " ("
            << HumanBytes(static_cast<double>(bytes)) << ")\n";
  if (list_tensors) {
    for (const auto& [n, v] : ckpt->tensors()) {
      std::cout << absl::StrFormat("  %-60s %-5s [%s]\n", n, v->dtype_name,
                                   absl::StrJoin(v->shape, ", "));
    }
  }
  std::cout << "tokenizer          vocab " << tok->vocab_size() << ", bos "
            << (tok->bos_id() ? absl::StrCat(*tok->bos_id()) : "none") << ", eos "
            << (tok->eos_id() ? absl::StrCat(*tok->eos_id()) : "none") << "\n";
  return absl::OkStatus();
}

absl::Status Random(const Flags& f) {
  if (f.GetString("out").empty()) return absl::InvalidArgumentError("--out DIR is required");
  ORCA_ASSIGN_OR_RETURN(ModelConfig c, PresetConfig(f.GetString("preset")));
  if (f.IsSet("dtype")) {
    ORCA_ASSIGN_OR_RETURN(c.dtype, ParseDType(f.GetString("dtype")));
  }
  auto override_int = [&](const char* flag, int32_t& field) -> absl::Status {
    if (!f.IsSet(flag)) return absl::OkStatus();
    ORCA_ASSIGN_OR_RETURN(int64_t v, f.GetInt(flag));
    if (v < 1 || v > (1 << 24))
      return absl::InvalidArgumentError(absl::StrCat("--", flag, " out of range"));
    field = static_cast<int32_t>(v);
    return absl::OkStatus();
  };
  ORCA_RETURN_IF_ERROR(override_int("layers", c.num_layers));
  ORCA_RETURN_IF_ERROR(override_int("vocab", c.vocab_size));
  ORCA_RETURN_IF_ERROR(override_int("context", c.max_position_embeddings));
  if (f.IsSet("hidden")) {
    ORCA_RETURN_IF_ERROR(override_int("hidden", c.hidden_size));
    c.head_dim = c.hidden_size / c.num_heads;
    if (c.head_dim * c.num_heads != c.hidden_size) {
      return absl::InvalidArgumentError("--hidden must be a multiple of the preset's head count");
    }
  }
  if (c.vocab_size < 259) return absl::InvalidArgumentError("--vocab must be at least 259");
  ORCA_ASSIGN_OR_RETURN(int64_t seed, f.GetInt("seed"));
  std::cerr << absl::StrFormat("orca: writing %s (%.1fM parameters, %s) to %s\n",
                               f.GetString("preset"), CountParameters(c) / 1e6, DTypeName(c.dtype),
                               f.GetString("out"));
  return WriteRandomCheckpoint(c, f.GetString("out"), static_cast<uint64_t>(seed));
}

}  // namespace

int RunModelCommand(int argc, char** argv) {
  if (argc < 1) {
    std::cerr << kUsage;
    return 2;
  }
  std::string sub = argv[0];
  Flags f;
  f.Add("tensors", "", "list every tensor", true)
      .Add("preset", "tiny", absl::StrCat("shape preset: ", absl::StrJoin(PresetNames(), ", ")))
      .Add("out", "", "output directory")
      .Add("dtype", "", "weight dtype (default: the preset's)")
      .Add("seed", "1", "random seed")
      .Add("layers", "", "override the number of layers")
      .Add("vocab", "", "override the vocabulary size")
      .Add("hidden", "", "override the hidden size")
      .Add("context", "", "override the context length")
      .Add("help", "", "show help", true);
  if (auto s = f.Parse(argc, argv, 1); !s.ok()) {
    std::cerr << "orca model: " << s.message() << "\n" << kUsage;
    return 2;
  }
  if (f.GetBool("help")) {
    std::cout << kUsage << "\n" << f.Help();
    return 0;
  }
  absl::Status status;
  if (sub == "inspect") {
    if (f.positional().size() != 1) {
      std::cerr << kUsage;
      return 2;
    }
    status = Inspect(f.positional()[0], f.GetBool("tensors"));
  } else if (sub == "random") {
    status = Random(f);
  } else {
    std::cerr << "orca model: unknown subcommand '" << sub << "'\n" << kUsage;
    return 2;
  }
  if (!status.ok()) {
    std::cerr << "orca model " << sub << ": " << status.message() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace orca
