// `orca bench` dispatch, `orca bench engine` and `orca bench plot`.
#include "bench/loadgen/bench_command.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <iostream>
#include <optional>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "bench/engine_sweep/engine_sweep.h"
#include "bench/loadgen/internal/subcommands.h"
#include "bench/loadgen/plot.h"
#include "bench/loadgen/report.h"
#include "engine/common/file_util.h"
#include "engine/common/status_macros.h"
#include "engine/config/engine_config.h"
#include "engine/config/flags.h"
#include "engine/model/random_checkpoint.h"

namespace orca {
namespace bench {
namespace {

using nlohmann::json;

constexpr char kUsage[] =
    "usage: orca bench <serve|engine|plot> [flags]\n\n"
    "  serve   load an OpenAI-compatible server with the ORCA paper's trace (or a fixed,\n"
    "          closed-loop or JSONL trace); JSON results; --sweep RATES draws Figure 10\n"
    "  engine  the paper's engine microbenchmark: a batch of identical requests run to\n"
    "          completion on the ModelRunner vs batch size, beside the CPU roofline\n"
    "  plot    overlay result files: orca bench plot a.json b.json -o fig.png\n\n"
    "Each subcommand takes --help. See bench/README.md.\n";

// Returns a model directory for --preset, writing a random checkpoint on first use.
absl::StatusOr<std::string> PresetModel(const std::string& preset) {
  const char* tmp = std::getenv("TMPDIR");
  const std::string dir = absl::StrCat(tmp && *tmp ? tmp : "/tmp", "/orca-bench-", preset);
  if (!FileExists(dir + "/config.json")) {
    ORCA_ASSIGN_OR_RETURN(ModelConfig config, PresetConfig(preset));
    std::cerr << "writing a random " << preset << " checkpoint to " << dir << "\n";
    ORCA_RETURN_IF_ERROR(WriteRandomCheckpoint(config, dir, 1));
  }
  return dir;
}

absl::Status Engine(const Flags& f, const std::string& command) {
  EngineSweepOptions o;
  o.model_dir = f.GetString("model");
  if (o.model_dir.empty()) {
    ORCA_ASSIGN_OR_RETURN(o.model_dir, PresetModel(f.GetString("preset")));
  }
  ORCA_ASSIGN_OR_RETURN(std::vector<double> batches,
                        ParseNumberList(f.GetString("batch-sizes"), "batch-sizes"));
  o.batch_sizes.clear();
  for (double b : batches) o.batch_sizes.push_back(static_cast<int32_t>(b));
  ORCA_ASSIGN_OR_RETURN(int64_t in, f.GetInt("input-len"));
  ORCA_ASSIGN_OR_RETURN(int64_t out, f.GetInt("output-len"));
  ORCA_ASSIGN_OR_RETURN(int64_t threads, f.GetInt("threads"));
  ORCA_ASSIGN_OR_RETURN(int64_t repeats, f.GetInt("repeats"));
  ORCA_ASSIGN_OR_RETURN(o.roofline_s, f.GetDouble("roofline-seconds"));
  o.input_len = static_cast<int32_t>(in);
  o.output_len = static_cast<int32_t>(out);
  o.threads = static_cast<int32_t>(threads);
  o.repeats = static_cast<int32_t>(repeats);
  const std::string kv_name = f.GetString("kv-cache-dtype");
  const std::optional<WeightDType> kv = ParseWeightDType(kv_name);
  if (!kv) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--kv-cache-dtype: '", kv_name, "' is not one of auto, float32, float16, bfloat16"));
  }
  ORCA_ASSIGN_OR_RETURN(o.kv_cache_dtype, ResolveKvCacheDType(*kv, Device::kCpu));
  const std::string dtype_name = f.GetString("dtype");
  const std::optional<WeightDType> dtype = ParseWeightDType(dtype_name);
  if (!dtype) {
    return absl::InvalidArgumentError(
        absl::StrCat("--dtype: '", dtype_name, "' is not one of auto, float32, float16, bfloat16"));
  }
  o.weight_dtype = *dtype;
  ORCA_ASSIGN_OR_RETURN(json doc, RunEngineSweep(o, [](const std::string& line) {
                          std::cerr << "[engine] " << line << "\n";
                        }));
  doc["label"] = f.GetString("label");
  doc["command"] = command;
  doc["started_at"] = UtcNow();
  doc["machine"] = MachineInfo();
  ORCA_RETURN_IF_ERROR(WriteJson(doc, f.GetString("out")));
  std::string png = f.GetString("plot");
  if (png.empty() && !f.GetString("out").empty() && f.GetString("out") != "-") {
    png = WithExtension(f.GetString("out"), ".png");
  }
  if (!png.empty()) {
    std::string title = f.GetString("title");
    if (title.empty()) {
      title = absl::StrCat("engine microbenchmark: input ", o.input_len, ", output ", o.output_len,
                           " tokens");
    }
    ORCA_ASSIGN_OR_RETURN(PlotSpec spec, EngineSweepPlot({doc}, {f.GetString("label")}, title));
    ORCA_RETURN_IF_ERROR(RenderPng(spec, png));
    std::cerr << "wrote " << png << "\n";
  }
  return absl::OkStatus();
}

// The latency targets of --latency-ms and of --unloaded FILE with --factors.
absl::StatusOr<std::vector<LatencyTarget>> LatencyTargets(const Flags& f) {
  std::vector<LatencyTarget> targets;
  if (!f.GetString("latency-ms").empty()) {
    ORCA_ASSIGN_OR_RETURN(auto ms, ParseNumberList(f.GetString("latency-ms"), "latency-ms"));
    for (double t : ms) targets.push_back({absl::StrCat(t, " ms/token"), t});
  }
  if (!f.GetString("unloaded").empty()) {
    ORCA_ASSIGN_OR_RETURN(std::string text, ReadFile(f.GetString("unloaded")));
    json doc = json::parse(text, nullptr, false);
    ORCA_ASSIGN_OR_RETURN(auto base, RunPoints(doc, f.GetString("unloaded")));
    ORCA_ASSIGN_OR_RETURN(auto factors, ParseNumberList(f.GetString("factors"), "factors"));
    const double unloaded = base.front().median_normalized_ms;
    std::cout << "unloaded median normalized latency: " << unloaded << " ms/token ("
              << f.GetString("unloaded") << ")\n";
    for (double k : factors) targets.push_back({absl::StrCat(k, "x unloaded"), k * unloaded});
  }
  return targets;
}

// Prints the throughput each curve sustains at every latency target and its ratio to
// the first curve's.
void PrintThroughputAtLatency(const std::vector<LatencyTarget>& latency_targets,
                              const std::vector<CurvePoint>& points) {
  std::vector<std::string> labels;
  for (const auto& p : points) {
    if (std::find(labels.begin(), labels.end(), p.label) == labels.end()) labels.push_back(p.label);
  }
  for (const auto& [name, target] : latency_targets) {
    std::cout << "median normalized latency <= " << target << " ms/token (" << name << "):\n";
    double first = 0;
    for (size_t i = 0; i < labels.size(); ++i) {
      std::vector<CurvePoint> mine;
      for (const auto& p : points) {
        if (p.label == labels[i]) mine.push_back(p);
      }
      const double x = ThroughputAtLatency(mine, target);
      if (i == 0) first = x;
      std::cout << "  " << labels[i] << ": " << x << " req/s";
      if (i > 0 && x > 0) std::cout << " (" << labels[0] << " sustains " << first / x << "x)";
      std::cout << "\n";
    }
  }
}

absl::Status Plot(const Flags& f) {
  const auto& files = f.positional();
  if (files.empty()) return absl::InvalidArgumentError("give one or more result files");
  const std::string png = f.GetString("o");
  if (png.empty()) return absl::InvalidArgumentError("-o FILE.png is required");
  std::vector<json> engine_docs;
  std::vector<std::string> engine_labels;
  std::vector<CurvePoint> points;
  for (const auto& path : files) {
    ORCA_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
    json doc = json::parse(text, nullptr, false);
    if (doc.is_discarded()) return absl::InvalidArgumentError(path + ": not JSON");
    if (doc.is_object() && doc.value("schema", "") == kEngineSchema) {
      engine_labels.push_back(doc.value("label", "").empty() ? path : doc.value("label", ""));
      engine_docs.push_back(std::move(doc));
      continue;
    }
    ORCA_ASSIGN_OR_RETURN(auto pts, RunPoints(doc, path));
    points.insert(points.end(), pts.begin(), pts.end());
  }
  if (!engine_docs.empty() && !points.empty()) {
    return absl::InvalidArgumentError("cannot mix engine and serve results in one plot");
  }
  ORCA_ASSIGN_OR_RETURN(std::vector<LatencyTarget> targets, LatencyTargets(f));
  PrintThroughputAtLatency(targets, points);
  PlotSpec spec;
  if (!engine_docs.empty()) {
    ORCA_ASSIGN_OR_RETURN(spec, EngineSweepPlot(engine_docs, engine_labels, f.GetString("title")));
  } else {
    std::string title = f.GetString("title");
    if (title.empty()) title = "median normalized latency vs throughput";
    spec = LatencyThroughputPlot(points, title, targets);
  }
  ORCA_RETURN_IF_ERROR(RenderPng(spec, png));
  std::cerr << "wrote " << png << "\n";
  return absl::OkStatus();
}

int RunFlagged(const char* name, Flags& flags, int argc, char** argv, const char* usage,
               const std::function<absl::Status(const Flags&)>& body) {
  if (auto st = flags.Parse(argc, argv, 0); !st.ok()) {
    std::cerr << "orca bench " << name << ": " << st.message() << "\n";
    return 2;
  }
  if (flags.GetBool("help")) {
    std::cout << usage << "\n\n" << flags.Help();
    return 0;
  }
  if (auto st = body(flags); !st.ok()) {
    std::cerr << "orca bench " << name << ": " << st.message() << "\n";
    return st.code() == absl::StatusCode::kInvalidArgument ? 2 : 1;
  }
  return 0;
}

}  // namespace

absl::StatusOr<std::vector<double>> ParseNumberList(const std::string& text,
                                                    const std::string& flag) {
  std::vector<double> out;
  for (absl::string_view part : absl::StrSplit(text, ',', absl::SkipWhitespace())) {
    double v;
    if (!absl::SimpleAtod(part, &v)) {
      return absl::InvalidArgumentError(absl::StrCat("--", flag, ": '", part, "' is not a number"));
    }
    out.push_back(v);
  }
  if (out.empty()) return absl::InvalidArgumentError(absl::StrCat("--", flag, " is empty"));
  return out;
}

std::string CommandLine(const char* prefix, int argc, char** argv) {
  std::string s = prefix;
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    const bool quote = a.empty() || a.find_first_of(" \t\"'{}[]$") != std::string::npos;
    absl::StrAppend(&s, " ", quote ? absl::StrCat("'", a, "'") : a);
  }
  return s;
}

absl::Status WriteJson(const nlohmann::json& doc, const std::string& path) {
  if (path.empty() || path == "-") {
    std::cout << doc.dump(2) << std::endl;
    return absl::OkStatus();
  }
  ORCA_RETURN_IF_ERROR(WriteFile(path, doc.dump(2) + "\n"));
  std::cerr << "wrote " << path << "\n";
  return absl::OkStatus();
}

std::string WithExtension(const std::string& path, const std::string& ext) {
  const size_t slash = path.find_last_of('/');
  const size_t dot = path.find_last_of('.');
  if (dot != std::string::npos && (slash == std::string::npos || dot > slash)) {
    return path.substr(0, dot) + ext;
  }
  return path + ext;
}

int RunEngineBench(int argc, char** argv) {
  Flags flags;
  flags.Add("model", "", "checkpoint directory (default: a random --preset checkpoint)")
      .Add("preset", "llama-110m", "random checkpoint to write and use when --model is not given")
      .Add("batch-sizes", "1,2,4,8,16,32", "comma-separated batch sizes")
      .Add("input-len", "32", "prompt tokens per request")
      .Add("output-len", "32", "output tokens per request")
      .Add("threads", "0", "CPU backend threads (0 = all cores)")
      .Add("repeats", "1", "runs per batch size (the fastest is kept)")
      .Add("roofline-seconds", "1", "time spent on each roofline measurement")
      .Add("kv-cache-dtype", "auto", "KV cache element type (auto = float16 on the CPU)")
      .Add("dtype", "auto", "weight dtype (auto = the checkpoint's)")
      .Add("label", "orca", "curve name")
      .Add("out", "", "result JSON file (default: stdout)")
      .Add("plot", "", "PNG file (default with --out: OUT with .png)")
      .Add("title", "", "plot title")
      .Add("help", "", "show this help", true);
  const std::string command = CommandLine("orca bench engine", argc, argv);
  return RunFlagged("engine", flags, argc, argv, "usage: orca bench engine [flags]",
                    [&](const Flags& f) { return Engine(f, command); });
}

int RunPlot(int argc, char** argv) {
  // "-o" is accepted as a spelling of "--o".
  std::vector<std::string> args;
  for (int i = 0; i < argc; ++i) args.push_back(std::strcmp(argv[i], "-o") == 0 ? "--o" : argv[i]);
  std::vector<char*> ptrs;
  for (auto& a : args) ptrs.push_back(a.data());
  Flags flags;
  flags.Add("o", "", "output PNG")
      .Add("title", "", "plot title")
      .Add("latency-ms", "", "print each curve's throughput at these median normalized latencies")
      .Add("unloaded", "", "a result whose median normalized latency is the unloaded latency")
      .Add("factors", "1.5", "with --unloaded: latency targets as multiples of it")
      .Add("help", "", "show this help", true);
  return RunFlagged("plot", flags, static_cast<int>(ptrs.size()), ptrs.data(),
                    "usage: orca bench plot RESULT.json... -o FIG.png [--title T]\n"
                    "serve and sweep results become the paper's Figure 10 (one curve per label);\n"
                    "engine results become the engine microbenchmark plot. --latency-ms or\n"
                    "--unloaded print the throughput each curve sustains at a latency.",
                    Plot);
}

}  // namespace bench

int RunBenchCommand(int argc, char** argv) {
  if (argc < 1 || !std::strcmp(argv[0], "--help") || !std::strcmp(argv[0], "help")) {
    std::cout << bench::kUsage;
    return argc < 1 ? 2 : 0;
  }
  const std::string sub = argv[0];
  if (sub == "serve") return bench::RunServeBench(argc - 1, argv + 1);
  if (sub == "engine") return bench::RunEngineBench(argc - 1, argv + 1);
  if (sub == "plot") return bench::RunPlot(argc - 1, argv + 1);
  std::cerr << "orca bench: unknown subcommand '" << sub << "'\n" << bench::kUsage;
  return 2;
}

}  // namespace orca
