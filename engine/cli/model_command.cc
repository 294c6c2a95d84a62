// `orca model inspect DIR`, `orca model random --preset NAME --out DIR` and
// `orca model pull URI DIR`.
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "engine/cli/commands.h"
#include "engine/common/file_util.h"
#include "engine/common/status_macros.h"
#include "engine/config/flags.h"
#include "engine/model/checkpoint.h"
#include "engine/model/model_config.h"
#include "engine/model/pull/model_pull.h"
#include "engine/model/random_checkpoint.h"
#include "engine/model/safetensors.h"
#include "engine/tokenizer/tokenizer.h"

namespace orca {
namespace {

constexpr char kUsage[] =
    "usage: orca model inspect DIR [--tensors]\n"
    "       orca model random --preset NAME --out DIR [--dtype F32|F16|BF16] [--seed N]\n"
    "                         [--layers N] [--vocab N] [--hidden N] [--context N]\n"
    "       orca model pull URI DIR [--sha256 HEX] [--include GLOBS] [--exclude GLOBS]\n"
    "                               [--token-file F] [--retries N]\n"
    "         URI: hf://ORG/NAME[@REVISION] (endpoint $HF_ENDPOINT, token $HF_TOKEN) or\n"
    "              https://HOST/PATH.tar[.gz]|.tgz\n"
    "         exit codes: 0 pulled (or already present), 1 other error, 2 usage,\n"
    "                     3 token refused (401/403), 4 not found, 5 verification failed\n"
    "                     (size, SHA-256, unsafe archive, unservable checkpoint),\n"
    "                     6 network failure after retries\n";

std::string HumanBytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) {
    b /= 1024;
    ++u;
  }
  return absl::StrFormat("%.1f %s", b, units[u]);
}

// A model directory that passed CheckServable, opened.
struct CheckedModel {
  std::unique_ptr<Tokenizer> tokenizer;
  ModelConfig config;
  std::unique_ptr<Checkpoint> checkpoint;
};

// Runs the checks `orca serve` runs on `dir` before it allocates anything (config.json
// bounds, the checkpoint's tensors against it, the tokenizer), in its order; inspect
// and pull both run exactly these, so both refuse what serve refuses.
absl::StatusOr<CheckedModel> CheckServable(const std::string& dir) {
  CheckedModel m;
  ORCA_ASSIGN_OR_RETURN(m.tokenizer, Tokenizer::FromDirectory(dir));  // Engine::Create's order
  ORCA_ASSIGN_OR_RETURN(m.config, LoadModelConfig(dir));
  ORCA_ASSIGN_OR_RETURN(m.checkpoint, Checkpoint::Open(dir));
  return m;
}

// Checks `dir` as `orca serve` does before it allocates anything, in the same functions
// (config.json bounds, the checkpoint's tensors against it, the tokenizer), so inspect
// fails, with the same message, on every directory serve refuses; then describes it.
absl::Status Inspect(const std::string& dir, bool list_tensors) {
  ORCA_ASSIGN_OR_RETURN(CheckedModel m, CheckServable(dir));
  const auto& tok = m.tokenizer;
  const ModelConfig& c = m.config;
  const auto& ckpt = m.checkpoint;
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

// The exit code of a failed pull: what an init container's restarts and events show.
int PullExitCode(const absl::Status& s) {
  switch (s.code()) {
    case absl::StatusCode::kUnauthenticated:
    case absl::StatusCode::kPermissionDenied:
      return 3;
    case absl::StatusCode::kNotFound:
      return 4;
    case absl::StatusCode::kDataLoss:
      return 5;
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kDeadlineExceeded:
      return 6;
    default:
      return 1;
  }
}

// `orca model pull URI DIR`; returns the exit code (errors printed on stderr).
int Pull(const Flags& f) {
  if (f.positional().size() != 2) {
    std::cerr << "orca model pull: expected URI and DIR\n" << kUsage;
    return 2;
  }
  PullOptions o;
  o.uri = f.positional()[0];
  o.dir = f.positional()[1];
  o.sha256 = f.GetString("sha256");
  o.filter.include = SplitGlobs(f.GetString("include"));
  o.filter.exclude = SplitGlobs(f.GetString("exclude"));
  if (const char* e = std::getenv("HF_ENDPOINT"); e != nullptr && *e != '\0') o.endpoint = e;
  if (const char* t = std::getenv("HF_TOKEN"); t != nullptr) {
    o.token = std::string(absl::StripAsciiWhitespace(t));  // a Secret made with `echo`
  }
  // A private CA (an in-cluster mirror): the variables curl and OpenSSL read.
  for (const char* var : {"CURL_CA_BUNDLE", "SSL_CERT_FILE"}) {
    const char* v = std::getenv(var);
    if (v != nullptr && *v != '\0') {
      o.ca_file = v;
      break;
    }
  }
  if (f.IsSet("token-file")) {
    auto t = ReadFile(f.GetString("token-file"));
    if (!t.ok()) {
      std::cerr << "orca model pull: --token-file: " << t.status().message() << "\n";
      return 2;
    }
    o.token = std::string(absl::StripAsciiWhitespace(*t));
  }
  auto retries = f.GetInt("retries");
  if (!retries.ok() || *retries < 0 || *retries > 100) {
    std::cerr << "orca model pull: --retries must be 0..100\n";
    return 2;
  }
  o.retry.attempts = static_cast<int>(*retries) + 1;
  o.check = [](const std::string& dir) { return CheckServable(dir).status(); };
  o.log = &std::cerr;
  absl::StatusOr<PullResult> r = PullModel(o);
  if (!r.ok()) {
    std::cerr << "orca model pull: " << r.status().message() << "\n";
    return PullExitCode(r.status());
  }
  if (r->already_present) {
    std::cerr << "orca model pull: " << o.dir << " already holds " << o.uri << " (" << r->commit
              << ")\n";
  } else {
    std::cerr << "orca model pull: " << o.uri << " (" << r->commit << ") installed at " << o.dir
              << ": " << r->files << " files, " << PullProgress::Bytes(r->bytes) << "\n";
  }
  return 0;
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
      .Add("sha256", "", "pull: the archive's expected SHA-256")
      .Add("include", "", "pull: comma-separated globs of the hub files to fetch")
      .Add("exclude", "", "pull: comma-separated globs of the hub files to skip")
      .Add("token-file", "", "pull: read the hub token from this file (else $HF_TOKEN)")
      .Add("retries", "5", "pull: retries per file after a network failure")
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
  } else if (sub == "pull") {
    return Pull(f);
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
